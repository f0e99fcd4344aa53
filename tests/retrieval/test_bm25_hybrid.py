from __future__ import annotations

import pytest

from ragtrust.documents import Document
from ragtrust.errors import InputError
from ragtrust.retrieval.bm25 import BM25Retriever
from ragtrust.retrieval.dense import DenseIndex
from ragtrust.retrieval.hybrid import HybridRetriever
from ragtrust.testing import HashingEmbedder

CORPUS = [
    Document(id="sqli", text="Parameterised queries keep attacker input out of SQL statements."),
    Document(id="xss", text="Encode untrusted data for the HTML context before output to stop XSS."),
    Document(id="jwt", text="Verify the JWT signature and reject tokens signed with the none algorithm."),
    Document(id="upload", text="Restrict uploaded file types and store uploads outside the web root."),
    Document(id="logs", text="Never write secrets or session identifiers into application logs logs logs."),
]


def test_bm25_scores_are_normalised_by_the_attainable_maximum() -> None:
    bm25 = BM25Retriever(CORPUS)
    hits = bm25.retrieve("JWT signature verification", top_k=3)
    assert hits[0].id == "jwt"
    assert [h.id for h in hits] == ["jwt"]  # documents sharing no term are not returned
    assert 0.0 < hits[0].score < 1.0
    # all query terms present once -> about 1 / (1 + k1) at average length (module docstring)
    full = bm25.retrieve("JWT signature", top_k=1)[0].score
    assert 0.25 < full < 0.6
    # repeated terms raise the score towards 1, never above
    assert 0.0 < bm25.retrieve("logs", top_k=1)[0].score <= 1.0
    assert bm25.retrieve("zebra quantum", top_k=3) == []
    with pytest.raises(InputError):
        bm25.retrieve("")
    assert BM25Retriever([]).retrieve("anything") == []


def test_hybrid_fuses_ranks_and_reports_dense_cosine() -> None:
    index = DenseIndex.from_documents(CORPUS, HashingEmbedder())
    hybrid = HybridRetriever(index.retriever(), BM25Retriever(CORPUS))
    hits = hybrid.retrieve("store uploaded files outside the web root", top_k=3)
    assert hits[0].id == "upload"
    cosines = index.similarities("store uploaded files outside the web root", [h.id for h in hits])
    assert [h.score for h in hits] == [pytest.approx(cosines[h.id]) for h in hits]
    assert [h.rank for h in hits] == [1, 2, 3] and all(h.retriever == "hybrid" for h in hits)


def test_hybrid_rrf_order() -> None:
    """A document ranked first by both sides beats one ranked first by only one side."""

    class Fixed:
        def __init__(self, ids: list[str], name: str) -> None:
            self.ids, self.name = ids, name

        def retrieve(self, query: str, top_k: int = 5):
            from ragtrust.documents import RetrievedDoc

            docs = {d.id: d for d in CORPUS}
            return [RetrievedDoc(docs[i], 0.5, r + 1, self.name) for r, i in enumerate(self.ids[:top_k])]

    hybrid = HybridRetriever(Fixed(["xss", "jwt", "sqli"], "d"), Fixed(["jwt", "sqli", "xss"], "b"), rrf_k=60)
    assert [h.id for h in hybrid.retrieve("q", top_k=3)] == ["jwt", "xss", "sqli"]
