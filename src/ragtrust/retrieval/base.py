"""The retriever contract: ``retrieve(query, top_k) -> list[RetrievedDoc]``.

Scores are similarities in [0, 1] in cosine terms (dense retrievers report the cosine of
normalised embeddings clipped at 0; lexical ones a rank-derived score, documented per
retriever), so the low-retrieval rule (best < 0.30) means what SPEC section 5 says.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ragtrust.documents import RetrievedDoc


@runtime_checkable
class Retriever(Protocol):
    """Anything that returns the top-k documents for a query."""

    name: str

    def retrieve(self, query: str, top_k: int = 5) -> list[RetrievedDoc]:
        """The best ``top_k`` documents, best first, ranks starting at 1."""
        ...


__all__ = ["Retriever"]
