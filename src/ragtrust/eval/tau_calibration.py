"""Calibrating tau on a stored run: fit it on clean calibration samples, evaluate it on the rest.

tau = the 10th percentile of the held-out clean calibration scores (:func:`percentile_tau`),
evaluated before/after on the disjoint Part A + Part B cells and written as a JSON file that
``TrustGate`` loads (``ragtrust.pipeline.load_calibration``). A fit is refused below
:data:`MIN_CALIBRATION_SAMPLES` clean samples unless forced; :func:`level_bands` shows the
levels the new tau makes.

Example:
    >>> percentile_tau([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0, 1.0], 10)
    0.1
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.config import TrustConfig
from ragtrust.errors import InputError
from ragtrust.eval.metrics import confusion
from ragtrust.eval.stored_run import Label, StoredRun, arrays, cells, updated_config
from ragtrust.io import atomic_write_text
from ragtrust.record import utc_iso

#: Fewest clean calibration samples ``ragtrust eval calibrate`` fits tau on. tau is a low
#: percentile of them, which few samples cannot pin down: the 10th percentile of 20 samples
#: lies between the 2nd and 3rd smallest, so one odd sample moves tau. 50 puts 5 samples
#: below a 10th percentile (the default ``eval run --n 50`` gives 25 per dataset and K).
MIN_CALIBRATION_SAMPLES = 50


def percentile_tau(scores: Iterable[float], percentile: float = 10.0) -> float:
    """The calibrated threshold: the ``percentile``-th percentile (linear) of clean scores."""
    values = np.asarray([float(s) for s in scores], dtype=float)
    if values.size == 0:
        raise InputError("calibration needs at least one clean calibration sample")
    if not 0.0 < percentile < 100.0:
        raise InputError(f"percentile must be in (0, 100), got {percentile}")
    return float(np.percentile(values, percentile))


def level_bands(config: TrustConfig) -> list[dict[str, Any]]:
    """The T interval of each level under ``config`` (``ragtrust.trust.trust_level``).

    Intervals are half-open, ``low <= T < high``; ``None`` is an open end. A band whose
    ``low`` equals its ``high`` is empty (tau on a level cut point). Every trusted verdict is
    MEDIUM or HIGH; a verdict flagged on a condition besides T reads at most LOW.

    Example:
        >>> for band in level_bands(TrustConfig(tau=0.42)):
        ...     print(f"{band['level']}: {band['text']}")
        HIGH: T >= 0.800
        MEDIUM: 0.420 <= T < 0.800
        LOW: 0.300 <= T < 0.420
        VERY LOW: T < 0.300
    """
    cuts = [
        ("HIGH", config.level_high, None),
        ("MEDIUM", config.tau, config.level_high),
        ("LOW", config.level_low, config.tau),
        ("VERY LOW", None, config.level_low),
    ]
    bands = []
    for level, low, high in cuts:
        if low is not None and high is not None:
            text = f"{low:.3f} <= T < {high:.3f}" if low < high else "(empty)"
        else:
            text = f"T >= {low:.3f}" if low is not None else f"T < {high:.3f}"
        bands.append({"level": level, "low": low, "high": high, "text": text})
    return bands


@dataclass(frozen=True)
class CalibrationResult:
    """A calibrated tau and its before/after evaluation on disjoint samples.

    ``level_low`` and ``level_high`` are the run's level cut points, widened to admit the
    new tau as ``TrustGate`` widens its own (``ragtrust.pipeline.apply_calibration``).
    ``below_minimum``: tau was fitted on fewer than ``min_samples`` clean samples (forced).
    """

    tau: float
    tau_before: float
    percentile: float
    n: int
    datasets: tuple[str, ...]
    k: int | None
    generator: str
    before_after: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    min_samples: int = 0
    level_low: float = 0.3
    level_high: float = 0.8

    @property
    def below_minimum(self) -> bool:
        """Whether tau comes from fewer clean samples than ``min_samples``."""
        return self.n < self.min_samples

    def levels(self) -> list[dict[str, Any]]:
        """The T interval of each level with the calibrated tau (:func:`level_bands`)."""
        return level_bands(TrustConfig(tau=self.tau, level_low=self.level_low, level_high=self.level_high))

    def to_file_dict(self) -> dict[str, Any]:
        """The calibration file's content (``TrustGate`` reads ``tau`` and ignores the rest)."""
        return {
            "tau": self.tau,
            "generator": self.generator,
            "n": self.n,
            "min_samples": self.min_samples,
            "below_minimum": self.below_minimum,
            "percentile": self.percentile,
            "created": utc_iso(),
            "datasets": list(self.datasets),
            "k": self.k,
            "tau_before": self.tau_before,
        }


def calibrate(
    run: StoredRun,
    *,
    dataset: str | None = None,
    k: int | None = None,
    percentile: float | None = None,
    label: Label = "document",
    min_samples: int = 0,
    force: bool = False,
) -> CalibrationResult:
    """Fit tau on the calibration split and evaluate it on the disjoint Part A + B cells.

    Args:
        run: the stored run.
        dataset: calibrate on this dataset only (default: all).
        k: use samples of this K only (default: all).
        percentile: percentile of the clean scores (default: the run's, else 10).
        label: the label of the before/after evaluation.
        min_samples: fewest clean calibration samples to fit on (``ragtrust eval calibrate``
            passes :data:`MIN_CALIBRATION_SAMPLES`; 0 checks nothing, as the report does).
        force: fit below ``min_samples`` anyway; the result says ``below_minimum``.

    Raises:
        InputError: no calibration samples for the selection, or fewer than ``min_samples``
            without ``force``.
    """
    settings = run.manifest.get("settings") or {}
    if percentile is None:
        percentile = float((settings.get("eval") or {}).get("calibration_percentile", 10.0))
    selected = [
        s
        for s in run.samples
        if s["part"] == "calib" and (dataset is None or s["dataset"] == dataset) and (k is None or s["k"] == k)
    ]
    calib = [s for s in selected if not s.get("failed") and s.get("T") is not None]
    if not calib:
        failed = f" ({len(selected)} failed: their verdicts errored)" if selected else ""
        raise InputError(f"{run.path}: no calibration samples for dataset={dataset or 'any'} k={k or 'any'}{failed}")
    if len(calib) < min_samples and not force:
        raise InputError(
            f"{run.path}: only {len(calib)} clean calibration samples for dataset={dataset or 'any'} "
            f"k={k or 'any'}, fewer than the minimum {min_samples} (a percentile of so few is noise); "
            "run more calibration queries (`ragtrust eval run --n-calib N`), lower --min-samples, "
            "or pass --force to calibrate anyway"
        )
    tau = percentile_tau([s["T"] for s in calib], percentile)
    config = run.trust_config()
    calibrated = updated_config(config, tau=tau)
    rows = []
    for cell in cells(run):
        if (dataset is not None and cell.dataset != dataset) or (k is not None and cell.k != k):
            continue
        a = arrays(cell.valid)
        y = a.labels(label)
        # the decision asks more than T >= tau (an answer grounded in the documents, no
        # suspicious document used, ...): a verdict flagged at or above its own tau failed one
        # of those, and a new tau does not lift it
        stored_tau = np.array([config.tau if s.get("tau") is None else float(s["tau"]) for s in cell.valid])
        flagged_otherwise = ~a.trusted & (stored_tau <= a.T)
        before = confusion(y, ~a.trusted).to_dict()
        after = confusion(y, flagged_otherwise | (tau > a.T)).to_dict()
        rows.append({"key": cell.key, "before": before, "after": after})
    generator = str(run.manifest.get("generator") or (settings.get("generator") or {}).get("type", "extractive"))
    return CalibrationResult(
        tau=tau,
        tau_before=config.tau,
        percentile=percentile,
        n=len(calib),
        datasets=tuple(sorted({s["dataset"] for s in calib})),
        k=k,
        generator=generator,
        before_after=tuple(rows),
        min_samples=min_samples,
        level_low=calibrated.level_low,
        level_high=calibrated.level_high,
    )


def write_calibration(result: CalibrationResult, path: str | Path) -> dict[str, Any]:
    """Write the calibration file atomically and return its content."""
    data = result.to_file_dict()
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")
    return data


__all__ = [
    "MIN_CALIBRATION_SAMPLES",
    "CalibrationResult",
    "calibrate",
    "level_bands",
    "percentile_tau",
    "write_calibration",
]
