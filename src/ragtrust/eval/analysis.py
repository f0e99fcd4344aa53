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

Example:
    >>> percentile_tau([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0, 1.0], 10)
    0.1
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.config import TrustConfig
from ragtrust.errors import InputError
from ragtrust.eval.metrics import BOOTSTRAP_B, confusion, evaluate, mean_sd, roc_auc, wilson_interval
from ragtrust.eval.runner import MANIFEST_FILE, SAMPLES_FILE
from ragtrust.io import atomic_write_text, iter_jsonl, read_text_file

ABLATIONS: tuple[str, ...] = ("poison_only", "nli_only", "nli_consistency", "full", "full_dampener")
ABLATION_LABELS: Mapping[str, str] = {
    "poison_only": "poison detector only (1 - P)",
    "nli_only": "NLI only (F)",
    "nli_consistency": "NLI + consistency",
    "full": "full index, no dampener",
    "full_dampener": "full index + dampener",
}
Label = str  # "document" | "retrieval"
#: Fewest clean calibration samples ``ragtrust eval calibrate`` fits tau on. tau is a low
#: percentile of them, which few samples cannot pin down: the 10th percentile of 20 samples
#: lies between the 2nd and 3rd smallest, so one odd sample moves tau. 50 puts 5 samples
#: below a 10th percentile (the default ``eval run --n 50`` gives 25 per dataset and K).
MIN_CALIBRATION_SAMPLES = 50
#: Issue 16's false-positive budget on clean queries: at most 2% of them flagged.
QUERY_FPR = 0.02
#: Query-level detectors every run has; :func:`query_recall_at_fpr` adds one per stored signal.
QUERY_DETECTORS: tuple[str, ...] = ("decision", "T", "max P_i")


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


def _config(base: TrustConfig, **update: float) -> TrustConfig:
    data = base.model_dump()
    data.update(update)
    tau = data["tau"]
    data["level_low"], data["level_high"] = min(data["level_low"], tau), max(data["level_high"], tau)
    return TrustConfig.model_validate(data)


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
                "key": cell.key,
                "dataset": cell.dataset,
                "strategy": cell.strategy,
                "k": cell.k,
                "repeat": cell.repeat,
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
        return recompute_trust(a, _config(config, dampener_max_drop=0.0))
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
            _, trusted = recompute_trust(a, _config(config, alpha=alpha, beta=beta, gamma=gamma))
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
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
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
    calib = [
        s
        for s in run.samples
        if s["part"] == "calib"
        and (dataset is None or s["dataset"] == dataset)
        and (k is None or s["k"] == k)
        and not s.get("failed")
        and s.get("T") is not None
    ]
    if not calib:
        raise InputError(f"{run.path}: no calibration samples for dataset={dataset or 'any'} k={k or 'any'}")
    if len(calib) < min_samples and not force:
        raise InputError(
            f"{run.path}: only {len(calib)} clean calibration samples for dataset={dataset or 'any'} "
            f"k={k or 'any'}, fewer than the minimum {min_samples} (a percentile of so few is noise); "
            "run more calibration queries (`ragtrust eval run --n-calib N`), lower --min-samples, "
            "or pass --force to calibrate anyway"
        )
    tau = percentile_tau([s["T"] for s in calib], percentile)
    config = run.trust_config()
    calibrated = _config(config, tau=tau)
    rows = []
    for cell in cells(run):
        if (dataset is not None and cell.dataset != dataset) or (k is not None and cell.k != k):
            continue
        a = arrays(cell.valid)
        y = a.labels(label)
        before = confusion(y, ~a.trusted).to_dict()
        after = confusion(y, tau > a.T).to_dict()
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


def signal_names(run: StoredRun) -> list[str]:
    """Names of the screening signals stored in the run's per-document records, sorted."""
    names = {name for s in run.samples for d in s.get("retrieved") or () for name in (d.get("signals") or {})}
    return sorted(names)


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
                "key": cell.key,
                "dataset": cell.dataset,
                "strategy": cell.strategy,
                "k": cell.k,
                "repeat": cell.repeat,
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


def consistency_check(run: StoredRun) -> float | None:
    """Largest |stored T - T recomputed from stored F, C, P, s_max| over valid samples."""
    valid = [s for s in run.samples if not s.get("failed") and s.get("T") is not None]
    if not valid:
        return None
    a = arrays(valid)
    scores, _ = recompute_trust(a, run.trust_config())
    return float(np.max(np.abs(scores - a.T)))


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
]
