"""Store commands: ingest, scan, vet, quarantine, delete, ledger, store check / repair.

Exit codes (see :mod:`ragtrust.cli.common`): 0 success; 2 bad input (nothing could be
ingested, unknown ids, missing store) or a damaged store (``store check`` found damage,
or any command met a missing ledger); 3 ``scan`` found suspicious documents.

The provenance commands (vet, quarantine, ledger) live in :mod:`ragtrust.cli.ledger` and are
registered here, in the order ``ragtrust --help`` lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
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
    StoreOption,
    console,
    default_store,
    err_console,
    fail,
    handle_errors,
    print_json,
    settings_from,
    spinner,
    store_path,
)
from ragtrust.cli.ledger import ByOption, cli_actor, ledger_command, quarantine, vet
from ragtrust.cli.render import plain
from ragtrust.config import Settings

_INGEST_PATHS = typer.Argument(..., help="files or folders (.txt .md .html .jsonl .csv; .pdf .docx: docs extra)")
_SCAN_PATHS = typer.Argument(None, help="files or folders to scan (instead of, or with, --store)")
_INCLUDE = typer.Option([], "--include", help="glob of files to read under folders (repeatable)")
_EXCLUDE = typer.Option([], "--exclude", help="glob of files to leave out (repeatable)")
_REPORT = typer.Option(None, "--report", help="write one JSON line per document here")
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
        table.add_row(plain(path), plain(reason))
    err_console.print(table)


def _unvetted_note(st: Any, added: Sequence[str], tier: str | None, mode: str, root: Path) -> str | None:
    """What new documents without the vetted tier mean in a store that vets its documents (else ``None``)."""
    if tier == "vetted" or not added or not st.ledger.ids("vetted"):
        return None
    what = "not vetted" if tier is None else "unvetted"
    effect = (
        "an answer that rests only on them is not trusted until they are vetted"
        if mode == "refuse"
        else 'an answer that rests only on them is trusted with a warning (trust.unvetted = "warn")'
    )
    return (
        f"note: {len(added)} new document(s) are {what} in a store that holds vetted documents: {effect} "
        f"(ragtrust vet ID --store {root}; ragtrust docs --store {root} --tier {tier or 'none'} lists them)"
    )


@handle_errors
def ingest(
    paths: list[Path] = _INGEST_PATHS,
    store: Path | None = StoreOption,
    tier: Literal["vetted", "unvetted"] | None = typer.Option(None, "--tier", help="trust tier to record"),
    include: list[str] = _INCLUDE,
    exclude: list[str] = _EXCLUDE,
    json_out: bool = typer.Option(False, "--json", help="print the ingest report as JSON"),
    config: Path | None = ConfigOption,
    by: str | None = ByOption,
) -> None:
    """Load, chunk, embed and index documents into a store (incremental, atomic)."""
    from ragtrust.ingest.loaders import load_paths
    from ragtrust.ingest.store import Store

    if tier is not None and tier not in ("vetted", "unvetted"):
        raise fail(f"--tier must be vetted or unvetted, got {tier!r}", EXIT_USAGE)
    settings = settings_from(config)
    root = store_path(store)
    with spinner("reading files", enabled=not json_out):
        loaded = load_paths(paths, include=include, exclude=exclude, limits=settings.ingest)
    if not loaded.documents:
        _print_skipped(loaded.skipped)
        raise fail("nothing could be ingested: no readable documents in the given paths", EXIT_USAGE)
    st = Store.open(root, _embedder(settings), create=True, settings=settings)
    with _progress(not json_out) as progress:
        report = st.add(loaded.documents, tier=tier, progress=progress, actor=cli_actor(by))
    # files the loaders skipped, then documents the store refused (e.g. ingest.max_chunks_per_document)
    skipped = [*loaded.skipped, *report.skipped]
    note = _unvetted_note(st, report.added_ids, tier, settings.trust.unvetted, root)
    if note:
        err_console.print(note, markup=False, highlight=False, soft_wrap=True)
    if json_out:
        print_json({**report.to_dict(), "skipped": [list(s) for s in skipped], "store": str(root)})
        return
    table = Table(title=plain(f"Ingested into {root}"), title_justify="left")
    for col in ("added", "updated", "unchanged", "chunks written", "chunks in store", "skipped", "seconds"):
        table.add_column(col, justify="right")
    table.add_row(
        str(report.added),
        str(report.updated),
        str(report.unchanged),
        str(report.chunks),
        str(report.total_chunks),
        str(len(skipped)),
        f"{report.seconds:.1f}",
    )
    console.print(table)
    _print_skipped(skipped)


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
    full: bool = typer.Option(
        False, "--full", help="scan every document of the store again, not only what changed since its last scan"
    ),
    config: Path | None = ConfigOption,
) -> None:
    """Run Stage 1's document-level signals and claim conflicts with corpus witnesses over a whole corpus.

    A store keeps its last scan: documents whose text, ledger record, witnesses and
    configuration have not changed keep their rows, and only the others are scanned
    (--full scans them all).
    """
    from ragtrust.ingest.chunker import chunk_documents
    from ragtrust.ingest.loaders import load_paths
    from ragtrust.ingest.store import Store
    from ragtrust.models.nli_engine import NLI_CACHE_FILE, NLIEngine
    from ragtrust.scan import scan_corpus
    from ragtrust.scan.report import check_report_path
    from ragtrust.scan.state import SCAN_STATE_FILE, ScanState
    from ragtrust.screening.aggregate import build_screener
    from ragtrust.screening.base import SCREEN_CACHE_FILE, persist_caches

    if engine not in ("local", "ray"):
        raise fail(f"--engine must be local or ray, got {engine!r}", EXIT_USAGE)
    settings = settings_from(config)
    root = store or (None if paths else default_store())
    if not paths and root is None:
        raise fail("nothing to scan: pass PATHS, --store DIR, or set RAGTRUST_STORE", EXIT_USAGE)
    if quarantine_above is not None and root is None:
        raise fail("--quarantine-above needs --store (quarantine is recorded in the store's ledger)", EXIT_USAGE)
    check_report_path(report, paths or [], root)  # before the work: never over an input or the store
    embedder = _embedder(settings)
    opened = Store.open(root, embedder, settings=settings) if root is not None else None
    skipped: list[tuple[str, str]] = []
    vectors = None
    if paths:
        with spinner("reading and chunking files", enabled=not json_out):
            loaded = load_paths(paths, limits=settings.ingest)
            cfg = settings.chunking
            tokenizer = getattr(embedder, "tokenizer", None)
            documents = chunk_documents(loaded.documents, cfg.chunk_tokens, cfg.overlap_tokens, tokenizer)
        skipped = loaded.skipped
        if not documents:
            _print_skipped(skipped)
            raise fail("nothing to scan: no readable documents in the given paths", EXIT_USAGE)
    else:
        assert opened is not None
        # the store's own embeddings find the neighbours: no document is embedded again
        documents, vectors = opened.snapshot()
        if not documents:
            raise fail(f"store {root} has no documents to scan", EXIT_USAGE)
    with spinner("loading the screening models", enabled=not json_out):
        nli = _nli(settings)
        ledger = opened.ledger if opened is not None else None
        in_store = opened.holds if opened is not None and not paths else None  # the store's own documents
        signals = build_screener(settings, nli=nli, embedder=embedder, ledger=ledger, in_store=in_store).signals
        if opened is not None:
            # what the scan computes per document is what a query would: keep it in the store
            # (the query-time gate reads the same files), so a later scan or query reuses it
            if isinstance(nli, NLIEngine) and nli.cache_path is None:
                nli.cache_path = str(Path(opened.root) / NLI_CACHE_FILE)
            persist_caches(signals, Path(opened.root) / SCREEN_CACHE_FILE)
    # the last scan's rows: a row whose document, witnesses and configuration are unchanged is kept
    state = None if opened is None else ScanState(Path(opened.root) / SCAN_STATE_FILE, opened.read_only, reuse=not full)
    try:
        key = ""
        if state is not None:
            with spinner("loading the screening models", enabled=not json_out):
                key = _scan_key(settings, nli, embedder, signals)
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
                vectors=vectors,
                state=state,
                config=key,
            )
    finally:
        if state is not None:
            state.close()
    quarantined = _quarantine(result, ledger, quarantine_above)
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
def delete_command(
    ids: list[str] = _DELETE_IDS,
    store: Path | None = StoreOption,
    config: Path | None = ConfigOption,
    by: str | None = ByOption,
) -> None:
    """Delete documents (and their chunks) from a store; the ledger keeps their history."""
    from ragtrust.ingest.store import Store

    settings = settings_from(config)
    st = Store.open(store_path(store), _embedder(settings), settings=settings)
    count = st.delete(ids, actor=cli_actor(by))
    console.print(f"deleted {count} document(s); {len(st)} chunks remain")


@handle_errors
def store_check(
    store: Path | None = StoreOption,
    json_out: bool = typer.Option(False, "--json", help="print the findings as JSON"),
) -> None:
    """Verify a store: manifest, segment files and ledger; exit 2 naming the damage."""
    from ragtrust.ingest.store import check_store
    from ragtrust.ingest.store_files import current_fix

    root = store_path(store)
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
        if any(p.startswith("CURRENT") for p in result.problems):
            fixes.append(current_fix(root))
        if any(p.startswith("ledger.sqlite") for p in result.problems):
            fixes.append(f"`ragtrust store repair --store {root}` re-creates the ledger, every document unvetted")
        if any(not p.startswith(("ledger.sqlite", "CURRENT")) for p in result.problems):
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

    root = store_path(store)
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


def _scan_key(settings: Settings, nli: Any, embedder: Any, signals: Sequence[Any]) -> str:
    """The scan's configuration key; the models are loaded first, so their fingerprints and thresholds are known."""
    from ragtrust.scan.state import config_key

    for model in (nli, embedder, *signals):
        if callable(getattr(model, "warm_up", None)):
            model.warm_up()
    return config_key(settings, {"nli": nli, "embedder": embedder, **{f"signal.{s.name}": s for s in signals}})


def _quarantine(result: Any, ledger: Any, above: float | None) -> list[str]:
    """Quarantine the parents of the scan's rows with P above ``above`` in ``ledger``; their ids."""
    quarantined: list[str] = []
    if above is None or ledger is None:
        return quarantined
    for row in result.suspicious(above):
        parent = row.parent_id or row.id
        record = None if parent in quarantined else ledger.get(parent)
        if record is None or record.tier == "quarantined":  # already quarantined: its tier stays as it was set
            continue
        reason = f"scan: P={row.poison_probability:.2f} on {row.id}"
        ledger.set_tier(parent, "quarantined", reason, actor=cli_actor(None))
        quarantined.append(parent)
    return quarantined


def _render_scan(result: Any, limit: int, quarantined: list[str], report: Path | None) -> None:
    flagged = result.suspicious()
    console.print(
        f"scanned {len(result.rows)} documents with {', '.join(result.signals) or 'no signals'} "
        f"({result.engine} engine, {result.seconds:.1f} s): {len(flagged)} suspicious (P > {result.threshold:.2f})"
    )
    if result.reused:
        console.print(
            f"[dim]{result.reused} of them unchanged since the store's last scan: their rows were kept "
            "(--full scans every document again)[/]"
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
