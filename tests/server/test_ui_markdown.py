"""The web UI's Markdown renderer (static/markdown.js) in Chromium: what a reader sees of a
span, and that every highlighted run sits at its offsets in the raw text.

No server: the page is blank with ui.js and markdown.js added. markdown-it-py (the reference
CommonMark parser) says what inline Markdown should look like.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ragtrust.cli.render import printable
from ragtrust.server.routes import STATIC_DIR
from ragtrust.text import front_matter_end

from .test_browser import GUIDE
from .test_ui_viewer import phone_or_desktop, visible

pytestmark = pytest.mark.browser

XSS = "<img src=x onerror=alert(1)> stays <script>text</script>"
#: (source, the text a reader sees of all of it): inline cases markdown-it-py agrees with
INLINE = [
    ("Use **bold** and *em* text.", "Use bold and em text."),
    ("Hash with `Argon2id` or `bcrypt`.", "Hash with Argon2id or bcrypt."),
    ("See [the [x] guide](a.md) here.", "See the [x] guide here."),
    ("An image ![alt text](pic.png) inline.", "An image alt text inline."),
    (r"a \*literal\* star", "a *literal* star"),
    ("<https://kb.example/x> is a link", "https://kb.example/x is a link"),
    ("snake_case_name stays", "snake_case_name stays"),
    ("2 * 3 = 6 and a*b", "2 * 3 = 6 and a*b"),
    ("~~old~~ new", "old new"),
    ("`a **not bold** code`", "a **not bold** code"),
    ("nested **bold *and em* here**", "nested bold and em here"),
]
#: (source, start, end, what a reader sees of source[start:end]) in code points
RANGES = [
    ("## Title ##\nbody", 0, 11, "Title"),
    ("- item *em*\n- two", 0, 11, "item em"),
    ("```\n**x**\n```\nafter", 0, 13, "**x**"),
    ("one **two three** four", 10, 22, "three four"),  # a span cutting through emphasis
    (XSS, 0, len(XSS), XSS),  # HTML in a document is text, never markup
    ("🔐 Use `Argon2id` now.", 2, 21, "Use Argon2id now."),
    ("> quoted **words**", 0, 18, "quoted words"),
    ("1. first step\n2. second", 0, 13, "1. first step"),
]
#: raw texts the offsets are fuzzed over: the guide, astral characters, a fence and a table, CRLF breaks
FUZZ = [
    GUIDE.text,
    "# 🔐 Keys\n\nRotate **every 90 days** 🗝️ with `kms:Rotate` [docs](k.md).\n\n```py\nx = '**'\n```\n| a | b |\n",
    "---\r\ntitle: Keys\r\n---\r\n# Keys ##\r\n\r\n- Rotate **every 90 days** 🗝️\r\n\r\n---\r\nafter\r\n",
]
#: the runs of a render of text with one highlight [s, e): each mark's source offset and text
MARKS = """([text, s, e]) => { const box = document.createElement('div');
  box.append(RT.markdown.renderDocument(text, [{start: s, end: e, kind: 'cite', label: ''}]).node);
  return Array.from(box.querySelectorAll('mark.cite'), (m) => [Number(m.dataset.start), m.textContent]); }"""


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    with phone_or_desktop(800) as page:
        for name in ("ui.js", "markdown.js"):
            page.add_script_tag(path=str(STATIC_DIR / name))
        yield page


@pytest.mark.parametrize(("source", "seen"), INLINE)
def test_inline_markdown_shows_what_commonmark_shows(page: Any, source: str, seen: str) -> None:
    assert visible(source) == seen  # the reference agrees with the case
    inline = page.evaluate(
        "(t) => { const p = document.createElement('p'); p.append(RT.markdown.renderInline(t, []));"
        " return p.textContent; }",
        source,
    )
    assert inline == seen
    n = len(source)
    assert page.evaluate("([t, n]) => RT.markdown.visibleText(t, 0, n)", [source, n]) == seen
    assert page.evaluate("document.querySelectorAll('img').length") == 0  # text, never markup


@pytest.mark.parametrize(("source", "start", "end", "seen"), RANGES)
def test_a_range_shows_its_visible_text(page: Any, source: str, start: int, end: int, seen: str) -> None:
    assert page.evaluate("([t, s, e]) => RT.markdown.visibleText(t, s, e)", [source, start, end]) == seen
    assert page.evaluate("document.querySelectorAll('img').length") == 0


@pytest.mark.parametrize("text", FUZZ)
def test_every_highlighted_run_sits_at_its_source_offsets(page: Any, text: str) -> None:
    n = len(text)  # code points, as the server counts them
    seed = 7
    for _ in range(150):
        seed = (seed * 1103515245 + 12345) % 2**31  # a fixed sequence of ranges
        start = seed % n
        end = min(n, start + 1 + (seed // n) % 80)
        runs = page.evaluate(MARKS, [text, start, end])
        for at, shown in runs:
            assert start <= at and at + len(shown) <= end, (start, end, at, shown)
            assert text[at : at + len(shown)] == shown, (start, end, at, shown)
        assert [a for a, _ in runs] == sorted(a for a, _ in runs)


#: text with bidi controls: an override that would show "0.1 SLT" as "TLS 1.0", an isolate
BIDI = "Use TLS \u202e0.1 SLT\u202c only; \u2067x\u2069 here."


def test_bidi_controls_are_shown_as_the_cli_shows_them_never_applied(page: Any) -> None:
    # an override reorders what a reader sees, even past its sentence (the answer's [n] moved
    # into it): the UI shows it escaped, as `ragtrust ask` prints it (cli.render.printable)
    shown = page.evaluate(
        """(t) => { const box = document.createElement('div');
        box.append(RT.markdown.renderDocument(t, [{start: 0, end: 40, kind: 'cite', label: ''}]).node);
        const p = document.createElement('p'); p.append(RT.markdown.renderInline(t, []));
        return [box.textContent, p.textContent]; }""",
        BIDI,
    )
    assert shown == [printable(BIDI), printable(BIDI)]


#: texts that open, or do not open, with a front-matter block (ragtrust.text.front_matter_end decides)
FRONT_MATTER = [
    "---\ntitle: Salts\ntags: [a, b]\n---\n# Salts\n\nUse salts.\n",
    '+++\ntitle = "Salts"\n[params]\n+++\nBody.\n',
    "---\ntitle: 🔐 Keys\n# a comment\n...\n🔑 Body.\n",
    "---\n\nProse between rules, not metadata.\n\n---\nBody.\n",
    "Intro.\n---\ntitle: x\n---\n",
    "---\ntitle: never closed\n",
]
#: each block of a rendered document: [its class, its source offset, its text]
BLOCKS = """(t) => Array.from(RT.markdown.renderDocument(t, []).node.children,
  (b) => [b.className, Number(b.dataset.start), b.textContent])"""


@pytest.mark.parametrize("text", FRONT_MATTER)
def test_front_matter_is_shown_as_metadata_as_the_python_side_reads_it(page: Any, text: str) -> None:
    end = front_matter_end(text)  # code points, as the server counts them
    blocks = page.evaluate(BLOCKS, text)
    meta = [b for b in blocks if "md-meta" in b[0].split()]
    assert [b for b in meta if b[1] > end] == []
    assert [b for b in blocks if b not in meta and b[1] <= end] == ([] if end else blocks[:1])
    if end:  # its delimiter lines are hidden, its lines shown as they are: neither rule nor heading
        assert [b[2] for b in meta] == ["", *text[:end].split("\n")[1:-1], ""]
        assert not any("md-rule" in b[0] or "md-heading" in b[0] for b in meta)


#: Markdown with a rule, closing heading hashes, a fence, a list and front matter
BLOCK_TEXTS = [GUIDE.text, FUZZ[1], "---\ntitle: Keys\n---\n# Keys ##\n\n---\n\n- one\n\n```\ncode\n```\nafter *em*\n"]


@pytest.mark.parametrize("text", BLOCK_TEXTS)
def test_a_document_with_crlf_line_breaks_renders_as_with_lf(page: Any, text: str) -> None:
    # files written on Windows keep their \r\n (the server's offsets count the \r): the same
    # blocks with the same text, each at its own offset in the CRLF text
    crlf = text.replace("\n", "\r\n")
    lf_blocks = page.evaluate(BLOCKS, text)
    crlf_blocks = page.evaluate(BLOCKS, crlf)
    assert [(c, t) for c, _, t in crlf_blocks] == [(c, t) for c, _, t in lf_blocks]
    assert [s for _, s, _ in crlf_blocks] == [s + text[:s].count("\n") for _, s, _ in lf_blocks]
