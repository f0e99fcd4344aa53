"""Rich rendering of verdicts for people (``--json`` prints ``Verdict.to_dict()`` instead)."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ragtrust.documents import Verdict

LEVEL_STYLE = {"HIGH": "bold green", "MEDIUM": "bold yellow", "LOW": "bold dark_orange", "VERY LOW": "bold red"}


def decision_line(verdict: Verdict) -> str:
    """Why a verdict is flagged; says so plainly when T cleared tau and another condition failed.

    A verdict flagged on a condition besides T keeps its T but reads at most LOW
    (``ragtrust.trust.compute_trust(failed=True)``): "T = 0.800 ... LOW" needs the words.
    """
    reasons = "; ".join(verdict.decision_reasons)
    if verdict.trusted or verdict.trust_score < verdict.tau:
        return f"Flagged because: {reasons}"
    # T >= tau alone reads MEDIUM or HIGH; the cap is LOW (VERY LOW when tau <= level_low)
    capped = f"; level capped at {verdict.trust_level}" if verdict.trust_level in ("LOW", "VERY LOW") else ""
    return f"T = {verdict.trust_score:.3f} >= tau {verdict.tau:g}, but not trusted: {reasons}{capped}"


def verdict_panel(verdict: Verdict, *, spans: bool = False, title: str | None = None) -> Panel:
    """A panel with the decision, scores, answer with citations, documents and warnings."""
    style = LEVEL_STYLE.get(verdict.trust_level, "bold")
    head = Text()
    head.append("TRUSTED" if verdict.trusted else "FLAGGED", style="bold green" if verdict.trusted else "bold red")
    head.append(f"  T = {verdict.trust_score:.3f}  ")
    head.append(verdict.trust_level, style=style)
    head.append(
        f"   F = {verdict.factuality:.2f}  C = {verdict.consistency:.2f}  P = {verdict.poison_probability:.2f}"
        f"  (tau {verdict.tau:.2f}, raw {verdict.trust_raw:.3f}, dampener {verdict.dampener:.3f},"
        f" retrieval x{verdict.retrieval_modifier:.2f})"
    )
    parts: list[Any] = [head]
    if verdict.decision_reasons:
        # the conditions of ragtrust's decision that failed (T, F, C, P are the paper's)
        parts.append(Text(decision_line(verdict), style="red"))
    if verdict.answer:
        parts.append(Text("\nAnswer", style="bold"))
        parts.append(Text(verdict.answer))
    if spans and verdict.sentences:
        table = Table(title="Cited spans", show_lines=False, expand=True)
        table.add_column("#", justify="right")
        table.add_column("sentence")
        table.add_column("source span")
        for i, sentence in enumerate(verdict.sentences, start=1):
            quoted = "\n".join(f"{s.doc_id}[{s.start}:{s.end}] “{s.text}”" for s in sentence.spans) or "(no span)"
            # document text and ids are data, never rich markup (a "[/b]" in a document must not crash)
            table.add_row(str(i), Text(sentence.text), Text(quoted))
        parts.append(table)
    if verdict.documents:
        docs = Table(title="Retrieved documents", expand=True)
        docs.add_column("doc")
        docs.add_column("sim", justify="right")
        docs.add_column("P_i", justify="right")
        docs.add_column("action")
        docs.add_column("signals")
        for d in verdict.documents:
            fired = ", ".join(f"{s.name}={s.score:.2f}" for s in d.signals if s.score > 0 and not s.skipped) or "-"
            sim = "-" if d.similarity is None else f"{d.similarity:.2f}"
            p_style = "red" if d.suspicious else ("yellow" if d.poison_probability > 0.3 else "green")
            docs.add_row(Text(d.doc_id), sim, Text(f"{d.poison_probability:.2f}", style=p_style), d.action, Text(fired))
        parts.append(docs)
    if verdict.warnings:
        parts.append(Text("\nWarnings", style="bold"))
        for w in verdict.warnings:
            parts.append(Text(f"• {w}", style="yellow"))
    timing = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in verdict.timings_s.items())
    if timing:
        parts.append(Text(f"\n{timing}", style="dim"))
    heading = Text(title or verdict.query or verdict.stage)  # plain text: queries may contain "[...]"
    return Panel(Group(*parts), title=heading, border_style=style.split()[-1])


def print_verdict(console: Console, verdict: Verdict, *, spans: bool = False, title: str | None = None) -> None:
    """Print :func:`verdict_panel`."""
    console.print(verdict_panel(verdict, spans=spans, title=title))


__all__ = ["LEVEL_STYLE", "decision_line", "print_verdict", "verdict_panel"]
