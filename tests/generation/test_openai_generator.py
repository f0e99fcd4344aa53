from __future__ import annotations

import json

import httpx
import pytest

from ragtrust.config import GeneratorConfig
from ragtrust.documents import Passage
from ragtrust.errors import BackendError
from ragtrust.evidence import LLMExtractor
from ragtrust.generation.openai import ChatClient, OpenAICompatibleGenerator, sentences_with_citations
from ragtrust.registry import build
from ragtrust.testing import retrieved

PASSAGES = [
    Passage("p1", "Use parameterised queries.", url="https://kb/sql", doc_id="sql"),
    Passage("p2", "Hash passwords with Argon2id.", url="https://kb/pw", doc_id="pw"),
]


def completion(text: str) -> dict[str, object]:
    return {
        "model": "served-model",
        "choices": [{"message": {"role": "assistant", "content": text}}],
        "usage": {"total_tokens": 7},
    }


def make(handler, **kw) -> OpenAICompatibleGenerator:  # type: ignore[no-untyped-def]
    return OpenAICompatibleGenerator(
        ChatClient("http://llm.test/v1", "test-model", transport=httpx.MockTransport(handler), backoff_s=0.0, **kw)
    )


def test_success_sends_prompt_and_maps_citations() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=completion("Use parameterised queries [1]. Hash passwords with Argon2id. [2]"))

    gen = make(handler, api_key="sk-test")
    answer = gen.generate("How to be safe?", PASSAGES)
    assert answer.sentences == (
        ("Use parameterised queries.", ("https://kb/sql",)),
        ("Hash passwords with Argon2id.", ("https://kb/pw",)),
    )
    assert answer.model == "served-model" and answer.usage == {"total_tokens": 7}
    (request,) = seen
    assert str(request.url) == "http://llm.test/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    body = json.loads(request.content)
    assert body["model"] == "test-model" and body["temperature"] == 0.0
    user = body["messages"][1]["content"]
    assert "[1] (source: https://kb/sql)" in user and "[2] (source: https://kb/pw)" in user
    assert "[n]" in body["messages"][0]["content"]


def test_500_then_success_is_retried() -> None:
    calls = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            return httpx.Response(500, text="overloaded")
        return httpx.Response(200, json=completion("Use parameterised queries [1]."))

    answer = make(handler).generate("q", PASSAGES)
    assert calls["n"] == 2 and answer.sentences[0][1] == ("https://kb/sql",)


def test_timeouts_are_retried_then_fail() -> None:
    calls = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(BackendError, match="timed out"):
        make(handler, max_retries=2).generate("q", PASSAGES)
    assert calls["n"] == 3


def test_persistent_5xx_fails_after_retries() -> None:
    calls = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        return httpx.Response(503, text="down")

    with pytest.raises(BackendError, match="HTTP 503"):
        make(handler, max_retries=1).generate("q", PASSAGES)
    assert calls["n"] == 2


def test_connection_error_names_the_fix() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(BackendError) as info:
        make(handler).generate("q", PASSAGES)
    message = str(info.value)
    assert "cannot reach http://llm.test/v1/chat/completions" in message
    assert "is the server running?" in message and "RAGTRUST_GENERATOR__BASE_URL" in message
    assert isinstance(info.value.__cause__, httpx.ConnectError)


@pytest.mark.parametrize(
    ("response", "match"),
    [
        (httpx.Response(200, text="<html>not json</html>"), "invalid JSON"),
        (httpx.Response(200, json={"choices": []}), "choices"),
        (httpx.Response(401, json={"error": "bad key"}), "API key"),
        (httpx.Response(404, text="no such model"), "404"),
        (httpx.Response(400, text="bad request"), "HTTP 400"),
    ],
)
def test_bad_replies_raise_backend_error(response: httpx.Response, match: str) -> None:
    with pytest.raises(BackendError, match=match):
        make(lambda request: response).generate("q", PASSAGES)


def test_no_passages_means_no_call() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("must not be called")

    assert make(handler).generate("q", []).text == ""


def test_out_of_range_numbers_are_kept_for_the_guard() -> None:
    pairs = sentences_with_citations("First claim [1][9]. Second claim. [2, 1]", PASSAGES)
    assert pairs == (
        ("First claim.", ("https://kb/sql", "[9]")),
        ("Second claim.", ("https://kb/pw", "https://kb/sql")),
    )


def test_from_config_reads_the_key_from_the_given_env_and_registry() -> None:
    cfg = GeneratorConfig(type="openai", base_url="http://x/v1", model="m", api_key_env="MY_KEY", timeout_s=5)
    gen = OpenAICompatibleGenerator.from_config(cfg, {"MY_KEY": "secret"})
    client = gen.client
    assert (client.base_url, client.model, client.api_key, client.timeout_s) == ("http://x/v1", "m", "secret", 5)
    assert OpenAICompatibleGenerator.from_config(cfg, {}).client.api_key is None
    built = build("generator", {"type": "openai", "params": {"base_url": "http://x/v1", "model": "m"}})
    assert isinstance(built, OpenAICompatibleGenerator)


def test_chat_client_drives_the_llm_extractor_with_repair() -> None:
    docs = retrieved(["Hash passwords with Argon2id and a salt."])
    replies = iter(
        [
            completion("Sure! {broken"),
            completion(
                json.dumps(
                    {
                        "collected_passages": [
                            {"passage_id": "1", "passage": "Hash passwords with Argon2id", "url": docs[0].document.url}
                        ]
                    }
                )
            ),
        ]
    )
    client = ChatClient(
        "http://llm.test/v1", "m", transport=httpx.MockTransport(lambda r: httpx.Response(200, json=next(replies)))
    )
    (p,) = LLMExtractor(client).extract("how to store passwords", docs)
    assert p.doc_id == "doc-0" and p.text == "Hash passwords with Argon2id"
