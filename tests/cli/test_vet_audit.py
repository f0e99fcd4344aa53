"""``ragtrust vet`` / ``quarantine`` / ``ingest --tier`` record who did it; ``ragtrust ledger`` shows it."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtrust.cli import store as store_cli
from ragtrust.cli.main import app
from ragtrust.testing import HashingEmbedder, LexicalNLI

runner = CliRunner()


@pytest.fixture(autouse=True)
def fake_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_cli, "_embedder", lambda settings: HashingEmbedder())
    monkeypatch.setattr(store_cli, "_nli", lambda settings: LexicalNLI())
    monkeypatch.delenv("RAGTRUST_STORE", raising=False)
    monkeypatch.setattr(getpass, "getuser", lambda: "os-user")


def _store(tmp_path: Path, *extra: str) -> Path:
    kb, store = tmp_path / "kb", tmp_path / "store"
    kb.mkdir()
    (kb / "keys.md").write_text("# Keys\n\nRSA keys must be at least 2048 bits long.\n", encoding="utf-8")
    result = runner.invoke(app, ["ingest", str(kb), "--store", str(store), *extra])
    assert result.exit_code == 0, result.output
    return store


def _events(store: Path) -> list[tuple[str, str]]:
    result = runner.invoke(app, ["ledger", "kb/keys.md", "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    return [(e["kind"], e["actor"]) for e in json.loads(result.stdout)["events"]]


def test_vet_and_quarantine_record_the_os_user_or_by(tmp_path: Path) -> None:
    store = _store(tmp_path)
    vetted = runner.invoke(app, ["vet", "kb/keys.md", "--store", str(store)])
    assert vetted.exit_code == 0 and "vetted by os-user: kb/keys.md" in vetted.stdout
    quarantined = runner.invoke(app, ["quarantine", "kb/keys.md#0", "--store", str(store), "--by", "sec-team"])
    assert quarantined.exit_code == 0, quarantined.output
    assert _events(store) == [("added", "os-user"), ("vetted", "os-user"), ("quarantined", "sec-team")]
    human = runner.invoke(app, ["ledger", "kb/keys.md", "--store", str(store)], env={"COLUMNS": "200"})
    assert human.exit_code == 0
    assert "by sec-team" in human.stdout  # the summary: when and by whom the tier was set
    assert any("quarantined" in line and "sec-team" in line for line in human.stdout.splitlines())


def test_ingest_tier_records_by_and_a_missing_user_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path, "--tier", "vetted", "--by", "ci-bot")
    assert _events(store) == [("added", "ci-bot"), ("vetted", "ci-bot")]

    def no_user() -> str:
        raise KeyError("getpwuid(): uid not found: 4242")

    monkeypatch.setattr(getpass, "getuser", no_user)
    result = runner.invoke(app, ["quarantine", "kb/keys.md", "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert _events(store)[-1] == ("quarantined", "unknown")


def test_an_empty_by_is_a_one_line_error_and_changes_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path)
    result = runner.invoke(app, ["vet", "kb/keys.md", "--store", str(store), "--by", " "])
    assert result.exit_code == 2
    assert [line for line in result.output.splitlines() if line.strip()] == [
        "error: the actor recorded with a ledger change must be a non-empty one-line name, got ' '"
    ]
    assert _events(store) == [("added", "os-user")]


@pytest.mark.parametrize(("by", "actor"), [((), "os-user"), (("--by", "cleanup-job"), "cleanup-job")])
def test_delete_records_the_os_user_or_by(tmp_path: Path, by: tuple[str, ...], actor: str) -> None:
    store = _store(tmp_path)
    result = runner.invoke(app, ["delete", "kb/keys.md", "--store", str(store), *by])
    assert result.exit_code == 0, result.output
    assert _events(store)[-1] == ("deleted", actor)  # was always "unknown"


@pytest.mark.parametrize("command", ["vet", "quarantine", "ledger"])
def test_a_chunk_the_document_does_not_have_is_refused_not_read_as_the_document(tmp_path: Path, command: str) -> None:
    # 'vet kb/keys.md#99' vetted kb/keys.md, which has one chunk: a typo passed for a real chunk
    store = _store(tmp_path)
    result = runner.invoke(app, [command, "kb/keys.md#99", "--store", str(store)], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert (
        "no chunk 'kb/keys.md#99' in store" in result.output
        and "'kb/keys.md' has 1 chunk(s), #0 to #0" in result.output
    )
    assert _events(store) == [("added", "os-user")]
    assert runner.invoke(app, [command, "kb/keys.md#0", "--store", str(store)]).exit_code == 0
