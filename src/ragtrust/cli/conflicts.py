"""``ragtrust eval conflicts``: the claim-conflict signal with and without a witness (issue 15).

Attaches to the ``eval`` group (``ragtrust.cli.evaluation`` creates it, so list this module
after that one in ``COMMAND_MODULES``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ragtrust.cli.common import console, handle_errors, print_json, settings_from
from ragtrust.errors import InputError
from ragtrust.io import check_output_file
from ragtrust.record import cli_command


@handle_errors
def conflicts(
    out: Path = typer.Option(..., "--out", "-o", help="Report JSON to write."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Folder with truthfulqa/, fever/, poisonedrag/, ..."),
    datasets: str = typer.Option("truthfulqa,fever,secure_coding", "--datasets", help="Comma-separated benchmarks."),
    n: int = typer.Option(100, "-n", min=5, help="Evaluation queries per benchmark."),
    k: int = typer.Option(5, "-k", min=2, help="Retrieved documents per query."),
    witnesses: int = typer.Option(5, "--witnesses", min=0, help="Store witnesses per query."),
    owasp_sets: int = typer.Option(100, "--owasp-sets", min=0, help="Clean OWASP sets (false alarms on long text)."),
    seed: int = typer.Option(42, "--seed", help="Sampling and attack seed."),
    calibrate: float | None = typer.Option(
        None,
        "--calibrate",
        min=0.001,
        max=0.5,
        help="Fit the NLI ramp first, to this false-alarm budget per clean set.",
    ),
    write_manifest: bool = typer.Option(
        False, "--write-manifest", help="Store the fitted ramp in the shipped NLI model's manifest (needs --calibrate)."
    ),
    nli_check: bool = typer.Option(
        True,
        "--nli-check/--no-nli-check",
        help="Run the NLI contradiction check on aligned pairs (the signal's nli_contradiction).",
    ),
    answer_check: bool = typer.Option(
        True,
        "--answer-check/--no-answer-check",
        help="Compare the values of claims that answer a question asking for one value (the signal's answer_check).",
    ),
    max_nli_pairs: str | None = typer.Option(
        None,
        "--max-nli-pairs",
        help="Aligned pairs the NLI check reads up front, nearest the question ('all': no budget; "
        "default: the signal's).",
    ),
    config: Path | None = typer.Option(None, "--config", help="Settings TOML (models)."),
    as_json: bool = typer.Option(False, "--json", help="Print the headline numbers as JSON."),
) -> None:
    """Per-document AUC / recall at <= 2% FPR of claim conflicts, poison beside its witness and without one."""
    from ragtrust.eval.conflicts import benchmark_names, run, write_manifest_entry, write_report
    from ragtrust.eval.conflicts_report import report_paths
    from ragtrust.models.embedder import default_embedder
    from ragtrust.models.nli import default_nli

    if write_manifest and calibrate is None:
        raise InputError("--write-manifest needs --calibrate FPR")
    if calibrate is not None and not nli_check:
        raise InputError("--calibrate fits the NLI check's ramp: it cannot be combined with --no-nli-check")
    for path in report_paths(out):
        check_output_file(path, f"--out {out}" + (f" ({path.name})" if path != out else ""))
    names = benchmark_names(datasets.split(","))  # before any model loads
    settings = settings_from(config, None)
    report = run(
        nli=default_nli(settings),
        embedder=default_embedder(settings),
        data_dir=data_dir,
        datasets=names,
        n=n,
        k=k,
        witnesses=witnesses,
        seed=seed,
        owasp_sets=owasp_sets,
        signal_params={"nli_contradiction": nli_check, "answer_check": answer_check, **_budget(max_nli_pairs)},
        calibrate_fpr=calibrate,
        progress=lambda message: console.print(message, highlight=False),
    )
    report = {"command": cli_command(), **report}
    write_report(report, out)
    if write_manifest:
        write_manifest_entry(report, str(out))
    if as_json:
        print_json({key: report[key] for key in ("signal", "datasets", "owasp_clean", "poisonedrag") if key in report})
        return
    _print(report, out)


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _print(report: dict[str, Any], out: Path) -> None:
    table = Table(title="claim conflicts per document (held-out families)")
    for column in ("dataset", "attack / placement", "ROC-AUC", "recall @2% FPR", "blamed", "contested", "missed"):
        table.add_column(column)
    for name, d in report["datasets"].items():
        for cell, m in d["cells"].items():
            table.add_row(
                name,
                cell,
                _num(m.get("roc_auc")),
                _pct(m.get("recall_at_2pct_fpr")),
                _pct(m.get("blamed")),
                _pct(m.get("contested")),
                _pct(m.get("missed")),
            )
        table.add_row(name, "clean sets with a conflict", "", _pct(d["clean"]["sets_with_conflict"]), "", "", "")
    console.print(table)
    owasp = report.get("owasp_clean")
    if owasp:
        console.print(
            f"OWASP clean sets: {_pct(owasp['sets_with_conflict'])} with a conflict, "
            f"{_pct(owasp['sets_with_blame'])} with a document blamed ({owasp['sets']} sets)",
            highlight=False,
        )
    prag = report.get("poisonedrag", {})
    for variant in ("two_clean_witnesses", "one_clean_witness"):
        if variant in prag:
            m = prag[variant]
            console.print(
                f"PoisonedRAG (all items), {variant}: AUC {_num(m.get('roc_auc'))}, blamed {_pct(m['blamed'])}, "
                f"contested {_pct(m['contested'])}, clean passage blamed {_pct(m['clean_document_blamed'])}",
                highlight=False,
            )
    console.print(f"report -> {out}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``conflicts`` to the ``eval`` group."""
    for group in app.registered_groups:
        if group.name == "eval" and group.typer_instance is not None:
            group.typer_instance.command(name="conflicts")(conflicts)
            return
    app.command(name="conflicts-eval")(conflicts)


__all__ = ["conflicts", "register"]


def _budget(value: str | None) -> dict[str, int | None]:
    """``--max-nli-pairs`` as signal parameters: nothing (the default), ``None`` for 'all', or N >= 0."""
    if value is None:
        return {}
    if value.strip().lower() == "all":
        return {"max_nli_pairs": None}
    try:
        n = int(value)
    except ValueError:
        raise InputError(f"--max-nli-pairs must be a whole number >= 0 or 'all', got {value!r}") from None
    if n < 0:
        raise InputError(f"--max-nli-pairs must be a whole number >= 0 or 'all', got {value!r}")
    return {"max_nli_pairs": n}
