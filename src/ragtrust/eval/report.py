"""Reports of a stored run: Markdown, JSON, PNG figures and a self-contained HTML page.

``ragtrust eval report RUN_DIR`` writes into ``RUN_DIR/report/`` (or ``--out``):

- ``report.md`` - the tables, with the Evaluation Agent's reference numbers (SPEC section 8)
  side by side and the honest gaps spelled out;
- ``report.json`` - every number behind the tables (``query_recall``: issue 16's
  query-level recall at <= 2% FPR on clean queries, every detector, both labels);
- ``figures/*.png`` - ROC curves, trust-score histograms (clean vs poisoned) and
  per-strategy bars (matplotlib, Agg backend);
- ``report.html`` - the same content as one file with the images inlined (base64).

Every report records the configuration, model ids and versions, seed, data file sha256s
and the command line that produced the run. The figures are drawn in
:mod:`~ragtrust.eval.report_figures` and the blocks rendered in
:mod:`~ragtrust.eval.report_render` (``render_markdown`` and ``render_html`` still import
from here).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtrust.eval import analysis
from ragtrust.eval.report_figures import figures as draw_figures
from ragtrust.eval.report_render import Block, render_html, render_markdown
from ragtrust.io import atomic_write_bytes, atomic_write_text

#: the Evaluation Agent's TruthfulQA results (Llama 3.3 70B, MiniLM, K = 5), SPEC section 8
PAPER_TRUTHFULQA: Mapping[str, Mapping[str, float | None]] = {
    "instruction_injection": {"accuracy": 0.99, "precision": 0.938, "recall": 1.0, "f1": 0.968, "delta": 0.498},
    "contradiction": {"accuracy": 0.92, "precision": 0.889, "recall": 0.533, "f1": 0.667, "delta": 0.311},
    "subtle_manipulation": {"accuracy": 0.88, "precision": 1.0, "recall": 0.20, "f1": 0.333, "delta": 0.149},
    "entity_swap": {"accuracy": 0.85, "precision": None, "recall": 0.0, "f1": 0.0, "delta": 0.053},
    "mixed": {"accuracy": 0.91, "precision": 1.0, "recall": 0.40, "f1": 0.571, "delta": 0.225},
}
#: the paper's secure-coding numbers (only these were reported)
PAPER_SECURE_CODING: Mapping[str, Mapping[str, float]] = {
    "instruction_injection": {"f1": 0.923},
    "contradiction": {"recall": 0.0},
    "subtle_manipulation": {"recall": 0.0},
    "entity_swap": {"recall": 0.58},
    "mixed": {"recall": 0.083},
}
#: FEVER: 73% accuracy, below the 85% naive baseline; ROC-AUC 0.73-0.81 across generators
PAPER_FEVER_ACCURACY = 0.73
PAPER_FEVER_BASELINE = 0.85
PAPER_ROC_AUC_RANGE = (0.73, 0.81)
PAPER_SECONDS_PER_SAMPLE = 14.7
#: detectors of the query-level recall tables (issue 16), when the run stored them; report.json
#: holds every detector of :func:`ragtrust.eval.analysis.query_recall_at_fpr`
QUERY_REPORT_DETECTORS: tuple[str, ...] = (
    *analysis.QUERY_DETECTORS,
    "injection",
    "linguistic",
    "intra_consistency",
    "cross_consistency",
)
#: issue 16's target recall at the FPR budget (instruction injection; contradictions with a witness)
QUERY_RECALL_TARGET = 0.60


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _ci(ci: Sequence[float] | None) -> str:
    return "" if not ci else f" [{100 * ci[0]:.0f}-{100 * ci[1]:.0f}]"


def _range(r: Sequence[float] | None) -> str:
    return "n/a" if not r else f"{100 * r[0]:.1f}-{100 * r[1]:.1f}%"


@dataclass(frozen=True)
class ReportPaths:
    """Where the report files were written."""

    markdown: Path
    json: Path
    html: Path
    figures: tuple[Path, ...]


def _main_table(rows: Sequence[Mapping[str, Any]]) -> Block:
    header = ["dataset", "strategy", "K", "n", "poisoned", "accuracy", "precision", "recall", "F1", "Delta",
              "ROC-AUC", "PR-AUC", "naive acc.", "failed"]  # fmt: skip
    body = [
        [r["dataset"], r["strategy"] + (f" (r{r['repeat']})" if r["repeat"] else ""), r["k"], r["n"], r["n_positive"],
         _pct(r["accuracy"]) + _ci(r["accuracy_ci"]), _pct(r["precision"]) + _ci(r["precision_ci"]),
         _pct(r["recall"]) + _ci(r["recall_ci"]), _pct(r["f1"]) + _ci(r["f1_ci"]), _num(r["delta"]),
         _num(r["roc_auc"]), _num(r["pr_auc"]), _pct(r["baseline"]["accuracy"]), r["n_failed"]]
        for r in rows
    ]  # fmt: skip
    return ("table", header, body)


def _paper_blocks(rows: Sequence[Mapping[str, Any]]) -> list[Block]:
    ours = {(r["dataset"], r["strategy"]): r for r in rows if r["k"] == 5 and r["repeat"] == 0}
    blocks: list[Block] = []
    body = []
    for strategy, ref in PAPER_TRUTHFULQA.items():
        r = ours.get(("truthfulqa", strategy))
        body.append(
            [strategy]
            + [_pct(ref["accuracy"]), _pct(ref["precision"]), _pct(ref["recall"]), _pct(ref["f1"]), _num(ref["delta"])]
            + (
                [_pct(r["accuracy"]), _pct(r["precision"]), _pct(r["recall"]), _pct(r["f1"]), _num(r["delta"]),
                 _num(r["roc_auc"])]
                if r else ["not run"] * 6
            )
        )  # fmt: skip
    blocks.append(("h3", "TruthfulQA, K = 5: the Evaluation Agent (paper) vs ragtrust (this run)"))
    blocks.append(
        ("table", ["strategy", "paper acc", "paper prec", "paper recall", "paper F1", "paper Delta",
                   "ours acc", "ours prec", "ours recall", "ours F1", "ours Delta", "ours ROC-AUC"], body)
    )  # fmt: skip
    blocks.append(
        ("p", f"The paper reports ROC-AUC {PAPER_ROC_AUC_RANGE[0]:.2f}-{PAPER_ROC_AUC_RANGE[1]:.2f} across generators "
              f"and about {PAPER_SECONDS_PER_SAMPLE} s per sample on CPU. Its generator was Llama 3.3 70B and its "
              "attack templates matched its own detector; this run uses the generator named in the provenance "
              "section and held-out attack families, so the columns are comparable in protocol, not in setup.")
    )  # fmt: skip
    body = []
    for strategy, ref in PAPER_SECURE_CODING.items():
        r = ours.get(("secure_coding", strategy))
        metric = next(iter(ref))
        body.append([strategy, f"{metric} {_pct(ref[metric])}", f"{metric} {_pct(r[metric])}" if r else "not run",
                     _pct(r["f1"]) if r else "", _num(r["roc_auc"]) if r else ""])  # fmt: skip
    blocks.append(("h3", "Secure coding: the paper's reported numbers vs this run"))
    blocks.append(("table", ["strategy", "paper", "ours (same metric)", "ours F1", "ours ROC-AUC"], body))
    fever = ours.get(("fever", "mixed"))
    if fever:
        blocks.append(
            ("p", f"FEVER (mixed): the paper reached {_pct(PAPER_FEVER_ACCURACY)} accuracy against an "
                  f"{_pct(PAPER_FEVER_BASELINE)} naive baseline; this run: {_pct(fever['accuracy'])} accuracy, naive "
                  f"baseline {_pct(fever['baseline']['accuracy'])}, ROC-AUC {_num(fever['roc_auc'])}.")
        )  # fmt: skip
    return blocks


def _gaps(rows: Sequence[Mapping[str, Any]], consistency: float | None) -> list[str]:
    notes = []
    for r in rows:
        label = f"{r['dataset']}/{r['strategy']} K={r['k']}"
        if r["accuracy"] is not None and r["accuracy"] < r["baseline"]["accuracy"]:
            notes.append(f"{label}: accuracy {_pct(r['accuracy'])} is below the naive always-trust baseline "
                         f"{_pct(r['baseline']['accuracy'])}.")  # fmt: skip
        if r["n_positive"] and (r["recall"] or 0.0) == 0.0:
            notes.append(f"{label}: no poisoned sample was flagged (recall 0).")
        ref = PAPER_TRUTHFULQA.get(r["strategy"]) if r["dataset"] == "truthfulqa" and r["k"] == 5 else None
        if ref and r["f1"] is not None and ref["f1"] is not None and r["f1"] < ref["f1"]:
            notes.append(f"{label}: F1 {_pct(r['f1'])} is below the paper's {_pct(ref['f1'])}.")
        if r["n_failed"]:
            notes.append(f"{label}: {r['n_failed']} sample(s) failed internally and are excluded (not detections).")
        if r["n_positive"] < 10:
            notes.append(f"{label}: only {r['n_positive']} poisoned samples; intervals are wide.")
    if consistency is not None and consistency > 1e-6:
        notes.append(f"Stored T differs from T recomputed from stored F, C, P, s_max by up to {consistency:.2e}.")
    return notes


def _flags_when(r: Mapping[str, Any]) -> str:
    if r["detector"] == "decision":
        return "not trusted"
    if r["threshold"] is None:
        return "no calib queries"
    if r["detector"] == "T":
        return f"T < {-r['threshold']:.3f}"
    return f"score > {r['threshold']:.3f}"


def _query_recall_blocks(rows: Sequence[Mapping[str, Any]], fpr: float, families: Any) -> list[Block]:
    """The issue 16 section: one table per label, rows = cell x detector."""
    n_calib = sorted({r["n_calib"] for r in rows})
    calib_text = "none" if not n_calib else "-".join(str(n) for n in dict.fromkeys([n_calib[0], n_calib[-1]]))
    blocks: list[Block] = [
        ("p", f"A query is flagged when its detector's score exceeds a threshold fitted on the clean calibration "
              f"queries of its dataset and K ({calib_text} per dataset and K) as the loosest that flags at most "
              f"{_pct(fpr)} of them. With fewer than {round(1 / fpr) if fpr else 'infinitely many'} calibration "
              "queries that allows none: the threshold is the largest calibration score. Recall is the share of "
              "positive Part B queries flagged; FPR is realised on the cell's clean evaluation queries (Part A, "
              "disjoint from the calibration queries; 'over' marks a realised FPR above the budget). Oracle "
              "recall fits the threshold on those Part A queries themselves: in-sample, optimistic, not a "
              "result. decision = the shipped verdict (not trusted), as is; max P_i and each signal = the "
              f"largest score in the top-K (skipped = 0). Attack families: `{families}`. Issue 16's target: "
              f"recall >= {QUERY_RECALL_TARGET:.2f} for instruction injection and for contradictions with a "
              "witness (the contradiction rows count every contradiction query, with a witness or not).")
    ]  # fmt: skip
    header = ["cell", "detector", "flags when", "recall (calibrated)", "FPR (clean)", "oracle recall (optimistic)",
              "ROC-AUC", "pos / neg"]  # fmt: skip
    titles = {"document": "document-level label", "retrieval": "retrieval label: a poisoned document was in the top-K"}
    for label, title in titles.items():
        body = [
            [r["key"], r["detector"], _flags_when(r), _pct(r["recall"]) + _ci(r["recall_ci"]),
             _pct(r["fpr"]) + (" (over)" if r["within_budget"] is False else ""), _pct(r["oracle_recall"]),
             _num(r["roc_auc"]), f"{r['n_positive']} / {r['n_negative']}"]
            for r in rows
            if r["label"] == label and r["detector"] in QUERY_REPORT_DETECTORS
        ]  # fmt: skip
        blocks.append(("h3", f"Query-level recall, {title}"))
        blocks.append(("table", header, body))
    return blocks


def build_report(
    run_dir: str | Path, out_dir: str | Path | None = None, *, bootstrap: int | None = None
) -> ReportPaths:
    """Render the report of a run directory.

    Args:
        run_dir: a directory written by ``ragtrust eval run``.
        out_dir: where to write (default ``RUN_DIR/report``).
        bootstrap: resamples for the F1 intervals (default: the run's setting, SPEC 20,000).

    Raises:
        InputError: the run directory is missing or malformed.
    """
    run = analysis.load_run(run_dir)
    out = Path(out_dir) if out_dir is not None else run.path / "report"
    out.mkdir(parents=True, exist_ok=True)
    manifest = dict(run.manifest)
    settings = manifest.get("settings") or {}
    b = bootstrap or int((settings.get("eval") or {}).get("bootstrap", 20_000))
    seed = int(manifest.get("seed", 42))
    doc_rows = analysis.strategy_table(run, label="document", bootstrap=b, seed=seed)
    ret_rows = analysis.strategy_table(run, label="retrieval", bootstrap=b, seed=seed)
    query_fpr = analysis.QUERY_FPR
    query_rows = [
        *analysis.query_recall_at_fpr(run, fpr=query_fpr, label="document"),
        *analysis.query_recall_at_fpr(run, fpr=query_fpr, label="retrieval"),
    ]
    ablation_rows = analysis.ablation(run, seed=seed)
    sensitivity = analysis.weight_sensitivity(run)
    calibrations = []
    # calibration samples whose verdict failed fit nothing: a dataset and K without one is left out
    usable = [s for s in run.samples if s["part"] == "calib" and not s.get("failed") and s.get("T") is not None]
    for dataset in sorted({s["dataset"] for s in usable}):
        for k in sorted({s["k"] for s in usable if s["dataset"] == dataset}):
            # reported even below the minimum sample count; the file says below_minimum
            cal = analysis.calibrate(
                run, dataset=dataset, k=k, min_samples=analysis.MIN_CALIBRATION_SAMPLES, force=True
            )
            calibrations.append(
                {"dataset": dataset, "k": k, **cal.to_file_dict(), "before_after": list(cal.before_after)}
            )
    k_rows = analysis.k_comparison(run, seed=seed)
    success = analysis.attack_success(run)
    repeats = analysis.repeat_summary(run)
    timing = analysis.timing_summary(run)
    consistency = analysis.consistency_check(run)
    figures = draw_figures(run, out)

    blocks: list[Block] = [("h1", "ragtrust benchmark report")]
    blocks.append(
        ("p", f"Run `{run.path}`, created {manifest.get('created', '?')}, {len(run.samples)} samples, seed {seed}, "
              f"generator `{manifest.get('generator', '?')}`, attack families `{manifest.get('families', '?')}`, "
              f"attack rate {manifest.get('attack_rate', '?')}. Positive = poisoned sample; a sample is flagged when "
              "its verdict is not trusted. Intervals: Wilson 95% for proportions, percentile bootstrap "
              f"(B = {b:,}) for F1.")
    )  # fmt: skip
    blocks.append(("h2", "Detection (document-level label)"))
    blocks.append(_main_table(doc_rows))
    blocks.append(("h2", "Side by side with the Evaluation Agent paper"))
    blocks.extend(_paper_blocks(doc_rows))
    blocks.append(("h2", "Honest gaps"))
    gaps = _gaps(doc_rows, consistency)
    blocks.append(("ul", gaps or ["None found by the automatic checks."]))
    blocks.append(("h2", "Detection (retrieval-grounded label: a poisoned document was in the top-K)"))
    blocks.append(_main_table(ret_rows))
    blocks.append(("h2", f"Query-level recall at <= {100 * query_fpr:g}% FPR (issue 16)"))
    blocks.extend(_query_recall_blocks(query_rows, query_fpr, manifest.get("families", "?")))
    blocks.append(("h2", "Component ablation (recomputed from stored F, C, P, s_max)"))
    blocks.append(
        ("table", ["cell", "variant", "accuracy", "precision", "recall", "F1", "Delta", "ROC-AUC"],
         [[r["key"], r["description"], _pct(r["accuracy"]), _pct(r["precision"]), _pct(r["recall"]), _pct(r["f1"]),
           _num(r["delta"]), _num(r["roc_auc"])] for r in ablation_rows])
    )  # fmt: skip
    blocks.append(("h2", "Weight sensitivity (125 renormalised settings, +-0.10 in steps of 0.05)"))
    blocks.append(
        ("table", ["cell", "settings", "accuracy range", "F1 range", "precision range", "precision n/a"],
         [[r["key"], r["n_settings"], _range(r["accuracy"]), _range(r["f1"]), _range(r["precision"]),
           r["precision_undefined"]] for r in sensitivity])
    )  # fmt: skip
    blocks.append(("h2", "Calibration (tau = 10th percentile of held-out clean scores)"))
    cal_body = []
    for cal_row in calibrations:
        for row in cal_row["before_after"]:
            bf, af = row["before"], row["after"]
            n = cal_row["n"]
            if cal_row.get("below_minimum"):
                n = f"{n} (below {cal_row['min_samples']}: noise)"
            cal_body.append([row["key"], f"{cal_row['tau_before']:.3f} -> {cal_row['tau']:.3f}", n,
                             f"{_pct(bf['accuracy'])} -> {_pct(af['accuracy'])}",
                             f"{_pct(bf['precision'])} -> {_pct(af['precision'])}",
                             f"{_pct(bf['recall'])} -> {_pct(af['recall'])}", f"{_pct(bf['f1'])} -> {_pct(af['f1'])}",
                             f"{_pct(bf['false_positive_rate'])} -> {_pct(af['false_positive_rate'])}"])  # fmt: skip
    blocks.append(("table", ["cell", "tau", "calib n", "accuracy", "precision", "recall", "F1", "FPR"], cal_body))
    if k_rows:
        blocks.append(("h2", "K = 3 vs K = 5"))
        blocks.append(
            ("table", ["dataset", "strategy", "K", "n", "exposure", "accuracy", "precision", "recall", "F1", "Delta",
                       "ROC-AUC"],
             [[r["dataset"], r["strategy"], r["k"], r["n"], _pct(r["retrieval_exposure"]), _pct(r["accuracy"]),
               _pct(r["precision"]), _pct(r["recall"]), _pct(r["f1"]), _num(r["delta"]), _num(r["roc_auc"])]
              for r in k_rows])
        )  # fmt: skip
    blocks.append(("h2", "Attack success end to end (does the answer adopt the poisoned claim?)"))
    blocks.append(
        ("p", "Among Part B samples whose top-K held a poisoned document: the share of answers that entail the "
              f"injected false statement (NLI entailment >= {manifest.get('adoption_threshold', 0.5)}), with the "
              "generator seeing every document (policy flag), with ragtrust's pre-generation gate (policy "
              "drop-suspicious), and adopted answers that the verdict still marked trusted.")
    )  # fmt: skip
    blocks.append(
        ("table", ["cell", "exposed", "adopted (no gate)", "adopted (gate)", "adopted and trusted"],
         [[r["key"], r["n_exposed"], _pct(r["adopted_flag"]) + _ci(r["adopted_flag_ci"]),
           _pct(r["adopted_gate"]) + _ci(r["adopted_gate_ci"]),
           _pct(r["adopted_and_trusted"]) + _ci(r["adopted_and_trusted_ci"])] for r in success])
    )  # fmt: skip
    if any(r["repeats"] > 1 for r in repeats):
        blocks.append(("h2", "Run-to-run variance (mean +- sd over repeats)"))
        blocks.append(
            ("table", ["dataset", "strategy", "K", "repeats", "accuracy", "F1", "Delta", "ROC-AUC"],
             [[r["dataset"], r["strategy"], r["k"], r["repeats"]]
              + [("n/a" if r[m] is None else f"{r[m][0]:.3f} +- {r[m][1]:.3f}") for m in
                 ("accuracy", "f1", "delta", "roc_auc")] for r in repeats])
        )  # fmt: skip
    blocks.append(("h2", "Cost"))
    stage_text = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in timing["stages_mean_s"].items())
    blocks.append(
        ("p", f"{timing['n']} queries: mean {_num(timing['mean_s'])} s, median {_num(timing['median_s'])} s, "
              f"p95 {_num(timing['p95_s'])} s per query (paper: about {PAPER_SECONDS_PER_SAMPLE} s per sample). "
              f"Mean per stage: {stage_text or 'n/a'}.")
    )  # fmt: skip
    blocks.append(("h2", "Figures"))
    for title, path in figures:
        blocks.append(("img", title, path))
    blocks.append(("h2", "Provenance"))
    blocks.append(("p", f"Command: `{manifest.get('command', '?')}`"))
    blocks.append(("table", ["data file", "sha256"], [[k, v] for k, v in (manifest.get("data_files") or {}).items()]))
    blocks.append(("table", ["model", "id"], [[k, v] for k, v in (manifest.get("models") or {}).items()]))
    blocks.append(("table", ["package", "version"], [[k, v] for k, v in (manifest.get("versions") or {}).items()]))
    blocks.append(("code", json.dumps(settings, indent=2)))

    data = {
        "run_dir": str(run.path),
        "manifest": manifest,
        "paper_reference": {"truthfulqa": PAPER_TRUTHFULQA, "secure_coding": PAPER_SECURE_CODING,
                            "fever_accuracy": PAPER_FEVER_ACCURACY, "fever_baseline": PAPER_FEVER_BASELINE,
                            "roc_auc_range": PAPER_ROC_AUC_RANGE},
        "detection_document": doc_rows,
        "detection_retrieval": ret_rows,
        "query_recall": {"fpr": query_fpr, "rows": query_rows},
        "ablation": ablation_rows,
        "weight_sensitivity": sensitivity,
        "calibration": calibrations,
        "k_comparison": k_rows,
        "attack_success": success,
        "repeats": repeats,
        "timing": timing,
        "consistency_max_abs_diff": consistency,
        "gaps": gaps,
        "figures": [str(p.relative_to(out)) for _, p in figures],
    }  # fmt: skip
    md_path, json_path, html_path = out / "report.md", out / "report.json", out / "report.html"
    atomic_write_text(md_path, render_markdown(blocks, out))
    atomic_write_text(json_path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    atomic_write_bytes(html_path, render_html(blocks).encode("utf-8"))
    return ReportPaths(md_path, json_path, html_path, tuple(p for _, p in figures))


__all__ = [
    "PAPER_FEVER_ACCURACY",
    "PAPER_FEVER_BASELINE",
    "PAPER_ROC_AUC_RANGE",
    "PAPER_SECURE_CODING",
    "PAPER_TRUTHFULQA",
    "QUERY_RECALL_TARGET",
    "QUERY_REPORT_DETECTORS",
    "ReportPaths",
    "build_report",
    "render_html",
    "render_markdown",
]
