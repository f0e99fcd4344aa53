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

The examples are built in :mod:`~ragtrust.eval.fusion_examples` and the model fitted in
:mod:`~ragtrust.eval.fusion_model`; this module evaluates and reports, and every name of its
``__all__`` still imports from here.

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

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.errors import InputError
from ragtrust.eval.fusion_examples import (
    SKIPPED_SUFFIX,
    BoolArray,
    DocumentRecord,
    ExampleMeta,
    Examples,
    FloatArray,
    document_examples,
)
from ragtrust.eval.fusion_model import (
    FUSION_FORMAT,
    ISOTONIC_MIN_EXAMPLES,
    Calibration,
    CalibrationMethod,
    FusionModel,
    train_fusion,
)
from ragtrust.eval.metrics import roc_auc, wilson_interval
from ragtrust.eval.query_recall import QUERY_FPR, fpr_threshold
from ragtrust.io import atomic_write_text
from ragtrust.record import utc_iso

REPORT_FORMAT = "ragtrust-fusion-report/1"
#: Bins of the expected calibration error (equal width on [0, 1]; Guo et al. 2017 use 15,
#: 10 is the common choice for a few thousand examples).
ECE_BINS = 10
#: Detector names of the report besides the single signals.
LEARNED, NOISY_OR = "learned", "noisy_or"


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
        "created": utc_iso(),
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
