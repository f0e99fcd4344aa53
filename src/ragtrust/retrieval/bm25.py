"""Lexical retrieval with BM25 (bm25s, Lucene variant, English stopwords).

Score in [0, 1]: the raw BM25 score divided by the largest score any document could
reach for this query, ``sum_t idf(t)`` over the distinct query terms found in the corpus
(the Lucene term-frequency factor ``tf / (tf + k1 * (1 - b + b * dl/avgdl))`` is below 1).
So the score is "the share of the query's attainable BM25 evidence this document holds":
0 when it shares no term, close to 1 only when it contains every query term many times.
It is not rescaled by the best hit, so a weak best match stays weak and the low-retrieval
rule (best < 0.30) still means something; a document holding every query term once at
average length scores about ``1 / (1 + k1)`` = 0.4.

Example:
    >>> from ragtrust.documents import Document
    >>> docs = [Document(id="a", text="Use parameterised queries against SQL injection."),
    ...         Document(id="b", text="Store passwords with bcrypt or argon2.")]
    >>> hits = BM25Retriever(docs).retrieve("SQL injection", top_k=1)
    >>> hits[0].id, 0.0 < hits[0].score <= 1.0
    ('a', True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import InputError, MissingDependencyError
from ragtrust.registry import register


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError as exc:
        raise MissingDependencyError("BM25 retrieval", "pip install bm25s") from exc
    return bm25s


@register("retriever", "bm25")
@dataclass
class BM25Retriever:
    """BM25 over a fixed list of documents (index built in :meth:`warm_up`).

    Attributes:
        documents: the corpus.
        k1 / b: BM25 parameters (Lucene defaults 1.5 / 0.75).
        stopwords: bm25s stopword list name (``"en"``) or ``None``.
    """

    documents: Sequence[Document]
    k1: float = 1.5
    b: float = 0.75
    stopwords: str | None = "en"
    default_top_k: int = 5
    name: str = "bm25"
    _model: Any = field(default=None, init=False, repr=False)
    _vocab: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _idf: Any = field(default=None, init=False, repr=False)

    def warm_up(self) -> None:
        """Tokenise and index the corpus (once)."""
        if self._model is not None:
            return
        bm25s = _bm25s()
        docs = list(self.documents)
        self.documents = docs
        if not docs:
            self._model = False
            return
        tokens = bm25s.tokenize([d.text for d in docs], stopwords=self.stopwords, return_ids=True, show_progress=False)
        model = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
        model.index(tokens, show_progress=False)
        self._vocab = dict(tokens.vocab)
        df = np.zeros(len(self._vocab), dtype=np.int64)
        for ids in tokens.ids:
            if len(ids):
                df[np.unique(np.asarray(ids, dtype=np.int64))] += 1
        n = len(docs)
        # Lucene idf, the one bm25s' "lucene" method uses
        self._idf = np.log1p((n - df + 0.5) / (df + 0.5))
        self._model = model

    def _query_terms(self, query: str) -> list[str]:
        bm25s = _bm25s()
        terms = bm25s.tokenize([query], stopwords=self.stopwords, return_ids=False, show_progress=False)[0]
        return list(dict.fromkeys(t for t in terms if t in self._vocab))

    def scores(self, query: str) -> np.ndarray[Any, Any]:
        """Normalised BM25 score of every document (see the module docstring)."""
        if not isinstance(query, str) or not query.strip():
            raise InputError("the query is empty: pass a non-empty question text")
        self.warm_up()
        if self._model is False:
            return np.zeros(0, dtype=np.float32)
        terms = self._query_terms(query)
        if not terms:
            return np.zeros(len(self.documents), dtype=np.float32)
        raw = np.asarray(self._model.get_scores(terms), dtype=np.float64)
        ceiling = float(sum(self._idf[self._vocab[t]] for t in terms))
        if ceiling <= 0 or not math.isfinite(ceiling):
            return np.zeros(len(self.documents), dtype=np.float32)
        return np.clip(raw / ceiling, 0.0, 1.0).astype(np.float32)

    def retrieve(self, query: str, top_k: int | None = None) -> list[RetrievedDoc]:
        """Return the ``top_k`` documents by BM25 (documents sharing no term are not returned)."""
        k = top_k or self.default_top_k
        scores = self.scores(query)
        if scores.size == 0:
            return []
        k = min(k, scores.size)
        top = np.argpartition(-scores, k - 1)[:k]
        order = sorted(top.tolist(), key=lambda i: (-float(scores[i]), i))
        return [
            RetrievedDoc(document=self.documents[i], score=float(scores[i]), rank=r + 1, retriever=self.name)
            for r, i in enumerate(j for j in order if scores[j] > 0)
        ]


__all__ = ["BM25Retriever"]
