"""Browser test: the answer -> citation -> highlighted span flow in headless Chromium.

Uses the ``playwright`` Python package driving the system (Debian) Chromium; no browser is
ever downloaded. Skipped with the reason when either is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragtrust.server.app import create_app

from .conftest import InstrumentedGate, memory_store, real_gate

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("RAGTRUST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _playwright() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: pip install playwright (never `playwright install`)")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set RAGTRUST_CHROMIUM)")
    return sync_playwright


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """Uvicorn on 127.0.0.1 (random free port) in a thread, serving the real gate if built."""
    import uvicorn

    gate = real_gate(tmp_path) or InstrumentedGate(store=memory_store())
    app = create_app(gate=gate)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    with httpx.Client(base_url=base, timeout=2) as client:
        while True:  # wait for readiness (a poll with a deadline, not a timing assert)
            try:
                ready = client.get("/readyz")
                if ready.status_code == 200:
                    break
                if ready.json()["error"]["type"] != "not_ready":
                    server.should_exit = True
                    pytest.fail(f"the server cannot serve: {ready.text}")
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or not thread.is_alive():
                server.should_exit = True
                pytest.fail("the server did not become ready within 30 s")
            time.sleep(0.05)
    try:
        yield base, gate
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def test_citation_opens_the_highlighted_source_span(live_server: tuple[str, Any]) -> None:
    sync_playwright = _playwright()
    base, gate = live_server
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 800})
            page.goto(base + "/")
            page.wait_for_selector("#server-status.ok")

            # keyboard only: type the question, press Enter
            page.focus("#question")
            page.keyboard.type("How should I store passwords?")
            page.keyboard.press("Enter")
            citation = page.locator("button.citation:not(.unverified)").first
            citation.wait_for()

            assert page.locator("#trust-level").inner_text() in {"HIGH", "MEDIUM", "LOW", "VERY LOW"}
            assert page.locator("#sources > li").count() >= 1
            verdict = page.evaluate("window.ragtrust.state.verdict")
            doc_id = citation.get_attribute("data-doc")
            start, end = int(citation.get_attribute("data-start") or -1), int(citation.get_attribute("data-end") or -1)
            cited = next(
                s
                for sentence in verdict["sentences"]
                for s in sentence["spans"]
                if (s["doc_id"], s["start"], s["end"]) == (doc_id, start, end)
            )

            citation.focus()
            page.keyboard.press("Enter")
            page.wait_for_selector("#doc-text mark.cite")

            highlighted = "".join(page.locator("#doc-text mark.cite").all_inner_texts())
            assert highlighted == cited["text"]
            stored = gate.store.get(doc_id).text
            assert stored[start:end] == cited["text"]
            assert page.locator("#viewer-heading").inner_text() == doc_id
            assert page.evaluate("document.activeElement.id") == "cited"
            box = page.locator("#cited").bounding_box()
            assert box is not None and box["height"] > 0
            assert citation.get_attribute("aria-pressed") == "true"

            suspicious = [
                s
                for d in verdict["documents"]
                if d["doc_id"] == doc_id
                for sig in d["signals"]
                if not sig["skipped"]
                for s in sig["spans"]
            ]
            if suspicious:
                marked = "".join(page.locator("#doc-text mark.suspicious").all_inner_texts())
                assert marked and marked in stored
            page.screenshot(path=str(ARTIFACTS / "server-ui-citation.png"), full_page=True)

            page.keyboard.press("Escape")
            assert page.locator("#viewer").is_hidden()
            assert page.evaluate("document.activeElement.classList.contains('citation')")
        finally:
            browser.close()
