"""The corpus scan's driver: :func:`scan_corpus` runs step 1 on an engine, then the witness step and the fusion."""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.documents import Document, SignalResult
from ragtrust.errors import ConfigError, InputError
from ragtrust.models.base import Embedder, NLIModel
from ragtrust.scan.batch import _local_stage_one, prefetch_claims, score_with_witnesses
from ragtrust.scan.ray_engine import _ray_stage_one
from ragtrust.scan.report import ScanProgress, ScanReport, ScanRow
from ragtrust.scan.state import ScanState, row_keys, saveable
from ragtrust.screening.aggregate import DEFAULT_SIGNAL_WEIGHTS, fuse
from ragtrust.screening.base import Signal
from ragtrust.screening.conflicts import ClaimConflictSignal, conflicts_from
from ragtrust.screening.witness import MIN_WITNESS_SIMILARITY, Witness, neighbours, witness_docs


def _witness_signals(
    signals: Sequence[Signal], nli: NLIModel | None, embedder: Embedder | None, ledger: Any
) -> list[Signal]:
    """The batch-level signals of ``signals`` that read witnesses, else a claim-conflict signal."""
    found = [s for s in signals if not getattr(s, "document_level", True) and getattr(s, "uses_witnesses", False)]
    if not found and nli is not None and embedder is not None:
        found = [ClaimConflictSignal(nli=nli, embedder=embedder, ledger=ledger)]
    return found


def _embedding_every_claim(signal: Signal) -> Signal:
    """A claim-conflict signal that embeds every claim of the chunk it judges (into the store's vectors).

    A question's pool aligns other claims than a chunk's own neighbourhood does; embedded
    now, they are read from the store then. The scan's results are the same. Other signals
    are returned as they are; the caller's object is not changed.
    """
    if not isinstance(signal, ClaimConflictSignal) or signal.embed_every_claim:
        return signal
    scanning = copy.copy(signal)  # shares the caches (memory and store), sets only the flag
    scanning.embed_every_claim = True
    return scanning


def _row(
    doc: Document,
    results: Sequence[SignalResult],
    witnesses: tuple[Witness, ...],
    threshold: float,
    weights: Mapping[str, float],
) -> ScanRow:
    p = fuse(results, weights)
    reasons = tuple(reason for r in results if not r.skipped and r.score > 0 for reason in r.reasons)
    spans = tuple(s for r in results if not r.skipped and r.score > 0 for s in r.spans)
    parent = doc.metadata.get("parent_id")
    return ScanRow(
        id=doc.id,
        url=doc.url,
        source=doc.source,
        poison_probability=float(p),
        suspicious=p > threshold,
        signals=tuple(results),
        reasons=reasons,
        spans=spans,
        witnesses=witnesses,
        parent_id=parent if isinstance(parent, str) else None,
        # both claims of each conflict carry their spans (ClaimRef start / end)
        conflicts=tuple(conflicts_from(results)),
    )


def _consistent(row: ScanRow, threshold: float, weights: Mapping[str, float]) -> bool:
    """Whether a stored row agrees with itself: its P is the fusion of its signals, flagged as P says."""
    p = row.poison_probability
    if not isinstance(p, float) or not math.isfinite(p) or not 0.0 <= p <= 1.0 or not isinstance(row.suspicious, bool):
        return False
    try:
        fused = float(fuse(row.signals, weights))
    except (TypeError, ValueError):
        return False
    return abs(fused - p) <= 1e-9 and row.suspicious == (p > threshold)


def _judge(
    judges: Sequence[Signal],
    docs: Sequence[Document],
    todo: Sequence[int],
    near: Sequence[Sequence[tuple[int, float]]],
    results: list[list[SignalResult]],
    batch_size: int,
    progress: ScanProgress | None,
) -> list[tuple[Witness, ...]]:
    """The witness step: each document ``docs[todo[n]]`` judged with its neighbours into ``results[n]``.

    The claims of each batch are embedded together first (:func:`prefetch_claims`); the rows
    of witnesses each document was judged with are returned.
    """
    rows: list[tuple[Witness, ...]] = []
    for n, i in enumerate(todo):
        if n % batch_size == 0:
            prefetch_claims(judges, [docs[k] for k in todo[n : n + batch_size]])
        results[n].extend(score_with_witnesses(judges, docs[i], witness_docs(docs, near[i])))
        rows.append(tuple(Witness(docs[j].id, round(sim, 6)) for j, sim in near[i]))
        if progress is not None:
            progress("witnesses", n + 1, len(todo))
    return rows


def scan_corpus(
    documents: Sequence[Document],
    *,
    signals: Sequence[Signal],
    embedder: Embedder | None,
    nli: NLIModel | None,
    witnesses: int = 3,
    engine: str = "local",
    progress: ScanProgress | None = None,
    batch_size: int = 64,
    threshold: float = 0.7,
    min_similarity: float = MIN_WITNESS_SIMILARITY,
    weights: Mapping[str, float] | None = None,
    workers: int | None = None,
    ledger: Any = None,
    vectors: npt.NDArray[np.float32] | None = None,
    state: ScanState | None = None,
    config: str = "",
) -> ScanReport:
    """Scan a corpus with document-level signals and claim conflicts with corpus witnesses.

    Args:
        documents: the corpus (usually chunks).
        signals: signals to run. Document-level ones score every document; batch-level ones
            that read witnesses (``claim_conflict``) run in the witness step; the other
            batch-level ones are left out and named in :attr:`ScanReport.left_out`.
        embedder: finds each document's corpus neighbours (``None`` disables the witness step).
        nli: for the claim-conflict signal built when ``signals`` has none (``None``: none built).
        witnesses: corpus neighbours per document (0 disables the witness step).
        engine: ``local`` or ``ray``.
        progress: ``progress(stage, done, total)``.
        batch_size: documents per batch.
        threshold: P above which a document is suspicious (SPEC: 0.7).
        min_similarity: cosine below which a neighbour is no witness.
        weights: noisy-OR weights (default: the aggregator's, as at query time).
        workers: Ray actors per stage (default: 1 per available CPU, at most 4).
        ledger: the store's provenance ledger, for the claim-conflict signal built when
            ``signals`` has none (vetted versions and tiers).
        vectors: the documents' embeddings by ``embedder``, row ``i`` for ``documents[i]``
            (a store's, :meth:`~ragtrust.ingest.store.Store.snapshot`): the neighbours are
            found from them instead of embedding every document again.
        state: the store's last scan (:class:`~ragtrust.scan.state.ScanState`), with
            ``vectors``: a document whose row key (:func:`~ragtrust.scan.state.row_keys`:
            its text, ledger record, witnesses and ``config``) is the stored one keeps its
            stored row; the others are scanned, and the state is updated.
        config: names everything outside the documents a row depends on
            (:func:`~ragtrust.scan.state.config_key`); needed with ``state``.

    Raises:
        InputError: no documents or duplicate ids.
        ConfigError: an unknown engine.
        MissingDependencyError: ``engine="ray"`` without ``ray[data]``.
    """
    started = time.perf_counter()
    docs = list(documents)
    if not docs:
        raise InputError("nothing to scan: no documents")
    ids = [d.id for d in docs]
    if len(set(ids)) != len(ids):
        raise InputError("duplicate document ids in the corpus to scan")
    if engine not in ("local", "ray"):
        raise ConfigError(f"unknown scan engine {engine!r}; expected local or ray")
    if vectors is not None and (np.ndim(vectors) != 2 or len(vectors) != len(docs)):
        raise InputError(f"scan: vectors of shape {np.shape(vectors)} for {len(docs)} documents")
    run = [s for s in signals if getattr(s, "document_level", True)]
    judges = _witness_signals(signals, nli, embedder, ledger) if witnesses > 0 and embedder is not None else []
    judging = {id(s) for s in judges}
    left_out = [
        str(getattr(s, "name", type(s).__name__))
        for s in signals
        if not getattr(s, "document_level", True) and id(s) not in judging
    ]
    judges = [_embedding_every_claim(s) for s in judges]
    fuse_weights = {**DEFAULT_SIGNAL_WEIGHTS, **(weights or {})}
    groups = [str(d.metadata.get("parent_id") or d.id) for d in docs]
    kept: list[ScanRow | None] = [None] * len(docs)
    keys: list[str | None] = []
    near_all: list[list[tuple[int, float]]] | None = None
    if state is not None and vectors is not None:
        if not config:
            raise InputError("scan: a scan state needs the scan's config key")
        near_all = (
            neighbours(np.asarray(vectors, dtype=np.float32), groups, witnesses, min_similarity)
            if judges
            else [[] for _ in docs]
        )
        scan_params = {
            "threshold": threshold,
            "weights": fuse_weights,
            "witnesses": witnesses if judges else 0,
            "min_similarity": min_similarity,
            "signals": [str(getattr(s, "name", type(s).__name__)) for s in (*run, *judges)],
            # int8 models score a pair a little differently in another batch
            "engine": engine,
            "batch_size": batch_size,
        }
        keys = row_keys(docs, near_all, config=config, ledger=ledger, scan=scan_params)
        kept = [
            row if row is not None and _consistent(row, threshold, fuse_weights) else None
            for row in state.load(docs, keys)
        ]
    todo = [i for i, row in enumerate(kept) if row is None]
    part = [docs[i] for i in todo]
    embed = embedder if judges and vectors is None else None
    if not part:
        results: list[list[SignalResult]] = []
        found = None
    elif engine == "ray":
        results, found = _ray_stage_one(part, run, embed, batch_size, workers, progress)
    else:
        results, found = _local_stage_one(part, run, embed, batch_size, progress)
    vectors = found if vectors is None else np.asarray(vectors, dtype=np.float32)
    witness_rows: list[tuple[Witness, ...]] = [() for _ in part]
    if judges and vectors is not None and part:
        # on the driver for both engines: one signal instance, so its claim-embedding cache
        # serves every document (a claim is embedded once, not once per neighbour)
        for signal in judges:
            signal.warm_up()
        near = near_all if near_all is not None else neighbours(vectors, groups, witnesses, min_similarity)
        witness_rows = _judge(judges, docs, todo, near, results, batch_size, progress)
    fresh = [_row(d, results[n], witness_rows[n], threshold, fuse_weights) for n, d in enumerate(part)]
    rows = list(kept)
    for i, row in zip(todo, fresh, strict=True):
        rows[i] = row
    if state is not None and keys:
        # a row is kept under the key of what it read: the ledger read again after the scan
        # must give the same key (nothing changed meanwhile), and no failure may be in the row
        assert near_all is not None
        after = row_keys(docs, near_all, config=config, ledger=ledger, scan=scan_params)
        save_keys = [
            keys[i] if after[i] == keys[i] and saveable(row) else None for i, row in zip(todo, fresh, strict=True)
        ]
        state.save(fresh, save_keys, keep=[d.id for d, row in zip(docs, kept, strict=True) if row])
    names = [str(getattr(s, "name", type(s).__name__)) for s in (*run, *judges)]
    return ScanReport(
        rows=[r for r in rows if r is not None],
        threshold=threshold,
        engine=engine,
        signals=names,
        left_out=left_out,
        witnesses=witnesses if judges else 0,
        seconds=time.perf_counter() - started,
        reused=len(docs) - len(todo),
    )


__all__ = ["scan_corpus"]
