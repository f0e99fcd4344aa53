"""Browser tests: the PDF page of a conflict's claims and of a signal's spans, shown as the cited span's is.

Headless system Chromium through playwright, as in tests/server/test_browser.py (skipped with
the reason when either is missing), over the corpus of tests/server/test_pdf_pages.py: a
two-page PDF whose page 2 holds an injection and "Argon2id needs 19 MiB", and a note that
says 64 MiB. The verdict's JSON carries the pages (issue 21); these tests check the UI shows them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import real_gate
from .test_browser import _serve
from .test_pdf_pages import NOTES, PDF, QUERY
from .test_ui_viewer import ask, phone_or_desktop

pytestmark = pytest.mark.browser


@pytest.fixture
def pdf_conflict_server(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """The live server over the two-page PDF and the note that contradicts it."""
    yield from _serve(real_gate(tmp_path, [PDF, NOTES]))


def expected_pages(spans: list[dict[str, Any]]) -> str:
    """What the UI writes for the pages of ``spans``: "p. 2", "pp. 1, 2" or nothing."""
    pages = sorted({s["page"] for s in spans if s.get("page") is not None})
    return ("p. " if len(pages) == 1 else "pp. ") + ", ".join(map(str, pages)) if pages else ""


def test_conflict_claims_show_their_pdf_page(pdf_conflict_server: tuple[str, Any]) -> None:
    base, _ = pdf_conflict_server
    with phone_or_desktop(1366) as page:
        v = ask(page, base, QUERY)
        claims = [claim for c in v["conflicts"] for claim in (c["left"], c["right"])]
        assert any(claim["page"] == 2 for claim in claims), v["conflicts"]  # the case this test is for
        cells = page.locator("#conflicts > li.conflict .conflict-sides > .claim")
        assert cells.count() == len(claims)
        for k, claim in enumerate(claims):
            cell = cells.nth(k)
            button = cell.locator(".claim-doc")
            if claim["page"] is None:
                assert cell.locator(".claim-page").count() == 0
                assert button.get_attribute("aria-label") == f"Open {claim['doc_id']} at this claim"
            else:
                assert cell.locator(".claim-page").inner_text() == f"p. {claim['page']}"
                assert button.get_attribute("aria-label") == f"Open {claim['doc_id']} at this claim, p. {claim['page']}"
        # the claim opened in the viewer: its page first, as a cited span's
        on_page = next(k for k, claim in enumerate(claims) if claim["page"] == 2)
        cells.nth(on_page).locator(".claim-doc").click()
        page.wait_for_selector("#viewer:not([hidden]) #doc-text mark.cite")
        assert page.inner_text("#viewer-meta").startswith("p. 2")


def test_signal_spans_show_their_pdf_pages(pdf_conflict_server: tuple[str, Any]) -> None:
    base, _ = pdf_conflict_server
    with phone_or_desktop(1366) as page:
        v = ask(page, base, QUERY)
        shown = 0
        for doc in v["documents"]:
            rows = page.locator(f'#sources > li[data-doc="{doc["doc_id"]}"] .signal-table tbody tr')
            assert rows.count() == len(doc["signals"])
            for j, sig in enumerate(doc["signals"]):
                why = rows.nth(j).locator(".sig-why")
                expected = "" if sig["skipped"] else expected_pages(sig["spans"])
                if expected:
                    assert why.locator(".sig-pages").inner_text() == expected
                    assert why.inner_text().startswith(expected + " · " if sig["reasons"] else expected)
                    shown += 1
                else:
                    assert why.locator(".sig-pages").count() == 0
        assert shown >= 2, "the PDF's injection (page 1) and its instruction text (page 2)"
        rows = page.locator('#sources > li[data-doc="guide.pdf#0"] .signal-table tbody tr')
        assert rows.locator(".sig-pages", has_text="p. 2").count() >= 1
        # the source opened in the viewer: each highlighted span names its signal's page
        page.locator('#sources > li[data-doc="guide.pdf#0"] button', has_text="Open").click()
        page.wait_for_selector("#viewer:not([hidden]) #doc-text mark.suspicious")
        titles = page.locator("#doc-text mark.suspicious").evaluate_all("(marks) => marks.map((m) => m.title)")
        assert any(", p. 2: " in t for t in titles), titles
        assert any(", p. 1: " in t for t in titles), titles
