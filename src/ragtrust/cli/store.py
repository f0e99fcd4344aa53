"""Store commands: ingest, scan, vet, quarantine, delete, ledger, store check / repair.

Exit codes (see :mod:`ragtrust.cli.common`): 0 success; 2 bad input (nothing could be
ingested, unknown ids, missing store) or a damaged store (``store check`` found damage,
or any command met a missing ledger); 3 ``scan`` found suspicious documents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ragtrust.cli.common import (
    EXIT_FLAGGED,
    EXIT_USAGE,
    ConfigOption,
    console,
    default_store,
    err_console,
    fail,
    handle_errors,
    print_json,
    settings_from,
)
from ragtrust.config import Settings

StoreOption = typer.Option(None, "--store", "-s", help="store folder (default: $RAGTRUST_STORE)")
_INGEST_PATHS = typer.Argument(..., help="files or folders (.txt .md .html .jsonl .csv)")
_SCAN_PATHS = typer.Argument(None, help="files or folders to scan (instead of, or with, --store)")
_INCLUDE = typer.Option([], "--include", help="glob of files to read under folders (repeatable)")
_EXCLUDE = typer.Option([], "--exclude", help="glob of files to leave out (repeatable)")
_REPORT = typer.Option(None, "--report", help="write one JSON line per document here")
_VET_IDS = typer.Argument(..., help="document ids (a chunk id vets its document)")
_QUARANTINE_IDS = typer.Argument(..., help="document ids (a chunk id quarantines its document)")
_DELETE_IDS = typer.Argument(..., help="document ids")

_STAGE_LABELS = {
    "chunk": "chunking",
    "embed": "embedding",
    "signals": "screening",
    "witnesses": "claim conflicts with corpus witnesses",
}


def _embedder(settings: Settings) -> Any:
    """Build the configured embedder (tests replace this function)."""
    from ragtrust.models.embedder import default_embedder

    return default_embedder(settings)


def _nli(settings: Settings) -> Any:
    """Build the configured NLI model (tests replace this function)."""
    from ragtrust.models.nli import default_nli

    return default_nli(settings)


def _store_path(store: Path | None) -> Path:
    path = store or default_store()
    if path is None:
        raise fail("no store given: pass --store DIR or set RAGTRUST_STORE", EXIT_USAGE)
    return path


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """Yield a ``(stage, done, total)`` callback that draws a rich progress bar per stage."""
    if not enabled:
        yield lambda stage, done, total: None
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    ) as bar:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(_STAGE_LABELS.get(stage, stage), total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update


def _print_skipped(skipped: list[tuple[str, str]]) -> None:
    if not skipped:
        return
    table = Table(title=f"Skipped ({len(skipped)})", title_justify="left")
    table.add_column("path")
    table.add_column("reason")
    for path, reason in skipped:
        table.add_row(path, reason)
    err_console.print(table)


@handle_errors
def ingest(
    paths: list[Path] = _INGEST_PATHS,
    store: Path | None = StoreOption,
    tier: Literal["vetted", "unvetted"] | None = typer.Option(None, "--tier", help="trust tier to record"),
    include: list[str] = _INCLUDE,
    exclude: list[str] = _EXCLUDE,
    json_out: bool = typer.Option(False, "--json", help="print the ingest report as JSON"),
    config: Path | None = ConfigOption,
) -> None:
    """Load, chunk, embed and index documents into a store (incremental, atomic)."""
    from ragtrust.ingest.loaders import load_paths
    from ragtrust.ingest.store import Store

    if tier is not None and tier not in ("vetted", "unvetted"):
        raise fail(f"--tier must be vetted or unvetted, got {tier!r}", EXIT_USAGE)
    settings = settings_from(config)
    root = _store_path(store)
    loaded = load_paths(paths, include=include, exclude=exclude)
    if not loaded.documents:
        _print_skipped(loaded.skipped)
        raise fail("nothing could be ingested: no readable documents in the given paths", EXIT_USAGE)
    st = Store.open(root, _embedder(settings), create=True, settings=settings)
    with _progress(not json_out) as progress:
        report = st.add(loaded.documents, tier=tier, progress=progress)
    if json_out:
        print_json({**report.to_dict(), "skipped": [list(s) for s in loaded.skipped], "store": str(root)})
        return
    table = Table(title=f"Ingested into {root}", title_justify="left")
    for col in ("added", "updated", "unchanged", "chunks written", "chunks in store", "skipped files", "seconds"):
        table.add_column(col, justify="right")
    table.add_row(
        str(report.added),
        str(report.updated),
        str(report.unchanged),
        str(report.chunks),
        str(report.total_chunks),
        str(len(loaded.skipped)),
        f"{report.seconds:.1f}",
    )
    console.print(table)
    _print_skipped(loaded.skipped)


@handle_errors
def scan(
    paths: list[Path] = _SCAN_PATHS,
    store: Path | None = StoreOption,
    report: Path | None = _REPORT,
    quarantine_above: float | None = typer.Option(
        None, "--quarantine-above", min=0.0, max=1.0, help="quarantine store documents with P above this"
    ),
    engine: Literal["local", "ray"] = typer.Option("local", "--engine", help="where to run the scan"),
    witnesses: int | None = typer.Option(
        None,
        "--witnesses",
        min=0,
        help="corpus neighbours per document, witnesses of its claims (default: screening.witnesses; 0: off)",
    ),
    limit: int = typer.Option(20, "--limit", min=1, help="rows in the summary table"),
    json_out: bool = typer.Option(False, "--json", help="print the scan report as JSON"),
    config: Path | None = ConfigOption,
) -> None:
    """Run Stage 1's document-level signals and claim conflicts with corpus witnesses over a whole corpus."""
    from ragtrust.ingest.chunker import chunk_documents
    from ragtrust.ingest.loaders import load_paths
    from ragtrust.ingest.store import Store
    from ragtrust.scan import scan_corpus
    from ragtrust.screening.aggregate import build_screener

    if engine not in ("local", "ray"):
        raise fail(f"--engine must be local or ray, got {engine!r}", EXIT_USAGE)
    settings = settings_from(config)
    root = store or (None if paths else default_store())
    if not paths and root is None:
        raise fail("nothing to scan: pass PATHS, --store DIR, or set RAGTRUST_STORE", EXIT_USAGE)
    if quarantine_above is not None and root is None:
        raise fail("--quarantine-above needs --store (quarantine is recorded in the store's ledger)", EXIT_USAGE)
    embedder = _embedder(settings)
    opened = Store.open(root, embedder, settings=settings) if root is not None else None
    skipped: list[tuple[str, str]] = []
    if paths:
        loaded = load_paths(paths)
        skipped = loaded.skipped
        cfg = settings.chunking
        tokenizer = getattr(embedder, "tokenizer", None)
        documents = chunk_documents(loaded.documents, cfg.chunk_tokens, cfg.overlap_tokens, tokenizer)
        if not documents:
            _print_skipped(skipped)
            raise fail("nothing to scan: no readable documents in the given paths", EXIT_USAGE)
    else:
        assert opened is not None
        documents = opened.documents()
        if not documents:
            raise fail(f"store {root} has no documents to scan", EXIT_USAGE)
    nli = _nli(settings)
    ledger = opened.ledger if opened is not None else None
    signals = build_screener(settings, nli=nli, embedder=embedder, ledger=ledger).signals
    with _progress(not json_out) as progress:
        result = scan_corpus(
            documents,
            signals=signals,
            embedder=embedder,
            nli=nli,
            # as many witnesses as query-time screening reads, so the two agree
            witnesses=settings.screening.witnesses if witnesses is None else witnesses,
            engine=engine,
            progress=progress,
            threshold=settings.screening.suspicious_threshold,
            ledger=ledger,
        )
    quarantined: list[str] = []
    if quarantine_above is not None and ledger is not None:
        for row in result.suspicious(quarantine_above):
            parent = row.parent_id or row.id
            if parent in quarantined or ledger.get(parent) is None:
                continue
            ledger.set_tier(parent, "quarantined", f"scan: P={row.poison_probability:.2f} on {row.id}")
            quarantined.append(parent)
    if report is not None:
        result.write_jsonl(report)
    flagged = result.suspicious()
    if json_out:
        print_json({**result.to_dict(), "quarantined": quarantined, "skipped": [list(s) for s in skipped]})
    else:
        _render_scan(result, limit, quarantined, report)
        _print_skipped(skipped)
    if flagged:
        raise typer.Exit(EXIT_FLAGGED)


@handle_errors
def vet(
    ids: list[str] = _VET_IDS,
    store: Path | None = StoreOption,
    reason: str = typer.Option("", "--reason", help="why (recorded in the ledger)"),
) -> None:
    """Mark documents as vetted: their current content becomes the trusted version."""
    _set_tier(_store_path(store), ids, "vetted", reason)


@handle_errors
def quarantine(
    ids: list[str] = _QUARANTINE_IDS,
    store: Path | None = StoreOption,
    reason: str = typer.Option("", "--reason", help="why (recorded in the ledger)"),
) -> None:
    """Quarantine documents: the provenance signal then scores them as near-certain poison."""
    _set_tier(_store_path(store), ids, "quarantined", reason)


@handle_errors
def delete_command(
    ids: list[str] = _DELETE_IDS,
    store: Path | None = StoreOption,
    config: Path | None = ConfigOption,
) -> None:
    """Delete documents (and their chunks) from a store; the ledger keeps their history."""
    from ragtrust.ingest.store import Store

    settings = settings_from(config)
    st = Store.open(_store_path(store), _embedder(settings), settings=settings)
    count = st.delete(ids)
    console.print(f"deleted {count} document(s); {len(st)} chunks remain")


@handle_errors
def ledger_command(
    doc_id: str = typer.Argument(..., help="document id (a chunk id shows its document)"),
    store: Path | None = StoreOption,
    json_out: bool = typer.Option(False, "--json", help="print as JSON"),
) -> None:
    """Show a document's provenance: source, hash, tier, versions and events."""
    from ragtrust.errors import InputError
    from ragtrust.ingest.store import open_ledger

    with open_ledger(_store_path(store)) as db:
        key = _parent_key(db, doc_id)
        record = db.get(key, include_deleted=True)
        if record is None:
            hint = _did_you_mean(db, [(doc_id, key)], include_deleted=True)
            raise InputError(f"document {doc_id!r} is not in the provenance ledger{hint}")
        history = db.history(key)
        events = db.events(key)
    if json_out:
        print_json(
            {
                "record": record.to_dict(),
                "changed_since_vetted": record.changed_since_vetted,
                "versions": [v.to_dict() for v in history],
                "events": [e.to_dict() for e in events],
            }
        )
        return
    summary = Table(title=f"Provenance of {key}", title_justify="left", show_header=False)
    summary.add_column("field")
    summary.add_column("value")
    for name, value in (
        ("source", record.source),
        ("tier", record.tier or "(none)"),
        ("content hash", record.content_hash[:16]),
        ("vetted hash", (record.vetted_hash or "")[:16] or "(never vetted)"),
        ("changed since vetted", "YES" if record.changed_since_vetted else "no"),
        ("first seen", record.first_seen),
        ("last changed", record.last_changed),
        ("deleted", record.deleted_at or "no"),
    ):
        summary.add_row(name, str(value))
    console.print(summary)
    versions = Table(title="Versions", title_justify="left")
    for col in ("version", "hash", "recorded", "source"):
        versions.add_column(col)
    for v in history:
        versions.add_row(str(v.version), v.content_hash[:16], v.recorded_at, v.source)
    console.print(versions)
    log = Table(title="Events", title_justify="left")
    for col in ("at", "event", "detail"):
        log.add_column(col)
    for e in events:
        log.add_row(e.at, e.kind, e.detail)
    console.print(log)


@handle_errors
def store_check(
    store: Path | None = StoreOption,
    json_out: bool = typer.Option(False, "--json", help="print the findings as JSON"),
) -> None:
    """Verify a store: manifest, segment files and ledger; exit 2 naming the damage."""
    from ragtrust.ingest.store import check_store

    root = _store_path(store)
    result = check_store(root)
    if json_out:
        print_json(result.to_dict())
    elif result.ok:
        console.print(
            f"store {root} is sound: generation {result.generation}, {result.documents} document(s), "
            f"{result.chunks} chunk(s), all listed in the ledger",
            highlight=False,
            soft_wrap=True,
        )
    else:
        for problem in result.problems:
            err_console.print(f"[bold red]damaged:[/] {problem}", highlight=False, soft_wrap=True)
        fixes = []
        if any(p.startswith("ledger.sqlite") for p in result.problems):
            fixes.append(f"`ragtrust store repair --store {root}` re-creates the ledger, every document unvetted")
        if any(not p.startswith("ledger.sqlite") for p in result.problems):
            fixes.append("damaged segments or manifests need a re-ingest into a new store")
        err_console.print(f"store {root} is damaged: {'; '.join(fixes)}", highlight=False, soft_wrap=True)
    if not result.ok:
        raise typer.Exit(EXIT_USAGE)


@handle_errors
def store_repair(
    store: Path | None = StoreOption,
    json_out: bool = typer.Option(False, "--json", help="print what was done as JSON"),
) -> None:
    """Re-create a missing or unreadable ledger; every document is recorded UNVETTED."""
    from ragtrust.ingest.store import repair_store

    root = _store_path(store)
    result = repair_store(root)
    if json_out:
        print_json(result.to_dict())
        return
    if result.moved_aside:
        console.print(f"kept the old ledger files as {', '.join(result.moved_aside)}", highlight=False, soft_wrap=True)
    if result.recreated:
        console.print(
            f"re-created the ledger of {root}: all {result.documents} document(s) recorded UNVETTED; "
            "earlier vetting and quarantines are lost: vet or quarantine them again "
            "(`ragtrust vet` / `ragtrust quarantine`)",
            highlight=False,
            soft_wrap=True,
        )
    elif result.recorded:
        console.print(
            f"the ledger was sound; recorded {len(result.recorded)} document(s) it did not list as UNVETTED",
            highlight=False,
            soft_wrap=True,
        )
    else:
        console.print(
            f"the ledger of {root} is sound and lists every document: nothing to repair",
            highlight=False,
            soft_wrap=True,
        )


def register(app: typer.Typer) -> None:
    """Add ingest, scan, vet, quarantine, delete, ledger and ``store check`` / ``store repair`` to ``app``."""
    app.command("ingest")(ingest)
    app.command("scan")(scan)
    app.command("vet")(vet)
    app.command("quarantine")(quarantine)
    app.command("delete")(delete_command)
    app.command("ledger")(ledger_command)
    store_app = typer.Typer(help="Check or repair a store's files and provenance ledger.", no_args_is_help=True)
    store_app.command("check")(store_check)
    store_app.command("repair")(store_repair)
    app.add_typer(store_app, name="store")


def _parent_key(db: Any, doc_id: str) -> str:
    """Map a chunk id ``<id>#<n>`` to its parent when only the parent is in the ledger."""
    if db.get(doc_id, include_deleted=True) is None:
        head, sep, tail = doc_id.rpartition("#")
        if sep and tail.isdigit():
            return head
    return doc_id


def _did_you_mean(db: Any, unknown: list[tuple[str, str]], *, include_deleted: bool = False) -> str:
    """``"; did you mean X or Y?"`` from the ledger's closest ids, or ``""`` when none is close.

    ``unknown`` holds ``(typed id, ledger key)`` pairs; with several unknown ids each
    suggestion says which id it is for.
    """
    parts: list[str] = []
    for typed, key in unknown:
        matches = db.closest_ids(key, include_deleted=include_deleted)
        if matches:
            parts.append(" or ".join(matches) + (f" (for {typed})" if len(unknown) > 1 else ""))
    return f"; did you mean {', '.join(parts)}?" if parts else ""


def _set_tier(root: Path, ids: list[str], tier: str, reason: str) -> None:
    from ragtrust.errors import InputError
    from ragtrust.ingest.store import open_ledger

    with open_ledger(root) as db:
        keys = [_parent_key(db, i) for i in ids]
        unknown = [(i, k) for i, k in zip(ids, keys, strict=True) if db.get(k) is None]
        if unknown:
            names = ", ".join(i for i, _ in unknown)
            hint = _did_you_mean(db, unknown) or " (see `ragtrust ingest`)"
            raise InputError(f"not in the ledger of store {root}: {names}{hint}")
        for key in dict.fromkeys(keys):
            db.set_tier(key, tier, reason)
    console.print(f"{tier}: {', '.join(dict.fromkeys(keys))}")


def _render_scan(result: Any, limit: int, quarantined: list[str], report: Path | None) -> None:
    flagged = result.suspicious()
    console.print(
        f"scanned {len(result.rows)} documents with {', '.join(result.signals) or 'no signals'} "
        f"({result.engine} engine, {result.seconds:.1f} s): {len(flagged)} suspicious (P > {result.threshold:.2f})"
    )
    if result.left_out:
        console.print(f"[dim]batch-level signals not used in a corpus scan: {', '.join(result.left_out)}[/]")
    if flagged:
        table = Table(title="Suspicious documents", title_justify="left")
        table.add_column("document")
        table.add_column("P", justify="right")
        table.add_column("reasons")
        table.add_column("spans")
        for row in result.summary_rows(limit):
            table.add_row(
                row["id"],
                f"{row['poison_probability']:.2f}",
                "\n".join(row["reasons"]) or "-",
                "\n".join(repr(s[:80]) for s in row["spans"]) or "-",
            )
        console.print(table)
    else:
        _render_top(result)
    conflicts = result.conflicts()
    if conflicts:
        from ragtrust.cli.render import conflicts_table

        console.print(conflicts_table(conflicts[:limit]))
        if len(conflicts) > limit:
            console.print(f"[dim]{len(conflicts) - limit} more conflict(s) in --json / --report[/]")
    if quarantined:
        console.print(f"quarantined {len(quarantined)} document(s): {', '.join(quarantined)}")
    if report is not None:
        console.print(f"report written to {report}")


def _render_top(result: Any, n: int = 5) -> None:
    """The highest-P documents of a scan that flagged none: how close the corpus came."""
    top = result.top(n)
    if not top:
        return
    table = Table(title=f"Highest P (top {len(top)}, none above {result.threshold:.2f})", title_justify="left")
    table.add_column("document", overflow="fold")
    table.add_column("P", justify="right")
    table.add_column("strongest signal")
    table.add_column("reason")
    for item in top:
        signal = f"{item['signal']} {item['signal_score']:.2f}" if item["signal"] else "- (all 0)"
        table.add_row(item["id"], f"{item['poison_probability']:.2f}", signal, item["reason"] or "-")
    console.print(table)


__all__ = ["register"]
