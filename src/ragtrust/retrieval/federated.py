"""Federated retrieval: one query fans out to several independent sources (SPEC section 6.1).

:class:`FederatedRetriever` queries every source in parallel (a thread per source), waits
at most ``timeout_s`` for them, merges what came back and fuses the rankings.

- **Failures never sink the query.** A source that raises or misses the deadline is left
  out and named in :attr:`FederatedRetriever.last_warnings` (the pipeline copies these
  into the verdict; they are kept per thread, so concurrent searches keep their own).
  Only when *every* source fails is a :class:`~ragtrust.errors.BackendError` raised.
- **De-duplication.** Two results are the same document when their content hashes are
  equal (NFKC- and whitespace-normalised text), or when two *different* sources return
  the same URL. Within one source, results with the same URL but different text (chunks of
  one page) stay distinct. Two *different* documents under one id (independent sources
  number their documents alike) stay two: the later one is renamed ``<source>:<id>``, with
  a warning.
- **Fusion.** ``fusion="rrf"`` (default) ranks by reciprocal rank fusion,
  ``sum over sources of 1 / (rrf_k + rank)`` (Cormack et al. 2009, ``rrf_k = 60``);
  ``fusion="max"`` ranks by the best original score. Ties break by best original score,
  then by id.
- **Score scale.** RRF values are not similarities, so they only decide the order (and are
  kept in :attr:`FederatedRetriever.last_fused_scores`). Each fused
  :class:`~ragtrust.documents.RetrievedDoc` keeps its **best original cosine score** across
  sources as ``score`` (``None`` when no source gave one), so the low-retrieval rule of
  SPEC section 5 (best similarity < 0.30) still means what it says.

Example:
    >>> from ragtrust.testing import StaticRetriever
    >>> from ragtrust.documents import Document
    >>> a = StaticRetriever([Document("a", "hash passwords with argon2")], name="local")
    >>> b = StaticRetriever([Document("b", "x")], name="down", fail=True)
    >>> fed = FederatedRetriever([a, b], timeout_s=5)
    >>> [d.id for d in fed.retrieve("hash passwords", 3)], fed.last_warnings
    (['a'], ["retrieval source 'down' failed: retriever 'down' is down (simulated)"])
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import BackendError, ConfigError
from ragtrust.registry import build, register, warm_up
from ragtrust.retrieval.base import Retriever

FUSIONS = ("rrf", "max")


@dataclass
class _Merged:
    doc: RetrievedDoc
    fused: float = 0.0
    best_score: float | None = None
    best_rank: int = 10**9
    sources: list[str] = field(default_factory=list)


@register("retriever", "federated")
@dataclass
class FederatedRetriever:
    """Query several retrievers in parallel and fuse their results.

    Args:
        sources: the retrievers (anything with ``name`` and ``retrieve(query, top_k)``), or
            registry specs (``"bm25"``, ``{"type": "remote", "params": {...}}``) built on
            construction.
        timeout_s: deadline for all sources together (they run in parallel, so this is
            also each source's timeout).
        fusion: ``"rrf"`` (reciprocal rank fusion) or ``"max"`` (best original score).
        rrf_k: the RRF constant.
        per_source_k: results asked of each source (default: ``top_k``).
    """

    sources: Sequence[Any]
    timeout_s: float = 10.0
    fusion: str = "rrf"
    rrf_k: int = 60
    per_source_k: int | None = None
    name: str = "federated"
    # the last search's results per thread: a server searches on several threads with one gate
    _last: threading.local = field(default_factory=threading.local, init=False, repr=False)

    def __post_init__(self) -> None:
        """Validate parameters and build sources given as registry specs."""
        if self.fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion {self.fusion!r}; valid: {', '.join(FUSIONS)}")
        if self.timeout_s <= 0:
            raise ConfigError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.rrf_k < 1:
            raise ConfigError(f"rrf_k must be >= 1, got {self.rrf_k}")
        if not self.sources:
            raise ConfigError("FederatedRetriever needs at least one source")
        built: list[Retriever] = []
        for source in self.sources:
            if isinstance(source, (str, Mapping)):
                source = build("retriever", source)
            if not callable(getattr(source, "retrieve", None)):
                raise ConfigError(f"federated source {source!r} has no retrieve(query, top_k) method")
            built.append(source)
        self.sources = tuple(built)

    @property
    def last_warnings(self) -> list[str]:
        """The failed, timed-out or renamed sources of this thread's last :meth:`retrieve`."""
        warnings: list[str] = getattr(self._last, "warnings", [])
        return warnings

    @property
    def last_fused_scores(self) -> dict[str, float]:
        """The fused (RRF or max) score of each document of this thread's last :meth:`retrieve`."""
        scores: dict[str, float] = getattr(self._last, "fused_scores", {})
        return scores

    @property
    def source_names(self) -> list[str]:
        """Unique display names of the sources (``name``, ``name#2`` on repeats)."""
        names: list[str] = []
        for i, source in enumerate(self.sources):
            base = str(getattr(source, "name", "") or f"source{i + 1}")
            names.append(base if base not in names else f"{base}#{i + 1}")
        return names

    def warm_up(self) -> None:
        """Warm up every source that has a ``warm_up``."""
        warm_up(*self.sources)

    def retrieve(self, query: str, top_k: int = 5) -> list[RetrievedDoc]:
        """Return the fused top ``top_k``; failed / timed-out sources are named in ``last_warnings``.

        Raises:
            BackendError: every source failed or timed out.
        """
        names = self.source_names
        k = self.per_source_k or top_k
        warnings: list[str] = []
        results: dict[str, list[RetrievedDoc]] = {}
        pool = cf.ThreadPoolExecutor(max_workers=len(self.sources), thread_name_prefix="ragtrust-federated")
        try:
            futures = {
                pool.submit(source.retrieve, query, k): name for source, name in zip(self.sources, names, strict=True)
            }
            _, pending = cf.wait(futures, timeout=self.timeout_s)
            for future, name in futures.items():  # source order, so warnings are stable
                if future in pending:
                    future.cancel()
                    warnings.append(f"retrieval source {name!r} timed out after {self.timeout_s:g} s")
                    continue
                try:
                    results[name] = list(future.result())
                except Exception as exc:  # a source's failure is reported, never fatal alone
                    warnings.append(f"retrieval source {name!r} failed: {exc}")
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # never wait for a hung source
        self._last.warnings = warnings
        if not results:
            raise BackendError(f"all {len(self.sources)} federated retrieval sources failed: {'; '.join(warnings)}")
        fused = self._fuse([(name, results[name]) for name in names if name in results])
        documents = self._unique_ids(fused, warnings)
        self._last.fused_scores = {doc.id: m.fused for doc, m in zip(documents, fused, strict=True)}
        return [
            RetrievedDoc(document=doc, score=m.best_score, rank=rank, retriever="+".join(m.sources))
            for rank, (doc, m) in enumerate(zip(documents[:top_k], fused[:top_k], strict=True), start=1)
        ]

    @staticmethod
    def _unique_ids(fused: Sequence[_Merged], warnings: list[str]) -> list[Document]:
        """The fused documents, a later one whose id an earlier one holds renamed ``<source>:<id>``.

        Independent sources number their documents alike; two different documents under one
        id would be screened, gated and cited as one.
        """
        taken: dict[str, str] = {}  # id -> the source whose document holds it
        out: list[Document] = []
        for m in fused:
            doc = m.doc.document
            if doc.id in taken:
                source = m.sources[0]
                new_id = f"{source}:{doc.id}"
                while new_id in taken:
                    new_id = f"{source}:{new_id}"
                warnings.append(
                    f"retrieval sources {taken[doc.id]!r} and {source!r} both returned id {doc.id!r} for different "
                    f"documents: the one from {source!r} is {new_id!r} here"
                )
                doc = dataclasses.replace(doc, id=new_id)
            taken[doc.id] = m.sources[0]
            out.append(doc)
        return out

    def _fuse(self, ranked_lists: Sequence[tuple[str, Sequence[RetrievedDoc]]]) -> list[_Merged]:
        merged: list[_Merged] = []
        by_hash: dict[str, _Merged] = {}
        by_url: dict[str, tuple[str, _Merged]] = {}  # url -> (first source, entry)
        for name, docs in ranked_lists:
            for rank, doc in enumerate(docs, start=1):
                entry = by_hash.get(doc.document.content_hash)
                url = doc.document.url
                if entry is None and url and url in by_url and by_url[url][0] != name:
                    entry = by_url[url][1]
                if entry is None:
                    entry = _Merged(doc=doc)
                    merged.append(entry)
                by_hash.setdefault(doc.document.content_hash, entry)
                if url:
                    by_url.setdefault(url, (name, entry))
                entry.fused += 1.0 / (self.rrf_k + rank)
                entry.best_rank = min(entry.best_rank, rank)
                if doc.score is not None and (entry.best_score is None or doc.score > entry.best_score):
                    entry.best_score = doc.score
                if name not in entry.sources:
                    entry.sources.append(name)
        if self.fusion == "max":
            merged.sort(key=lambda m: (-(m.best_score or 0.0), -m.fused, m.doc.id))
        else:
            merged.sort(key=lambda m: (-m.fused, -(m.best_score or 0.0), m.doc.id))
        return merged


__all__ = ["FUSIONS", "FederatedRetriever"]
