"""Analyses recomputed from a stored run (no re-generation, no model calls).

A run directory written by :mod:`ragtrust.eval.runner` is split into *cells*: one per
(dataset, strategy, K, repeat), each holding the clean Part A samples of its dataset and K
and its own poisoned Part B samples. From the stored per-sample F, C, P and s_max this
module recomputes:

- the per-strategy table (document-level or retrieval-grounded label);
- the component ablation: poison detector only (T = 1 - P), NLI only (T = F),
  NLI + consistency (renormalised alpha, beta), the full linear index (no dampener) and
  full + dampener (what ragtrust ships), all through :func:`ragtrust.trust.compute_trust`;
- the 125-setting weight sensitivity: alpha, beta, gamma each shifted by -0.10 .. +0.10
  in steps of 0.05 and renormalised to sum to 1; ranges of accuracy, F1 and precision;
- calibration: tau = the 10th percentile of the held-out clean calibration scores,
  evaluated before/after on the disjoint Part A + Part B samples, written as a JSON file
  that ``TrustGate`` loads (``ragtrust.pipeline.load_calibration``); refused below
  :data:`MIN_CALIBRATION_SAMPLES` clean samples unless forced, and the levels the new tau
  makes (:func:`level_bands`);
- K = 3 vs K = 5, attack success with and without the pre-generation gate, mean +- sd over
  repeats, and latency;
- query-level recall at a fixed false-positive budget (issue 16: <= 2% FPR on clean
  queries) of the shipped decision, of T, of max P_i and of each stored signal, with the
  threshold fitted on the clean calibration queries, not on the queries it is measured on
  (:func:`query_recall_at_fpr`).

Samples whose verdict failed (internal error) are excluded from detection metrics and
counted separately: an error is not a detection.

The parts live by job: :mod:`~ragtrust.eval.stored_run` (the run read back, cells, columns),
:mod:`~ragtrust.eval.tau_calibration` (tau) and :mod:`~ragtrust.eval.query_recall` (recall at
a false-positive budget); every name of this module's ``__all__`` still imports from here.

Example:
    >>> percentile_tau([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0, 1.0], 10)
    0.1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.config import TrustConfig
from ragtrust.errors import InputError
from ragtrust.eval.metrics import BOOTSTRAP_B, confusion, evaluate, mean_sd, wilson_interval
from ragtrust.eval.query_recall import QUERY_DETECTORS, QUERY_FPR, fpr_threshold, query_recall_at_fpr, query_scores
from ragtrust.eval.stored_run import (
    Arrays,
    Cell,
    Label,
    StoredRun,
    arrays,
    cells,
    consistency_check,
    load_run,
    recompute_trust,
    signal_names,
    updated_config,
)
from ragtrust.eval.tau_calibration import (
    MIN_CALIBRATION_SAMPLES,
    CalibrationResult,
    calibrate,
    level_bands,
    percentile_tau,
    write_calibration,
)

ABLATIONS: tuple[str, ...] = ("poison_only", "nli_only", "nli_consistency", "full", "full_dampener")
ABLATION_LABELS: Mapping[str, str] = {
    "poison_only": "poison detector only (1 - P)",
    "nli_only": "NLI only (F)",
    "nli_consistency": "NLI + consistency",
    "full": "full index, no dampener",
    "full_dampener": "full index + dampener",
}


def _metrics_row(y: Any, scores: Any, flagged: Any, bootstrap: int, seed: int) -> dict[str, Any]:
    return evaluate(y, scores, flagged, bootstrap=bootstrap, seed=seed).to_dict()


def strategy_table(
    run: StoredRun, *, label: Label = "document", bootstrap: int = BOOTSTRAP_B, seed: int = 42
) -> list[dict[str, Any]]:
    """One row of metrics per cell (stored T and decisions)."""
    rows = []
    for cell in cells(run):
        a = arrays(cell.valid)
        y = a.labels(label)
        rows.append(
            {
                **cell.columns,
                "label": label,
                "n_failed": cell.n_failed,
                **_metrics_row(y, a.T, ~a.trusted, bootstrap, seed),
            }
        )
    return rows


def _variant_scores(
    a: Arrays, variant: str, config: TrustConfig
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    if variant == "poison_only":
        scores = 1.0 - a.P
    elif variant == "nli_only":
        scores = a.F.copy()
    elif variant == "nli_consistency":
        scores = (config.alpha * a.F + config.beta * a.C) / (config.alpha + config.beta)
    elif variant == "full":
        return recompute_trust(a, updated_config(config, dampener_max_drop=0.0))
    elif variant == "full_dampener":
        return recompute_trust(a, config)
    else:
        raise InputError(f"unknown ablation {variant!r}; valid: {', '.join(ABLATIONS)}")
    return scores, scores >= config.tau


def ablation(
    run: StoredRun, config: TrustConfig | None = None, *, label: Label = "document", seed: int = 42
) -> list[dict[str, Any]]:
    """Component ablation per cell; single-component variants use the same tau."""
    config = config or run.trust_config()
    rows = []
    for cell in cells(run):
        a = arrays(cell.valid)
        y = a.labels(label)
        for variant in ABLATIONS:
            scores, trusted = _variant_scores(a, variant, config)
            m = evaluate(y, scores, ~trusted, bootstrap=1_000, seed=seed).to_dict()
            rows.append(
                {
                    "key": cell.key,
                    "variant": variant,
                    "description": ABLATION_LABELS[variant],
                    **{k: m[k] for k in ("n", "accuracy", "precision", "recall", "f1", "delta", "roc_auc", "pr_auc")},
                }
            )
    return rows


def weight_grid(config: TrustConfig, step: float = 0.05, span: float = 0.10) -> list[tuple[float, float, float]]:
    """The 125 renormalised (alpha, beta, gamma) settings around ``config``.

    Example:
        >>> grid = weight_grid(TrustConfig())
        >>> len(grid), grid[62]
        (125, (0.4, 0.35, 0.25))
    """
    offsets = np.round(np.arange(-span, span + step / 2, step), 10)
    out = []
    for da in offsets:
        for db in offsets:
            for dg in offsets:
                w = np.clip(np.array([config.alpha + da, config.beta + db, config.gamma + dg]), 0.0, None)
                w = w / w.sum()
                out.append((round(float(w[0]), 10), round(float(w[1]), 10), round(float(1.0 - w[0] - w[1]), 10)))
    return out


def weight_sensitivity(
    run: StoredRun,
    config: TrustConfig | None = None,
    *,
    label: Label = "document",
    step: float = 0.05,
    span: float = 0.10,
) -> list[dict[str, Any]]:
    """Ranges of accuracy, F1 and precision over the weight grid, per cell."""
    config = config or run.trust_config()
    grid = weight_grid(config, step, span)
    rows = []
    for cell in cells(run):
        a = arrays(cell.valid)
        y = a.labels(label)
        acc, f1, prec = [], [], []
        for alpha, beta, gamma in grid:
            _, trusted = recompute_trust(a, updated_config(config, alpha=alpha, beta=beta, gamma=gamma))
            m = confusion(y, ~trusted)
            acc.append(m.accuracy)
            f1.append(m.f1)
            prec.append(m.precision)

        def rng(values: list[float | None]) -> list[float] | None:
            vals = [v for v in values if v is not None]
            return [min(vals), max(vals)] if vals else None

        rows.append(
            {
                "key": cell.key,
                "n_settings": len(grid),
                "accuracy": rng(acc),
                "f1": rng(f1),
                "precision": rng(prec),
                "precision_undefined": sum(p is None for p in prec),
            }
        )
    return rows


def k_comparison(run: StoredRun, *, label: Label = "document", seed: int = 42) -> list[dict[str, Any]]:
    """Metrics side by side for (dataset, strategy, repeat) cells run at several K."""
    by_group: dict[tuple[str, str, int], list[Cell]] = {}
    for cell in cells(run):
        by_group.setdefault((cell.dataset, cell.strategy, cell.repeat), []).append(cell)
    rows = []
    for (dataset, strategy, repeat), group in by_group.items():
        if len({c.k for c in group}) < 2:
            continue
        for cell in sorted(group, key=lambda c: c.k):
            a = arrays(cell.valid)
            m = evaluate(a.labels(label), a.T, ~a.trusted, bootstrap=1_000, seed=seed).to_dict()
            rows.append(
                {
                    "dataset": dataset,
                    "strategy": strategy,
                    "repeat": repeat,
                    "k": cell.k,
                    "retrieval_exposure": float(a.y_retrieval[a.y_doc].mean()) if a.y_doc.any() else None,
                    **{key: m[key] for key in ("n", "accuracy", "precision", "recall", "f1", "delta", "roc_auc")},
                }
            )
    return rows


def attack_success(run: StoredRun) -> list[dict[str, Any]]:
    """Whether answers adopt the poisoned claim, without and with the pre-generation gate.

    Only Part B samples whose top-K contained a poisoned document are counted (the attack
    had a chance). ``adopted_flag``: answers with policy ``flag`` (the generator sees
    everything) that entail the injected false statement; ``adopted_gate``: answers with
    policy ``drop-suspicious``; ``adopted_and_trusted``: adopted answers that the verdict
    still trusted (the attack reached a user who was told to trust it).
    """
    rows = []
    for cell in cells(run):
        exposed = [s for s in cell.poisoned if isinstance(s.get("attack"), Mapping)]
        n = len(exposed)
        flag = sum(bool(s["attack"].get("adopted_flag")) for s in exposed)
        gated_rows = [s for s in exposed if "adopted_gate" in s["attack"]]
        gate = sum(bool(s["attack"].get("adopted_gate")) for s in gated_rows)
        trusted = sum(bool(s["attack"].get("adopted_flag")) and bool(s["attack"].get("trusted_flag")) for s in exposed)
        rows.append(
            {
                "key": cell.key,
                "n_exposed": n,
                "adopted_flag": flag / n if n else None,
                "adopted_flag_ci": wilson_interval(flag, n),
                "adopted_gate": gate / len(gated_rows) if gated_rows else None,
                "adopted_gate_ci": wilson_interval(gate, len(gated_rows)),
                "adopted_and_trusted": trusted / n if n else None,
                "adopted_and_trusted_ci": wilson_interval(trusted, n),
            }
        )
    return rows


def repeat_summary(run: StoredRun, *, label: Label = "document") -> list[dict[str, Any]]:
    """Mean and sd over repeats of accuracy, F1, Delta and ROC-AUC per (dataset, strategy, K)."""
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for row in strategy_table(run, label=label, bootstrap=1):
        groups.setdefault((row["dataset"], row["strategy"], row["k"]), []).append(row)
    out = []
    for (dataset, strategy, k), rows in groups.items():
        out.append(
            {
                "dataset": dataset,
                "strategy": strategy,
                "k": k,
                "repeats": len(rows),
                **{m: mean_sd([r[m] for r in rows]) for m in ("accuracy", "f1", "delta", "roc_auc")},
            }
        )
    return out


def timing_summary(run: StoredRun) -> dict[str, Any]:
    """Latency per query (mean, median, p95) and mean seconds per pipeline stage."""
    lat = np.array([float(s["latency_s"]) for s in run.samples if s.get("latency_s") is not None])
    stages: dict[str, list[float]] = {}
    for s in run.samples:
        for name, value in (s.get("timings_s") or {}).items():
            stages.setdefault(name, []).append(float(value))
    return {
        "n": int(lat.size),
        "mean_s": float(lat.mean()) if lat.size else None,
        "median_s": float(np.median(lat)) if lat.size else None,
        "p95_s": float(np.percentile(lat, 95)) if lat.size else None,
        "stages_mean_s": {k: float(np.mean(v)) for k, v in sorted(stages.items())},
    }


__all__ = [
    "ABLATIONS",
    "ABLATION_LABELS",
    "MIN_CALIBRATION_SAMPLES",
    "QUERY_DETECTORS",
    "QUERY_FPR",
    "Arrays",
    "CalibrationResult",
    "Cell",
    "StoredRun",
    "ablation",
    "arrays",
    "attack_success",
    "calibrate",
    "cells",
    "consistency_check",
    "fpr_threshold",
    "k_comparison",
    "level_bands",
    "load_run",
    "percentile_tau",
    "query_recall_at_fpr",
    "query_scores",
    "recompute_trust",
    "repeat_summary",
    "signal_names",
    "strategy_table",
    "timing_summary",
    "weight_grid",
    "weight_sensitivity",
    "write_calibration",
]
