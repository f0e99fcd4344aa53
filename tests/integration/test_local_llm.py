"""A real local LLM end to end: llama-cpp-python's server over the packaged SmolLM2 GGUF.

These tests start the server on a free loopback port, run ``ragtrust ask`` with the LLM
writer and the LLM extractor on a small store, and assert what must hold whatever the model
writes: every cited URL was retrieved; every span is verbatim
(``document.text[start:end] == span.text``); a passage the model invented is never cited;
a malformed reply is repaired or reported, never a crash and never trusted; a model that
answers nothing useful gets a clear untrusted verdict; a context longer than the model's
window is trimmed with a warning. Without the runtime (``make llm-runtime``) the module is
skipped and pytest's summary says why.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ragtrust.generation.local import LocalLLM, default_model_path, runtime_missing

_MISSING = runtime_missing()
if _MISSING is not None:
    pytest.skip(f"local LLM tests skipped: {_MISSING}", allow_module_level=True)

pytestmark = [pytest.mark.llm, pytest.mark.model]

from ragtrust.data.kb import load_knowledge_base  # noqa: E402
from ragtrust.documents import Document  # noqa: E402
from ragtrust.ingest.store import Store  # noqa: E402
from ragtrust.models.embedder import default_embedder  # noqa: E402

#: the server's window in these tests; small, so that the trimming path is exercised
N_CTX = 2048
QUESTIONS = (
    "How should passwords be stored?",
    "How do I prevent SQL injection?",
    "What should session cookies be configured with?",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalLLM]:
    log = tmp_path_factory.mktemp("llm") / "server.log"
    llm = LocalLLM(default_model_path(), port=_free_port(), context_tokens=N_CTX, threads=2, log_path=log)
    with llm:
        yield llm


@pytest.fixture(scope="module")
def kb_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kb-store")
    store = Store.open(root, default_embedder(), create=True)
    store.add(load_knowledge_base())
    store.close()
    return root


@pytest.fixture(scope="module")
def long_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five documents of ~3,500 characters each: together far beyond a 2,048-token window."""
    kb = load_knowledge_base()
    docs = []
    for i in range(5):
        body = "\n\n".join(d.text for d in kb[i * 8 : i * 8 + 8])
        docs.append(
            Document(id=f"long-{i}", text=f"# Secure coding notes {i}\n\n{body}", url=f"https://kb.test/long-{i}")
        )
    root = tmp_path_factory.mktemp("long-store")
    store = Store.open(root, default_embedder(), create=True)
    store.add(docs)
    store.close()
    return root


def ask(question: str, store: Path, server: LocalLLM, **overrides: Any) -> tuple[int, dict[str, Any], str]:
    """Run ``ragtrust ask --json`` in a subprocess against the local server."""
    env = dict(os.environ)
    settings: dict[str, Any] = {
        "generator": {**server.settings()["generator"], "max_tokens": 256, "timeout_s": 240},
        "evidence": {"extractor": "llm"},
    }
    for section, values in overrides.items():
        settings.setdefault(section, {}).update(values)
    for section, values in settings.items():
        for key, value in values.items():
            env[f"RAGTRUST_{section.upper()}__{key.upper()}"] = str(value)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ragtrust.cli.main import main; main()",
            "ask",
            question,
            "--store",
            str(store),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode in (0, 3), f"ask crashed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}"
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def assert_invariants(verdict: Mapping[str, Any], store_dir: Path) -> None:
    """What must hold whatever the model writes."""
    store = Store.open(store_dir, default_embedder())
    retrieved = {d["doc_id"] for d in verdict["documents"]}
    urls = {store.get(d).cite for d in retrieved} | retrieved
    for sentence in verdict["sentences"]:
        for citation in sentence["citations"]:
            assert citation in urls, f"cited {citation!r}, which was not retrieved"
        for span in sentence["spans"]:
            assert span["doc_id"] in retrieved
            assert store.get(span["doc_id"]).text[span["start"] : span["end"]] == span["text"]
    for passage in verdict["passages"]:
        assert passage["status"] in ("kept", "truncated", "reattributed"), passage
        assert passage["spans"], f"a passage without a verified span reached the answer: {passage}"
        for span in passage["spans"]:
            assert span["doc_id"] in retrieved
            assert store.get(span["doc_id"]).text[span["start"] : span["end"]] == span["text"]
    if verdict["trusted"]:
        # trust.unsupported = "refuse" (the default): every sentence of a trusted answer is supported
        assert verdict["sentences"] and all(s["supported"] for s in verdict["sentences"]), "trusted with unsupported"
    else:
        assert verdict["decision_reasons"], "untrusted without a reason"
    store.close()


@pytest.mark.parametrize("question", QUESTIONS)
def test_ask_with_the_local_llm_keeps_the_invariants(question: str, server: LocalLLM, kb_store: Path) -> None:
    code, verdict, _ = ask(question, kb_store, server)
    assert_invariants(verdict, kb_store)
    assert (code == 0) == verdict["trusted"]
    assert verdict["models"]["generator_model"] == server.alias
    assert verdict["models"]["generator_prompt"].startswith("answer-")
    assert verdict["models"]["extractor_prompt"].startswith("extraction-")


def test_a_cut_off_json_reply_is_repaired_or_reported_never_trusted(server: LocalLLM, kb_store: Path) -> None:
    # 12 tokens cannot hold the extraction JSON: both the reply and the repair are cut off
    code, verdict, _ = ask(
        QUESTIONS[0], kb_store, server, generator={"max_tokens": 12}, evidence={"json_schema": False}
    )
    assert code == 3 and not verdict["trusted"]
    assert any("extractor's reply was unusable" in r for r in verdict["decision_reasons"])
    assert verdict["sentences"] == []
    assert_invariants(verdict, kb_store)


def test_a_model_that_answers_nothing_useful_gets_a_clear_untrusted_verdict(server: LocalLLM, kb_store: Path) -> None:
    # the extractive extractor finds verbatim evidence; the writer may say one token only
    code, verdict, _ = ask(
        QUESTIONS[1], kb_store, server, generator={"max_tokens": 1}, evidence={"extractor": "extractive"}
    )
    assert code == 3 and not verdict["trusted"]
    assert verdict["decision_reasons"]
    assert_invariants(verdict, kb_store)


def test_a_context_longer_than_the_window_is_trimmed_with_a_warning(server: LocalLLM, long_store: Path) -> None:
    code, verdict, _ = ask(QUESTIONS[0], long_store, server)
    assert any("trimmed to fit the model's context window of 2048 tokens" in w for w in verdict["warnings"])
    assert_invariants(verdict, long_store)


def test_a_window_the_server_rejects_is_retried_shorter(server: LocalLLM, long_store: Path) -> None:
    # ragtrust does not know the window (0): the server rejects the long prompt, ragtrust retries shorter
    code, verdict, _ = ask(QUESTIONS[0], long_store, server, generator={"context_tokens": 0})
    assert any("sent again shorter" in w for w in verdict["warnings"]), verdict["warnings"]
    assert_invariants(verdict, long_store)
