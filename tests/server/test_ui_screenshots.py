"""The README's screenshots of the web UI: taken by the browser tests, kept small and shown.

The browser tests write test-artifacts/ui-*.png; ``RAGTRUST_UPDATE_SCREENSHOTS=1 pytest
tests/server/test_ui_*.py`` also copies them to docs/screenshots/ (see ``test_browser.shot``).
This module takes the Log view's, and checks the committed set: every PNG the README shows
exists, is under the size limit and is linked from the "## Web UI" section.
"""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from ragtrust.verdict_log import log as verdict_log

from .test_browser import MAX_SCREENSHOT_BYTES, ROOT, SCREENSHOTS, shot
from .test_log_browser import QUESTION, SCREEN_DOCS, logged_server
from .test_ui_viewer import phone_or_desktop

__all__ = ["logged_server"]  # the fixture, imported for the test below

#: the views the README shows, by file name
VIEWS = ("ui-verdict.png", "ui-conflicts.png", "ui-log.png", "ui-mobile.png", "ui-pdf.png")


@pytest.mark.browser
def test_the_log_view_screenshot(logged_server: tuple[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    base, _ = logged_server
    # the same times on every run, so that the committed screenshot only changes with the UI
    seconds = itertools.count()
    start = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)

    def stamp() -> str:
        return (start + timedelta(seconds=7 * next(seconds))).isoformat(timespec="milliseconds")

    monkeypatch.setattr(verdict_log, "utc_now", stamp)
    httpx.post(base + "/v1/screen", json={"documents": SCREEN_DOCS, "query": "tls"}, timeout=30).raise_for_status()
    with phone_or_desktop(1366) as page:
        page.goto(base + "/")
        page.wait_for_selector("#server-status.ok")
        page.fill("#question", QUESTION)
        page.keyboard.press("Enter")
        page.wait_for_selector("#result-columns:not([hidden])")
        page.click("#nav-log")
        page.wait_for_selector("#log-rows > tr:nth-child(2)")
        assert page.locator("#log-rows td.log-time").all_inner_texts() == ["2026-12-01 09:30:07", "2026-12-01 09:30:00"]
        page.set_viewport_size({"width": 1366, "height": 520})
        shot(page, "ui-log")


def test_the_readme_shows_the_committed_screenshots() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Web UI\n(.*?)(?=^## )", readme, re.MULTILINE | re.DOTALL)
    assert section, "README.md has no '## Web UI' section"
    shown = re.findall(r"\]\((docs/screenshots/[^)]+\.png)\)", section.group(1))
    assert sorted(shown) == sorted(f"docs/screenshots/{name}" for name in VIEWS)
    for name in VIEWS:
        png = SCREENSHOTS / name
        assert png.exists(), f"{png} is missing: RAGTRUST_UPDATE_SCREENSHOTS=1 pytest tests/server/test_ui_*.py"
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < MAX_SCREENSHOT_BYTES, name
