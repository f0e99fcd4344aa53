"""Query-level recall at a fixed false-positive budget on clean queries (issue 16).

How many poisoned queries a detector flags when at most :data:`QUERY_FPR` (2%) of clean
queries may be flagged: of the shipped decision, of T, of max P_i and of each stored signal
(:func:`query_scores`), with the threshold fitted on the clean calibration queries
(:func:`fpr_threshold`), not on the queries it is measured on (:func:`query_recall_at_fpr`).

Example:
    >>> fpr_threshold([0.1] * 24 + [0.9], 0.02)
    0.9
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.errors import InputError
from ragtrust.eval.metrics import roc_auc, wilson_interval
from ragtrust.eval.stored_run import Label, StoredRun, cells, signal_names

#: Issue 16's false-positive budget on clean queries: at most 2% of them flagged.
QUERY_FPR = 0.02
#: Query-level detectors every run has; :func:`query_recall_at_fpr` adds one per stored signal.
QUERY_DETECTORS: tuple[str, ...] = ("decision", "T", "max P_i")


def _max_over_docs(sample: Mapping[str, Any], value: Any) -> float:
    # a skipped signal (None), a missing one or an empty top-K reads 0: nothing suspicious
    scores = [value(d) for d in sample.get("retrieved") or ()]
    return max((float(v) for v in scores if v is not None), default=0.0)


def query_scores(samples: Sequence[Mapping[str, Any]], detector: str) -> npt.NDArray[np.float64]:
    """Query-level suspicion of ``detector`` per sample (higher = more suspicious).

    ``decision``: 1 when the verdict was not trusted, else 0; ``T``: ``-T``; ``max P_i``:
    the largest ``poison_probability`` in the top-K; any other name: that signal's largest
    score in the top-K (skipped = 0).

    Example:
        >>> doc = {"poison_probability": 0.7, "signals": {"injection": 0.9, "linguistic": None}}
        >>> sample = {"trusted": False, "T": 0.25, "retrieved": [doc]}
        >>> [float(query_scores([sample], d)[0]) for d in ("decision", "T", "max P_i", "injection", "linguistic")]
        [1.0, -0.25, 0.7, 0.9, 0.0]
    """
    if detector == "decision":
        return np.array([0.0 if s.get("trusted") else 1.0 for s in samples], dtype=float)
    if detector == "T":
        return np.array([-float(s["T"]) for s in samples], dtype=float)
    if detector == "max P_i":
        return np.array([_max_over_docs(s, lambda d: d.get("poison_probability")) for s in samples], dtype=float)
    return np.array([_max_over_docs(s, lambda d: (d.get("signals") or {}).get(detector)) for s in samples], dtype=float)


def fpr_threshold(clean_scores: Iterable[float], fpr: float = QUERY_FPR) -> float:
    """The loosest threshold ``t`` that flags (``score > t``) at most ``fpr`` of clean scores.

    With ``n`` clean scores at most ``floor(fpr * n)`` may lie above ``t``, so ``t`` is an
    order statistic of them. Below ``1 / fpr`` scores (50 at 2%) that is zero: ``t`` is the
    largest clean score and a query is flagged only above every clean score seen.

    Example:
        >>> fpr_threshold([0.1] * 24 + [0.9], 0.02)  # 2% of 25 = 0: above every score
        0.9
        >>> fpr_threshold([float(i) for i in range(100)], 0.02)  # 98 and 99 lie above
        97.0

    Raises:
        InputError: no scores, or ``fpr`` outside [0, 1).
    """
    values = np.sort(np.asarray([float(x) for x in clean_scores], dtype=float))
    if values.size == 0:
        raise InputError("an FPR threshold needs at least one clean score")
    if not 0.0 <= fpr < 1.0:
        raise InputError(f"fpr must be in [0, 1), got {fpr}")
    allowed = math.floor(fpr * values.size + 1e-9)
    return float(values[values.size - 1 - allowed])


def _share(flags: npt.NDArray[np.bool_]) -> float | None:
    return float(flags.mean()) if flags.size else None


def query_recall_at_fpr(
    run: StoredRun,
    *,
    fpr: float = QUERY_FPR,
    label: Label = "document",
    detectors: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Query-level recall at a false-positive budget on clean queries, per cell and detector.

    Per cell (dataset, strategy, K, repeat; failed samples excluded): *positives* are the
    cell's Part B queries with ``label``; *negatives* are its clean evaluation queries
    (Part A: the clean corpus). Part B queries without the label are neither (under the
    document label a poisoned document may still be in their top-K) and are counted in
    ``n_other``.

    For each detector (:func:`query_scores`) the threshold is fitted on the run's clean
    calibration queries of the same dataset and K (``part = "calib"``: answered by the
    clean corpus, disjoint from the evaluation queries) with :func:`fpr_threshold`; then
    ``recall`` is the share of positives above it and ``fpr`` the realised share of Part A
    queries above it (it may exceed the budget: ``within_budget``). With 25 calibration
    queries, 2% of 25 rounds down to none: the threshold is the largest calibration score.
    ``oracle_*`` fits the threshold on the Part A scores themselves, in-sample and
    therefore **optimistic**. ``decision`` is binary and has no threshold: its recall and
    FPR are reported as they are. ``roc_auc`` is threshold-free.

    Args:
        run: the stored run.
        fpr: the budget on clean queries (issue 16: 0.02).
        label: ``document`` (the source document was poisoned) or ``retrieval`` (a poisoned
            document was in the top-K).
        detectors: detector names (default: :data:`QUERY_DETECTORS` then every stored signal).

    Raises:
        InputError: an unknown label or an ``fpr`` outside [0, 1).
    """
    if label not in ("document", "retrieval"):
        raise InputError(f"label must be 'document' or 'retrieval', got {label!r}")
    if not 0.0 <= fpr < 1.0:
        raise InputError(f"fpr must be in [0, 1), got {fpr}")
    names = list(detectors) if detectors is not None else [*QUERY_DETECTORS, *signal_names(run)]
    label_key = "label_doc" if label == "document" else "label_retrieval"
    calib: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for s in run.samples:
        if s["part"] == "calib" and not s.get("failed") and s.get("T") is not None:
            calib.setdefault((s["dataset"], s["k"]), []).append(s)
    rows = []
    for cell in cells(run):
        valid = cell.valid
        negatives = [s for s in valid if s["part"] == "A" and not s.get(label_key)]
        positives = [s for s in valid if s["part"] == "B" and s.get(label_key)]
        cal = calib.get((cell.dataset, cell.k), [])
        y = np.array([True] * len(positives) + [False] * len(negatives), dtype=bool)
        for detector in names:
            pos, neg = query_scores(positives, detector), query_scores(negatives, detector)
            row: dict[str, Any] = {
                **cell.columns,
                "label": label,
                "fpr_budget": fpr,
                "detector": detector,
                "n_positive": len(positives),
                "n_negative": len(negatives),
                "n_other": len(valid) - len(positives) - len(negatives),
                "n_calib": len(cal),
                "roc_auc": roc_auc(y, np.concatenate([pos, neg])),
                "threshold": None,
                "recall": None,
                "recall_ci": None,
                "fpr": None,
                "within_budget": None,
                "oracle_threshold": None,
                "oracle_recall": None,
                "oracle_fpr": None,
            }
            if detector == "decision":
                threshold: float | None = 0.5  # the stored decision itself: flagged = 1
            elif cal:
                threshold = fpr_threshold(query_scores(cal, detector), fpr)
                row["threshold"] = threshold
            else:
                threshold = None  # no calibration queries: no honest threshold
            if threshold is not None:
                hits = int((pos > threshold).sum())
                row["recall"] = hits / pos.size if pos.size else None
                row["recall_ci"] = wilson_interval(hits, int(pos.size))
                row["fpr"] = _share(neg > threshold)
                row["within_budget"] = None if row["fpr"] is None else bool(row["fpr"] <= fpr + 1e-12)
            if detector != "decision" and neg.size:
                oracle = fpr_threshold(neg, fpr)
                row["oracle_threshold"] = oracle
                row["oracle_recall"] = _share(pos > oracle)
                row["oracle_fpr"] = _share(neg > oracle)
            rows.append(row)
    return rows


__all__ = ["QUERY_DETECTORS", "QUERY_FPR", "fpr_threshold", "query_recall_at_fpr", "query_scores"]
