"""A learned, calibrated fusion of the Stage-1 signals, evaluated on held-out families (issue 16).

Evaluation only: the pipeline still fuses the signals with SPEC section 3's noisy-OR. This
module measures whether a small learned model would do better, honestly:

- **Examples** (:func:`document_examples`): one per *document* of a stored run
  (``ragtrust eval run``), features = the per-signal scores, label = the document was
  poisoned. A document retrieved by several queries counts once: clean documents by
  (dataset, id) (every clean corpus of a dataset holds the same text), poisoned ones by
  (dataset, id, sha256 of the poisoned text from ``attacks/``; strategy and repeat when
  the attack file is missing). The first occurrence in sample order is kept: the
  neighbour-dependent signals (``cross_consistency``, ``semantic_outlier``) differ a
  little between occurrences and a mean would be a vector the gate never sees.
- **Skipped signals** read 0 ("nothing suspicious"), as in the noisy-OR. *No* "skipped"
  indicator by default: whether a signal ran is mostly the document's format (the intra
  signal skips one-sentence documents), and the issue names such format leaks a defect.
  ``skipped_flags=True`` adds one indicator per signal that was ever skipped, for the
  ablation that shows what they would add.
- **Model** (:func:`train_fusion`): scikit-learn ``LogisticRegression`` on the training
  run only. Monotone by construction, approximately: scikit-learn has no sign constraint,
  so after each fit the signal with the most negative coefficient is dropped and the model
  refit, until every kept signal weighs >= 0 (a more suspicious signal can then never lower
  the fused probability). Skipped indicators are not constrained (they are not suspicion
  scores). Then probability calibration with ``CalibratedClassifierCV(ensemble=False)``:
  out-of-fold scores of the training run fit one calibrator (Platt ``sigmoid`` below
  :data:`ISOTONIC_MIN_EXAMPLES` examples, where isotonic overfits, else ``isotonic``), and
  the final model is the regression fitted on the whole training run, so the fused
  probability is calibrator(linear score): one monotone map of one linear score. A Platt
  slope of the wrong sign is refused.
- **Metrics** (:func:`evaluate`): ROC-AUC, recall at <= 2% FPR with the threshold fitted
  on the *training* run's clean documents (never on the evaluated ones), realised FPR,
  ECE over :data:`ECE_BINS` equal-width bins; for the learned model, the noisy-OR
  ``P_i`` the run stored, and each single signal; overall, per dataset and per attack
  strategy.
- **Storage** (:meth:`FusionModel.save`): plain JSON (feature names, coefficients,
  intercept, calibrator parameters, threshold, training run, scikit-learn version); no pickle.

Example (a toy, separable by the first feature):
    >>> import numpy as np
    >>> X = np.array([[0.1, 0.5], [0.2, 0.1], [0.9, 0.4], [0.8, 0.2]] * 10)
    >>> y = np.array([False, False, True, True] * 10)
    >>> model = train_fusion(X, y, ("a", "b"), cv=2)
    >>> model.calibration.method, model.kept
    ('sigmoid', ('a', 'b'))
    >>> bool(model.predict_proba(np.array([[0.9, 0.3]]))[0] > model.predict_proba(np.array([[0.1, 0.3]]))[0])
    True
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from ragtrust.errors import InputError, MissingDependencyError
from ragtrust.eval.analysis import QUERY_FPR, StoredRun, fpr_threshold, load_run, signal_names
from ragtrust.eval.metrics import EVAL_INSTALL, roc_auc, wilson_interval
from ragtrust.eval.runner import ATTACKS_DIR, SAMPLES_FILE
from ragtrust.io import atomic_write_text, read_text_file

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
CalibrationMethod = Literal["auto", "sigmoid", "isotonic"]

FUSION_FORMAT = "ragtrust-fusion/1"
REPORT_FORMAT = "ragtrust-fusion-report/1"
#: Suffix of a skipped-indicator feature (``intra_consistency:skipped``).
SKIPPED_SUFFIX = ":skipped"
#: Bins of the expected calibration error (equal width on [0, 1]; Guo et al. 2017 use 15,
#: 10 is the common choice for a few thousand examples).
ECE_BINS = 10
#: Below this many training examples the calibrator is Platt's sigmoid (2 parameters), at
#: or above it isotonic: scikit-learn's guide warns isotonic overfits with << 1000 samples.
ISOTONIC_MIN_EXAMPLES = 1000
#: Folds of the out-of-fold scores the calibrator is fitted on.
CV_FOLDS = 5
#: Inverse L2 strength of the logistic regression (scikit-learn's default; features are
#: scores in [0, 1], so no scaling is needed).
REGULARIZATION_C = 1.0
#: Detector names of the report besides the single signals.
LEARNED, NOISY_OR = "learned", "noisy_or"


def _sklearn() -> Any:
    try:
        import sklearn
    except ImportError as exc:
        raise MissingDependencyError("the learned fusion (scikit-learn)", EVAL_INSTALL) from exc
    return sklearn


# ---------------------------------------------------------------------------- examples
@dataclass(frozen=True)
class DocumentRecord:
    """One de-duplicated document of a run.

    Attributes:
        dataset / doc_id: where it comes from.
        key: the de-duplication key (``dataset|id`` or ``dataset|id|text-hash``).
        poisoned: the label.
        strategy: the sample's strategy (``clean`` for Part A and calibration samples).
        attack_strategy / family: the poison record's strategy and template family
            (``mixed`` draws from every strategy), ``None`` for clean documents.
        text_hash: sha256 prefix of the poisoned text (``None`` for clean documents).
        poison_probability: the noisy-OR ``P_i`` the run stored.
        signals: name -> score, ``None`` when skipped or absent.
        occurrences: how many retrieved slots of the run held this document.
        query: the first query that retrieved it.
    """

    dataset: str
    doc_id: str
    key: str
    poisoned: bool
    strategy: str
    attack_strategy: str | None
    family: str | None
    text_hash: str | None
    poison_probability: float
    signals: Mapping[str, float | None]
    occurrences: int = 1
    query: str = ""


@dataclass(frozen=True)
class ExampleMeta:
    """What the rows of ``X`` are: the run, the feature names and one record per row."""

    run: str
    run_info: Mapping[str, Any]
    feature_names: tuple[str, ...]
    records: tuple[DocumentRecord, ...]
    missing_signals: tuple[str, ...] = ()
    n_occurrences: int = 0

    @property
    def signal_names(self) -> tuple[str, ...]:
        """The signal features (skipped indicators left out)."""
        return tuple(f for f in self.feature_names if not f.endswith(SKIPPED_SUFFIX))

    def baseline(self) -> FloatArray:
        """The stored noisy-OR ``P_i`` per row."""
        return np.array([r.poison_probability for r in self.records], dtype=float)

    def signal(self, name: str) -> FloatArray:
        """One signal's score per row (skipped or absent = 0)."""
        return np.array([_score(r.signals.get(name)) for r in self.records], dtype=float)

    def column(self, attribute: str) -> npt.NDArray[np.str_]:
        """A string attribute of every record (``dataset``, ``strategy``, ...), ``""`` for ``None``."""
        return np.array([str(getattr(r, attribute) or "") for r in self.records], dtype=str)

    def subset(self, mask: BoolArray) -> ExampleMeta:
        """The rows where ``mask`` is true."""
        kept = tuple(r for r, m in zip(self.records, mask, strict=True) if m)
        return ExampleMeta(self.run, self.run_info, self.feature_names, kept, self.missing_signals, self.n_occurrences)


class Examples(NamedTuple):
    """Document-level examples of a run: ``X`` (features), ``y`` (poisoned), ``meta``."""

    X: FloatArray
    y: BoolArray
    meta: ExampleMeta

    def subset(self, mask: BoolArray) -> Examples:
        """The rows where ``mask`` is true."""
        return Examples(self.X[mask], self.y[mask], self.meta.subset(mask))


def _score(value: Any) -> float:
    # skipped (None) or absent reads 0, "nothing suspicious", as in the noisy-OR
    return 0.0 if value is None else float(value)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _attack_records(path: Path) -> dict[tuple[str, str, int, str], dict[str, Any]]:
    """(dataset, strategy, repeat, doc id) -> {hash, strategy, family} from ``attacks/``."""
    out: dict[tuple[str, str, int, str], dict[str, Any]] = {}
    folder = path / ATTACKS_DIR
    if not folder.is_dir():
        return out
    for file in sorted(folder.glob("*.jsonl")):
        dataset, _, rest = file.stem.partition("-")
        strategy, _, repeat = rest.rpartition("-r")
        if not (dataset and strategy and repeat.isdigit()):
            continue
        for line in read_text_file(file).splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            out[(dataset, strategy, int(repeat), str(row["doc_id"]))] = {
                "hash": _sha256(str(row.get("poisoned", "")))[:16],
                "strategy": row.get("strategy"),
                "family": row.get("family"),
            }
    return out


def _run_info(run: StoredRun) -> dict[str, Any]:
    m = run.manifest
    samples = run.path / SAMPLES_FILE
    return {
        "run": str(run.path),
        "command": m.get("command"),
        "created": m.get("created"),
        "finished": m.get("finished"),
        "seed": m.get("seed"),
        "families": m.get("families"),
        "n": m.get("n"),
        "samples_sha256": hashlib.sha256(samples.read_bytes()).hexdigest() if samples.is_file() else None,
        "versions": {k: v for k, v in (m.get("versions") or {}).items() if k in ("ragtrust", "scikit-learn")},
    }


def _collect(run: StoredRun) -> tuple[dict[str, DocumentRecord], int]:
    attacks = _attack_records(run.path)
    records: dict[str, DocumentRecord] = {}
    occurrences: Counter[str] = Counter()
    total = 0
    for s in run.samples:
        if s.get("failed"):
            continue
        dataset, strategy, repeat = str(s["dataset"]), str(s.get("strategy") or "clean"), s.get("repeat")
        for d in s.get("retrieved") or ():
            total += 1
            doc_id, poisoned = str(d["id"]), bool(d.get("poisoned"))
            truth = attacks.get((dataset, strategy, int(repeat or 0), str(d.get("base_id") or doc_id)))
            if not poisoned:
                key, truth = f"{dataset}|{doc_id}", None
            elif truth is not None:
                key = f"{dataset}|{doc_id}|{truth['hash']}"
            else:
                key = f"{dataset}|{doc_id}|{strategy}/r{repeat}"
            occurrences[key] += 1
            if key in records:
                continue
            records[key] = DocumentRecord(
                dataset=dataset,
                doc_id=doc_id,
                key=key,
                poisoned=poisoned,
                strategy=strategy,
                attack_strategy=(truth or {}).get("strategy") or (strategy if poisoned else None),
                family=(truth or {}).get("family"),
                text_hash=(truth or {}).get("hash"),
                poison_probability=_score(d.get("poison_probability")),
                signals=dict(d.get("signals") or {}),
                query=str(s.get("query", "")),
            )
    out = {k: replace(r, occurrences=occurrences[k]) for k, r in records.items()}
    return out, total


def document_examples(
    run_dir: str | Path,
    *,
    features: Sequence[str] | None = None,
    skipped_flags: bool = False,
) -> Examples:
    r"""Document-level examples ``(X, y, meta)`` of a stored run.

    Args:
        run_dir: a ``ragtrust eval run`` directory (``samples.jsonl``; ``attacks/`` gives
            the poisoned texts' hashes; the manifest is optional).
        features: exact feature names (a model's, to score another run the same way); a
            signal the run lacks reads 0 and is listed in ``meta.missing_signals``.
        skipped_flags: without ``features``, add ``<signal>:skipped`` for every signal the
            run ever skipped (the format-leak ablation; off by default).

    Raises:
        InputError: no run there, or no retrieved documents in it.

    Example:
        >>> import json, tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> doc = {"id": "x", "poisoned": False, "poison_probability": 0.1, "signals": {"a": 0.2, "b": None}}
        >>> row = {"dataset": "toy", "part": "A", "k": 5, "strategy": "clean", "retrieved": [doc, doc]}
        >>> _ = (d / "samples.jsonl").write_text(json.dumps(row) + "\n")
        >>> X, y, meta = document_examples(d, skipped_flags=True)
        >>> meta.feature_names, X.tolist(), y.tolist(), meta.records[0].occurrences
        (('a', 'b', 'b:skipped'), [[0.2, 0.0, 1.0]], [False], 2)
    """
    run = load_run(run_dir)
    by_key, total = _collect(run)
    if not by_key:
        raise InputError(f"{run.path}: no retrieved documents in {SAMPLES_FILE}")
    records = tuple(by_key.values())
    present = set(signal_names(run))
    if features is None:
        names = sorted(present)
        flags = [f"{n}{SKIPPED_SUFFIX}" for n in names if any(r.signals.get(n) is None for r in records)]
        feature_names = tuple(names + (flags if skipped_flags else []))
    else:
        feature_names = tuple(features)
    missing = tuple(f for f in feature_names if not f.endswith(SKIPPED_SUFFIX) and f not in present)
    X = np.zeros((len(records), len(feature_names)), dtype=float)
    for j, name in enumerate(feature_names):
        if name.endswith(SKIPPED_SUFFIX):
            base = name[: -len(SKIPPED_SUFFIX)]
            X[:, j] = [1.0 if r.signals.get(base) is None else 0.0 for r in records]
        else:
            X[:, j] = [_score(r.signals.get(name)) for r in records]
    y = np.array([r.poisoned for r in records], dtype=bool)
    meta = ExampleMeta(str(run.path), _run_info(run), feature_names, records, missing, total)
    return Examples(X, y, meta)


# ---------------------------------------------------------------------------- model
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


# ---------------------------------------------------------------------------- metrics
def expected_calibration_error(y: BoolArray, p: FloatArray, bins: int = ECE_BINS) -> float | None:
    """ECE: the size-weighted mean |mean prediction - positive share| over equal-width bins.

    Example:
        >>> expected_calibration_error(np.array([True, False]), np.array([1.0, 0.0]))
        0.0
        >>> round(expected_calibration_error(np.array([False] * 4), np.array([0.5] * 4)), 3)
        0.5
    """
    y, p = np.asarray(y, dtype=bool), np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    if y.size == 0:
        return None
    index = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        in_bin = index == b
        if in_bin.any():
            total += in_bin.sum() / y.size * abs(float(p[in_bin].mean()) - float(y[in_bin].mean()))
    return float(total)


def _detector_scores(model: FusionModel, ex: Examples) -> dict[str, FloatArray]:
    scores = {LEARNED: model.predict_proba(ex.X), NOISY_OR: ex.meta.baseline()}
    for name in ex.meta.signal_names:
        scores[name] = ex.meta.signal(name)
    return scores


def _metrics(y: BoolArray, s: FloatArray, threshold: float | None, fpr: float) -> dict[str, Any]:
    pos, neg = s[y], s[~y]
    row: dict[str, Any] = {
        "n_positive": int(pos.size),
        "n_negative": int(neg.size),
        "roc_auc": roc_auc(y, s) if y.size else None,
        "threshold": threshold,
        "recall": None,
        "recall_ci": None,
        "fpr": None,
        "within_budget": None,
        "ece": expected_calibration_error(y, s),
    }
    if threshold is not None:
        hits = int((pos > threshold).sum())
        row["recall"] = hits / pos.size if pos.size else None
        row["recall_ci"] = wilson_interval(hits, int(pos.size))
        row["fpr"] = float((neg > threshold).mean()) if neg.size else None
        row["within_budget"] = None if row["fpr"] is None else bool(row["fpr"] <= fpr + 1e-12)
    return row


def evaluate(model: FusionModel, heldout: Examples, train: Examples, *, fpr: float = QUERY_FPR) -> dict[str, Any]:
    """Learned fusion vs the noisy-OR ``P_i`` vs each signal on ``heldout``.

    Every threshold is fitted on ``train``'s clean documents (:func:`fpr_threshold`: flag
    ``score > t``, at most ``fpr`` of them above), never on ``heldout``. The best single
    signal is chosen by its ROC-AUC on ``train``, not on ``heldout``.

    Returns:
        ``thresholds``, ``best_single_signal``, ``overall`` / ``per_dataset`` (detector ->
        metrics), ``per_attack_strategy`` (each strategy's poisoned documents against all
        clean ones), and ``train_in_sample`` (ROC-AUC and ECE on the training run).

    Raises:
        InputError: the two example sets have different features, or ``train`` has no clean row.
    """
    if heldout.meta.feature_names != model.feature_names or train.meta.feature_names != model.feature_names:
        raise InputError("train, held-out examples and model must share feature names (build them with features=)")
    if not (~train.y).any():
        raise InputError("the training examples hold no clean document: no threshold can be fitted")
    train_scores, scores = _detector_scores(model, train), _detector_scores(model, heldout)
    thresholds = {name: fpr_threshold(s[~train.y], fpr) for name, s in train_scores.items()}
    in_sample = {
        name: {"roc_auc": roc_auc(train.y, s), "ece": expected_calibration_error(train.y, s)}
        for name, s in train_scores.items()
    }
    signals = [n for n in heldout.meta.signal_names if in_sample[n]["roc_auc"] is not None]
    best = max(signals, key=lambda n: in_sample[n]["roc_auc"] or 0.0) if signals else None

    def table(mask: BoolArray) -> dict[str, Any]:
        return {name: _metrics(heldout.y[mask], s[mask], thresholds[name], fpr) for name, s in scores.items()}

    datasets = heldout.meta.column("dataset")
    strategies = heldout.meta.column("attack_strategy")
    per_strategy: dict[str, Any] = {}
    for strategy in sorted(set(strategies[heldout.y])):
        rows = table((strategies == strategy) | ~heldout.y)
        per_strategy[strategy] = {n: {k: r[k] for k in ("n_positive", "roc_auc", "recall")} for n, r in rows.items()}
    return {
        "fpr_budget": fpr,
        "thresholds": thresholds,
        "best_single_signal": best,
        "overall": table(np.ones(heldout.y.size, dtype=bool)),
        "per_dataset": {d: table(datasets == d) for d in sorted(set(datasets))},
        "per_attack_strategy": per_strategy,
        "train_in_sample": in_sample,
    }


# ---------------------------------------------------------------------------- report
def overlap(train: Examples, heldout: Examples) -> dict[str, Any]:
    """How much of the held-out run the training run has already seen.

    ``shared_ids``: (dataset, id) pairs in both; ``heldout_clean_shared``: held-out clean
    documents the training run also holds (same corpus, same text); ``heldout_poisoned_id_shared``:
    held-out poisoned documents whose id the training run holds (clean or poisoned by
    another family: the base text is shared, the attack is not); ``heldout_poisoned_text_shared``:
    the very same poisoned text; ``shared_queries``: query texts asked in both runs.
    """
    train_ids = {(r.dataset, r.doc_id) for r in train.meta.records}
    train_hashes = {r.text_hash for r in train.meta.records if r.text_hash}
    held = heldout.meta.records
    held_ids = {(r.dataset, r.doc_id) for r in held}
    per_dataset: dict[str, dict[str, int]] = {}
    for r in held:
        row = per_dataset.setdefault(r.dataset, {"clean": 0, "clean_shared": 0, "poisoned": 0, "poisoned_id_shared": 0})
        shared = (r.dataset, r.doc_id) in train_ids
        row["poisoned" if r.poisoned else "clean"] += 1
        row["poisoned_id_shared" if r.poisoned else "clean_shared"] += int(shared)
    train_queries = {(r.dataset, r.query) for r in train.meta.records}
    return {
        "train_ids": len(train_ids),
        "heldout_ids": len(held_ids),
        "shared_ids": len(train_ids & held_ids),
        "heldout_clean": sum(not r.poisoned for r in held),
        "heldout_clean_shared": sum(not r.poisoned and (r.dataset, r.doc_id) in train_ids for r in held),
        "heldout_poisoned": sum(r.poisoned for r in held),
        "heldout_poisoned_id_shared": sum(r.poisoned and (r.dataset, r.doc_id) in train_ids for r in held),
        "heldout_poisoned_text_shared": sum(r.poisoned and r.text_hash in train_hashes for r in held),
        "shared_queries": len({(r.dataset, r.query) for r in held} & train_queries),
        "per_dataset": per_dataset,
    }


def _summary(ex: Examples) -> dict[str, Any]:
    datasets = ex.meta.column("dataset")
    return {
        **dict(ex.meta.run_info),
        "n_occurrences": ex.meta.n_occurrences,
        "n_documents": int(ex.y.size),
        "n_poisoned": int(ex.y.sum()),
        "by_dataset": {
            d: {"documents": int((datasets == d).sum()), "poisoned": int(ex.y[datasets == d].sum())}
            for d in sorted(set(datasets))
        },
        "missing_signals": list(ex.meta.missing_signals),
    }


def fusion_report(
    train_run: str | Path,
    heldout_run: str | Path,
    *,
    skipped_flags: bool = False,
    method: CalibrationMethod = "auto",
    fpr: float = QUERY_FPR,
    seed: int = 0,
    exclude_shared: bool = True,
    command: str = "",
) -> tuple[dict[str, Any], FusionModel]:
    """Train on one run, evaluate on another; the report and the model.

    Held-out clean documents the training run also holds (the same text) are excluded
    from the evaluation when ``exclude_shared`` (default), and so is any held-out poisoned
    text the training run holds; ``overall_with_shared`` keeps them, for reference (it
    favours the learned model, which saw them).

    Raises:
        InputError: a run is missing or malformed, or cannot train a model.
    """
    train = document_examples(train_run, skipped_flags=skipped_flags)
    model = train_fusion(
        train.X, train.y, train.meta.feature_names, method=method, fpr=fpr, seed=seed, training=train.meta.run_info
    )
    full = document_examples(heldout_run, features=model.feature_names)
    train_ids = {(r.dataset, r.doc_id) for r in train.meta.records}
    train_hashes = {r.text_hash for r in train.meta.records if r.text_hash}
    shared = np.array(
        [
            (not r.poisoned and (r.dataset, r.doc_id) in train_ids) or (r.poisoned and r.text_hash in train_hashes)
            for r in full.meta.records
        ],
        dtype=bool,
    )
    heldout = full.subset(~shared) if exclude_shared else full
    warnings = []
    if train.meta.run_info.get("families") not in (None, "development"):
        warnings.append(f"training run families = {train.meta.run_info.get('families')!r}, not 'development'")
    if full.meta.run_info.get("families") not in (None, "held_out"):
        warnings.append(f"held-out run families = {full.meta.run_info.get('families')!r}, not 'held_out'")
    if full.meta.missing_signals:
        warnings.append(f"held-out run lacks signals {list(full.meta.missing_signals)} (read as 0)")
    for name in ("clean", "poisoned"):
        if not (heldout.y if name == "poisoned" else ~heldout.y).any():
            warnings.append(f"no {name} held-out document left to evaluate")
    result = evaluate(model, heldout, train, fpr=fpr)
    report: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "skipped_flags": skipped_flags,
        "exclude_shared": exclude_shared,
        "train": _summary(train),
        "heldout": {**_summary(heldout), "n_excluded_shared": int(shared.sum()) if exclude_shared else 0},
        "overlap": overlap(train, full),
        "model": {k: v for k, v in model.to_dict().items() if k not in ("training", "format")},
        **result,
        "overall_with_shared": evaluate(model, full, train, fpr=fpr)["overall"] if exclude_shared else None,
        "warnings": warnings,
    }
    return report, model


def write_fusion_report(report: Mapping[str, Any], path: str | Path) -> Path:
    """Write the report as JSON (NaN-free); returns the path."""
    atomic_write_text(path, json.dumps(report, indent=2, default=_json_default) + "\n")
    return Path(path)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        item = value.item()
        return None if isinstance(item, float) and math.isnan(item) else item
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


__all__ = [
    "ECE_BINS",
    "FUSION_FORMAT",
    "ISOTONIC_MIN_EXAMPLES",
    "LEARNED",
    "NOISY_OR",
    "REPORT_FORMAT",
    "SKIPPED_SUFFIX",
    "Calibration",
    "DocumentRecord",
    "ExampleMeta",
    "Examples",
    "FusionModel",
    "document_examples",
    "evaluate",
    "expected_calibration_error",
    "fusion_report",
    "overlap",
    "train_fusion",
    "write_fusion_report",
]
