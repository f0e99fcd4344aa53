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
    # two stores' reports pooled: one pair of thresholds, figures per store; nothing is asked
    other = tmp_path / "results" / "other.json"
    other.write_text(json.dumps({**report, "store": "other"}), encoding="utf-8")
    pooled = tmp_path / "results" / "pooled.json"
    combined = runner.invoke(
        app, ["eval", "relevance", "--combine", str(out), "--combine", str(other), "--out", str(pooled), "--json"]
    )
    assert combined.exit_code == 0, combined.output
    summary = json.loads(combined.stdout)
    assert set(summary["per_store"]) == {"store", "other"} and summary["in_sample"]["on_topic"] == 4
    assert json.loads(pooled.read_text(encoding="utf-8"))["per_store"]["other"]["in_sample"]["on_topic"] == 2


def test_eval_relevance_needs_a_store() -> None:
    result = runner.invoke(app, ["eval", "relevance"])
    assert result.exit_code == 2 and "no store given" in result.output


def test_eval_relevance_combine_refuses_a_file_that_is_not_a_report(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"thresholds": {}}', encoding="utf-8")
    result = runner.invoke(app, ["eval", "relevance", "--combine", str(bad), "--out", str(tmp_path / "o.json")])
    assert result.exit_code == 2 and "not a report" in result.output
    bad.write_text("{", encoding="utf-8")
    result = runner.invoke(app, ["eval", "relevance", "--combine", str(bad), "--out", str(tmp_path / "o.json")])
    assert result.exit_code == 2 and "not JSON" in result.output
