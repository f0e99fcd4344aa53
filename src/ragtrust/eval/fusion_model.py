"""The learned fusion's model: a monotone logistic regression with a probability calibrator.

:func:`train_fusion` fits scikit-learn's ``LogisticRegression`` on one (training) run,
dropping the most negative signal and refitting until every kept signal weighs >= 0, then
calibrates it with ``CalibratedClassifierCV(ensemble=False)`` (Platt ``sigmoid`` below
:data:`ISOTONIC_MIN_EXAMPLES` examples, else ``isotonic``). A :class:`FusionModel` is applied
with numpy alone and stored as plain JSON; see :mod:`ragtrust.eval.fusion` for the method
and its evaluation.

Example:
    >>> import numpy as np
    >>> model = FusionModel(("a",), (2.0,), -1.0, Calibration("sigmoid", a=-1.0, b=0.0))
    >>> model.linear_score(np.array([[1.0]])).tolist(), FusionModel.from_dict(model.to_dict()) == model
    ([1.0], True)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ragtrust.errors import InputError, MissingDependencyError
from ragtrust.eval.fusion_examples import SKIPPED_SUFFIX, BoolArray, FloatArray
from ragtrust.eval.metrics import EVAL_INSTALL
from ragtrust.eval.query_recall import QUERY_FPR, fpr_threshold
from ragtrust.io import atomic_write_text, read_text_file

CalibrationMethod = Literal["auto", "sigmoid", "isotonic"]

FUSION_FORMAT = "ragtrust-fusion/1"
#: Below this many training examples the calibrator is Platt's sigmoid (2 parameters), at
#: or above it isotonic: scikit-learn's guide warns isotonic overfits with << 1000 samples.
ISOTONIC_MIN_EXAMPLES = 1000
#: Folds of the out-of-fold scores the calibrator is fitted on.
CV_FOLDS = 5
#: Inverse L2 strength of the logistic regression (scikit-learn's default; features are
#: scores in [0, 1], so no scaling is needed).
REGULARIZATION_C = 1.0


def _sklearn() -> Any:
    try:
        import sklearn
    except ImportError as exc:
        raise MissingDependencyError("the learned fusion (scikit-learn)", EVAL_INSTALL) from exc
    return sklearn


@dataclass(frozen=True)
class Calibration:
    """The monotone map from the linear score to a probability.

    ``sigmoid``: ``p = 1 / (1 + exp(a * z + b))`` (Platt; ``a < 0``). ``isotonic``: linear
    interpolation through the points ``(x, y)``, clipped at both ends.
    """

    method: Literal["sigmoid", "isotonic"]
    a: float = 0.0
    b: float = 0.0
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()

    def __call__(self, z: FloatArray) -> FloatArray:
        """Probabilities for linear scores ``z``."""
        if self.method == "sigmoid":
            return np.asarray(1.0 / (1.0 + np.exp(self.a * z + self.b)), dtype=float)
        return np.asarray(np.interp(z, np.asarray(self.x), np.asarray(self.y)), dtype=float)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        if self.method == "sigmoid":
            return {"method": "sigmoid", "a": self.a, "b": self.b}
        return {"method": "isotonic", "x": list(self.x), "y": list(self.y)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        """Inverse of :meth:`to_dict`."""
        method = data.get("method")
        if method == "sigmoid":
            return cls("sigmoid", a=float(data["a"]), b=float(data["b"]))
        if method == "isotonic":
            return cls("isotonic", x=tuple(map(float, data["x"])), y=tuple(map(float, data["y"])))
        raise InputError(f"calibration method must be 'sigmoid' or 'isotonic', got {method!r}")


@dataclass(frozen=True)
class FusionModel:
    """A logistic fusion of the signals with a probability calibrator.

    ``coefficients`` align with ``feature_names``; a dropped feature has coefficient 0 and
    its coefficient at the time it was dropped in ``dropped``. ``threshold`` flags
    ``probability > threshold`` at ``fpr`` of the training run's clean documents.
    """

    feature_names: tuple[str, ...]
    coefficients: tuple[float, ...]
    intercept: float
    calibration: Calibration
    dropped: Mapping[str, float] = field(default_factory=dict)
    threshold: float | None = None
    fpr: float = QUERY_FPR
    training: Mapping[str, Any] = field(default_factory=dict)
    sklearn_version: str = ""

    @property
    def kept(self) -> tuple[str, ...]:
        """The features the model uses."""
        return tuple(f for f in self.feature_names if f not in self.dropped)

    def _check(self, X: FloatArray) -> FloatArray:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != len(self.feature_names):
            raise InputError(
                f"expected a (n, {len(self.feature_names)}) matrix of {', '.join(self.feature_names)}, "
                f"got shape {X.shape}"
            )
        return X

    def linear_score(self, X: FloatArray) -> FloatArray:
        """``X @ coefficients + intercept`` (the logit before calibration)."""
        return np.asarray(self._check(X) @ np.asarray(self.coefficients) + self.intercept, dtype=float)

    def predict_proba(self, X: FloatArray) -> FloatArray:
        """Calibrated probability that each row's document is poisoned."""
        return self.calibration(self.linear_score(X))

    def contributions(self, row: Sequence[float]) -> dict[str, float]:
        """Per-feature share of the linear score (coefficient x value), to read *why*."""
        return {f: c * float(v) for f, c, v in zip(self.feature_names, self.coefficients, row, strict=True) if c}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (no pickle)."""
        return {
            "format": FUSION_FORMAT,
            "feature_names": list(self.feature_names),
            "coefficients": list(self.coefficients),
            "intercept": self.intercept,
            "dropped": dict(self.dropped),
            "calibration": self.calibration.to_dict(),
            "threshold": self.threshold,
            "fpr": self.fpr,
            "training": dict(self.training),
            "sklearn_version": self.sklearn_version,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FusionModel:
        """Inverse of :meth:`to_dict`.

        Raises:
            InputError: another format, or coefficients that do not match the features.
        """
        if data.get("format") != FUSION_FORMAT:
            raise InputError(f"not a fusion model: format {data.get('format')!r}, expected {FUSION_FORMAT!r}")
        names, coefs = tuple(data["feature_names"]), tuple(map(float, data["coefficients"]))
        if len(names) != len(coefs):
            raise InputError(f"{len(coefs)} coefficients for {len(names)} features")
        threshold = data.get("threshold")
        return cls(
            feature_names=names,
            coefficients=coefs,
            intercept=float(data["intercept"]),
            calibration=Calibration.from_dict(data["calibration"]),
            dropped={str(k): float(v) for k, v in (data.get("dropped") or {}).items()},
            threshold=None if threshold is None else float(threshold),
            fpr=float(data.get("fpr", QUERY_FPR)),
            training=dict(data.get("training") or {}),
            sklearn_version=str(data.get("sklearn_version", "")),
        )

    def save(self, path: str | Path) -> Path:
        """Write the model as JSON; returns the path."""
        atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")
        return Path(path)

    @classmethod
    def load(cls, path: str | Path) -> FusionModel:
        """Read a model written by :meth:`save`."""
        try:
            data = json.loads(read_text_file(path))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: invalid JSON ({exc.msg})") from exc
        return cls.from_dict(data)


def _logistic(c: float) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=2000)


def _monotone_features(
    X: FloatArray, y: BoolArray, names: Sequence[str], c: float, constrained: set[str]
) -> tuple[list[int], dict[str, float]]:
    """Drop the most negative constrained feature and refit until none is negative."""
    kept, dropped = list(range(len(names))), dict[str, float]()
    while kept:
        coef = _logistic(c).fit(X[:, kept], y).coef_[0]
        negative = [(w, j) for w, j in zip(coef, kept, strict=True) if names[j] in constrained and w < 0]
        if not negative:
            return kept, dropped
        w, j = min(negative)
        dropped[names[j]] = float(w)
        kept.remove(j)
    raise InputError("every signal has a negative coefficient: nothing is positively related to the label")


def train_fusion(
    X: FloatArray,
    y: BoolArray,
    feature_names: Sequence[str],
    *,
    method: CalibrationMethod = "auto",
    cv: int = CV_FOLDS,
    seed: int = 0,
    c: float = REGULARIZATION_C,
    fpr: float = QUERY_FPR,
    training: Mapping[str, Any] | None = None,
) -> FusionModel:
    """Fit the monotone logistic fusion and its calibrator on one (training) run.

    Args:
        X: document features, one row per document (:func:`document_examples`).
        y: true where the document was poisoned.
        feature_names: the columns of ``X``; ``*:skipped`` indicators are not sign-constrained.
        method: ``auto`` (sigmoid below :data:`ISOTONIC_MIN_EXAMPLES` examples), ``sigmoid``
            or ``isotonic``.
        cv: folds of the out-of-fold scores the calibrator is fitted on.
        seed: shuffles the folds.
        c: inverse L2 strength.
        fpr: budget of the stored threshold (fitted on the clean rows of ``X``).
        training: provenance to store (the training run's manifest summary).

    Raises:
        InputError: shapes disagree, one class only, fewer than ``cv`` examples of a
            class, or no signal positively related to the label.
    """
    sklearn = _sklearn()
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.model_selection import StratifiedKFold

    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=bool)
    names = tuple(feature_names)
    if X.ndim != 2 or X.shape != (y.size, len(names)):
        raise InputError(f"X must be (n, {len(names)}) with n = len(y) = {y.size}, got {X.shape}")
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if min(n_pos, n_neg) < max(cv, 2):
        raise InputError(f"need at least {max(cv, 2)} poisoned and clean examples, got {n_pos} and {n_neg}")
    constrained = {n for n in names if not n.endswith(SKIPPED_SUFFIX)}
    kept, dropped = _monotone_features(X, y, names, c, constrained)
    chosen = method if method != "auto" else ("sigmoid" if y.size < ISOTONIC_MIN_EXAMPLES else "isotonic")
    if chosen not in ("sigmoid", "isotonic"):
        raise InputError(f"method must be auto, sigmoid or isotonic, got {method!r}")
    folds = StratifiedKFold(n_splits=cv, shuffle=True, random_state=seed)
    fitted = CalibratedClassifierCV(_logistic(c), method=chosen, cv=folds, ensemble=False).fit(X[:, kept], y)
    inner = fitted.calibrated_classifiers_[0]
    estimator, calibrator = inner.estimator, inner.calibrators[0]
    coefficients = [0.0] * len(names)
    for w, j in zip(estimator.coef_[0], kept, strict=True):
        coefficients[j] = float(w)
    if chosen == "sigmoid":
        if calibrator.a_ >= 0:  # p = expit(-(a z + b)) would fall as the score rises
            raise InputError("the calibrator decreases with the fused score: the signals do not separate the labels")
        calibration = Calibration("sigmoid", a=float(calibrator.a_), b=float(calibrator.b_))
    else:
        calibration = Calibration(
            "isotonic", x=tuple(map(float, calibrator.X_thresholds_)), y=tuple(map(float, calibrator.y_thresholds_))
        )
    model = FusionModel(
        feature_names=names,
        coefficients=tuple(coefficients),
        intercept=float(estimator.intercept_[0]),
        calibration=calibration,
        dropped=dropped,
        fpr=fpr,
        training={
            **dict(training or {}),
            "n_examples": int(y.size),
            "n_poisoned": n_pos,
            "c": c,
            "cv": cv,
            "seed": seed,
            "method": chosen,
        },
        sklearn_version=str(sklearn.__version__),
    )
    threshold = fpr_threshold(model.predict_proba(X[~y]), fpr)
    return replace(model, threshold=threshold)


__all__ = [
    "CV_FOLDS",
    "FUSION_FORMAT",
    "ISOTONIC_MIN_EXAMPLES",
    "REGULARIZATION_C",
    "Calibration",
    "CalibrationMethod",
    "FusionModel",
    "train_fusion",
]
