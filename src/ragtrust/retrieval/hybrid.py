"""Hybrid retrieval: dense + BM25 merged with reciprocal rank fusion (RRF).

Each retriever returns ``candidates`` documents (default ``max(4 * top_k, 20)``); a
document's fused score is ``sum over retrievers of 1 / (rrf_k + rank)`` (Cormack et al.,
2009; ``rrf_k = 60`` as in the paper and :class:`~ragtrust.config.RetrievalConfig`). The
order follows the fused score, but the reported ``score`` is the document's dense cosine
(clipped to [0, 1]) so the low-retrieval rule keeps its cosine meaning even for documents
that only BM25 found.

Example:
    >>> from ragtrust.documents import Document
    >>> from ragtrust.testing import HashingEmbedder
    >>> from ragtrust.retrieval.bm25 import BM25Retriever
    >>> from ragtrust.retrieval.dense import DenseIndex
    >>> docs = [Document(id="a", text="parameterised queries stop SQL injection"),
    ...         Document(id="b", text="bcrypt is an adaptive password hash")]
    >>> hybrid = HybridRetriever(DenseIndex.from_documents(docs, HashingEmbedder()).retriever(), BM25Retriever(docs))
    >>> hybrid.retrieve("SQL injection", top_k=1)[0].id
    'a'
"""

from __future__ import annotations

from dataclasses import dataclass

from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import InputError
from ragtrust.registry import register, warm_up
from ragtrust.retrieval.base import Retriever


@register("retriever", "hybrid")
@dataclass
class HybridRetriever:
    """Reciprocal rank fusion of a dense and a lexical retriever.

    Attributes:
        dense: a dense retriever; when it has ``similarities(query, ids)`` (as
            :class:`~ragtrust.retrieval.dense.DenseRetriever` does), every result gets its
            exact cosine as score, else the dense score when the dense side found it.
        bm25: the lexical retriever.
        rrf_k: the RRF constant.
        candidates: documents asked of each retriever (``None``: ``max(4 * top_k, 20)``).
    """

    dense: Retriever
    bm25: Retriever
    rrf_k: int = 60
    candidates: int | None = None
    default_top_k: int = 5
    name: str = "hybrid"

    def warm_up(self) -> None:
        """Warm both sides up."""
        warm_up(self.dense, self.bm25)

    def retrieve(self, query: str, top_k: int | None = None) -> list[RetrievedDoc]:
        """Return the ``top_k`` documents by fused rank; score = dense cosine in [0, 1]."""
        if not isinstance(query, str) or not query.strip():
            raise InputError("the query is empty: pass a non-empty question text")
        k = top_k or self.default_top_k
        n = self.candidates or max(4 * k, 20)
        fused: dict[str, float] = {}
        docs: dict[str, Document] = {}
        dense_scores: dict[str, float | None] = {}
        for side, results in ((0, self.dense.retrieve(query, n)), (1, self.bm25.retrieve(query, n))):
            for rank, hit in enumerate(results, start=1):
                fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (self.rrf_k + rank)
                docs.setdefault(hit.id, hit.document)
                if side == 0:
                    dense_scores[hit.id] = hit.score
        order = sorted(fused, key=lambda i: (-fused[i], i))[:k]
        exact = getattr(self.dense, "similarities", None)
        if callable(exact):
            dense_scores.update(exact(query, [i for i in order if i not in dense_scores]))
        return [
            RetrievedDoc(document=docs[i], score=dense_scores.get(i), rank=r + 1, retriever=self.name)
            for r, i in enumerate(order)
        ]


__all__ = ["HybridRetriever"]
