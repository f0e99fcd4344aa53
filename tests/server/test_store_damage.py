"""The server on a damaged store: not ready, and 503 with the reason (issue 19, items 2 and 6)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import ragtrust.models.embedder as embedder_module
from ragtrust.config import load_settings
from ragtrust.errors import StoreDamagedError
from ragtrust.ingest.store import Store
from ragtrust.pipeline import TrustGate
from ragtrust.server.app import build_default_gate, create_app
from ragtrust.testing import HashingEmbedder, LexicalNLI

from .conftest import KB

pytestmark = pytest.mark.anyio


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    store = Store.open(root, HashingEmbedder(), create=True)
    store.add(KB, tier="vetted")
    store.close()
    return root


async def test_a_truncated_segment_makes_the_server_not_ready_and_ask_503(tmp_path: Path, make_client: Any) -> None:
    root = _store(tmp_path)
    chunks = next((root / "segments").glob("*/chunks.jsonl"))
    chunks.write_bytes(chunks.read_bytes()[:50])
    embedder = HashingEmbedder()
    store = Store.open(root, embedder)
    gate = TrustGate.from_settings(load_settings(env={}), store=store, nli=LexicalNLI(), embedder=embedder)
    async with make_client(create_app(gate=gate)) as client:
        ready = await client.get("/readyz")
        ask = await client.post("/v1/ask", json={"question": "How do I prevent SQL injection?"})
    for response in (ready, ask):
        assert response.status_code == 503, response.text
        error = response.json()["error"]
        assert error["type"] == "store_damaged"
        assert error["message"].startswith(f"store damaged: {chunks.relative_to(root).as_posix()}: line 1:")


def test_the_server_refuses_to_start_on_a_store_without_its_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _store(tmp_path)
    (root / "ledger.sqlite").unlink()
    monkeypatch.setattr(embedder_module, "default_embedder", lambda settings=None: HashingEmbedder())
    with pytest.raises(StoreDamagedError, match=r"store damaged: ledger\.sqlite: missing"):
        build_default_gate(load_settings(env={}), root)


async def test_a_ledger_deleted_under_a_running_server_fails_every_verdict_closed(
    tmp_path: Path, make_client: Any
) -> None:
    # the ledger's open SQLite connection kept reading the deleted file: every ask answered
    # from provenance no longer on disk, as before, and a vetting went where nobody reads it
    root = _store(tmp_path)
    embedder = HashingEmbedder()
    store = Store.open(root, embedder)
    gate = TrustGate.from_settings(load_settings(env={}), store=store, nli=LexicalNLI(), embedder=embedder)
    question = {"question": "How do I prevent SQL injection?"}
    async with make_client(create_app(gate=gate)) as client:
        before = await client.post("/v1/ask", json=question)
        (root / "ledger.sqlite").unlink()
        after = await client.post("/v1/ask", json=question)
        ready = await client.get("/readyz")
    assert before.status_code == 200 and before.json()["errors"] == [], before.text
    verdict = after.json()
    assert after.status_code == 200 and not verdict["trusted"]
    assert verdict["errors"] and all(
        "ledger.sqlite: missing (deleted while the store was open)" in e for e in verdict["errors"]
    )
    assert ready.status_code == 503


def test_a_ledger_replaced_under_an_open_store_is_damage_until_it_is_opened_again(tmp_path: Path) -> None:
    root = _store(tmp_path)
    store = Store.open(root, HashingEmbedder())
    doc_id = store.ledger.ids()[0]
    assert store.ledger.get(doc_id).tier == "vetted"
    shutil.copy2(root / "ledger.sqlite", tmp_path / "copy.sqlite")
    (root / "ledger.sqlite").unlink()
    shutil.move(tmp_path / "copy.sqlite", root / "ledger.sqlite")
    with pytest.raises(
        StoreDamagedError, match=r"ledger\.sqlite: replaced by another file \(while the store was open\)"
    ):
        store.ledger.get(doc_id)
    with pytest.raises(StoreDamagedError, match="replaced"):
        store.ledger.set_tier(doc_id, "quarantined", reason="test")
    with pytest.raises(StoreDamagedError, match="replaced"):  # what /readyz asks
        store.check_readable()
    store.close()
    assert Store.open(root, HashingEmbedder()).ledger.get(doc_id).tier == "vetted"
