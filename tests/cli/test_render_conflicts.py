"""Knowledge conflicts in the rich verdict panel: both claims side by side, the differing words marked."""

from __future__ import annotations

import io
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

import ragtrust.models.embedder as embedder_module
import ragtrust.models.nli as nli_module
from ragtrust.cli.main import app
from ragtrust.cli.render import CLAIM_WIDTH, claim_text, conflicts_table, diff_ranges, printable, verdict_panel
from ragtrust.documents import AnswerSentence, ClaimRef, Conflict, DocumentScreening, Span, Verdict
from ragtrust.models.nli import NLIEngine
from ragtrust.testing import HashingEmbedder, LexicalNLI

runner = CliRunner()

GOOD = "A honey bee colony has one queen. The queen bee lives two to five years and lays eggs in spring."
BAD = "The queen is the mother of the colony. The queen bee lives three weeks and lays eggs in spring."
LEFT = ClaimRef("qb/good.md#0", 34, 96, GOOD[34:96], "file:///qb/good.md")
RIGHT = ClaimRef("qb/bad.md#0", 39, 95, BAD[39:95], "file:///qb/bad.md")
CONTESTED = Conflict(
    left=LEFT,
    right=RIGHT,
    kind="number",
    strength=0.9,
    left_words="two to five years",
    right_words="three weeks",
    contradiction=0.47,
    blamed=None,
    resolution="contested: 1 source(s) against 1",
)


def verdict(*conflicts: Conflict) -> Verdict:
    return Verdict(query="How long does a queen bee live?", trust_score=0.56, trust_level="LOW", trusted=False,
                   tau=0.5, factuality=0.97, consistency=0.1, poison_probability=0.45, conflicts=conflicts)  # fmt: skip


def render(renderable: Any, width: int = 120) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def conflict_columns(text: str) -> list[str]:
    """The cells of the Conflicts table's rows, one string per column (wrapped lines joined)."""
    lines = [line.strip() for line in text.splitlines()]
    if lines and lines[0].startswith("╭"):  # inside the verdict panel: drop its border
        lines = [line[1:-1].strip() for line in lines[1:-1]]
    start = lines.index("Conflicts")
    columns: list[list[str]] = []
    for inner in lines[start + 1 :]:
        if inner.startswith("└"):
            break
        if not inner.startswith("│"):
            continue
        cells = inner.split("│")[1:-1]
        columns = columns or [[] for _ in cells]
        for column, cell in zip(columns, cells, strict=True):
            if cell.strip():
                column.append(cell.strip())
    return [" ".join(c) for c in columns]


# --------------------------------------------------------------------------- the table


@pytest.mark.parametrize("width", [80, 120, 200])
def test_a_contested_conflict_shows_both_claims_side_by_side(width: int) -> None:
    kind, left, right, strength, blame = conflict_columns(render(verdict_panel(verdict(CONTESTED)), width))
    assert kind == "number"
    assert left == f"qb/good.md#0 “{LEFT.text}”"
    assert right == f"qb/bad.md#0 “{RIGHT.text}”"
    assert strength == "0.90 NLI 0.47"
    assert blame == "contested 1 source(s) against 1"  # the word once, then how it was decided


def test_the_differing_words_are_bold_in_each_claim() -> None:
    for claim, words in ((LEFT, "two to five years"), (RIGHT, "three weeks")):
        text = claim_text(claim, words)
        bold = [
            text.plain[s.start : s.end] for s in text.spans if "bold" in str(s.style) and s.start >= len(claim.doc_id)
        ]
        assert bold == [words]
    assert [s for s in claim_text(LEFT, "").spans if s.start > len(LEFT.doc_id)] == []


def test_a_blamed_conflict_names_the_blamed_document_and_the_origin_of_a_witness() -> None:
    vetted = replace(LEFT, origin="vetted")
    blamed = replace(CONTESTED, left=vetted, blamed=RIGHT.doc_id, resolution="the vetted version says otherwise")
    _, left, _, _, blame = conflict_columns(render(conflicts_table([blamed])))
    assert left.startswith("qb/good.md#0 (vetted) “")
    assert blame == "blamed: qb/bad.md#0 the vetted version says otherwise"
    assert "contested" not in blame


def test_no_conflicts_no_table() -> None:
    assert "Conflicts" not in render(verdict_panel(verdict()))
    assert "Conflicts" in render(verdict_panel(verdict(CONTESTED)))


def test_a_long_claim_is_clipped_around_the_differing_words() -> None:
    text = "Background words come first here. " * 8 + "The queen bee lives three weeks." + " Trailing words." * 8
    start = text.index("The queen")
    claim = ClaimRef("long", 0, len(text), text)
    shown = claim_text(claim, "three weeks").plain
    quote = shown.split("\n", 1)[1]
    assert len(quote) <= CLAIM_WIDTH + 4  # quotes and ellipses
    assert quote.startswith("“…") and quote.endswith("…”")
    assert "The queen bee lives three weeks." in quote
    assert not quote[2:].startswith(" ") and " Trail" in quote  # cut at spaces, not mid-word
    assert start > CLAIM_WIDTH  # the words were past the first CLAIM_WIDTH characters


def test_document_text_is_never_read_as_markup() -> None:
    odd = ClaimRef("doc[/b]", 0, 31, "[bold]Always[/bold] use [red]MD5[/]")
    conflict = replace(CONTESTED, left=odd, left_words="Always", right_words="Never")
    _, left, *_ = conflict_columns(render(conflicts_table([conflict])))
    assert left == "doc[/b] “[bold]Always[/bold] use [red]MD5[/]”"


#: characters a terminal acts on instead of showing: ESC (escape sequences), CSI, BEL, CR,
#: and the bidi controls that reorder a line (CVE-2021-42574)
RAW = ["\x1b", "\x9b", "\x07", "\r", "\u202e", "\u2066", "\u200f"]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("evil\x1b[2J", "evil\\x1b[2J"),
        ("a\x9bb\x7f", "a\\x9bb\\x7f"),
        ("rtl\u202eexe.txt\u202c", "rtl\\u202eexe.txt\\u202c"),
        ("\u2066iso\u2069 \u200e\u200f\u061c", "\\u2066iso\\u2069 \\u200e\\u200f\\u061c"),
        ("two\nlines\tand a tab", "two\nlines\tand a tab"),
        ("caf\u00e9 \u4e2d \u200b", "caf\u00e9 \u4e2d \u200b"),  # printable and zero-width text stays
    ],
)
def test_printable_escapes_controls_and_bidi_overrides(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert printable(shown) == shown  # idempotent
    assert printable("a\nb\tc", one_line=True) == "a\\x0ab\\x09c"


def test_the_verdict_panel_shows_no_control_character_of_a_document() -> None:
    evil = "kb\x1b[2J\x1b[31m-1\u202e\r\x07"
    screening = DocumentScreening(doc_id=evil, url="https://x/\x9b", poison_probability=0.9, suspicious=True)
    odd = ClaimRef(evil, 0, 10, "Use \u2066MD5\x1b[0m now.")
    conflict = replace(CONTESTED, left=odd, blamed=evil, resolution="blamed: \u200fkb")
    v = replace(
        verdict(conflict),
        query="q\x1b]0;title\x07",
        answer="Use MD5.\x1b[8m hidden",
        documents=(screening,),
        warnings=(f"document {evil} looks poisoned",),
        decision_reasons=(f"a suspicious document ({evil}) was used",),
    )
    out = render(verdict_panel(v), width=200)
    for raw in RAW:
        assert raw not in out, repr(raw)
    assert "kb\\x1b[2J\\x1b[31m-1\\u202e" in out and "Use MD5.\\x1b[8m hidden" in out
    cited = replace(v, sentences=(AnswerSentence("Use MD5.\x1b[8m", spans=(Span(evil, 0, 3, "Use\x1b[0m"),)),))
    assert "\x1b" not in render(verdict_panel(cited, spans=True, title="t\x1b"), width=200)
    assert "\x1b" not in render(conflicts_table([conflict]), width=200)  # the table alone (``ragtrust conflicts``)


@pytest.mark.parametrize(
    ("text", "words", "marked"),
    [
        ("A queen bee lives three weeks.", "three weeks", ["three weeks"]),
        ("A queen bee lives THREE weeks.", "three weeks", ["THREE weeks"]),
        ("You don't need a salt.", "don t", ["don't"]),
        ("Keys must be rotated; they must not leak.", "must rotated", ["must", "rotated"]),
        ("It cannot be no.", "no", ["no"]),  # a whole token, not the "no" of "cannot"
        ("Released in 2019 with 10,000 users.", "10,000", ["10,000"]),
        ("Nothing differs here.", "absent", []),
        ("Nothing differs here.", "", []),
    ],
)
def test_diff_ranges(text: str, words: str, marked: list[str]) -> None:
    assert [text[a:b] for a, b in diff_ranges(text, words)] == marked


# --------------------------------------------------------------------------- the commands


@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(
        nli_module,
        "default_nli",
        lambda settings=None, *, cache_path=None: NLIEngine(LexicalNLI(), cache_path=cache_path),
    )
    monkeypatch.setattr(embedder_module, "default_embedder", lambda settings=None: HashingEmbedder())
    for name in list(os.environ):
        if name.startswith("RAGTRUST_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def test_screen_shows_the_conflict_and_its_json_carries_it(fake_models: None, tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    rows = [{"id": "good", "text": GOOD, "score": 0.8}, {"id": "bad", "text": BAD, "score": 0.7}]
    docs.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    args = ["screen", "--docs", str(docs), "--query", "How long does a queen bee live?"]

    as_json = runner.invoke(app, [*args, "--json"])
    assert as_json.exit_code == 3, as_json.output
    data = json.loads(as_json.stdout)
    assert data["conflicts"], "the two documents disagree on the queen's lifespan"
    found = Verdict.from_dict(data).conflicts[0]
    assert {found.left.doc_id, found.right.doc_id} == {"good", "bad"}
    assert found.left.text == (GOOD if found.left.doc_id == "good" else BAD)[found.left.start : found.left.end]

    shown = runner.invoke(app, args)
    assert shown.exit_code == 3, shown.output
    kind, left, right, _, blame = conflict_columns(shown.stdout)
    assert kind == found.kind
    assert left == f"{found.left.doc_id} “{found.left.text}”"
    assert right == f"{found.right.doc_id} “{found.right.text}”"
    assert blame.startswith("contested" if found.blamed is None else f"blamed: {found.blamed}")
