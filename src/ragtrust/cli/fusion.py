"""``ragtrust eval fusion``: train a learned signal fusion on one run, evaluate it on another.

Evaluation only (issue 16): the pipeline keeps its noisy-OR. The command attaches to the
``eval`` group (``ragtrust.cli.evaluation`` creates it, so list this module after that one
in ``COMMAND_MODULES``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import typer
from rich.table import Table

from ragtrust.cli.common import console, err_console, handle_errors, print_json
from ragtrust.io import check_output_file
from ragtrust.record import cli_command


@handle_errors
def fusion(
    train: Path = typer.Option(..., "--train", help="Training run (development families): `ragtrust eval run` dir."),
    heldout: Path = typer.Option(..., "--eval", help="Evaluation run (held-out families): `ragtrust eval run` dir."),
    out: Path = typer.Option(..., "--out", "-o", help="Report JSON to write."),
    model_out: Path | None = typer.Option(None, "--model-out", help="Also write the fitted model as JSON."),
    with_skipped_flags: bool = typer.Option(
        False, "--with-skipped-flags", help="Ablation: add a '<signal>:skipped' indicator per signal (a format leak)."
    ),
    method: Literal["auto", "sigmoid", "isotonic"] = typer.Option(
        "auto", "--method", help="Calibrator (auto: sigmoid below 1000 docs, else isotonic)."
    ),
    fpr: float = typer.Option(0.02, "--fpr", min=0.0, max=0.5, help="False-positive budget on clean documents."),
    seed: int = typer.Option(0, "--seed", help="Seed of the calibration folds."),
    keep_shared: bool = typer.Option(
        False, "--keep-shared", help="Evaluate on held-out clean documents the training run also holds too."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the headline numbers as JSON."),
) -> None:
    """Learned, calibrated fusion vs the noisy-OR P_i vs each signal: AUC, recall at <= 2% FPR, ECE."""
    from ragtrust.eval.fusion import fusion_report, write_fusion_report

    check_output_file(out, f"--out {out}")
    if model_out is not None:
        check_output_file(model_out, f"--model-out {model_out}")
    command = cli_command()
    report, model = fusion_report(
        train,
        heldout,
        skipped_flags=with_skipped_flags,
        method=method,
        fpr=fpr,
        seed=seed,
        exclude_shared=not keep_shared,
        command=command,
    )
    path = write_fusion_report(report, out)
    if model_out is not None:
        model.save(model_out)
    for warning in report["warnings"]:
        err_console.print(f"[bold yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    if as_json:
        keys = ("best_single_signal", "thresholds", "overall", "model", "overlap")
        print_json({**{k: report[k] for k in keys}, "json": str(path), "model_json": model_out and str(model_out)})
        return
    _print(report, path, model_out)


def _fmt(value: Any, pct: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:.1f}%" if pct else f"{value:.3f}"


def _print(report: dict[str, Any], path: Path, model_out: Path | None) -> None:
    m, o, h = report["model"], report["overlap"], report["heldout"]
    weights = ", ".join(f"{f} {c:+.2f}" for f, c in zip(m["feature_names"], m["coefficients"], strict=True) if c)
    dropped = ", ".join(m["dropped"]) or "none"
    console.print(
        f"fusion: {weights}; intercept {m['intercept']:+.2f}; calibration {m['calibration']['method']}; "
        f"dropped (negative weight): {dropped}",
        highlight=False,
    )
    console.print(
        f"held-out: {h['n_documents']} documents ({h['n_poisoned']} poisoned); {h['n_excluded_shared']} excluded "
        f"as shared with the training run ({o['shared_ids']} of {o['heldout_ids']} ids shared)",
        highlight=False,
    )
    best = report["best_single_signal"]
    table = Table(
        title=f"held-out documents, thresholds fitted on the training run's clean documents (best single: {best})"
    )
    for column in ("detector", "ROC-AUC", "recall @ FPR budget", "realised FPR", "ECE"):
        table.add_column(column)
    for name, row in report["overall"].items():
        table.add_row(name, _fmt(row["roc_auc"]), _fmt(row["recall"], True), _fmt(row["fpr"], True), _fmt(row["ece"]))
    console.print(table)
    per = Table(title="per dataset: ROC-AUC / recall")
    per.add_column("dataset")
    shown = [n for n in ("learned", "noisy_or", best) if n]
    for name in shown:
        per.add_column(name)
    for dataset, rows in report["per_dataset"].items():
        per.add_row(dataset, *(f"{_fmt(rows[n]['roc_auc'])} / {_fmt(rows[n]['recall'], True)}" for n in shown))
    console.print(per)
    console.print(f"report -> {path}" + (f"; model -> {model_out}" if model_out else ""), highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``fusion`` to the ``eval`` group (or ``fusion-eval`` to ``app`` when there is none)."""
    for group in app.registered_groups:
        if group.name == "eval" and group.typer_instance is not None:
            group.typer_instance.command(name="fusion")(fusion)
            return
    app.command(name="fusion-eval")(fusion)


__all__ = ["fusion", "register"]
