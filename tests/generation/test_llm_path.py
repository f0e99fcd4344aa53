"""The LLM path without a server: prompt fitting, context errors, response_format, and the
pipeline's handling of an LLM extractor / writer that misbehaves (mocked HTTP; the real
local model runs in tests/integration/test_local_llm.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from ragtrust.config import load_settings
from ragtrust.data.kb import load_knowledge_base
from ragtrust.documents import Passage
from ragtrust.errors import BackendError, ContextLengthError
from ragtrust.evidence.extract import ExtractionError, LLMExtractor
from ragtrust.generation.openai import ChatClient, OpenAICompatibleGenerator
from ragtrust.pipeline import TrustGate
from ragtrust.prompts import (
    EXTRACTION_SCHEMA,
    PROMPT_VERSIONS,
    ContextBudget,
    build_answer_messages,
    build_extraction_messages,
)
from ragtrust.testing import HashingEmbedder, LexicalNLI, retrieved

LLAMA_CPP_TOO_LONG = {
    "error": {
        "message": "Requested tokens (5120) exceed context window of 2048",
        "type": "invalid_request_error",
    }
}


def completion(text: str) -> dict[str, Any]:
    return {"model": "served", "choices": [{"message": {"role": "assistant", "content": text}}]}


def prompt_chars(messages: list[dict[str, str]]) -> int:
    return sum(len(m["content"]) for m in messages)


# -- prompt fitting ----------------------------------------------------------------------------


def test_answer_prompt_is_fitted_into_the_window_lowest_ranked_cut_first() -> None:
    passages = [Passage(f"p{i}", f"passage {i} " + "word " * 400, url=f"u{i}") for i in range(5)]
    budget = ContextBudget(context_tokens=1500, reply_tokens=256)
    messages, notes = build_answer_messages("q?", passages, 4, budget)
    assert budget.chars is not None and prompt_chars(messages) <= budget.chars
    user = messages[1]["content"]
    assert "[1] (source: u0)" in user and "[5] (source: u4)" not in user
    (note,) = notes
    assert "context window of 1500 tokens" in note and "of 5 passage(s)" in note
    # no budget: nothing cut, no warning
    full, none = build_answer_messages("q?", passages, 4)
    assert none == () and "[5] (source: u4)" in full[1]["content"]


def test_extraction_prompt_is_fitted_and_keeps_the_best_ranked_documents() -> None:
    docs = retrieved(["alpha " * 1500, "beta " * 1500, "gamma " * 1500])
    budget = ContextBudget(context_tokens=2048, reply_tokens=512)
    messages, notes = build_extraction_messages("q?", docs, 6000, budget)
    assert budget.chars is not None and prompt_chars(messages) <= budget.chars
    assert "alpha" in messages[1]["content"] and "gamma" not in messages[1]["content"]
    assert notes and "extraction prompt was trimmed" in notes[0]


# -- the server says the prompt is too long ----------------------------------------------------


def test_context_error_is_classified_not_retried_as_a_server_failure() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(400, json=LLAMA_CPP_TOO_LONG)

    client = ChatClient("http://llm.test/v1", "m", transport=httpx.MockTransport(handler), backoff_s=0.0)
    with pytest.raises(ContextLengthError, match="context window"):
        client.chat([{"role": "user", "content": "x"}])
    assert len(calls) == 1


def test_generator_retries_a_rejected_prompt_shorter_with_a_warning() -> None:
    sizes: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sizes.append(prompt_chars(body["messages"]))
        if len(sizes) == 1:
            return httpx.Response(400, json=LLAMA_CPP_TOO_LONG)
        return httpx.Response(200, json=completion("Hash passwords [1]."))

    passages = [Passage(f"p{i}", "Hash passwords with Argon2id. " * 60, url=f"u{i}") for i in range(4)]
    client = ChatClient("http://llm.test/v1", "m", transport=httpx.MockTransport(handler), backoff_s=0.0)
    answer = OpenAICompatibleGenerator(client).generate("How?", passages)
    assert len(sizes) == 2 and sizes[1] < sizes[0] * 0.75
    assert answer.sentences == (("Hash passwords.", ("u0",)),)
    assert any("sent again shorter" in w for w in answer.warnings)


def test_extractor_retries_a_rejected_prompt_shorter_and_fails_clearly_the_second_time() -> None:
    docs = retrieved(["Hash passwords with Argon2id. " * 100, "Rotate keys. " * 100])
    good = json.dumps({"collected_passages": [{"passage_id": "1", "passage": "Hash passwords", "url": "x"}]})
    replies = [httpx.Response(400, json=LLAMA_CPP_TOO_LONG), httpx.Response(200, json=completion(good))]
    client = ChatClient("http://llm.test/v1", "m", transport=httpx.MockTransport(lambda r: replies.pop(0)))
    passages, notes = LLMExtractor(client).extract_with_warnings("q", docs)
    assert [p.text for p in passages] == ["Hash passwords"] and "sent again shorter" in notes[0]
    always = ChatClient(
        "http://llm.test/v1", "m", transport=httpx.MockTransport(lambda r: httpx.Response(400, json=LLAMA_CPP_TOO_LONG))
    )
    with pytest.raises(ContextLengthError):
        LLMExtractor(always).extract("q", docs)


# -- response_format -------------------------------------------------------------------------------


def test_response_format_falls_back_form_by_form_and_remembers_what_the_server_took() -> None:
    bodies: list[dict[str, Any]] = []
    reply = json.dumps({"collected_passages": []})

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if body.get("response_format", {}).get("type") in accepts:
            return httpx.Response(200, json=completion(reply))
        if "response_format" in body:  # llama-cpp-python's server answers 500 here
            return httpx.Response(500, json={"error": {"message": "response_format.type: Input should be 'text'"}})
        return httpx.Response(200, json=completion(reply))

    accepts: set[str] = set()
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": EXTRACTION_SCHEMA}}
    client = ChatClient("http://llm.test/v1", "m", transport=httpx.MockTransport(handler), backoff_s=0.0)
    extractor = LLMExtractor(client, response_format=schema)
    assert extractor.extract("q", retrieved(["x y z"])) == []
    assert extractor.extract("q", retrieved(["x y z"])) == []
    sent = [b.get("response_format", {}).get("type") for b in bodies]
    assert sent == ["json_schema", "json_object", None, None]
    assert bodies[0]["response_format"]["json_schema"]["schema"] == EXTRACTION_SCHEMA
    assert bodies[1]["response_format"]["schema"] == EXTRACTION_SCHEMA
    # a llama.cpp-style server: json_schema rejected, json_object with the schema taken
    bodies.clear()
    accepts.add("json_object")
    client = ChatClient("http://llm.test/v1", "m", transport=httpx.MockTransport(handler), backoff_s=0.0)
    extractor = LLMExtractor(client, response_format=schema)
    extractor.extract("q", retrieved(["x y z"]))
    extractor.extract("q", retrieved(["x y z"]))
    assert [b.get("response_format", {}).get("type") for b in bodies] == ["json_schema", "json_object", "json_object"]


# -- the pipeline with an LLM that misbehaves --------------------------------------------------------


def llm_gate(handler: Any, **evidence: Any) -> TrustGate:
    cfg = load_settings(
        env={},
        overrides={
            "screening": {"signals": ["linguistic", "structural"]},
            "relevance": {"context_threshold": 0.0, "answer_threshold": 0.0},
            "generator": {"type": "openai", "base_url": "http://llm.test/v1", "model": "m", "max_retries": 0},
            "evidence": {"extractor": "llm", **evidence},
        },
    )
    client = ChatClient("http://llm.test/v1", "m", transport=httpx.MockTransport(handler), backoff_s=0.0)
    gate = TrustGate.from_documents(
        load_knowledge_base(),
        cfg,
        nli=LexicalNLI(),
        embedder=HashingEmbedder(),
        generator=OpenAICompatibleGenerator(client),
    )
    gate._build_components()
    assert isinstance(gate.extractor, LLMExtractor)
    gate.extractor.client = client
    return gate


QUESTION = "How should passwords be stored?"


def test_malformed_extraction_json_is_reported_and_never_trusted() -> None:
    calls: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(json.loads(request.content))
        return httpx.Response(200, json=completion('{"collected_passages": [{"passage_id": "1", "pass'))

    verdict = gate_answer(llm_gate(handler))
    assert not verdict.trusted and verdict.sentences == ()
    assert len(calls) == 2  # the reply and one repair; the writer is never asked
    assert any("extractor's reply was unusable" in r for r in verdict.decision_reasons)
    assert any("No evidence could be extracted" in w for w in verdict.warnings)


def gate_answer(gate: TrustGate) -> Any:
    return gate.ask(QUESTION)


def test_invented_passages_are_dropped_and_never_reach_the_writer() -> None:
    invented = {"passage_id": "1", "passage": "Passwords may be stored in plain text on modern systems.", "url": "x"}

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if "collected_passages" in body["messages"][0]["content"]:
            return httpx.Response(200, json=completion(json.dumps({"collected_passages": [invented]})))
        return httpx.Response(200, json=completion("Sure, here is an answer without any citation."))

    verdict = gate_answer(llm_gate(handler))
    assert not verdict.trusted
    assert verdict.passages == ()  # the invented passage was dropped, never cited
    assert "no passage of the retrieved documents was verified as evidence for the answer" in verdict.decision_reasons
    assert verdict.sentences == ()  # nothing verified, nothing written


def test_a_verbatim_llm_passage_is_kept_with_its_span_and_the_prompt_versions_are_recorded() -> None:
    kb = load_knowledge_base()
    target = next(d for d in kb if "password" in d.text.lower())
    sentence = target.text.split(". ")[0]

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if "collected_passages" in body["messages"][0]["content"]:
            item = {"passage_id": "1", "passage": sentence, "url": target.cite}
            return httpx.Response(200, json=completion(json.dumps({"collected_passages": [item]})))
        return httpx.Response(200, json=completion(f"{sentence} [1]."))

    verdict = gate_answer(llm_gate(handler))
    (passage,) = verdict.passages
    assert passage.status == "kept"
    for span in passage.spans:
        assert target.text[span.start : span.end] == span.text
    assert verdict.models["generator_prompt"] == PROMPT_VERSIONS["answer"]
    assert verdict.models["extractor_prompt"].startswith(PROMPT_VERSIONS["extraction"])
    assert verdict.models["generator_model"] == "m"


def test_an_unreachable_llm_is_a_clear_error_not_a_verdict() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    with pytest.raises(BackendError, match="is the server running"):
        gate_answer(llm_gate(handler))


def test_extraction_error_is_a_backend_error() -> None:
    assert issubclass(ExtractionError, BackendError)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "the generator wrote no answer from the evidence"),
        ("Bananas are yellow and grow in warm countries.", "no sentence of the answer is supported by the documents"),
    ],
)
def test_a_writer_that_answers_nothing_useful_gives_a_clear_untrusted_verdict(reply: str, reason: str) -> None:
    target = next(d for d in load_knowledge_base() if "password" in d.text.lower())
    sentence = target.text.split(". ")[0]

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if "collected_passages" in body["messages"][0]["content"]:
            item = {"passage_id": "1", "passage": sentence, "url": target.cite}
            return httpx.Response(200, json=completion(json.dumps({"collected_passages": [item]})))
        return httpx.Response(200, json=completion(reply))

    verdict = gate_answer(llm_gate(handler))
    assert not verdict.trusted and verdict.trust_level in ("LOW", "UNTRUSTED")
    assert reason in verdict.decision_reasons


@pytest.mark.parametrize("finish_reason", ["stop", "length"])
def test_an_answer_cut_off_at_max_tokens_is_never_trusted(finish_reason: str) -> None:
    # "... rather than encrypted" cut from "... rather than encrypted or stored in plaintext" is
    # still a verbatim span of the document, but no longer what the document says
    target = next(d for d in load_knowledge_base() if "password" in d.text.lower())
    sentence = target.text.split(". ")[0]

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if "collected_passages" in body["messages"][0]["content"]:
            item = {"passage_id": "1", "passage": sentence, "url": target.cite}
            return httpx.Response(200, json=completion(json.dumps({"collected_passages": [item]})))
        reply = completion(f"{sentence} [1].")
        reply["choices"][0]["finish_reason"] = finish_reason
        return httpx.Response(200, json=reply)

    verdict = gate_answer(llm_gate(handler))
    reason = "the answer was cut off at the writer's token limit: its last sentence may be unfinished"
    assert verdict.trusted is (finish_reason == "stop")
    assert any(reason in r for r in verdict.decision_reasons) is (finish_reason == "length")
