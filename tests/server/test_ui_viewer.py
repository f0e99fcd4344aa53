"""Browser tests of the answer and the source viewer: Markdown, citation numbers, the answer kept in view.

Headless system Chromium through playwright, as in tests/server/test_browser.py (skipped with
the reason when either is missing), over the Markdown corpus ``MD_DOCS`` of that module: one
guide cut into several chunks, cited three times under one URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from ragtrust.cli.render import print_verdict
from ragtrust.documents import Document
from ragtrust.ingest.documents_office import join_pages

from .conftest import real_gate
from .test_browser import CHROMIUM, CHROMIUM_ARGS, GUIDE, MD_QUESTION, _playwright, _serve, md_server, shot

pytestmark = pytest.mark.browser
__all__ = ["md_server"]  # the fixture, imported for the tests below

#: the elements sticking out of the screen on the right (none: the page never scrolls sideways)
WIDER_THAN_SCREEN = """() => [...document.querySelectorAll('body *')]
  .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.log-scroll, .doc-text'))
  .map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '.' + e.className) + ' '
    + Math.round(e.getBoundingClientRect().right))"""
#: is the element's centre on screen and not covered by another element (the viewer sheet)?
UNCOVERED = """(e) => { const r = e.getBoundingClientRect(); const x = r.left + r.width / 2, y = r.top + r.height / 2;
  if (y < 0 || y > window.innerHeight || x < 0 || x > window.innerWidth) return false;
  const top = document.elementFromPoint(x, y); return top === e || e.contains(top); }"""


#: CommonMark with GitHub's strikethrough (the Markdown of the documents ragtrust reads)
MARKDOWN = MarkdownIt("commonmark").enable("strikethrough")


def visible(markdown: str) -> str:
    """The text a reader sees of an inline Markdown source (markdown-it-py, the reference)."""

    def text(tokens: list[Any]) -> str:
        return "".join(
            t.content if t.type in ("text", "code_inline") else text(t.children or [])
            for t in tokens
            if t.type in ("text", "code_inline", "image")
        )

    (block,) = [t for t in MARKDOWN.parseInline(markdown) if t.type == "inline"]
    return text(block.children or [])


@contextmanager
def phone_or_desktop(width: int) -> Iterator[Any]:
    """A Chromium page ``width`` px wide and 800 high; no script error and no CSP violation on it."""
    sync_playwright = _playwright()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 800})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None)
            yield page
            assert not errors, errors
        finally:
            browser.close()


def ask(page: Any, base: str, question: str = MD_QUESTION) -> dict[str, Any]:
    page.goto(base + "/")
    page.wait_for_selector("#server-status.ok")
    page.fill("#question", question)
    page.keyboard.press("Enter")
    page.wait_for_selector("#answer button.citation")
    verdict: dict[str, Any] = page.evaluate("window.ragtrust.state.verdict")
    return verdict


def open_citation(page: Any, i: int) -> Any:
    button = page.locator("#answer button.citation").nth(i)
    button.click()
    span = {k: button.get_attribute(f"data-{k}") for k in ("doc", "start", "end")}
    # the viewer says what it shows; (a viewer that does not say: its heading and a mark)
    page.wait_for_function(
        """([doc, shown]) => { const v = document.getElementById('viewer');
        return v.dataset.shown === undefined ? v.querySelector('#viewer-heading').textContent === doc
          && !!v.querySelector('#doc-text mark.cite') : v.dataset.shown === shown; }""",
        arg=[span["doc"], f"{span['doc']}:{span['start']}:{span['end']}"],
    )
    return button


def test_markdown_is_rendered_and_the_cited_span_stays_exact(md_server: tuple[str, Any]) -> None:
    base, gate = md_server
    with phone_or_desktop(1366) as page:
        verdict = ask(page, base)
        answer = page.inner_text("#answer")
        assert not re.search(r"\*\*|`|_new_|^- ", answer, re.MULTILINE), answer
        assert page.locator("#answer code").all_inner_texts() == ["Argon2id"]
        assert page.locator("#answer em").all_inner_texts() == ["new"]

        spans = [s for sentence in verdict["sentences"] for s in sentence["spans"]]
        assert len({s["doc_id"] for s in spans}) >= 2  # cited chunks of one guide
        for i, span in enumerate(spans):
            open_citation(page, i)
            stored = gate.store.get(span["doc_id"]).text
            assert stored[span["start"] : span["end"]] == span["text"]
            marks = page.locator("#doc-text mark.cite")
            assert "".join(marks.all_inner_texts()) == visible(span["text"])
            # every mark knows where it starts in the raw text: offsets survive the rendering
            chunk_at = gate.store.get(span["doc_id"]).metadata["start"]
            for start, text in zip(
                marks.evaluate_all("ms => ms.map((m) => Number(m.dataset.start))"), marks.all_inner_texts(), strict=True
            ):
                assert GUIDE.text[start : start + len(text)] == text
                assert chunk_at + span["start"] <= start < chunk_at + span["end"]

            # the whole guide is shown (every chunk), rendered: no Markdown syntax left
            shown = page.inner_text("#doc-text")
            for needle in ("Password storage", "Work factors", "What to avoid", "MD5 or SHA-1"):
                assert needle in shown
            assert not re.search(r"\*\*|##|\]\(|`", shown), shown
            assert page.locator("#doc-text .md-h1").inner_text() == "Password storage"
            link = page.locator("#doc-text .md-link")
            assert link.inner_text() == "hashing guide" and link.get_attribute("title") == "hashing.md"
            assert page.locator("#doc-text .in-chunk").count() >= 1  # the retrieved chunk, banded
            font = page.evaluate("getComputedStyle(document.getElementById('doc-text')).fontFamily")
            assert "serif" not in font.replace("sans-serif", ""), font

        # the raw source on demand: the mark is then the span's source text itself
        page.uncheck("#viewer-markdown")
        assert "".join(page.locator("#doc-text mark.cite").all_inner_texts()) == spans[-1]["text"]
        assert "**" in page.inner_text("#doc-text")

        # an answer without traced sentences (a /v1/verify verdict, a logged one): Markdown too
        page.evaluate(
            "() => window.ragtrust.render({ ...window.ragtrust.state.verdict, sentences: [],"
            " answer: '**Hash** them.\\n\\nTune the `work factor`.' })"
        )
        assert page.locator("#answer p").all_inner_texts() == ["Hash them.", "Tune the work factor."]
        assert page.locator("#viewer").is_hidden()  # a new verdict closes the old one's source


def test_citations_are_numbered_as_the_cli_numbers_them(md_server: tuple[str, Any]) -> None:
    base, gate = md_server
    console = Console(record=True, width=240, color_system=None)
    print_verdict(console, gate.ask(MD_QUESTION))
    cli = re.findall(r"\[(\d+)\]", console.export_text())
    with phone_or_desktop(1366) as page:
        verdict = ask(page, base)
        ui = page.locator("#answer button.citation").evaluate_all("bs => bs.map((b) => b.dataset.n)")
        # one number per cited source (its URL), as `ragtrust ask` prints them: [1][1][1]
        assert ui == cli == ["1"] * len(verdict["sentences"])
        chunks = [s["doc_id"] for sentence in verdict["sentences"] for s in sentence["spans"]]
        assert len(set(chunks)) > 1  # numbered by chunk, they would read [1][2][3]
        cited = page.locator("#sources > li").filter(has=page.locator(".cite-n"))
        assert set(cited.locator(".cite-n").all_inner_texts()) == {"[1]"}
        assert {li.get_attribute("data-doc") for li in cited.all()} <= {d["doc_id"] for d in verdict["documents"]}


@pytest.mark.parametrize("width", [1366, 390])
def test_a_citation_opens_its_span_with_the_answer_kept_in_view(md_server: tuple[str, Any], width: int) -> None:
    base, _ = md_server
    with phone_or_desktop(width) as page:
        ask(page, base)
        before = page.locator("#answer").bounding_box()
        button = open_citation(page, 2)
        after = page.locator("#answer").bounding_box()
        assert before is not None and after is not None
        assert after["y"] < 800 and after["y"] + after["height"] > 0, after  # in the viewport
        if width > 900:
            assert after == before  # side by side: the answer does not move at all
        # the citation pressed and the cited passage are both on screen, neither covered
        assert button.evaluate(UNCOVERED)
        assert page.locator("#cited").evaluate(UNCOVERED)
        assert page.evaluate("document.activeElement.id") == "cited"
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width, page.evaluate(WIDER_THAN_SCREEN)
        if width <= 900:
            shot(page, "ui-mobile")
        else:
            open_citation(page, 1)
            shot(page, "ui-verdict")
        page.keyboard.press("Escape")
        assert page.locator("#viewer").is_hidden()


def test_no_horizontal_scroll_at_phone_width(md_server: tuple[str, Any]) -> None:
    base, _ = md_server
    with phone_or_desktop(390) as page:
        page.goto(base + "/")
        page.wait_for_selector("#server-status.ok")
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390, page.evaluate(WIDER_THAN_SCREEN)
        ask(page, base)
        page.locator("#sources").scroll_into_view_if_needed()
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390, page.evaluate(WIDER_THAN_SCREEN)
        open_citation(page, 0)
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390, page.evaluate(WIDER_THAN_SCREEN)
        sheet = page.locator("#viewer").bounding_box()
        assert sheet is not None and sheet["x"] >= 0 and sheet["x"] + sheet["width"] <= 390


@pytest.fixture
def pdf_server(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """The live server over one two-page PDF document (its page list as the PDF loader keeps it)."""
    pages = [
        "Password storage. Use a slow, salted hash for every stored password.",
        "Argon2id is the first choice for password hashing; bcrypt is the fallback.",
    ]
    text, meta = join_pages(pages)
    pdf = Document(id="guide.pdf", text=text, metadata={"format": "pdf", **meta})
    yield from _serve(real_gate(tmp_path, [pdf]))


def test_a_pdf_citation_shows_its_page(pdf_server: tuple[str, Any]) -> None:
    base, _ = pdf_server
    with phone_or_desktop(1366) as page:
        ask(page, base, "Which algorithm is the first choice for password hashing?")
        button = open_citation(page, 0)
        assert button.get_attribute("aria-label").endswith(", p. 2")
        assert page.inner_text("#viewer-meta").startswith("p. 2")
        shot(page, "ui-pdf")  # the README's view of a PDF citation with its page


def test_a_long_unbroken_word_wraps_inside_its_panel(md_server: tuple[str, Any]) -> None:
    # a URL, a hash or a poisoned run of characters with no space: in an answer sentence, a
    # warning or a reason it wraps where it is, the page never scrolls sideways
    base, _ = md_server
    word = "x" * 600
    with phone_or_desktop(390) as page:
        ask(page, base)
        page.evaluate(
            """(w) => { const v = window.ragtrust.state.verdict;
            window.ragtrust.render({ ...v, trusted: false, sentences: [{ ...v.sentences[0], text: 'See ' + w + '.' }],
              warnings: ['document ' + w + ' was dropped'], decision_reasons: ['T below tau for ' + w] }); }""",
            word,
        )
        assert word in page.inner_text("#answer")
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390, page.evaluate(WIDER_THAN_SCREEN)


#: counts the page's fetches still running (till their JSON is read): 0 once every answer is drawn
COUNT_FETCHES = """() => { window.inFlight = 0; const fetch = window.fetch;
  window.fetch = (...args) => { window.inFlight++; return fetch(...args).then((r) => {
    const json = r.json.bind(r); r.json = () => json().finally(() => window.inFlight--); return r; }); }; }"""


def test_the_viewer_shows_the_last_citation_pressed_when_answers_come_out_of_order(md_server: tuple[str, Any]) -> None:
    # on a slow network a citation's document may come after that of the citation pressed next:
    # the viewer shows the one pressed last, never the late one
    base, _ = md_server
    with phone_or_desktop(1366) as page:
        ask(page, base)
        buttons = page.locator("#answer button.citation")
        docs = buttons.evaluate_all("bs => bs.map((b) => b.dataset.doc)")
        first, later = 0, next(i for i, d in enumerate(docs) if d != docs[0])
        held: list[Any] = []
        chunk = "/v1/documents/" + quote(docs[first], safe="")
        page.route(lambda url: url.endswith(chunk) and not held, lambda route: held.append(route))
        page.evaluate(COUNT_FETCHES)
        buttons.nth(first).click()
        page.wait_for_function("() => window.inFlight === 1")
        assert held
        shown = open_citation(page, later)
        expected = page.evaluate("document.getElementById('viewer').dataset.shown")
        held[0].continue_()
        page.wait_for_function("() => window.inFlight === 0")
        assert page.evaluate("document.getElementById('viewer').dataset.shown") == expected
        assert shown.get_attribute("aria-pressed") == "true"
        assert page.inner_text("#viewer-heading") == docs[later]

        # a citation pressed and the viewer closed before its document came: it stays closed
        page.route(lambda url: url.endswith(chunk) and len(held) == 1, lambda route: held.append(route))
        buttons.nth(first).click()
        page.wait_for_function("() => window.inFlight === 1")
        page.keyboard.press("Escape")
        held[1].continue_()
        page.wait_for_function("() => window.inFlight === 0")
        assert page.locator("#viewer").is_hidden()
