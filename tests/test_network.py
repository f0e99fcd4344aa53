"""Nothing reaches the network: the pipeline runs with every socket connection refused.

The guard patches ``socket.socket.connect`` / ``connect_ex``, ``socket.create_connection``
and ``socket.getaddrinfo`` to record the attempt and raise, so a swallowed exception
still shows up in ``attempts``.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from ragtrust.config import load_settings
from ragtrust.data.kb import load_knowledge_base, load_rules
from ragtrust.documents import Document
from ragtrust.errors import BackendError
from ragtrust.models.nli import MANIFEST_FILE
from ragtrust.pipeline import TrustGate
from ragtrust.testing import HashingEmbedder, LexicalNLI, retrieved


class NetworkBlocked(OSError):
    """Raised by the guard instead of opening a connection."""


@pytest.fixture
def attempts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    seen: list[str] = []

    def refuse(kind: str) -> Any:
        def blocked(*args: Any, **kwargs: Any) -> Any:
            seen.append(f"{kind}{args[1:] if kind.startswith('socket.') else args}")
            raise NetworkBlocked(f"network access attempted in a test: {kind}")

        return blocked

    monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("socket.connect_ex"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    yield seen


@pytest.fixture(scope="module")
def kb() -> list[Document]:
    return load_knowledge_base()


def question(rule_id: str) -> str:
    return next(r.question for r in load_rules() if r.id == rule_id)


def run_everything(gate: TrustGate) -> None:
    verdict = gate.ask(question("kb-01"))
    assert verdict.answer and verdict.sentences and not verdict.errors
    docs, _ = gate.retrieve(question("kb-12"))
    screened = gate.screen(docs, question("kb-12"))
    assert screened.stage == "screen" and len(screened.documents) == 5
    checked = gate.verify(verdict.answer, docs)
    assert checked.stage == "verify" and not checked.errors


def test_the_guard_really_blocks(attempts: list[str]) -> None:
    with pytest.raises(NetworkBlocked):
        socket.create_connection(("127.0.0.1", 9), timeout=0.1)
    with socket.socket() as sock, pytest.raises(NetworkBlocked):
        sock.connect(("127.0.0.1", 9))
    assert len(attempts) == 2


def test_pipeline_with_fakes_makes_no_connection(attempts: list[str], kb: list[Document]) -> None:
    gate = TrustGate.from_documents(kb, load_settings(env={}), nli=LexicalNLI(), embedder=HashingEmbedder())
    run_everything(gate)
    assert attempts == []


@pytest.mark.model
def test_pipeline_with_the_packaged_embedder_makes_no_connection(attempts: list[str], kb: list[Document]) -> None:
    from ragtrust.models.embedder import OnnxEmbedder

    embedder = OnnxEmbedder(threads=1)
    corpus = kb[:12]  # kb-01 .. kb-12: enough for K = 5, cheap to embed on a shared CPU
    gate = TrustGate.from_documents(corpus, load_settings(env={}), nli=LexicalNLI(), embedder=embedder)
    run_everything(gate)
    verdict = gate.ask(question("kb-02"))
    assert "MiniLM" in verdict.models["embedder"]
    assert verdict.documents[0].doc_id == "kb-02"  # real semantic retrieval
    assert verdict.max_similarity is not None and verdict.max_similarity > 0.5
    assert attempts == []


@pytest.mark.model
@pytest.mark.skipif(not MANIFEST_FILE.exists(), reason="the shipped NLI model is not in the package yet")
def test_pipeline_with_the_shipped_nli_makes_no_connection(attempts: list[str], kb: list[Document]) -> None:
    from ragtrust.models.nli import default_nli

    settings = load_settings(env={})
    gate = TrustGate.from_documents(kb, settings, nli=default_nli(settings), embedder=HashingEmbedder())
    run_everything(gate)
    assert attempts == []


def test_an_llm_endpoint_is_refused_not_reached(attempts: list[str]) -> None:
    # The one component that talks HTTP fails with a clear BackendError, and the guard
    # saw it try: proof that the guard covers the HTTP stack the library uses.
    settings = load_settings(
        env={},
        overrides={"generator": {"type": "openai", "base_url": "http://127.0.0.1:9/v1", "max_retries": 0}},
    )
    docs = [d.document for d in retrieved(["Use parameterised queries against SQL injection (CWE-89)."])]
    gate = TrustGate.from_documents(docs, settings, nli=LexicalNLI(), embedder=HashingEmbedder())
    with pytest.raises(BackendError):
        gate.ask("How do I prevent SQL injection?")
    assert attempts, "the HTTP client should have tried to connect (and been refused)"
