"""Error bodies and one-line CLI errors never carry an absolute machine path (issue 19 item 8).

A store is named by its folder's name, its files relative to it; an HTTP error body has every
absolute path cut to its last part (a model file's name), whatever raised it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import ragtrust.models.embedder as embedder_module
import ragtrust.models.nli as nli_module
from ragtrust.cli.main import app
from ragtrust.config import load_settings
from ragtrust.documents import Document
from ragtrust.errors import ModelError, redact_paths
from ragtrust.ingest.store import Store
from ragtrust.pipeline import TrustGate
from ragtrust.server.app import create_app
from ragtrust.testing import HashingEmbedder, LexicalNLI

QUESTION = "How should passwords be stored?"


@pytest.fixture(autouse=True)
def fake_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder_module, "default_embedder", lambda settings=None: HashingEmbedder())
    monkeypatch.setattr(nli_module, "default_nli", lambda settings=None, **kw: LexicalNLI())
    monkeypatch.delenv("RAGTRUST_STORE", raising=False)


def _damaged_store(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    store = Store.open(root, HashingEmbedder(), create=True)
    store.add([Document(id="bcrypt", text="Store passwords with bcrypt, scrypt or Argon2id.")], tier="vetted")
    store.close()
    chunks = next((root / "segments").glob("*/chunks.jsonl"))
    chunks.write_bytes(chunks.read_bytes()[:40])
    return root


def _serve(gate: Any, *requests: tuple[str, str]) -> list[Any]:
    server = create_app(gate=gate)
    with TestClient(server) as client:
        assert client.portal is not None
        client.portal.call(server.state.ragtrust.wait_ready, 30)
        return [
            client.post(path, json={"question": QUESTION}) if method == "POST" else client.get(path)
            for method, path in requests
        ]


def test_a_damaged_store_is_named_without_its_absolute_path_over_http(tmp_path: Path) -> None:
    root = _damaged_store(tmp_path)
    embedder = HashingEmbedder()
    gate = TrustGate.from_settings(
        load_settings(env={}), store=Store.open(root, embedder), nli=LexicalNLI(), embedder=embedder
    )
    for response in _serve(gate, ("GET", "/readyz"), ("POST", "/v1/ask")):
        assert response.status_code == 503
        message = response.json()["error"]["message"]
        assert message.startswith("store damaged: segments/") and "(kb)" in message
        assert str(tmp_path) not in response.text and "/tmp" not in response.text


def test_a_missing_model_file_is_named_by_its_file_name_over_http(tmp_path: Path) -> None:
    class Gate:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def ask(self, *args: Any, **kwargs: Any) -> Any:
            raise ModelError(f"cannot load the NLI model: {tmp_path}/models/nli/model.onnx does not exist")

    root = tmp_path / "kb"
    embedder = HashingEmbedder()
    Store.open(root, embedder, create=True).add([Document(id="d", text="Use bcrypt.")])
    real = TrustGate.from_settings(
        load_settings(env={}), store=Store.open(root, embedder), nli=LexicalNLI(), embedder=embedder
    )
    [response] = _serve(Gate(), ("POST", "/v1/ask"))
    assert response.status_code == 503
    assert response.json()["error"]["message"] == "cannot load the NLI model: model.onnx does not exist"


def test_cli_store_errors_name_the_store_not_its_absolute_path(tmp_path: Path) -> None:
    runner = CliRunner()
    damaged = runner.invoke(app, ["ask", QUESTION, "--store", str(_damaged_store(tmp_path))])
    missing = runner.invoke(app, ["ask", QUESTION, "--store", str(tmp_path / "absent")])
    for result in (damaged, missing):
        [line] = [x for x in result.stderr.splitlines() if x.strip()]
        assert result.exit_code == 2 and str(tmp_path) not in line, line
    assert "store damaged: segments/" in damaged.stderr and "(kb)" in damaged.stderr
    assert "store absent does not exist" in missing.stderr


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("x: /tmp/a/ledger.sqlite: missing", "x: ledger.sqlite: missing"),
        ("read file:///home/me/kb/a.md", "read a.md"),
        ("in 'C:\\data\\kb\\b.md'", "in 'b.md'"),
        ("store /srv/kb/ is read-only", "store kb is read-only"),
        ("see http://127.0.0.1:8080/v1/ask or /v1/documents/x", "see http://127.0.0.1:8080/v1/ask or /v1/documents/x"),
        ("a ratio 1/2/3 and and/or", "a ratio 1/2/3 and and/or"),
    ],
)
def test_redact_paths(message: str, expected: str) -> None:
    assert redact_paths(message) == expected
