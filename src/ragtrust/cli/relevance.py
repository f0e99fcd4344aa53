"""``ragtrust eval relevance``: fit the relevance thresholds on a store and report them.

The command attaches to the ``eval`` group (``ragtrust.cli.evaluation`` creates it, so list
this module after that one in ``COMMAND_MODULES``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.progress import Progress
from rich.table import Table

from ragtrust.cli.common import ConfigOption, console, default_store, fail, handle_errors, print_json, settings_from
from ragtrust.io import check_output_file
from ragtrust.record import cli_command


@handle_errors
def relevance(
    store: Path | None = typer.Option(None, "--store", "-s", help="Store directory (or RAGTRUST_STORE)."),
    out: Path = typer.Option(Path("docs/results/relevance.json"), "--out", "-o", help="Report JSON to write."),
    on_topic: Path | None = typer.Option(
        None, "--on-topic", help="JSONL of questions the store answers (default: the shipped OWASP questions)."
    ),
    off_topic: Path | None = typer.Option(
        None, "--off-topic", help="JSONL of questions it cannot answer (default: the shipped off-topic questions)."
    ),
    combine: list[Path] = typer.Option(
        [],
        "--combine",
        help="Reports of earlier runs (one per store): fit one pair of thresholds on their pooled rows; asks nothing.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    config: Path | None = ConfigOption,
) -> None:
    """Ask on- and off-topic questions, fit context/answer relevance thresholds, report (LOO too)."""
    from ragtrust.eval.relevance import (
        combine_reports,
        load_relevance_questions,
        run_relevance_eval,
        write_relevance_report,
    )

    check_output_file(out, f"--out {out}")
    command = cli_command()
    if combine:
        report = combine_reports([_read_report(p) for p in combine], command=command)
        _print(report, write_relevance_report(report, out), as_json)
        return
    settings = settings_from(config)
    store_dir = store or default_store()
    if store_dir is None:
        raise fail("no store given: pass --store DIR (build one with `ragtrust ingest PATHS --store DIR`)", 2)
    on = load_relevance_questions(on_topic, on_topic=True)
    off = load_relevance_questions(off_topic, on_topic=False)
    with Progress(console=console, transient=True, disable=as_json) as bar:
        task = bar.add_task("asking", total=len(on) + len(off))
        report = run_relevance_eval(
            store_dir,
            settings,
            on_topic=on,
            off_topic=off,
            command=command,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    _print(report, write_relevance_report(report, out), as_json)


def _read_report(path: Path) -> dict[str, Any]:
    """A report written by ``ragtrust eval relevance`` (one line of error when it is not one)."""
    from ragtrust.io import read_text_file

    try:
        data = json.loads(read_text_file(path))
    except json.JSONDecodeError as exc:
        raise fail(f"{path}: not JSON ({exc.msg})", 2) from exc
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise fail(f"{path}: not a report of `ragtrust eval relevance` (no rows)", 2)
    return data


def _print(report: dict[str, Any], path: Path, as_json: bool) -> None:
    """The fitted thresholds and the trusted counts (pooled, then per store when combined)."""
    keys = ("thresholds", "in_sample", "leave_one_out", "configured", "without_relevance")
    if as_json:
        print_json({**{k: report[k] for k in (*keys, "per_store") if k in report}, "json": str(path)})
        return
    t = report["thresholds"]
    console.print(
        f"fitted: context_threshold = {t['context_threshold']}, answer_threshold = {t['answer_threshold']} -> {path}"
    )
    table = Table(title="trusted verdicts")
    for column in ("decided by", "on-topic trusted", "off-topic trusted"):
        table.add_column(column)
    for key in keys[1:]:
        if key in report:
            f = report[key]
            share = f["on_topic_trusted_share"]
            pct = "n/a" if share is None else f"{100 * share:.1f}%"
            table.add_row(
                key.replace("_", " "),
                f"{f['on_topic_trusted']}/{f['on_topic']} ({pct})",
                f"{f['off_topic_trusted']}/{f['off_topic']}",
            )
    console.print(table)
    for store, f in report.get("per_store", {}).items():
        loo, ins = f["leave_one_out"], f["in_sample"]
        console.print(
            f"{store}: on-topic trusted {ins['on_topic_trusted']}/{ins['on_topic']} (leave-one-out "
            f"{loo['on_topic_trusted']}), off-topic trusted {ins['off_topic_trusted']}/{ins['off_topic']} "
            f"(leave-one-out {loo['off_topic_trusted']})",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    """Add ``relevance`` to the ``eval`` group (or ``relevance-eval`` to ``app`` when there is none)."""
    for group in app.registered_groups:
        if group.name == "eval" and group.typer_instance is not None:
            group.typer_instance.command(name="relevance")(relevance)
            return
    app.command(name="relevance-eval")(relevance)


__all__ = ["register", "relevance"]
