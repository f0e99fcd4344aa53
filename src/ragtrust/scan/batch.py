"""The per-batch work both scan engines share: signals on a batch, witness-reading signals on one document."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ragtrust.documents import Document, RetrievedDoc, SignalResult
from ragtrust.models.base import Embedder
from ragtrust.retrieval.dense import embed_texts
from ragtrust.scan.report import ScanProgress
from ragtrust.screening.base import Signal, score_documents


def score_signals(signals: Sequence[Signal], docs: Sequence[RetrievedDoc]) -> list[list[SignalResult]]:
    """Every signal on a batch, through its kept results; one that raises is recorded as skipped with ``error:``."""
    per_doc: list[list[SignalResult]] = [[] for _ in docs]
    for signal in signals:
        name = str(getattr(signal, "name", type(signal).__name__))
        try:
            results = score_documents(signal, docs, None)
            if len(results) != len(docs):
                raise ValueError(f"returned {len(results)} results for {len(docs)} documents")
        except Exception as exc:  # noqa: BLE001 - recorded, never silent
            results = [
                SignalResult(name=name, skipped=True, skip_reason=f"error: {type(exc).__name__}: {exc}") for _ in docs
            ]
        for i, r in enumerate(results):
            per_doc[i].append(r)
    return per_doc


def score_with_witnesses(
    signals: Sequence[Signal], doc: Document, witnesses: Sequence[RetrievedDoc]
) -> list[SignalResult]:
    """Every witness-reading signal on one document and its witnesses.

    ``signal.score_batch([doc], None, witnesses=witnesses)``: query-time screening's call
    with a retrieved set of one. A signal that raises is recorded as skipped with ``error:``.
    """
    out: list[SignalResult] = []
    wrapped = [RetrievedDoc(document=doc, rank=1)]
    for signal in signals:
        name = str(getattr(signal, "name", type(signal).__name__))
        try:
            results = signal.score_batch(wrapped, None, witnesses=witnesses)  # type: ignore[call-arg]
            if len(results) != 1:
                raise ValueError(f"returned {len(results)} results for 1 document")
            out.append(results[0])
        except Exception as exc:  # noqa: BLE001 - recorded, never silent
            out.append(SignalResult(name=name, skipped=True, skip_reason=f"error: {type(exc).__name__}: {exc}"))
    return out


def prefetch_claims(signals: Sequence[Signal], docs: Sequence[Document]) -> None:
    """Let each witness-reading signal that can embed the claims of a batch of documents at once.

    Only a speed-up: a signal that fails here fails again, and is recorded, when it judges
    each document (:func:`score_with_witnesses`), so the failure is dropped here.
    """
    for signal in signals:
        prefetch = getattr(signal, "prefetch", None)
        if prefetch is None:
            continue
        with contextlib.suppress(Exception):  # recorded per document by score_with_witnesses
            prefetch(docs)


def _local_stage_one(
    docs: Sequence[Document],
    signals: Sequence[Signal],
    embedder: Embedder | None,
    batch_size: int,
    progress: ScanProgress | None,
) -> tuple[list[list[SignalResult]], npt.NDArray[np.float32] | None]:
    for s in signals:
        s.warm_up()
    wrapped = [RetrievedDoc(document=d, rank=i + 1) for i, d in enumerate(docs)]
    results: list[list[SignalResult]] = []
    for start in range(0, len(wrapped), batch_size):
        results.extend(score_signals(signals, wrapped[start : start + batch_size]))
        if progress is not None:
            progress("signals", min(start + batch_size, len(docs)), len(docs))
    vectors = None
    if embedder is not None:

        def report(done: int, total: int) -> None:
            if progress is not None:
                progress("embed", done, total)

        vectors = embed_texts(embedder, [d.text for d in docs], batch_size, report)
    return results, vectors


__all__ = ["score_signals", "score_with_witnesses"]
