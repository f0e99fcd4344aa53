"""``ragtrust align``: verify extracted passages against documents (SPEC section 6.3)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from ragtrust.cli.common import ConfigOption, console, handle_errors, print_json, read_docs, settings_from
from ragtrust.cli.render import printable

_STATUS_STYLE = {"kept": "green", "truncated": "yellow", "reattributed": "cyan", "dropped": "red"}
_PASSAGES = typer.Option(
    ...,
    "--passages",
    "-p",
    help='JSON: {"collected_passages": [{"passage_id", "passage", "url"}]} or a list of such objects.',
)
_DOCS = typer.Option(..., "--docs", "-d", help="JSONL documents with id, text and optional url.")
_JSON = typer.Option(False, "--json", help="Print the alignment result as JSON.")
_N = typer.Option(None, "--n", min=1, max=20, help="n-gram length (default: config, 5).")
_THRESHOLD = typer.Option(
    None, "--threshold", "-t", min=0.0, max=1.0, help="Overlap threshold t (default: config, 0.7)."
)


@handle_errors
def align(
    passages: Path = _PASSAGES,
    docs: Path = _DOCS,
    as_json: bool = _JSON,
    n: int | None = _N,
    threshold: float | None = _THRESHOLD,
    config: Path | None = ConfigOption,
) -> None:
    """Keep, truncate, re-attribute or drop each passage by n-gram overlap, with source spans."""
    from ragtrust.evidence.align import NGramAligner
    from ragtrust.evidence.extract import read_passages_json

    overrides = {"evidence": {k: v for k, v in (("ngram_n", n), ("overlap_threshold", threshold)) if v is not None}}
    settings = settings_from(config, overrides if overrides["evidence"] else None)
    documents = read_docs(docs, settings)
    items = read_passages_json(passages, documents)
    aligner = NGramAligner(n=settings.evidence.ngram_n, threshold=settings.evidence.overlap_threshold)
    result = aligner.align(items, documents)
    if as_json:
        print_json({"n": aligner.n, "threshold": aligner.threshold, **result.to_dict()})
        return
    table = Table(title=f"Alignment (n = {aligner.n}, t = {aligner.threshold:g})", expand=True)
    for column in ("passage", "status", "overlap", "source", "span"):
        table.add_column(column)
    for p in (*result.passages, *result.dropped):
        # ids and URLs come from the files: data, never markup, control characters escaped
        span = "; ".join(f"{s.doc_id}[{s.start}:{s.end}]" for s in p.spans) or "-"
        status = Text(p.status, style=_STATUS_STYLE.get(p.status, "white"))
        source = p.url or p.doc_id or "-"
        table.add_row(
            Text(printable(p.passage_id, one_line=True)),
            status,
            f"{p.overlap or 0.0:.2f}",
            Text(printable(source, one_line=True)),
            Text(printable(span, one_line=True)),
        )
    console.print(table)
    d = result.diagnostics
    console.print(
        f"{int(d['n_in'])} passages: {int(d['kept'])} kept, {int(d['truncated'])} truncated, "
        f"{int(d['reattributed'])} re-attributed, {int(d['dropped'])} dropped "
        f"(hallucinated {d['pct_hallucinated']:.1%}, URL drift corrected {d['pct_url_drift_corrected']:.1%}, "
        f"partial {d['pct_partial']:.1%})",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    """Add ``align`` to the app."""
    app.command("align")(align)


__all__ = ["align", "register"]
