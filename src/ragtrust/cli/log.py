"""``ragtrust log``: list, show and export the verdict log (see :mod:`ragtrust.verdict_log`).

The log read is ``--log FILE`` when given, else the one verdicts are written to: ``[log] path``,
else ``<store>/verdicts.sqlite`` for ``--store`` / ``RAGTRUST_STORE``, else
``$XDG_DATA_HOME/ragtrust/verdicts.sqlite``. No model is loaded. Exit codes: 0 success;
2 no log there, a damaged log (one line naming the file, or the entry that no longer reads
back), an unknown id, format or filter, an ``--out`` that is the log itself or cannot be
written (the export replaces ``--out`` only once complete).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import typer
from rich.table import Table

from ragtrust.cli.common import ConfigOption, console, default_store, handle_errors, print_json, settings_from
from ragtrust.cli.render import print_verdict
from ragtrust.errors import InputError
from ragtrust.verdict_log import LogEntry, VerdictLog, default_log_path, export_log, parse_since

LogFileOption = typer.Option(
    None, "--log", help="the verdict log file (default: the one verdicts are written to)", show_default=False
)
StoreOption = typer.Option(
    None, "--store", "-s", help="read the log beside this store (default: $RAGTRUST_STORE)", show_default=False
)
LevelOption = typer.Option(None, "--level", help="only this trust level: high, medium, low or very-low")
OperationOption = typer.Option(None, "--operation", help="only this operation: ask, screen or verify")
SinceOption = typer.Option(None, "--since", help="only verdicts since an age (30m, 12h, 7d) or an ISO date / time")
#: the query column of ``log list`` is cut to this many characters (``log show`` has it whole)
QUERY_WIDTH = 60


def open_log(log: Path | None, store: Path | None, config: Path | None) -> VerdictLog:
    """The verdict log to read (see the module docstring), opened read-only.

    Raises:
        InputError: no log at that place (the message says where it looked).
    """
    if log is None:
        settings = settings_from(config).with_overrides({"log": {"enabled": True}})  # reading: wherever it is
        log = default_log_path(settings, store or default_store())
    assert log is not None  # enabled above
    return VerdictLog(log, read_only=True)


def _short(text: str, width: int = QUERY_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@handle_errors
def list_command(
    level: str | None = LevelOption,
    operation: str | None = OperationOption,
    since: str | None = SinceOption,
    limit: int = typer.Option(20, "--limit", "-n", min=1, help="most entries shown, newest first"),
    as_json: bool = typer.Option(False, "--json", help="print the entries as JSON"),
    log: Path | None = LogFileOption,
    store: Path | None = StoreOption,
    config: Path | None = ConfigOption,
) -> None:
    """List recent verdicts: time, operation, level, score, decision and query."""
    after = parse_since(since) if since is not None else None
    with open_log(log, store, config) as db:
        entries = db.entries(level=level, operation=operation, since=after, limit=limit)
        path = db.path
    if as_json:
        print_json([e.to_dict() for e in entries])
        return
    if not entries:
        console.print(f"no verdicts in {path} match", highlight=False)
        return
    table = Table(title=f"Verdicts in {path} (newest first)", title_justify="left")
    for name, justify in (("id", "right"), ("time (UTC)", "left"), ("operation", "left"), ("level", "left")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("decision", no_wrap=True)
    table.add_column("query", overflow="fold")
    for e in entries:
        table.add_row(
            str(e.id),
            e.at[:19].replace("T", " "),
            e.operation,
            e.level,
            f"{e.trust_score:.2f}",
            e.decision,
            _short(e.query),
        )
    console.print(table)


def _show(entry: LogEntry) -> None:
    from ragtrust.documents import Verdict

    head = Table(show_header=False, title=f"Verdict {entry.id}", title_justify="left")
    head.add_column("field", no_wrap=True)
    head.add_column("value", overflow="fold")
    for name, value in (
        ("time (UTC)", entry.at),
        ("operation", f"{entry.operation} ({entry.source})"),
        ("principal", entry.principal or "-"),
        ("decision", f"{entry.decision}: {entry.level}, T = {entry.trust_score:.3f}"),
        ("reasons", "; ".join(entry.reasons) or "-"),
        ("models", ", ".join(f"{k}={v}" for k, v in entry.models.items()) or "-"),
        ("timings", ", ".join(f"{k} {v:.2f} s" for k, v in entry.timings_s.items()) or "-"),
    ):
        head.add_row(name, value)
    console.print(head)
    data = {k: v for k, v in (entry.verdict or {}).items() if k != "decision"}
    try:
        verdict = Verdict.from_dict(data)
    except (TypeError, ValueError, KeyError):  # a verdict of another version: its JSON, as it is
        print_json(entry.verdict)
        return
    print_verdict(console, verdict, spans=True)


@handle_errors
def show_command(
    entry_id: int = typer.Argument(..., help="the entry's id (see `ragtrust log list`)"),
    as_json: bool = typer.Option(False, "--json", help="print the entry and its verdict as JSON"),
    log: Path | None = LogFileOption,
    store: Path | None = StoreOption,
    config: Path | None = ConfigOption,
) -> None:
    """Show one logged verdict in full."""
    if not 1 <= entry_id < 2**63:  # SQLite's INTEGER range; ids start at 1
        raise InputError(f"entry id {entry_id} is not a log entry id (see `ragtrust log list`)")
    with open_log(log, store, config) as db:
        entry = db.get(entry_id)
        path = db.path
    if entry is None:
        raise InputError(
            f"no entry {entry_id} in the verdict log {path} (pruned, or never there: see `ragtrust log list`)"
        )
    if as_json:
        print_json(entry.to_dict())
        return
    _show(entry)


@handle_errors
def export_command(
    out: Path = typer.Option(..., "--out", "-o", help="the file to write"),
    fmt: Literal["jsonl", "csv", "parquet"] = typer.Option(
        "jsonl",
        "--format",
        "-f",
        help="jsonl (one entry per line, the verdict as an object); csv or parquet (flat rows, lists and "
        "the verdict as JSON text; parquet needs pyarrow)",
    ),
    level: str | None = LevelOption,
    operation: str | None = OperationOption,
    since: str | None = SinceOption,
    log: Path | None = LogFileOption,
    store: Path | None = StoreOption,
    config: Path | None = ConfigOption,
) -> None:
    """Export logged verdicts, oldest first, with their full verdicts."""
    after = parse_since(since) if since is not None else None
    with open_log(log, store, config) as db:  # export_log refuses --out the log itself, before writing
        n = export_log(db, out, fmt, level=level, operation=operation, since=after)
        path = db.path
    console.print(f"wrote {n} verdict(s) from {path} to {out} ({fmt})", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``log`` group (list, show, export)."""
    log_app = typer.Typer(name="log", help="The verdict log: every ask and API verdict.", no_args_is_help=True)
    log_app.command("list")(list_command)
    log_app.command("show")(show_command)
    log_app.command("export")(export_command)
    app.add_typer(log_app, name="log")


__all__ = ["export_command", "list_command", "open_log", "register", "show_command"]
