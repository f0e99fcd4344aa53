"""OpenAI-compatible chat completions over httpx: Ollama, vLLM, llama.cpp server, OpenAI.

:class:`ChatClient` sends ``POST {base_url}/chat/completions`` and returns the reply text.
It retries with exponential backoff (``backoff_s * 2**attempt``) on timeouts, HTTP 429 and
5xx, and turns every other failure into a :class:`~ragtrust.errors.BackendError` whose
message says how to fix it (server not running, wrong key, wrong model, bad reply).
:class:`OpenAICompatibleGenerator` writes answers with the prompt of
:mod:`ragtrust.generation.prompts`.

Tests inject ``transport=httpx.MockTransport(handler)``; nothing reaches the network.

Example:
    >>> import httpx
    >>> def handler(request):
    ...     return httpx.Response(200, json={"choices": [{"message": {"content": "Hi [1]."}}]})
    >>> client = ChatClient("http://llm.test/v1", "m", transport=httpx.MockTransport(handler))
    >>> client.chat([{"role": "user", "content": "hello"}])
    'Hi [1].'
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import httpx

from ragtrust.config import GeneratorConfig
from ragtrust.documents import Passage
from ragtrust.errors import BackendError
from ragtrust.generation.base import GeneratedAnswer
from ragtrust.generation.prompts import build_answer_messages
from ragtrust.registry import register
from ragtrust.text import split_sentences

_BASE_URL_HINT = "set RAGTRUST_GENERATOR__BASE_URL (or [generator] base_url in ragtrust.toml)"


@dataclass(frozen=True)
class ChatReply:
    """One chat completion: the text, the model that wrote it, token usage."""

    text: str
    model: str
    usage: dict[str, int] = field(default_factory=dict)


@dataclass
class ChatClient:
    """A minimal OpenAI-compatible chat-completions client.

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:11434/v1`` (Ollama).
        model: model name sent with each request.
        api_key: bearer token, if the server needs one.
        timeout_s: per-request timeout.
        max_retries: retries after the first attempt on timeouts, 429 and 5xx.
        temperature / max_tokens: sampling parameters sent with each request.
        backoff_s: first retry delay; doubles on each retry.
        transport: an httpx transport (tests pass ``httpx.MockTransport``).
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 2
    temperature: float = 0.0
    max_tokens: int = 512
    backoff_s: float = 0.5
    transport: httpx.BaseTransport | None = None
    _client: httpx.Client | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def endpoint(self) -> str:
        """The chat-completions URL."""
        return self.base_url.rstrip("/") + "/chat/completions"

    def warm_up(self) -> None:
        """Create the HTTP connection pool (no request is sent)."""
        self._http()

    def close(self) -> None:
        """Close the connection pool."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
                self._client = httpx.Client(timeout=self.timeout_s, transport=self.transport, headers=headers)
            return self._client

    def chat(self, messages: Sequence[Mapping[str, str]]) -> str:
        """Return the reply text to ``messages`` (see :meth:`complete`)."""
        return self.complete(messages).text

    def complete(self, messages: Sequence[Mapping[str, str]]) -> ChatReply:
        """Send one chat completion request, with retries.

        Raises:
            BackendError: unreachable server, authentication failure, other HTTP errors
                after the retries, or a reply that is not chat-completions JSON.
        """
        payload = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        last: str = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                response = self._http().post(self.endpoint, json=payload)
            except httpx.TimeoutException as exc:
                last = f"timed out after {self.timeout_s:g} s"
                if attempt == self.max_retries:
                    raise BackendError(f"LLM at {self.endpoint} {last} ({self.max_retries + 1} attempts)") from exc
                continue
            except httpx.TransportError as exc:  # connection refused, DNS, TLS ...
                raise BackendError(
                    f"cannot reach {self.endpoint}: is the server running? {_BASE_URL_HINT} ({exc})"
                ) from exc
            if response.status_code == 429 or response.status_code >= 500:
                last = f"HTTP {response.status_code}: {_snippet(response)}"
                if attempt == self.max_retries:
                    raise BackendError(f"LLM at {self.endpoint} failed: {last} ({self.max_retries + 1} attempts)")
                continue
            return self._parse(response)
        raise BackendError(f"LLM at {self.endpoint} failed: {last}")  # pragma: no cover - loop always returns

    def _parse(self, response: httpx.Response) -> ChatReply:
        if response.status_code in (401, 403):
            raise BackendError(
                f"LLM at {self.endpoint} refused the request (HTTP {response.status_code}): check the API key "
                "(the environment variable named by [generator] api_key_env, default RAGTRUST_LLM_API_KEY)"
            )
        if response.status_code == 404:
            raise BackendError(
                f"LLM at {self.endpoint} answered 404: wrong base URL or unknown model {self.model!r}; "
                f"{_BASE_URL_HINT}, and check RAGTRUST_GENERATOR__MODEL ({_snippet(response)})"
            )
        if response.status_code >= 400:
            raise BackendError(
                f"LLM at {self.endpoint} rejected the request: HTTP {response.status_code}: {_snippet(response)}"
            )
        try:
            data = response.json()
            text = data["choices"][0]["message"]["content"]
        except (json.JSONDecodeError, ValueError) as exc:
            raise BackendError(f"LLM at {self.endpoint} returned invalid JSON: {_snippet(response)}") from exc
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(
                f"LLM at {self.endpoint} returned JSON without choices[0].message.content: {_snippet(response)}"
            ) from exc
        if not isinstance(text, str):
            raise BackendError(f"LLM at {self.endpoint} returned non-text content: {type(text).__name__}")
        usage = data.get("usage") if isinstance(data, dict) else None
        clean_usage = {k: int(v) for k, v in (usage or {}).items() if isinstance(v, int)}
        return ChatReply(text=text, model=str(data.get("model") or self.model), usage=clean_usage)


def _snippet(response: httpx.Response, limit: int = 200) -> str:
    text = response.text.strip().replace("\n", " ")
    return text[:limit] + ("..." if len(text) > limit else "") if text else "<empty body>"


_MARKER = re.compile(r"\[([0-9][0-9,;\s]*)\]")
_TRAILING = re.compile(r"([.!?])((?:[ \t]*\[[0-9][0-9,;\s]*\])+)")


def sentences_with_citations(text: str, passages: Sequence[Passage]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Split an LLM answer into (sentence without markers, cited sources) pairs.

    ``[n]`` maps to the n-th passage's ``url`` (or ``doc_id``); a number with no passage
    stays as the literal ``"[n]"`` so that the citation guard removes and counts it.
    """
    text = _TRAILING.sub(lambda m: m.group(2) + m.group(1), text)
    out: list[tuple[str, tuple[str, ...]]] = []
    for sentence in split_sentences(text):
        targets: list[str] = []
        for m in _MARKER.finditer(sentence.text):
            for part in re.split(r"[,;\s]+", m.group(1).strip()):
                if not part:
                    continue
                k = int(part)
                if 1 <= k <= len(passages):
                    p = passages[k - 1]
                    targets.append(p.url or p.doc_id or p.passage_id)
                else:
                    targets.append(f"[{k}]")
        body = re.sub(r"\s+([.,;:!?])", r"\1", " ".join(_MARKER.sub("", sentence.text).split()))
        if not body.strip(" .!?") and out:
            out[-1] = (out[-1][0], tuple(dict.fromkeys(out[-1][1] + tuple(targets))))
            continue
        out.append((body, tuple(dict.fromkeys(targets))))
    return tuple(out)


@register("generator", "openai")
@dataclass
class OpenAICompatibleGenerator:
    """Write a cited answer with an OpenAI-compatible chat model.

    Args:
        base_url / model / api_key / timeout_s / max_retries / temperature / max_tokens /
            backoff_s / transport: as :class:`ChatClient`.
        max_sentences: the answer length asked for in the prompt.

    Example:
        >>> import httpx
        >>> reply = {"choices": [{"message": {"content": "Hash passwords [1]."}}]}
        >>> gen = OpenAICompatibleGenerator("http://llm.test/v1", "m",
        ...     transport=httpx.MockTransport(lambda r: httpx.Response(200, json=reply)))
        >>> gen.generate("How?", [Passage("p1", "Hash passwords.", url="u1")]).sentences
        (('Hash passwords.', ('u1',)),)
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 2
    temperature: float = 0.0
    max_tokens: int = 512
    backoff_s: float = 0.5
    max_sentences: int = 4
    transport: httpx.BaseTransport | None = None
    name: str = "openai"
    _client: ChatClient | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_config(cls, cfg: GeneratorConfig, env: Mapping[str, str] | None = None) -> OpenAICompatibleGenerator:
        """Build from ``[generator]`` settings; the API key is read from ``env[cfg.api_key_env]``.

        Args:
            cfg: the generator settings.
            env: the environment to read the key from; ``None`` reads ``os.environ`` (edges
                such as the CLI and the server should pass their environment explicitly).
        """
        env = os.environ if env is None else env
        return cls(
            base_url=cfg.base_url,
            model=cfg.model,
            api_key=env.get(cfg.api_key_env) or None,
            timeout_s=cfg.timeout_s,
            max_retries=cfg.max_retries,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
        )

    @property
    def client(self) -> ChatClient:
        """The chat client (also usable by :class:`~ragtrust.evidence.extract.LLMExtractor`)."""
        if self._client is None:
            self._client = ChatClient(
                base_url=self.base_url,
                model=self.model,
                api_key=self.api_key,
                timeout_s=self.timeout_s,
                max_retries=self.max_retries,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                backoff_s=self.backoff_s,
                transport=self.transport,
            )
        return self._client

    def warm_up(self) -> None:
        """Open the connection pool (no request is sent)."""
        self.client.warm_up()

    def generate(self, query: str, passages: Sequence[Passage]) -> GeneratedAnswer:
        """Write an answer citing ``[n]`` = the n-th passage; no passages means no answer (no call).

        Raises:
            BackendError: see :meth:`ChatClient.complete`.
        """
        if not passages:
            return GeneratedAnswer(text="", model=self.model)
        reply = self.client.complete(build_answer_messages(query, passages, self.max_sentences))
        return GeneratedAnswer(
            text=reply.text.strip(),
            sentences=sentences_with_citations(reply.text, passages),
            model=reply.model,
            usage=dict(reply.usage),
        )


__all__ = ["ChatClient", "ChatReply", "OpenAICompatibleGenerator", "sentences_with_citations"]
