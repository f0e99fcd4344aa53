"""The signal contract of Stage 1.

A signal is a small dataclass whose fields are its parameters. It implements
``score_batch(docs, query)`` returning one :class:`~ragtrust.documents.SignalResult` per
document, in order; ``score(doc, query)`` comes from the base class. A signal never raises
on odd text: it returns ``skipped=True`` with a reason. Combining signals is the
aggregator's job (:mod:`ragtrust.screening.aggregate`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from ragtrust.documents import RetrievedDoc, SignalResult


class Signal(ABC):
    """Base class of every poison signal."""

    name: ClassVar[str] = "signal"
    #: document-level signals look at one document at a time (usable in corpus scans);
    #: batch-level signals (cross-document, outlier) need the retrieved set.
    document_level: ClassVar[bool] = True

    def warm_up(self) -> None:  # noqa: B027 - optional hook
        """Load models; a no-op for pure-text signals."""

    @abstractmethod
    def score_batch(self, docs: Sequence[RetrievedDoc], query: str | None = None) -> list[SignalResult]:
        """One result per document, in the order given."""

    def score(self, doc: RetrievedDoc, query: str | None = None) -> SignalResult:
        """Score a single document (batch of one)."""
        return self.score_batch([doc], query)[0]

    def skipped(self, reason: str) -> SignalResult:
        """A result that says the signal could not judge this document, and why."""
        return SignalResult(name=self.name, score=0.0, skipped=True, skip_reason=reason)


__all__ = ["Signal"]
