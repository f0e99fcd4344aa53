"""Detection metrics with honest uncertainty (SPEC section 8).

Conventions: a *positive* is a poisoned sample; a *predicted positive* is a flagged sample
(not trusted). Scores for ROC/PR curves are suspicion scores ``1 - T`` so that higher
means "more likely poisoned". Every interval is computed from the per-sample outcomes that
were passed in - never from hard-coded counts.

- proportions (accuracy, precision, recall): Wilson score intervals;
- F1: percentile bootstrap with B = 20,000 resamples of the per-sample (label, prediction)
  pairs, vectorised with numpy and seeded;
- Delta (trust separation) = mean(T | clean) - mean(T | poisoned);
- ROC-AUC and PR-AUC (average precision) from scikit-learn; ``None`` when only one class
  is present;
- the naive always-trust baseline predicts "clean" for every sample.

Example:
    >>> c = confusion([1, 1, 0, 0], [1, 0, 0, 1])
    >>> (c.tp, c.fp, c.tn, c.fn, c.accuracy, c.f1)
    (1, 1, 1, 1, 0.5, 0.5)
    >>> lo, hi = wilson_interval(8, 10)
    >>> round(lo, 3), round(hi, 3)
    (0.49, 0.943)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.errors import InputError, MissingDependencyError

#: the extra that brings scikit-learn and SciPy (the base install has neither)
EVAL_INSTALL = "pip install 'ragtrust[eval]'"

ArrayLike = Sequence[float] | Sequence[int] | Sequence[bool] | npt.NDArray[Any]
BOOTSTRAP_B = 20_000


def _as_bool(values: ArrayLike, name: str) -> npt.NDArray[np.bool_]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr.astype(bool)


@dataclass(frozen=True)
class Confusion:
    """A binary confusion matrix (positive = poisoned, predicted positive = flagged)."""

    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def n(self) -> int:
        """Number of samples."""
        return self.tp + self.fp + self.tn + self.fn

    @property
    def accuracy(self) -> float | None:
        """(TP + TN) / n; ``None`` for no samples."""
        return (self.tp + self.tn) / self.n if self.n else None

    @property
    def precision(self) -> float | None:
        """TP / (TP + FP); ``None`` (n/a) when nothing was flagged."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """TP / (TP + FN); ``None`` when there are no positives."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        """2TP / (2TP + FP + FN); ``None`` when there are no positives and no flags."""
        denom = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / denom if denom else None

    @property
    def false_positive_rate(self) -> float | None:
        """FP / (FP + TN): clean samples wrongly flagged."""
        return self.fp / (self.fp + self.tn) if self.fp + self.tn else None

    def to_dict(self) -> dict[str, Any]:
        """Counts and rates as plain JSON."""
        return {
            **asdict(self),
            "n": self.n,
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "false_positive_rate": self.false_positive_rate,
        }


def confusion(y_true: ArrayLike, y_pred: ArrayLike) -> Confusion:
    """The confusion matrix of boolean labels (True = poisoned) and predictions (True = flagged)."""
    t, p = _as_bool(y_true, "y_true"), _as_bool(y_pred, "y_pred")
    if t.shape != p.shape:
        raise InputError(f"y_true and y_pred differ in length: {t.size} vs {p.size}")
    return Confusion(tp=int(np.sum(t & p)), fp=int(np.sum(~t & p)), tn=int(np.sum(~t & ~p)), fn=int(np.sum(t & ~p)))


def sklearn_metrics() -> Any:
    """``sklearn.metrics``; without scikit-learn, the error names the extra that brings it."""
    try:
        from sklearn import metrics
    except ImportError as exc:
        raise MissingDependencyError("ROC / PR metrics (scikit-learn)", EVAL_INSTALL) from exc
    return metrics


def _normal_quantile(q: float) -> float:
    try:
        from scipy.stats import norm
    except ImportError as exc:
        raise MissingDependencyError("confidence intervals (SciPy)", EVAL_INSTALL) from exc
    return float(norm.ppf(q))


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of a proportion; ``None`` when ``n == 0``.

    Example:
        >>> wilson_interval(0, 10)[0], round(wilson_interval(0, 10)[1], 4)
        (0.0, 0.2775)
    """
    if n < 0 or successes < 0 or successes > n:
        raise InputError(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return None
    z = _normal_quantile(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _f1_from_counts(tp: npt.NDArray[Any], fp: npt.NDArray[Any], fn: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    denom = 2 * tp + fp + fn
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), np.nan)


def bootstrap_metric(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    metric: str = "f1",
    *,
    b: int = BOOTSTRAP_B,
    seed: int = 42,
    confidence: float = 0.95,
    block: int = 2_000,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of a confusion-based metric.

    Each of the ``b`` resamples draws ``n`` samples with replacement from the per-sample
    (label, prediction) pairs; resamples where the metric is undefined are ignored.

    Args:
        y_true: True for poisoned samples.
        y_pred: True for flagged samples.
        metric: ``f1``, ``accuracy``, ``precision`` or ``recall``.
        b: number of resamples (SPEC: 20,000).
        seed: random seed of the resampling.
        confidence: coverage of the interval.
        block: resamples drawn per vectorised block (bounds memory).

    Returns:
        ``(low, high)`` or ``None`` when there are no samples or the metric is never defined.
    """
    t, p = _as_bool(y_true, "y_true"), _as_bool(y_pred, "y_pred")
    if t.shape != p.shape:
        raise InputError("y_true and y_pred differ in length")
    if b < 1:
        raise InputError(f"bootstrap needs b >= 1, got {b}")
    n = t.size
    if n == 0:
        return None
    kinds: dict[str, Callable[..., npt.NDArray[np.float64]]] = {
        "f1": lambda tp, fp, tn, fn: _f1_from_counts(tp, fp, fn),
        "accuracy": lambda tp, fp, tn, fn: (tp + tn) / n,
        "precision": lambda tp, fp, tn, fn: np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), np.nan),
        "recall": lambda tp, fp, tn, fn: np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1), np.nan),
    }
    if metric not in kinds:
        raise InputError(f"unknown bootstrap metric {metric!r}; valid: {', '.join(kinds)}")
    rng = np.random.default_rng(seed)
    tp_s, fp_s, tn_s = (t & p).astype(np.int32), (~t & p).astype(np.int32), (~t & ~p).astype(np.int32)
    values: list[npt.NDArray[np.float64]] = []
    for start in range(0, b, block):
        size = min(block, b - start)
        idx = rng.integers(0, n, size=(size, n))
        tp, fp, tn = tp_s[idx].sum(axis=1), fp_s[idx].sum(axis=1), tn_s[idx].sum(axis=1)
        fn = n - tp - fp - tn
        values.append(kinds[metric](tp, fp, tn, fn).astype(np.float64))
    stats = np.concatenate(values)
    stats = stats[~np.isnan(stats)]
    if stats.size == 0:
        return None
    alpha = (1 - confidence) / 2
    return float(np.quantile(stats, alpha)), float(np.quantile(stats, 1 - alpha))


def roc_auc(y_true: ArrayLike, suspicion: ArrayLike) -> float | None:
    """ROC-AUC of suspicion scores (higher = more likely poisoned); ``None`` with one class."""
    t = _as_bool(y_true, "y_true")
    if t.all() or not t.any():
        return None
    return float(sklearn_metrics().roc_auc_score(t, np.asarray(suspicion, dtype=float)))


def pr_auc(y_true: ArrayLike, suspicion: ArrayLike) -> float | None:
    """PR-AUC (average precision) of suspicion scores; ``None`` with one class."""
    t = _as_bool(y_true, "y_true")
    if t.all() or not t.any():
        return None
    return float(sklearn_metrics().average_precision_score(t, np.asarray(suspicion, dtype=float)))


def roc_curve_points(y_true: ArrayLike, suspicion: ArrayLike) -> tuple[list[float], list[float]] | None:
    """(FPR, TPR) points of the ROC curve, for plots; ``None`` with one class."""
    t = _as_bool(y_true, "y_true")
    if t.all() or not t.any():
        return None
    fpr, tpr, _ = sklearn_metrics().roc_curve(t, np.asarray(suspicion, dtype=float))
    return fpr.tolist(), tpr.tolist()


def trust_separation(y_true: ArrayLike, trust: ArrayLike) -> float | None:
    """Delta = mean(T | clean) - mean(T | poisoned); ``None`` when a class is missing."""
    t = _as_bool(y_true, "y_true")
    scores = np.asarray(trust, dtype=float)
    if t.all() or not t.any():
        return None
    return float(scores[~t].mean() - scores[t].mean())


def naive_baseline(y_true: ArrayLike) -> Confusion:
    """The always-trust baseline: nothing is flagged."""
    t = _as_bool(y_true, "y_true")
    return confusion(t, np.zeros_like(t))


def mean_sd(values: Sequence[float | None]) -> tuple[float, float] | None:
    """Mean and sample standard deviation (ddof=1; 0 for one value), ignoring ``None``."""
    clean = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not clean:
        return None
    arr = np.asarray(clean)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0


@dataclass(frozen=True)
class DetectionReport:
    """Everything SPEC section 8 reports for one set of samples."""

    confusion: Confusion
    accuracy_ci: tuple[float, float] | None
    precision_ci: tuple[float, float] | None
    recall_ci: tuple[float, float] | None
    f1_ci: tuple[float, float] | None
    delta: float | None
    roc_auc: float | None
    pr_auc: float | None
    baseline: Confusion
    n_positive: int
    mean_trust_clean: float | None
    mean_trust_poisoned: float | None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return {
            **self.confusion.to_dict(),
            "accuracy_ci": self.accuracy_ci,
            "precision_ci": self.precision_ci,
            "recall_ci": self.recall_ci,
            "f1_ci": self.f1_ci,
            "delta": self.delta,
            "roc_auc": self.roc_auc,
            "pr_auc": self.pr_auc,
            "n_positive": self.n_positive,
            "mean_trust_clean": self.mean_trust_clean,
            "mean_trust_poisoned": self.mean_trust_poisoned,
            "baseline": self.baseline.to_dict(),
        }


def evaluate(
    y_true: ArrayLike,
    trust: ArrayLike,
    flagged: ArrayLike,
    *,
    bootstrap: int = BOOTSTRAP_B,
    seed: int = 42,
    confidence: float = 0.95,
) -> DetectionReport:
    """All detection metrics for per-sample labels, trust scores and decisions.

    Args:
        y_true: True for poisoned samples.
        trust: T_final per sample (suspicion for the curves is ``1 - T``).
        flagged: True where the verdict was not trusted.
        bootstrap: resamples for the F1 interval.
        seed: random seed of the bootstrap.
        confidence: coverage of every interval.

    Example:
        >>> r = evaluate([0, 0, 1, 1], [0.9, 0.8, 0.3, 0.6], [0, 0, 1, 0], bootstrap=200)
        >>> r.confusion.recall, r.roc_auc, round(r.delta, 2)
        (0.5, 1.0, 0.4)
    """
    t = _as_bool(y_true, "y_true")
    scores = np.asarray(trust, dtype=float)
    pred = _as_bool(flagged, "flagged")
    if not t.size == scores.size == pred.size:
        raise InputError("labels, trust scores and decisions must have the same length")
    c = confusion(t, pred)
    suspicion = 1.0 - scores
    return DetectionReport(
        confusion=c,
        accuracy_ci=wilson_interval(c.tp + c.tn, c.n, confidence),
        precision_ci=wilson_interval(c.tp, c.tp + c.fp, confidence),
        recall_ci=wilson_interval(c.tp, c.tp + c.fn, confidence),
        f1_ci=bootstrap_metric(t, pred, "f1", b=bootstrap, seed=seed, confidence=confidence),
        delta=trust_separation(t, scores),
        roc_auc=roc_auc(t, suspicion),
        pr_auc=pr_auc(t, suspicion),
        baseline=naive_baseline(t),
        n_positive=int(t.sum()),
        mean_trust_clean=float(scores[~t].mean()) if (~t).any() else None,
        mean_trust_poisoned=float(scores[t].mean()) if t.any() else None,
    )


__all__ = [
    "BOOTSTRAP_B",
    "EVAL_INSTALL",
    "Confusion",
    "DetectionReport",
    "bootstrap_metric",
    "confusion",
    "evaluate",
    "mean_sd",
    "naive_baseline",
    "pr_auc",
    "roc_auc",
    "roc_curve_points",
    "sklearn_metrics",
    "trust_separation",
    "wilson_interval",
]
