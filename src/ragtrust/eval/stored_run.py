"""A stored run read back: its manifest and samples, split into cells and columns.

A run directory written by :mod:`ragtrust.eval.runner` is split into *cells*: one per
(dataset, strategy, K, repeat), each holding the clean Part A samples of its dataset and K
and its own poisoned Part B samples. :func:`arrays` turns a cell's valid samples into the
columns (F, C, P, s_max, T, labels) that the analyses of :mod:`ragtrust.eval.analysis`
recompute from; :func:`recompute_trust` runs them through
:func:`ragtrust.trust.compute_trust` under another configuration.

Samples whose verdict failed (internal error) are excluded from :attr:`Cell.valid` and
counted separately: an error is not a detection.

Example:
    >>> a = arrays([{"F": 0.9, "C": 1.0, "P": 0.1, "T": 0.8, "trusted": True, "label_doc": False}])
    >>> a.labels("document").tolist(), a.trusted.tolist()
    ([False], [True])
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.config import TrustConfig
from ragtrust.errors import InputError
from ragtrust.eval.runner import MANIFEST_FILE, SAMPLES_FILE
from ragtrust.io import iter_jsonl, read_text_file

Label = str  # "document" | "retrieval"


@dataclass(frozen=True)
class StoredRun:
    """A run directory read back: its manifest and samples."""

    path: Path
    manifest: Mapping[str, Any]
    samples: tuple[Mapping[str, Any], ...]

    def trust_config(self) -> TrustConfig:
        """The run's trust configuration (defaults when the manifest has none)."""
        settings = self.manifest.get("settings") or {}
        return TrustConfig.model_validate(settings["trust"]) if "trust" in settings else TrustConfig.model_validate({})


def load_run(run_dir: str | Path) -> StoredRun:
    """Read a run directory.

    Raises:
        InputError: the directory, manifest or samples file is missing or malformed.
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise InputError(f"{path}: no such run directory (create one with `ragtrust eval run --out {path}`)")
    manifest_path, samples_path = path / MANIFEST_FILE, path / SAMPLES_FILE
    partial = path / (SAMPLES_FILE + ".partial")
    if not samples_path.is_file() and partial.is_file():
        raise InputError(
            f"{path}: the run did not finish (interrupted or failed: {partial.name} is what it wrote); "
            f"run `ragtrust eval run --out {path}` again"
        )
    if not samples_path.is_file():
        raise InputError(f"{path}: missing {SAMPLES_FILE}; is this a `ragtrust eval run` directory?")
    manifest: dict[str, Any] = {}
    if manifest_path.is_file():
        try:
            manifest = json.loads(read_text_file(manifest_path))
        except ValueError as exc:
            raise InputError(f"{manifest_path}: invalid JSON ({exc})") from exc
    samples = []
    for lineno, row in iter_jsonl(read_text_file(samples_path).splitlines(), samples_path):
        for key in ("dataset", "part", "k"):
            if key not in row:
                raise InputError(f"{samples_path}:{lineno}: sample without {key!r}")
        samples.append(row)
    if not samples:
        raise InputError(f"{samples_path}: no samples")
    return StoredRun(path=path, manifest=manifest, samples=tuple(samples))


@dataclass(frozen=True)
class Cell:
    """Part A (clean) and Part B (poisoned) samples of one dataset / strategy / K / repeat."""

    dataset: str
    strategy: str
    k: int
    repeat: int
    clean: tuple[Mapping[str, Any], ...]
    poisoned: tuple[Mapping[str, Any], ...]

    @property
    def key(self) -> str:
        """``dataset/strategy/kK/rR``."""
        return f"{self.dataset}/{self.strategy}/k{self.k}/r{self.repeat}"

    @property
    def columns(self) -> dict[str, Any]:
        """The cell's identity as the first columns of a report row: key, dataset, strategy, k, repeat."""
        return {"key": self.key, "dataset": self.dataset, "strategy": self.strategy, "k": self.k, "repeat": self.repeat}

    @property
    def samples(self) -> tuple[Mapping[str, Any], ...]:
        """Every sample, failed ones included."""
        return self.clean + self.poisoned

    @property
    def valid(self) -> tuple[Mapping[str, Any], ...]:
        """Samples whose verdict did not fail (the ones metrics use)."""
        return tuple(s for s in self.samples if not s.get("failed") and s.get("T") is not None)

    @property
    def n_failed(self) -> int:
        """Samples excluded for an internal error."""
        return len(self.samples) - len(self.valid)


def cells(run: StoredRun) -> list[Cell]:
    """The run's cells, in suite order."""
    clean: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    poisoned: dict[tuple[str, str, int, int], list[Mapping[str, Any]]] = {}
    for s in run.samples:
        if s["part"] == "A":
            clean.setdefault((s["dataset"], s["k"]), []).append(s)
        elif s["part"] == "B":
            poisoned.setdefault((s["dataset"], s["strategy"], s["k"], s.get("repeat") or 0), []).append(s)
    return [
        Cell(dataset, strategy, k, repeat, tuple(clean.get((dataset, k), ())), tuple(rows))
        for (dataset, strategy, k, repeat), rows in poisoned.items()
    ]


@dataclass(frozen=True)
class Arrays:
    """Per-sample columns of a cell's valid samples."""

    y_doc: npt.NDArray[np.bool_]
    y_retrieval: npt.NDArray[np.bool_]
    F: npt.NDArray[np.float64]  # noqa: N815 - the paper's symbols
    C: npt.NDArray[np.float64]  # noqa: N815
    P: npt.NDArray[np.float64]  # noqa: N815
    s_max: list[float | None]
    T: npt.NDArray[np.float64]  # noqa: N815
    trusted: npt.NDArray[np.bool_]

    def labels(self, label: Label = "document") -> npt.NDArray[np.bool_]:
        """Document-level (SPEC default) or retrieval-grounded labels."""
        if label not in ("document", "retrieval"):
            raise InputError(f"label must be 'document' or 'retrieval', got {label!r}")
        return self.y_doc if label == "document" else self.y_retrieval


def arrays(samples: Sequence[Mapping[str, Any]]) -> Arrays:
    """Columns of the given (valid) samples."""
    return Arrays(
        y_doc=np.array([bool(s.get("label_doc")) for s in samples], dtype=bool),
        y_retrieval=np.array([bool(s.get("label_retrieval")) for s in samples], dtype=bool),
        F=np.array([float(s["F"]) for s in samples]),
        C=np.array([float(s["C"]) for s in samples]),
        P=np.array([float(s["P"]) for s in samples]),
        s_max=[None if s.get("s_max") is None else float(s["s_max"]) for s in samples],
        T=np.array([float(s["T"]) for s in samples]),
        trusted=np.array([bool(s.get("trusted")) for s in samples], dtype=bool),
    )


def _compute_trust() -> Any:
    from ragtrust.trust import compute_trust

    return compute_trust


def recompute_trust(a: Arrays, config: TrustConfig) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """T_final and the decision for every sample under ``config`` (via ``compute_trust``)."""
    compute = _compute_trust()
    scores, trusted = np.zeros(a.T.size), np.zeros(a.T.size, dtype=bool)
    for i in range(a.T.size):
        r = compute(float(a.F[i]), float(a.C[i]), float(a.P[i]), a.s_max[i], config)
        scores[i], trusted[i] = r.trust_score, r.trusted
    return scores, trusted


def updated_config(base: TrustConfig, **update: float) -> TrustConfig:
    """``base`` with ``update`` applied, its level cut points widened to admit the new tau."""
    data = base.model_dump()
    data.update(update)
    tau = data["tau"]
    data["level_low"], data["level_high"] = min(data["level_low"], tau), max(data["level_high"], tau)
    return TrustConfig.model_validate(data)


def signal_names(run: StoredRun) -> list[str]:
    """Names of the screening signals stored in the run's per-document records, sorted."""
    names = {name for s in run.samples for d in s.get("retrieved") or () for name in (d.get("signals") or {})}
    return sorted(names)


def consistency_check(run: StoredRun) -> float | None:
    """Largest |stored T - T recomputed from stored F, C, P, s_max| over valid samples."""
    valid = [s for s in run.samples if not s.get("failed") and s.get("T") is not None]
    if not valid:
        return None
    a = arrays(valid)
    scores, _ = recompute_trust(a, run.trust_config())
    return float(np.max(np.abs(scores - a.T)))


__all__ = [
    "Arrays",
    "Cell",
    "Label",
    "StoredRun",
    "arrays",
    "cells",
    "consistency_check",
    "load_run",
    "recompute_trust",
    "signal_names",
    "updated_config",
]
