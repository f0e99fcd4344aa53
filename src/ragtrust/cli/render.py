"""Rich rendering of verdicts for people (``--json`` prints ``Verdict.to_dict()`` instead).

Everything shown comes from documents a stranger may have written: ids, text, URLs. It is
data, never rich markup (it goes in through :class:`~rich.text.Text`), and it never reaches
the terminal as control characters: :func:`printable` escapes them, so a poisoned document
cannot clear the screen, recolour the verdict or reorder a line with bidi controls.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ragtrust.documents import ClaimRef, Conflict, Span, Verdict

LEVEL_STYLE = {"HIGH": "bold green", "MEDIUM": "bold yellow", "LOW": "bold dark_orange", "VERY LOW": "bold red"}
#: tokens as the conflict diff cuts them (``ragtrust.screening.claim_diff``): 1.3 and 10,000 stay whole
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+|\d+")
#: longest claim shown in the conflicts table, in characters (a window around the differing words)
CLAIM_WIDTH = 140
#: what :func:`printable` escapes: C0/C1 controls and DEL (Unicode category Cc; ESC starts a
#: terminal escape sequence, CSI U+009B one on some terminals) and the bidi controls (LRM,
#: RLM, ALM, the embeddings/overrides U+202A-202E and the isolates U+2066-2069) that make a
#: terminal show text in another order than it is (CVE-2021-42574, "Trojan Source")
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: the same, less the line breaks and tabs a multi-line text lays out with
_UNSAFE_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: fields of the verdict's parts that are one-line names: a line break in them is escaped too
_ONE_LINE_FIELDS = frozenset(
    {"doc_id", "passage_id", "best_doc_id", "blamed", "url", "citations", "name", "kind", "origin", "status", "action"}
)
_T = TypeVar("_T")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    r"""``text`` safe for a terminal: control and bidi-control characters written as escapes.

    ``\n`` and ``\t`` stay (text is laid out with them) unless ``one_line``: ids and names
    keep to one line. Everything else passes unchanged; rich markup is not this function's
    business (show the result as :class:`~rich.text.Text`).

    Example:
        >>> printable("evil\x1b[2J\u202eX\nnext")
        'evil\\x1b[2J\\u202eX\nnext'
        >>> printable("a\nb", one_line=True)
        'a\\x0ab'
    """
    return (_UNSAFE if one_line else _UNSAFE_IN_TEXT).sub(_escape, text)


def plain(text: str) -> Text:
    r"""A one-line name (an id, a path, a reason quoting one) for a table cell or a line.

    Shown as text, never as rich markup (``"rule[/]"`` is an id, not a closing tag), with
    control and bidi-control characters escaped (:func:`printable`).

    Example:
        >>> plain("rule[/]\x1b[2J").plain
        'rule[/]\\x1b[2J'
    """
    return Text(printable(text, one_line=True))


def printable_fields(value: _T, *, one_line: bool = False) -> _T:
    """A copy of ``value`` (a verdict, or any of its parts) with :func:`printable` on every string.

    Ids, URLs and names (:data:`_ONE_LINE_FIELDS`) are kept to one line. Numbers, booleans
    and ``None`` pass unchanged; the copy is for showing only (span offsets no longer index
    an escaped text).
    """
    out: Any
    if isinstance(value, str):
        out = printable(value, one_line=one_line)
    elif isinstance(value, tuple):
        out = tuple(printable_fields(v, one_line=one_line) for v in value)
    elif isinstance(value, list):
        out = [printable_fields(v, one_line=one_line) for v in value]
    elif isinstance(value, Mapping):
        out = {printable_fields(k, one_line=True): printable_fields(v) for k, v in value.items()}
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: printable_fields(getattr(value, f.name), one_line=f.name in _ONE_LINE_FIELDS)
            for f in dataclasses.fields(value)
            if f.init
        }
        out = dataclasses.replace(value, **changes)
    else:
        out = value
    return out  # type: ignore[no-any-return]


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


def diff_ranges(text: str, words: str) -> list[tuple[int, int]]:
    """Where the differing words of a conflict sit in its claim: ``(start, end)`` ranges of ``text``.

    ``words`` is :attr:`Conflict.left_words` / ``right_words`` as the conflict diff wrote it: a
    phrase of the claim ("two to five years") or its changed tokens joined by spaces ("must
    not", "don t" for "don't"). Both are cut into tokens the way the diff cuts them; the tokens
    are found as one run of the claim's tokens, else one by one in order (adjacent ones merged).
    The web UI (``static/app.js``, ``diffRanges``) does the same.

    Example:
        >>> diff_ranges("A queen bee lives three weeks.", "three weeks")
        [(18, 29)]
        >>> diff_ranges("You don't need a salt.", "don t")
        [(4, 9)]
        >>> diff_ranges("Keys must be rotated; they must not leak.", "must rotated")
        [(5, 9), (13, 20)]
    """
    wanted = [m.group(0).casefold() for m in _TOKEN.finditer(words)]
    if not wanted:
        return []
    tokens = list(_TOKEN.finditer(text))
    folded = [m.group(0).casefold() for m in tokens]
    n = len(wanted)
    for i in range(len(tokens) - n + 1):
        if folded[i : i + n] == wanted:
            return [(tokens[i].start(), tokens[i + n - 1].end())]
    out: list[tuple[int, int]] = []
    cursor = 0
    for word in wanted:
        at = next((k for k in range(cursor, len(tokens)) if folded[k] == word), None)
        if at is None:
            continue
        a, b = tokens[at].span()
        # "don t": one mark over "don't", not two; "must ... not": two marks
        if out and (not text[out[-1][1] : a].strip() or at == cursor):
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
        cursor = at + 1
    return out


def _clip(text: str, ranges: list[tuple[int, int]], width: int) -> tuple[str, list[tuple[int, int]], int]:
    """A window of at most ``width`` characters of ``text`` around the first range, cut at spaces."""
    if len(text) <= width:
        return text, ranges, 0
    focus = ranges[0][0] if ranges else 0
    start = max(0, min(focus - width // 3, len(text) - width))
    end = start + width
    if start > 0:  # start after a space, never mid-word
        space = text.find(" ", start, focus if ranges else end)
        start = space + 1 if space >= 0 else start
    if end < len(text):
        space = text.rfind(" ", max(start, ranges[0][1] if ranges else start), end)
        end = space if space > start else end
    kept = [(max(a, start) - start, min(b, end) - start) for a, b in ranges if a < end and b > start]
    return text[start:end], kept, start


def claim_text(claim: ClaimRef, words: str = "", *, width: int = CLAIM_WIDTH) -> Text:
    """``doc-id`` (its origin when not retrieved) and the quoted claim, differing words in bold.

    Document text is data, never rich markup: it goes in through :class:`~rich.text.Text`,
    its control characters escaped (:func:`printable`).
    """
    claim = printable_fields(claim)
    words = printable(words)
    out = Text()
    out.append(claim.doc_id, style="bold cyan")
    if claim.origin != "retrieved":
        out.append(f" ({claim.origin})", style="dim")
    shown, ranges, start = _clip(claim.text, diff_ranges(claim.text, words), width)
    out.append("\n“" + ("…" if start > 0 else ""))
    quote_at = len(out)
    out.append(shown)
    for a, b in ranges:
        out.stylize("bold magenta", quote_at + a, quote_at + b)
    out.append(("…" if start + len(shown) < len(claim.text) else "") + "”")
    return out


def blame_text(conflict: Conflict) -> Text:
    """``contested`` or ``blamed: <doc-id>``, then how it was decided."""
    conflict = printable_fields(conflict)
    out = Text()
    if conflict.blamed is None:
        out.append("contested", style="bold yellow")
    else:
        out.append("blamed: ", style="bold red")
        out.append(conflict.blamed, style="bold red")
    # "contested: 1 source(s) against 1" would repeat the word above
    resolution = conflict.resolution.removeprefix("contested: ").removeprefix("contested")
    if resolution:
        out.append(f"\n{resolution}", style="dim")
    return out


def conflicts_table(conflicts: tuple[Conflict, ...] | list[Conflict]) -> Table:
    """The claims that disagree, side by side: kind, left claim, right claim, strength, blame."""
    table = Table(title="Conflicts", expand=True, show_lines=True)
    table.add_column("kind")
    table.add_column("left claim")
    table.add_column("right claim")
    table.add_column("strength", justify="right")
    # "contested" and a doc id stay readable in an 80-column terminal
    table.add_column("blamed / resolution", min_width=12)
    for c in conflicts:
        strength = Text(f"{c.strength:.2f}")
        if c.contradiction is not None:
            strength.append(f"\nNLI {c.contradiction:.2f}", style="dim")
        table.add_row(
            Text(printable(c.kind, one_line=True)),
            claim_text(c.left, c.left_words),
            claim_text(c.right, c.right_words),
            strength,
            blame_text(c),
        )
    return table


def _span_label(span: Span) -> str:
    where = f"{span.doc_id}[{span.start}:{span.end}]" + (f" p. {span.page}" if span.page else "")
    return f"{where} “{span.text}”"


def verdict_panel(verdict: Verdict, *, spans: bool = False, title: str | None = None) -> Panel:
    """A panel with the decision, scores, answer with citations, documents, conflicts and warnings.

    A cited span with a ``page`` (PDF sources) shows ``p. N`` after its offsets. Every string
    of the verdict is shown through :func:`printable` (control characters escaped).
    """
    verdict = printable_fields(verdict)
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
            quoted = "\n".join(_span_label(s) for s in sentence.spans) or "(no span)"
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
            p_i = Text(f"{d.poison_probability:.2f}", style=p_style)
            docs.add_row(Text(d.doc_id), sim, p_i, Text(d.action), Text(fired))
        parts.append(docs)
    if verdict.conflicts:
        parts.append(conflicts_table(verdict.conflicts))
    if verdict.warnings:
        parts.append(Text("\nWarnings", style="bold"))
        for w in verdict.warnings:
            parts.append(Text(f"• {w}", style="yellow"))
    timing = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in verdict.timings_s.items())
    if timing:
        parts.append(Text(f"\n{timing}", style="dim"))
    # plain text: queries may contain "[...]"; one line: a title is no place for a line break
    heading = Text(printable(title or verdict.query or verdict.stage, one_line=True))
    return Panel(Group(*parts), title=heading, border_style=style.split()[-1])


def print_verdict(console: Console, verdict: Verdict, *, spans: bool = False, title: str | None = None) -> None:
    """Print :func:`verdict_panel`."""
    console.print(verdict_panel(verdict, spans=spans, title=title))


__all__ = [
    "CLAIM_WIDTH",
    "LEVEL_STYLE",
    "blame_text",
    "claim_text",
    "conflicts_table",
    "decision_line",
    "diff_ranges",
    "plain",
    "print_verdict",
    "printable",
    "printable_fields",
    "verdict_panel",
]
