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

from ragtrust.config import load_settings
from ragtrust.documents import Document
from ragtrust.ingest.store import Store
from ragtrust.pipeline import TrustGate
from ragtrust.server.app import create_app
from ragtrust.testing import HashingEmbedder, LexicalNLI

from .conftest import KB, KB_CONFLICTS, InstrumentedGate, memory_store, real_gate

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
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
#: where ``RAGTRUST_UPDATE_SCREENSHOTS=1`` copies the screenshots the README shows
SCREENSHOTS = ROOT / "docs" / "screenshots"
#: the largest screenshot committed (docs/screenshots/*.png)
MAX_SCREENSHOT_BYTES = 300_000

#: a Markdown guide cut into several chunks (48 tokens): its sentences carry bold, code and
#: emphasis, and a link; the answer cites three of its chunks, all one URL
GUIDE = Document(
    id="password-guide",
    url="https://kb.example/password-guide.md",
    text=(
        "# Password storage\n\n"
        "Store passwords with a **slow, salted hash** such as `Argon2id`, scrypt or bcrypt. "
        "See the [hashing guide](hashing.md) for the parameters of each hash.\n\n"
        "## Work factors\n\n"
        "- Tune the **work factor** of the password hash so that one hash takes about a second.\n"
        "- Re-hash stored passwords with the _new_ work factor when users log in.\n\n"
        "## What to avoid\n\n"
        "Fast hashes like **MD5** or SHA-1 are unsuitable for password storage (CWE-916).\n"
    ),
)
MD_DOCS = (GUIDE, KB[0], KB[2])
MD_QUESTION = "How should I store passwords with a slow salted hash and which work factor?"
MD_CHUNKING = {"chunking": {"chunk_tokens": 48, "overlap_tokens": 0}}


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
    """Uvicorn on 127.0.0.1 (random free port) in a thread, serving the real gate."""
    yield from _serve(real_gate(tmp_path))


@pytest.fixture
def conflict_server() -> Iterator[tuple[str, Any]]:
    """The same, with a gate whose every verdict carries :data:`KB_CONFLICTS`."""
    yield from _serve(InstrumentedGate(store=memory_store(), conflicts=KB_CONFLICTS))


def md_gate(tmp_path: Path) -> TrustGate:
    """The real TrustGate over :data:`MD_DOCS` in a real Store, chunked small (fake models)."""
    settings = load_settings(env={}, overrides=MD_CHUNKING)
    embedder = HashingEmbedder()
    store = Store.open(tmp_path / "md-store", embedder, create=True, settings=settings)
    store.add(MD_DOCS, tier="vetted")
    gate = TrustGate.from_settings(settings, store=store, nli=LexicalNLI(), embedder=embedder)
    gate.warm_up()
    return gate


@pytest.fixture
def md_server(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """The live server over the Markdown corpus :data:`MD_DOCS`."""
    yield from _serve(md_gate(tmp_path))


def shot(target: Any, name: str) -> Path:
    """Screenshot ``target`` (a page's viewport or one element) to test-artifacts/<name>.png.

    With ``RAGTRUST_UPDATE_SCREENSHOTS=1`` the file is also copied to docs/screenshots/ (the
    README's images); one over :data:`MAX_SCREENSHOT_BYTES` fails the test instead.
    """
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    target.screenshot(path=str(path), animations="disabled", caret="hide")
    if os.environ.get("RAGTRUST_UPDATE_SCREENSHOTS") == "1":
        size = path.stat().st_size
        assert size < MAX_SCREENSHOT_BYTES, f"{path} is {size} bytes: show less of the page"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, SCREENSHOTS / path.name)
    return path


def _serve(gate: Any) -> Iterator[tuple[str, Any]]:
    import uvicorn

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


DIFF_CASES = [
    ("A queen bee lives three weeks.", "three weeks"),
    ("A queen bee lives THREE weeks.", "three weeks"),
    ("You don't need a salt.", "don t"),
    ("Keys must be rotated; they must not leak.", "must rotated"),
    ("It cannot be no.", "no"),
    ("Released in 2019 with 10,000 users.", "10,000"),
    ("Zürich is not the capital; Bern is.", "Bern"),
    ("Nothing differs here.", "absent"),
    ("Nothing differs here.", ""),
]


def test_conflicts_are_shown_side_by_side(conflict_server: tuple[str, Any]) -> None:
    from ragtrust.cli.render import diff_ranges

    sync_playwright = _playwright()
    base, _ = conflict_server
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.goto(base + "/")
            page.wait_for_selector("#server-status.ok")
            assert page.locator("#conflicts-panel").is_hidden()  # nothing asked yet

            page.focus("#question")
            page.keyboard.type("How should I store passwords?")
            page.keyboard.press("Enter")
            page.wait_for_selector("#conflicts-panel:not([hidden])")

            rows = page.locator("#conflicts > li.conflict")
            assert rows.count() == len(KB_CONFLICTS)
            for i, conflict in enumerate(KB_CONFLICTS):
                row = rows.nth(i)
                sides = row.locator(".conflict-sides > .claim")
                assert sides.count() == 2
                for side, claim in zip(range(2), (conflict.left, conflict.right), strict=True):
                    cell = sides.nth(side)
                    assert cell.locator(".claim-doc").inner_text() == claim.doc_id
                    assert cell.locator(".claim-text").inner_text() == claim.text
                badge = row.locator(".conflict-head .badge").inner_text()
                assert badge == ("contested" if conflict.blamed is None else f"blamed: {conflict.blamed}")
                assert conflict.kind in row.locator(".conflict-head .meta").inner_text()
                marks = row.locator("mark.diff").all_inner_texts()
                assert marks == [w for w in (conflict.left_words, conflict.right_words) if w]
            # a screen reader hears which side it is; the "vs" is decoration
            first = rows.nth(0)
            assert first.locator(".visually-hidden").all_text_contents() == ["Left claim, from ", "Right claim, from "]
            assert first.locator(".versus").get_attribute("aria-hidden") == "true"
            assert rows.nth(1).locator(".claim.blamed").count() == 2  # the document contradicts itself
            assert first.locator(".claim.blamed").count() == 0
            page.screenshot(path=str(ARTIFACTS / "server-ui-conflicts.png"), full_page=True)

            # a claim's document opens at the claim
            right = KB_CONFLICTS[0].right
            first.locator(".claim-doc").nth(1).click()
            page.wait_for_selector("#doc-text mark.cite")
            assert page.locator("#viewer-heading").inner_text() == right.doc_id
            assert "".join(page.locator("#doc-text mark.cite").all_inner_texts()) == right.text
            assert (page.locator("#doc-text mark.cite").first.get_attribute("title") or "").startswith(
                "claim in conflict"
            )

            # the browser marks the same words as the CLI
            for text, words in DIFF_CASES:
                ranges = page.evaluate("([t, w]) => window.ragtrust.diffRanges(t, w)", [text, words])
                assert [tuple(r) for r in ranges] == diff_ranges(text, words), (text, words)

            # a verdict without conflicts hides the panel again
            page.evaluate("() => window.ragtrust.render({ ...window.ragtrust.state.verdict, conflicts: [] })")
            assert page.locator("#conflicts-panel").is_hidden()
            assert page.locator("#conflicts > li").count() == 0
        finally:
            browser.close()
