"""``POST /v1/documents``: unusable ids, invisible texts, deep metadata and a write past the deadline."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from ragtrust.documents import Document
from ragtrust.server.app import create_app

from .conftest import IngestReport, InstrumentedGate, MemoryStore, memory_store

pytestmark = pytest.mark.anyio


def _deep(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


async def _ingest(make_client: Any, gate: InstrumentedGate, doc: dict[str, Any]) -> Any:
    async with make_client(create_app(gate=gate)) as client:
        return await client.post("/v1/documents", json={"documents": [doc]})


@pytest.mark.parametrize("doc_id", [" ", "\u200b", "a\u0000b", "a\nb", ".", "..", "../../x", "a/../b", " a", "a\t"])
async def test_an_unusable_id_is_refused_and_nothing_is_stored(
    gate: InstrumentedGate, make_client: Any, doc_id: str
) -> None:
    r = await _ingest(make_client, gate, {"id": doc_id, "text": "Use TLS 1.3 everywhere."})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_input" and "'id'" in error["message"]
    assert gate.store is not None and doc_id not in gate.store.docs


@pytest.mark.parametrize("doc_id", ["guides/tls.md", "Authentication_Cheat_Sheet.md", "a.b", "x..y"])
async def test_ids_like_the_ingest_cli_makes_are_accepted(
    gate: InstrumentedGate, make_client: Any, doc_id: str
) -> None:
    r = await _ingest(make_client, gate, {"id": doc_id, "text": "Use TLS 1.3 everywhere."})
    assert r.status_code == 200, r.text
    assert r.json()["ids"] == [doc_id]


@pytest.mark.parametrize("text", ["\u200b\u202e", "\u0000\u0001", " \u007f\n"])
async def test_a_text_with_nothing_visible_is_refused(gate: InstrumentedGate, make_client: Any, text: str) -> None:
    r = await _ingest(make_client, gate, {"id": "blank", "text": text})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["type"] == "invalid_input"
    assert gate.store is not None and "blank" not in gate.store.docs


async def test_metadata_nested_too_deeply_is_a_422_not_a_500(gate: InstrumentedGate, make_client: Any) -> None:
    r = await _ingest(make_client, gate, {"id": "deep", "text": "Use TLS.", "metadata": {"x": _deep(900)}})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_input" and "nested more than 32 levels" in error["message"]
    ok = await _ingest(make_client, gate, {"id": "flat", "text": "Use TLS.", "metadata": {"x": _deep(20)}})
    assert ok.status_code == 200, ok.text


@dataclass
class SlowStore(MemoryStore):
    """A store whose ``add`` waits (holding the write lock) until the test lets it finish."""

    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def add(self, documents: Sequence[Document], tier: str | None = None, actor: str = "unknown") -> IngestReport:
        self.entered.set()
        assert self.release.wait(timeout=10)
        return super().add(documents, tier, actor)


async def test_a_write_that_began_is_answered_with_its_outcome_past_the_deadline(make_client: Any) -> None:
    store = SlowStore()
    # the budget must outlast the way to the store on a loaded CI host, and run out during the write
    app = create_app(gate=InstrumentedGate(store=store), request_timeout_s=0.5, workers=1)
    async with make_client(app) as client:
        task = asyncio.create_task(client.post("/v1/documents", json={"documents": [{"id": "a", "text": "Use TLS."}]}))
        for _ in range(1000):
            if store.entered.is_set():
                break
            await asyncio.sleep(0.01)
        assert store.entered.is_set(), "the write never began"
        await asyncio.sleep(1.0)  # the request's 0.5 s budget is spent while the write runs
        store.release.set()
        r = await task
    assert r.status_code == 200, r.text  # the write committed: no 503 that says it failed
    assert r.json()["ids"] == ["a"] and "a" in store.docs


async def test_a_write_still_waiting_at_the_deadline_times_out_and_never_runs(make_client: Any) -> None:
    release = threading.Event()
    gate = InstrumentedGate(store=memory_store(), block=release)  # an ask holds the store's read lock
    app = create_app(gate=gate, request_timeout_s=0.3, workers=2)
    async with make_client(app) as client:
        ask = asyncio.create_task(client.post("/v1/ask", json={"question": "SQL?"}))
        while gate.active == 0:
            await asyncio.sleep(0.01)
        r = await client.post("/v1/documents", json={"documents": [{"id": "late", "text": "Use TLS."}]})
        assert r.status_code == 503 and r.json()["error"]["type"] == "timeout", r.text
        release.set()
        await ask
        app.state.ragtrust.request_timeout_s = 10
        after = await client.get("/v1/documents/late")  # a reader waits for the queued writer: it has ended
    assert after.status_code == 404, after.text
    assert gate.store is not None and "late" not in gate.store.docs
