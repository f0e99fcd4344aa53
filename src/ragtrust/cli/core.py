"""``ragtrust ask``, ``screen``, ``verify`` and ``demo``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import typer

from ragtrust.cli.common import (
    ConfigOption,
    console,
    default_store,
    fail,
    handle_errors,
    print_json,
    read_docs,
    settings_from,
    spinner,
    verdict_exit,
)
from ragtrust.cli.render import print_verdict
from ragtrust.documents import Verdict
from ragtrust.errors import InputError
from ragtrust.verdict_log import append_verdict

if TYPE_CHECKING:
    from ragtrust.ingest.store import Store


def _policy_overrides(policy: str | None, top_k: int | None) -> dict[str, object]:
    overrides: dict[str, object] = {}
    if policy:
        overrides["screening"] = {"policy": policy}
    if top_k:
        overrides["retrieval"] = {"top_k": top_k}
    return overrides


def _shown(verdict: Verdict, as_json: bool, *, spans: bool = False, title: str | None = None) -> typer.Exit:
    """Print the verdict (JSON, or the panel); the exit to raise: 0 trusted, 3 flagged."""
    if as_json:
        print_json(verdict.to_dict())
    else:
        print_verdict(console, verdict, spans=spans, title=title)
    return verdict_exit(verdict.trusted)


@handle_errors
def ask(
    question: str = typer.Argument(..., help="The question to answer."),
    store: Path | None = typer.Option(None, "--store", "-s", help="Store directory (or RAGTRUST_STORE)."),
    as_json: bool = typer.Option(False, "--json", help="Print the Verdict as JSON."),
    spans: bool = typer.Option(False, "--spans", help="Show the quoted source span of every sentence."),
    top_k: int | None = typer.Option(None, "--top-k", "-k", min=1, help="Documents to retrieve (default 5)."),
    policy: Literal["drop-suspicious", "flag", "block"] | None = typer.Option(
        None,
        "--policy",
        help="Pre-generation gate (default drop-suspicious); quarantined documents never pass.",
    ),
    calibration: Path | None = typer.Option(None, "--calibration", help="Calibration JSON (from eval calibrate)."),
    config: Path | None = ConfigOption,
) -> None:
    """Answer QUESTION from a store with a trust verdict (exit 0 trusted, 3 flagged)."""
    from ragtrust.ingest.documents_office import with_pages
    from ragtrust.ingest.store import Store
    from ragtrust.models.embedder import default_embedder
    from ragtrust.pipeline import TrustGate

    if not question.strip():
        raise InputError("the question is empty: pass a non-empty question")
    settings = settings_from(config, _policy_overrides(policy, top_k))
    store_dir = store or default_store()
    if store_dir is None:
        raise fail("no store given: pass --store DIR (build one with `ragtrust ingest PATHS --store DIR`)", 2)
    opened = Store.open(store_dir, default_embedder(settings), settings=settings)
    gate = TrustGate.from_settings(settings, store=opened, calibration=calibration)
    with spinner("answering: retrieve, screen, write, verify", enabled=not as_json):
        verdict = with_pages(gate.ask(question), opened)  # a cited PDF span knows its page
    append_verdict(settings, store_dir, verdict, operation="ask", source="cli")  # never raises: a warning at most
    raise _shown(verdict, as_json, spans=spans)


#: ``--store`` of screen and verify: only where spans' pages are read
PagesStoreOption = typer.Option(
    None,
    "--store",
    "-s",
    help="Store the documents came from: spans into its PDFs get their page (screening does not read it).",
)


def _pages_store(store: Path | None, config: Path | None) -> Store | None:
    """The store that ``--store`` names, opened read-only (before the work: a wrong path fails at once)."""
    if store is None:
        return None
    from ragtrust.ingest.store import Store
    from ragtrust.models.embedder import default_embedder

    settings = settings_from(config)
    return Store.open(store, default_embedder(settings), settings=settings, read_only=True)


@handle_errors
def screen(
    docs: Path = typer.Option(..., "--docs", "-d", help="JSONL with id, text, optional url and similarity."),
    query: str | None = typer.Option(None, "--query", "-q", help="The query the documents were retrieved for."),
    as_json: bool = typer.Option(False, "--json", help="Print the Verdict as JSON."),
    store: Path | None = PagesStoreOption,
    config: Path | None = ConfigOption,
) -> None:
    """Stage 1 alone: screen documents for poisoning before generation."""
    from ragtrust.ingest.documents_office import with_pages
    from ragtrust.pipeline import TrustGate

    settings = settings_from(config)
    documents = read_docs(docs, settings)
    pages_from = _pages_store(store, config)
    with spinner("screening the documents", enabled=not as_json):
        verdict = TrustGate.from_settings(settings).screen(documents, query)
    verdict = with_pages(verdict, pages_from, documents)  # a span into a PDF knows its page
    raise _shown(verdict, as_json, title="Stage 1 screening")


@handle_errors
def verify(
    answer: str = typer.Option(..., "--answer", "-a", help="The answer to verify."),
    docs: Path = typer.Option(..., "--docs", "-d", help="JSONL with id, text, optional url and similarity."),
    query: str | None = typer.Option(
        None,
        "--query",
        "-q",
        help="The question the answer responds to: screening uses it and the answer's relevance to it is checked.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the Verdict as JSON."),
    store: Path | None = PagesStoreOption,
    config: Path | None = ConfigOption,
) -> None:
    """Stage 2: verify an answer against documents with NLI (fused with Stage 1's C and P)."""
    from ragtrust.ingest.documents_office import with_pages
    from ragtrust.pipeline import TrustGate

    settings = settings_from(config)
    documents = read_docs(docs, settings)
    pages_from = _pages_store(store, config)
    with spinner("verifying the answer", enabled=not as_json):
        verdict = TrustGate.from_settings(settings).verify(answer, documents, query)
    verdict = with_pages(verdict, pages_from, documents)  # a span into a PDF knows its page
    raise _shown(verdict, as_json, title="Stage 2 verification")


@handle_errors
def demo(
    store: Path | None = typer.Option(
        None, "--store", help="Folder to build the demo store in, as DIR/store (default: a temp dir)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the demo results as JSON."),
    config: Path | None = ConfigOption,
) -> None:
    """Build a store from the bundled secure-coding KB, ask on clean and poisoned corpora."""
    from ragtrust.demo import run_demo

    settings = settings_from(config)
    result = run_demo(settings, store_dir=store, progress=None if as_json else console.print)
    if as_json:
        print_json(result.to_dict())
        return
    for run in result.runs:
        print_verdict(console, run.verdict, title=f"[{run.corpus}] {run.question}")
    console.print(result.summary_table())


def register(app: typer.Typer) -> None:
    """Add ask, screen, verify and demo."""
    app.command("ask")(ask)
    app.command("screen")(screen)
    app.command("verify")(verify)
    app.command("demo")(demo)
