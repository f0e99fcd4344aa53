"""``ragtrust eval relevance`` through Typer's CliRunner, with the deterministic fakes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ragtrust.models.embedder as embedder_module
import ragtrust.models.nli as nli_module
from ragtrust.cli.main import app
from ragtrust.documents import Document
from ragtrust.ingest.store import Store
from ragtrust.models.nli import NLIEngine
from ragtrust.testing import HashingEmbedder, LexicalNLI

runner = CliRunner()
SIGNALS = ["linguistic", "structural", "intra_consistency", "cross_consistency", "semantic_outlier", "provenance"]


@pytest.fixture(autouse=True)
def fake_models(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(nli_module, "default_nli", lambda settings=None, *, cache_path=None: NLIEngine(LexicalNLI()))
    monkeypatch.setattr(embedder_module, "default_embedder", lambda settings=None: HashingEmbedder())
    for name in list(os.environ):
        if name.startswith("RAGTRUST_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ragtrust.toml").write_text(f"[screening]\nsignals = {json.dumps(SIGNALS)}\n", encoding="utf-8")


def test_eval_relevance_fits_and_writes(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "store", HashingEmbedder(), create=True)
    store.add(
        [
            Document("pw", "Store passwords with Argon2id hashing. Argon2id hashing slows password cracking."),
            Document("tls", "Servers should accept TLS 1.3 connections only. Disable old SSL protocols on servers."),
        ],
        tier="vetted",
    )
    store.close()
    on = tmp_path / "on.jsonl"
    on.write_text(
        '{"question": "Which hashing should store passwords?"}\n{"question": "Which TLS should servers accept?"}\n'
    )
    off = tmp_path / "off.jsonl"
    off.write_text('{"question": "What is the capital of France?"}\n{"question": "Who painted the Mona Lisa?"}\n')
    out = tmp_path / "results" / "relevance.json"
    args = ["eval", "relevance", "--store", "store", "--on-topic", str(on), "--off-topic", str(off), "--out", str(out)]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["json"] == str(out) and out.is_file()
    assert summary["in_sample"]["on_topic_trusted"] == 2 and summary["in_sample"]["off_topic_trusted"] == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["command"].startswith("ragtrust ") and len(report["rows"]) == 4
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "fitted: context_threshold" in table.stdout and "leave one out" in table.stdout


def test_eval_relevance_needs_a_store() -> None:
    result = runner.invoke(app, ["eval", "relevance"])
    assert result.exit_code == 2 and "no store given" in result.output
