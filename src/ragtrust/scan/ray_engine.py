"""The Ray Data engine of the corpus scan: step 1 and the embedding in ``map_batches`` actors.

Documents flow through ``map_batches`` with callable-class actors that warm their models once
per worker (local mode, or the cluster named by ``RAY_ADDRESS``); a signal that cannot travel
to an actor runs on the driver in the same batches. Needs ``pip install 'ragtrust[ray]'``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.documents import Document, RetrievedDoc, SignalResult
from ragtrust.errors import MissingDependencyError
from ragtrust.models.base import Embedder
from ragtrust.registry import warm_up
from ragtrust.retrieval.dense import embed_texts
from ragtrust.scan.batch import score_signals
from ragtrust.scan.report import ScanProgress
from ragtrust.screening.base import Signal


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("the Ray scan engine", "pip install 'ragtrust[ray]'") from exc
    return ray


def ensure_ray(num_cpus: int | None = None) -> Any:
    """Initialise Ray once: the cluster named by ``RAY_ADDRESS``, else a local instance."""
    ray = _ray()
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS") or None
        kwargs: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False, "include_dashboard": False}
        if address is None:
            kwargs["num_cpus"] = num_cpus or max(1, min(4, os.cpu_count() or 1))
            kwargs["object_store_memory"] = 256 * 1024 * 1024
        ray.init(address=address, **kwargs)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.verbose_stats_logs = False
    return ray


def _limit_threads(obj: Any, threads: int, seen: set[int] | None = None) -> None:
    """Set ``threads`` on a model and the models it wraps (before they open a session).

    Each actor's ONNX Runtime session would otherwise take the configured thread count, and
    N actors x T threads on fewer cores only fight each other.
    """
    seen = set() if seen is None else seen
    if obj is None or id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(getattr(obj, "threads", None), int):
        obj.threads = threads
    for attr in ("model", "nli", "embedder"):
        _limit_threads(getattr(obj, attr, None), threads, seen)


def _actor_threads(n_workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, n_workers))


class _StageOneActor:
    """Ray actor: runs the signals and the embedder on document batches (models warmed once)."""

    def __init__(self, signals: Sequence[Signal], embedder: Embedder | None, threads: int = 1) -> None:
        self.signals = list(signals)
        self.embedder = embedder
        for model in (*self.signals, embedder):
            _limit_threads(model, threads)
        for s in self.signals:
            s.warm_up()
        warm_up(embedder)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        docs = [Document.from_dict(json.loads(str(raw))) for raw in batch["doc"]]
        wrapped = [RetrievedDoc(document=d, rank=int(i) + 1) for d, i in zip(docs, batch["i"], strict=True)]
        per_doc = score_signals(self.signals, wrapped)
        out: dict[str, Any] = {
            "i": np.asarray(batch["i"], dtype=np.int64),
            "results": np.asarray([json.dumps([r.to_dict() for r in rs]) for rs in per_doc], dtype=object),
        }
        if self.embedder is not None:
            out["vector"] = embed_texts(self.embedder, [d.text for d in docs], batch_size=len(docs))
        return out


def _workers(workers: int | None, ray: Any) -> int:
    if workers:
        return workers
    cpus = int(ray.available_resources().get("CPU", 1)) or 1
    return max(1, min(4, cpus))


def _travels(obj: Any) -> bool:
    """Whether ``obj`` can be sent to a Ray actor (Ray's own cloudpickle)."""
    try:
        _ray().cloudpickle.dumps(obj)
    except Exception:  # noqa: BLE001 - any failure to serialise means: keep it on the driver
        return False
    return True


def _ray_stage_one(
    docs: Sequence[Document],
    signals: Sequence[Signal],
    embedder: Embedder | None,
    batch_size: int,
    workers: int | None,
    progress: ScanProgress | None,
) -> tuple[list[list[SignalResult]], npt.NDArray[np.float32] | None]:
    ray = ensure_ray()
    n_workers = _workers(workers, ray)
    # a signal bound to something of this machine (the provenance signal's SQLite ledger)
    # cannot travel to an actor: it runs here, on the driver, in the same batches
    travels = [_travels(s) for s in signals]
    remote = [s for s, ok in zip(signals, travels, strict=True) if ok]
    local = [s for s, ok in zip(signals, travels, strict=True) if not ok]
    for s in local:
        s.warm_up()
    items = [{"i": i, "doc": d.to_json()} for i, d in enumerate(docs)]
    ds = ray.data.from_items(items).map_batches(
        _StageOneActor,
        fn_constructor_kwargs={"signals": remote, "embedder": embedder, "threads": _actor_threads(n_workers)},
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=n_workers),
        num_cpus=0.5,
        batch_format="numpy",
    )
    results: list[list[SignalResult]] = [[] for _ in docs]
    vectors = None if embedder is None else np.zeros((len(docs), int(embedder.dim)), dtype=np.float32)
    done = 0
    for batch in ds.iter_batches(batch_size=batch_size, batch_format="numpy"):
        rows = [int(i) for i in batch["i"]]
        here = score_signals(local, [RetrievedDoc(document=docs[i], rank=i + 1) for i in rows]) if local else None
        for k, i in enumerate(rows):
            there = iter(SignalResult.from_dict(r) for r in json.loads(str(batch["results"][k])))
            mine = iter(here[k] if here is not None else ())
            # in the order of ``signals``, as the local engine has them
            results[i] = [next(there) if ok else next(mine) for ok in travels]
            if vectors is not None:
                vectors[i] = batch["vector"][k]
        done += len(batch["i"])
        if progress is not None:
            progress("signals", done, len(docs))
    return results, vectors


__all__ = ["ensure_ray"]
