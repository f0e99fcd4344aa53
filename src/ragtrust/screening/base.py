"""The signal contract of Stage 1.

A signal is a small dataclass whose fields are its parameters. It implements
``score_batch(docs, query)`` returning one :class:`~ragtrust.documents.SignalResult` per
document, in order; ``score(doc, query)`` comes from the base class. A signal never raises
on odd text: it returns ``skipped=True`` with a reason. Combining signals is the
aggregator's job (:mod:`ragtrust.screening.aggregate`).

A signal whose result on a document depends only on that document and on the signal itself
(its parameters, models and calibration; not the question, not the other documents) sets
:attr:`Signal.results_cacheable`; :func:`score_documents` then keeps its results by content,
in memory and in the store (:func:`persist_caches`), so a document screened once (by a
corpus scan or an earlier question) is not screened again.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import ClassVar

from ragtrust.documents import RetrievedDoc, SignalResult
from ragtrust.errors import InputError
from ragtrust.identity import complete, digest, model_identity, source_digest
from ragtrust.models.cache import BlobCache, ByteLRU, DiskCache, MiB

#: the file, inside a store, of the screening signals' persisted model results
SCREEN_CACHE_FILE = "screen_cache.sqlite"
#: the table of that file that keeps whole per-document results (:func:`score_documents`)
RESULTS_TABLE = "signal_results"
#: the kept results' format; a new one makes every kept result miss
RESULTS_VERSION = 1
#: the in-memory bound of one signal's kept results (entries, bytes of their JSON)
RESULTS_CACHE_ITEMS, RESULTS_CACHE_BYTES = 4096, 4 * MiB  # ~350 bytes a result on OWASP chunks


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
    #: whether a result depends only on the document and the signal (:func:`score_documents` keeps it)
    results_cacheable: ClassVar[bool] = False
    #: the store's kept per-document results, once attached (:func:`persist_caches`)
    results_disk: BlobCache | None = None

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
    results: BlobCache | None = None
    for signal in signals:
        named = False
        if signal.cache_table is not None:
            signal.disk = DiskCache(Path(path), signal.cache_table, read_only)
            named = True
        if getattr(signal, "results_cacheable", False):
            results = results or BlobCache(Path(path), RESULTS_TABLE, read_only)
            object.__setattr__(signal, "results_disk", results)  # frozen dataclass signals too
            named = True
        if named:
            attached.append(signal.name)
    return attached


def _results_memory(signal: Signal) -> ByteLRU[bytes]:
    """The signal's in-memory kept results (made on first use; a pickled copy starts empty)."""
    memory = getattr(signal, "_kept_results", None)
    if memory is None:
        memory = ByteLRU(RESULTS_CACHE_ITEMS, RESULTS_CACHE_BYTES)
        try:
            object.__setattr__(signal, "_kept_results", memory)
        except AttributeError:  # a signal with __slots__: nothing kept in memory
            return ByteLRU(0, 0)
    return memory


def limit_kept_results(signal: Signal, max_items: int, max_bytes: int) -> None:
    """Bound the in-memory kept results of ``signal`` (0 keeps none: a cold benchmark)."""
    _results_memory(signal).limit(max_items, max_bytes)


def results_identity(signal: Signal) -> str | None:
    """What a kept result of ``signal`` was computed from, besides the document (one hash).

    The signal's parameters, its models' ids, fingerprints, calibrations and local files
    (:func:`~ragtrust.identity.model_identity`), and the code of ragtrust and the libraries
    that run it (:func:`~ragtrust.identity.source_digest`). ``None`` when a parameter cannot
    be named (:func:`~ragtrust.identity.complete`): nothing is then kept or reused.
    """
    identity = model_identity(signal)
    if not complete(identity):
        return None
    return digest({"version": RESULTS_VERSION, "signal": identity, "code": source_digest()})


def _decode(blob: bytes | None, name: str) -> SignalResult | None:
    """A kept result, or ``None`` when it does not parse or is another signal's (computed again)."""
    if blob is None:
        return None
    try:
        result = SignalResult.from_dict(json.loads(blob.decode("utf-8", "surrogatepass")))
    except (ValueError, TypeError, InputError, UnicodeDecodeError):
        return None
    return result if result.name == name else None


def _encode(result: SignalResult) -> bytes:
    return json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8", "surrogatepass")


def score_documents(signal: Signal, docs: Sequence[RetrievedDoc], query: str | None = None) -> list[SignalResult]:
    """``signal.score_batch(docs, query)``, reading and keeping per-document results where the signal allows.

    For a :attr:`Signal.results_cacheable` signal, each document's result is looked up by
    the document (id, text, url, source, metadata) and :func:`results_identity`: first in
    memory, then in the store's :data:`RESULTS_TABLE` when attached. Only the documents not
    found are scored, in one batch, and their results kept, except a result that records a
    failure (skipped with ``error:``). A signal with a parameter that cannot be named
    (:func:`results_identity` is ``None``) is simply called. A kept result that no longer parses is scored again.
    Any other signal is simply called. Errors propagate as from ``score_batch``.
    """
    if not getattr(signal, "results_cacheable", False) or not docs:
        return list(signal.score_batch(docs, query))
    signal.warm_up()  # a model loaded later would change the identity (its fingerprint, threshold)
    name = str(getattr(signal, "name", type(signal).__name__))
    ident = results_identity(signal)
    if ident is None:
        return list(signal.score_batch(docs, query))
    keys = [hashlib.sha256(f"{ident}\x00{digest(d.document.to_dict())}".encode()).hexdigest() for d in docs]
    memory = _results_memory(signal)
    found = [_decode(b, name) for b in memory.get_many(keys)]
    disk = getattr(signal, "results_disk", None)
    if disk is not None and any(r is None for r in found):
        lost = [i for i, r in enumerate(found) if r is None]
        blobs = disk.get_blobs([keys[i] for i in lost])
        for i, blob in zip(lost, blobs, strict=True):
            found[i] = _decode(blob, name)
        memory.put_many((keys[i], b) for i, b in zip(lost, blobs, strict=True) if b is not None and found[i])
    missing = [i for i, r in enumerate(found) if r is None]
    if missing:
        computed = list(signal.score_batch([docs[i] for i in missing], query))
        if len(computed) != len(missing):
            raise RuntimeError(f"returned {len(computed)} results for {len(missing)} documents")
        # a result that records a failure is not kept: it would outlive its cause
        fresh = [
            (keys[i], _encode(r))
            for i, r in zip(missing, computed, strict=True)
            if not (r.skipped and (r.skip_reason or "").startswith("error:"))
        ]
        memory.put_many(fresh)
        if disk is not None:
            disk.put_blobs(fresh)
        for i, r in zip(missing, computed, strict=True):
            found[i] = r
    return [r for r in found if r is not None]


__all__ = [
    "RESULTS_TABLE",
    "SCREEN_CACHE_FILE",
    "Signal",
    "limit_kept_results",
    "persist_caches",
    "results_identity",
    "score_documents",
]
