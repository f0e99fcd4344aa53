"""Browser tests of the verdict view: the empty state, the decision and its reasons, warnings,
conflicts side by side with their sources, per-document signals (P_i and each signal's score).

Headless system Chromium through playwright, as in tests/server/test_browser.py (skipped with
the reason when either is missing); the server's gate carries ``KB_CONFLICTS`` and retrieves a
poisoned document, so the verdict is flagged, warned about and in conflict.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import KB_CONFLICTS
from .test_browser import conflict_server, md_server, shot
from .test_ui_viewer import WIDER_THAN_SCREEN, ask, phone_or_desktop

pytestmark = pytest.mark.browser
__all__ = ["conflict_server", "md_server"]  # the fixtures, imported for the tests below

QUESTION = "How should I store passwords?"


def visible_text(page: Any) -> str:
    text: str = page.evaluate("document.body.innerText")
    return text


def test_before_the_first_question_an_empty_state_not_empty_panels(conflict_server: tuple[str, Any]) -> None:
    base, _ = conflict_server
    with phone_or_desktop(1366) as page:
        page.goto(base + "/")
        page.wait_for_selector("#server-status.ok")
        assert "—" not in visible_text(page)  # no panels of dashes
        for hidden in ("#result-columns", "#verdict", "#conflicts-panel", "#viewer", "#sources"):
            assert page.locator(hidden).is_hidden(), hidden
        assert page.locator("#placeholder").is_visible()
        assert "No question yet" in page.inner_text("#placeholder")
        ask(page, base, QUESTION)
        assert page.locator("#placeholder").is_hidden() and page.locator("#verdict").is_visible()


def test_the_verdict_warnings_conflicts_and_signals_are_shown(conflict_server: tuple[str, Any]) -> None:
    base, _ = conflict_server
    with phone_or_desktop(1366) as page:
        v = ask(page, base, QUESTION)
        assert not v["trusted"] and v["decision_reasons"] and v["warnings"]  # the case this test is for

        # the decision and its reasons
        assert page.inner_text("#trust-level") == v["trust_level"]
        assert page.inner_text("#trust-score") == f"{v['trust_score']:.2f}"
        assert page.inner_text("#decision") == "Flagged"
        assert page.inner_text("#decision-heading") == "Why it is flagged"
        assert page.locator("#decision-reasons > li").all_inner_texts() == v["decision_reasons"]
        for key, name in (("f-value", "factuality"), ("c-value", "consistency"), ("p-value", "poison_probability")):
            assert page.inner_text(f"#{key}") == f"{v[name]:.2f}"
        detail = page.inner_text("#trust-detail")
        assert f"τ {v['tau']:.2f}" in detail and f"dampener {v['dampener']:.3f}" in detail

        # every warning, in words
        warnings = page.locator("#warnings > li").all_inner_texts()
        assert all(w in warnings for w in v["warnings"]), warnings

        # conflicts: claim A and claim B side by side, each with its source
        rows = page.locator("#conflicts > li.conflict")
        assert rows.count() == len(KB_CONFLICTS)
        for i, conflict in enumerate(KB_CONFLICTS):
            sides = rows.nth(i).locator(".conflict-sides > .claim")
            boxes = [sides.nth(k).bounding_box() for k in range(2)]
            assert boxes[0] and boxes[1] and boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"]  # side by side
            assert abs(boxes[0]["y"] - boxes[1]["y"]) < 1
            for k, claim in enumerate((conflict.left, conflict.right)):
                cell = sides.nth(k)
                assert cell.locator(".claim-side").inner_text() == "AB"[k]
                assert cell.locator(".claim-doc").inner_text() == claim.doc_id
                assert cell.locator(".claim-src").inner_text() == claim.url
                assert cell.locator(".claim-text").inner_text() == claim.text

        # per-document signals: P_i and each signal's score
        docs = page.locator("#sources > li")
        assert docs.count() == len(v["documents"])
        for k, doc in enumerate(v["documents"]):
            row = docs.nth(k)
            assert row.get_attribute("data-doc") == doc["doc_id"]
            assert row.locator(".p-i").inner_text() == f"P_i {doc['poison_probability']:.2f}"
            table = row.locator(".signal-table tbody tr")
            assert table.count() == len(doc["signals"])
            for j, sig in enumerate(doc["signals"]):
                cells = table.nth(j)
                assert cells.locator(".sig-name").inner_text() == sig["name"]
                score = "—" if sig["skipped"] else f"{sig['score']:.2f}"
                assert cells.locator(".sig-score").inner_text() == score
                assert ("hot" in (cells.get_attribute("class") or "")) == (not sig["skipped"] and sig["score"] >= 0.5)
                for reason in sig["reasons"]:
                    assert reason in cells.locator(".sig-why").inner_text()
        poisoned = page.locator('#sources > li[data-doc="password-storage"]')
        assert "suspicious" in poisoned.locator(".badge").inner_text()

        shot(page.locator(".col-main"), "ui-conflicts")  # the verdict, its warnings and the conflicts


def test_a_trusted_verdict_says_why(md_server: tuple[str, Any]) -> None:
    base, _ = md_server
    with phone_or_desktop(390) as page:
        v = ask(page, base)
        assert v["trusted"]
        assert page.inner_text("#decision") == "Trusted"
        assert page.inner_text("#decision-heading") == "Why it is trusted"
        (reason,) = page.locator("#decision-reasons > li").all_inner_texts()
        assert reason.startswith(f"Trusted: T = {v['trust_score']:.3f} ≥ τ {v['tau']:.2f}")
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390, page.evaluate(WIDER_THAN_SCREEN)


def test_a_question_over_the_limit_is_refused_in_words_not_cut_short(md_server: tuple[str, Any]) -> None:
    # a pasted question longer than the server takes (4,000 characters) was cut to its first
    # 4,000 UTF-16 units by the field without a word, and that part was answered
    base, _ = md_server
    with phone_or_desktop(1366) as page:
        page.goto(base + "/")
        page.wait_for_selector("#server-status.ok")
        keys = "Keys? 🔐🔐🔐🔐 " * 350  # 3,850 characters, 5,250 UTF-16 units
        page.focus("#question")
        page.keyboard.insert_text(keys)  # as a paste
        assert page.input_value("#question") == keys
        long = "How should I store passwords with a slow salted hash? " * 190  # 10,260 characters
        page.fill("#question", "")
        page.keyboard.insert_text(long)
        assert page.input_value("#question") == long
        page.keyboard.press("Enter")
        page.wait_for_selector("#message:not([hidden])")
        assert "at most 4000 characters" in page.inner_text("#message")
        assert page.locator("#result-columns").is_hidden()  # nothing answered
