from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import httpx
import pytest

from ragtrust.config import GeneratorConfig
from ragtrust.documents import Passage
from ragtrust.errors import BackendError, ConfigError
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
        (
            httpx.Response(
                200,
                json={
                    "choices": [
                        {
                            "message": {"content": None, "tool_calls": [{"type": "function"}]},
                            "finish_reason": "tool_calls",
                        }
                    ]
                },
            ),
            r"returned no text in choices\[0\].message.content \(NoneType, finish_reason 'tool_calls'\)",
        ),
        (
            httpx.Response(
                200,
                text='data: {"choices": [{"delta": {"content": "Hi"}}]}\n\ndata: [DONE]\n\n',
                headers={"Content-Type": "text/event-stream"},
            ),
            r"streamed its reply \(text/event-stream\)",
        ),
        (httpx.Response(200, json={"choices": [{"message": {"content": "Hi [1]."}}], "usage": [1]}), None),
    ],
)
def test_bad_replies_raise_backend_error(response: httpx.Response, match: str | None) -> None:
    if match is None:  # a malformed field the answer does not need (usage) is ignored, not a crash
        assert make(lambda request: response).generate("q", PASSAGES).usage == {}
        return
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


class _TrickleStream(httpx.SyncByteStream):
    """A reply that arrives a byte at a time, each byte one (fake) second after the last."""

    def __init__(self, body: bytes, clock: list[float]) -> None:
        self.body = body
        self.clock = clock

    def __iter__(self) -> Iterator[bytes]:
        for i in range(len(self.body)):
            self.clock[0] += 1.0
            yield self.body[i : i + 1]


def test_timeout_bounds_the_whole_reply_not_each_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # a server that trickles its reply never trips httpx's per-read timeout (a reply of 300
    # bytes at 0.5 s each held a call with timeout_s = 5 for 200 s); timeout_s bounds it all
    import ragtrust.generation.openai as openai

    clock = [0.0]
    monkeypatch.setattr(openai, "monotonic", lambda: clock[0])
    body = json.dumps(completion("Use parameterised queries [1].")).encode()
    gen = make(lambda _: httpx.Response(200, stream=_TrickleStream(body, clock)), timeout_s=10, max_retries=0)
    with pytest.raises(BackendError, match=r"LLM at http://llm.test/v1/chat/completions timed out after 10 s"):
        gen.generate("q", PASSAGES)
    assert clock[0] < len(body)  # stopped reading once the budget was spent


def test_a_reply_far_longer_than_max_tokens_is_refused_unread() -> None:
    # a server that ignores max_tokens sent 12 MB; splitting and checking it took five minutes
    sent: list[int] = []

    def chunks() -> Iterator[bytes]:
        head = b'{"choices": [{"message": {"content": "'
        yield head
        for _ in range(1000):
            sent.append(1)
            yield b"Use parameterised queries [1]. " * 100

    gen = make(lambda _: httpx.Response(200, content=chunks()), max_tokens=64)
    with pytest.raises(BackendError, match=r"reply longer than 69632 bytes, more than max_tokens = 64"):
        gen.generate("q", PASSAGES)
    assert len(sent) < 1000  # stopped reading at the limit


def test_a_compressed_reply_is_read_and_decoded() -> None:
    body = gzip.compress(json.dumps(completion("Hash passwords with Argon2id [2].")).encode())
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    answer = make(lambda _: httpx.Response(200, content=body, headers=headers)).generate("q", PASSAGES)
    assert answer.sentences == (("Hash passwords with Argon2id.", ("https://kb/pw",)),)


@pytest.mark.parametrize("status", [400, 404, 500, 200])
def test_an_error_body_echoing_the_request_never_shows_the_api_key(status: int) -> None:
    # some servers and proxies echo the request's headers in their error pages
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, text=f"bad request; headers: Authorization: {request.headers['authorization']}")

    with pytest.raises(BackendError) as info:
        make(handler, api_key="sk-secret-123", max_retries=0).generate("q", PASSAGES)
    assert "sk-secret-123" not in str(info.value) and "Authorization: Bearer <api key>" in str(info.value)


def test_the_api_key_is_not_in_the_repr_of_the_client_or_the_generator() -> None:
    gen = OpenAICompatibleGenerator(ChatClient("http://llm.test/v1", "m", api_key="sk-secret-123"))
    assert "sk-secret-123" not in repr(gen) and "base_url='http://llm.test/v1'" in repr(gen)


@pytest.mark.parametrize("base_url", ["127.0.0.1:8088/v1", "localhost:11434", "ftp://llm.test/v1", "http://", ""])
def test_a_base_url_no_request_can_go_to_is_a_config_error_naming_the_setting(base_url: str) -> None:
    # "127.0.0.1:8088/v1" was taken, then every question failed with "cannot reach ...: is the
    # server running?" (and counted against the circuit breaker) though the server was up
    with pytest.raises(ConfigError, match=r"base_url must be an http\(s\) URL .*RAGTRUST_GENERATOR__BASE_URL"):
        ChatClient(base_url, "m")
