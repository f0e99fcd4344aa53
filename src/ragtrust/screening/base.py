"""The signal contract of Stage 1.

A signal is a small dataclass whose fields are its parameters. It implements
``score_batch(docs, query)`` returning one :class:`~ragtrust.documents.SignalResult` per
document, in order; ``score(doc, query)`` comes from the base class. A signal never raises
on odd text: it returns ``skipped=True`` with a reason. Combining signals is the
aggregator's job (:mod:`ragtrust.screening.aggregate`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import ClassVar

from ragtrust.documents import RetrievedDoc, SignalResult
from ragtrust.models.cache import DiskCache

#: the file, inside a store, of the screening signals' persisted model results
SCREEN_CACHE_FILE = "screen_cache.sqlite"


class Signal(ABC):
    """Base class of every poison signal."""

    name: ClassVar[str] = "signal"
    #: document-level signals look at one document at a time (usable in corpus scans);
    #: batch-level signals (cross-document, outlier) need the retrieved set.
    document_level: ClassVar[bool] = True
    #: the table of the store's persisted cache that keeps this signal's model results
    #: (``None``: nothing worth keeping); :func:`persist_caches` opens it
    cache_table: ClassVar[str | None] = None
    #: the persisted cache, once attached (not a dataclass field: never a parameter)
    disk: DiskCache | None = None

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


def persist_caches(signals: Iterable[Signal], path: Path, read_only: bool = False) -> list[str]:
    """Keep the model results of ``signals`` in ``path`` too (e.g. a store's :data:`SCREEN_CACHE_FILE`).

    Every signal with a :attr:`Signal.cache_table` reads the file on a miss of its in-memory
    cache and writes what it computes (not when ``read_only``), so a document screened once
    (by a corpus scan, or an earlier query) costs only a lookup afterwards, across restarts.
    The results are keyed by content and model fingerprint: a changed document or model
    simply misses. Returns the names of the signals attached.
    """
    attached = []
    for signal in signals:
        if signal.cache_table is not None:
            signal.disk = DiskCache(Path(path), signal.cache_table, read_only)
            attached.append(signal.name)
    return attached


__all__ = ["SCREEN_CACHE_FILE", "Signal", "persist_caches"]
