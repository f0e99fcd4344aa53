"""OpenAI-compatible chat completions over httpx: Ollama, vLLM, llama.cpp server, OpenAI.

:class:`ChatClient` sends ``POST {base_url}/chat/completions`` and returns the reply text.
It retries (tenacity: exponential backoff with jitter, the server's ``Retry-After``
honoured, never past the request's deadline) on timeouts, HTTP 429 and 5xx, goes through
the backend's :class:`~ragtrust.generation.backend.BackendGuard` (a concurrency limit and a
circuit breaker, so a hung backend fails fast instead of holding workers), and turns every
other failure into a :class:`~ragtrust.errors.BackendError` whose
message says how to fix it (server not running, wrong key, wrong model, bad reply).
:class:`OpenAICompatibleGenerator` holds a :class:`ChatClient` and writes answers with the
prompt of :mod:`ragtrust.prompts`, fitted into the model's context window: when the
passages do not fit ``context_tokens`` the lowest-ranked are cut with a warning, and when
the server still answers that the prompt exceeds its window (:class:`ContextLengthError`)
the prompt is rebuilt at half the budget, once, with a warning.

Constrained JSON: a ``response_format`` of OpenAI's ``json_schema`` type is sent as is; a
server that rejects it is asked again with llama.cpp's form ``{"type": "json_object",
"schema": ...}``, and one that rejects that too, without any; the client remembers which
form its server took.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from time import monotonic
from typing import Any

import httpx
import tenacity

from ragtrust import deadline
from ragtrust.config import GeneratorConfig
from ragtrust.documents import Passage
from ragtrust.errors import BackendError, ConfigError, ContextLengthError, DeadlineExceeded
from ragtrust.generation.backend import (
    BackendGuard,
    PastDeadline,
    RetryAfterWait,
    TransientError,
    UnreachableError,
    retry_after_s,
)
from ragtrust.generation.base import GeneratedAnswer
from ragtrust.http import bearer_client
from ragtrust.prompts import PROMPT_VERSIONS, ContextBudget, build_answer_messages
from ragtrust.registry import register
from ragtrust.text import one_line, split_sentences

_BASE_URL_HINT = "set RAGTRUST_GENERATOR__BASE_URL (or [generator] base_url in ragtrust.toml)"
#: how servers say a prompt is longer than the model's window (llama.cpp, OpenAI, vLLM, Ollama)
_CONTEXT_ERROR = re.compile(
    r"context[ _](?:window|length)|maximum context|exceeds? (?:the )?(?:available )?context|n_ctx|too many tokens",
    re.IGNORECASE,
)


#: headers about how a body travelled (compression, length, chunking), not what it is
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


@dataclass(frozen=True)
class ChatReply:
    """One chat completion: the text, the model that wrote it, token usage, why it stopped.

    ``finish_reason`` is the server's (``"stop"``, ``"length"`` at ``max_tokens``, ...; ``""``
    when it sent none).
    """

    text: str
    model: str
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str = ""


@dataclass
class ChatClient:
    """A minimal OpenAI-compatible chat-completions client.

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:11434/v1`` (Ollama).
        model: model name sent with each request.
        api_key: bearer token, if the server needs one.
        timeout_s: the longest one attempt may take, from sending the request to the last
            byte of the reply (a reply that keeps trickling in is cut off too).
        max_retries: retries after the first attempt on timeouts, 429 and 5xx (the
            server's ``Retry-After`` honoured, exponential backoff with jitter, never past
            the request's deadline).
        temperature / max_tokens: sampling parameters sent with each request.
        backoff_s: first retry delay; doubles on each retry.
        transport: an httpx transport (tests pass ``httpx.MockTransport``).
        max_concurrency / breaker_failures / breaker_cooldown_s: the backend's
            :class:`~ragtrust.generation.backend.BackendGuard` (requests in flight,
            consecutive failures that open the breaker, seconds it stays open).
        seed: the sampling seed sent with each request (``None``: not sent, the server's
            own); llama.cpp's server and vLLM honour it, OpenAI best-effort.
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)  # never in a repr, a log line or a traceback
    timeout_s: float = 60.0
    max_retries: int = 2
    temperature: float = 0.0
    max_tokens: int = 512
    backoff_s: float = 0.5
    transport: httpx.BaseTransport | None = None
    max_concurrency: int = 2
    breaker_failures: int = 5
    breaker_cooldown_s: float = 30.0
    seed: int | None = None
    guard: BackendGuard = field(init=False, repr=False)
    _client: httpx.Client | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    #: the response_format forms the server rejected ("json_schema", "json_object")
    _rejected_formats: set[str] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        """Refuse a base URL no request could be sent to; create the backend's guard.

        Raises:
            ConfigError: ``base_url`` is not an http(s) URL with a host (a typo surfaces here,
                not as "cannot reach ...: is the server running?" at the first question).
        """
        try:
            parsed = httpx.URL(self.base_url) if isinstance(self.base_url, str) else None
        except httpx.InvalidURL:
            parsed = None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
            raise ConfigError(
                f"the LLM's base_url must be an http(s) URL such as http://127.0.0.1:8088/v1, "
                f"got {self.base_url!r}: {_BASE_URL_HINT}"
            )
        self.guard = BackendGuard(
            self.base_url,
            max_concurrency=self.max_concurrency,
            failure_threshold=self.breaker_failures,
            cooldown_s=self.breaker_cooldown_s,
        )

    @property
    def endpoint(self) -> str:
        """The chat-completions URL."""
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def max_reply_bytes(self) -> int:
        """The most bytes of one reply that are read; a longer one is a :class:`BackendError`.

        ``max_tokens`` tokens are a few bytes each; 64 per token and 64 KiB more leave room for
        JSON escapes and the reply's other fields. A server that ignores ``max_tokens`` must not
        hand ragtrust megabytes to split, align and verify (12 MB took five minutes).
        """
        return 65_536 + 64 * self.max_tokens

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
                self._client = bearer_client(self.api_key, timeout_s=self.timeout_s, transport=self.transport)
            return self._client

    @classmethod
    def from_config(cls, cfg: GeneratorConfig, env: Mapping[str, str] | None = None) -> ChatClient:
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
            max_concurrency=cfg.max_concurrency,
            breaker_failures=cfg.breaker_failures,
            breaker_cooldown_s=cfg.breaker_cooldown_s,
        )

    def chat(
        self, messages: Sequence[Mapping[str, str]], *, response_format: Mapping[str, object] | None = None
    ) -> str:
        """Return the reply text to ``messages`` (see :meth:`complete`)."""
        return self.complete(messages, response_format=response_format).text

    def complete(
        self, messages: Sequence[Mapping[str, str]], *, response_format: Mapping[str, object] | None = None
    ) -> ChatReply:
        """Send one chat completion request, with retries, through the backend's guard.

        Args:
            messages: the chat, in OpenAI's role/content form.
            response_format: OpenAI's ``response_format`` (e.g. a JSON schema); when the
                server rejects it, the other form is tried, then none (see the module doc).

        Raises:
            ContextLengthError: the server says the prompt exceeds the model's window.
            BackendError: unreachable server, authentication failure, other HTTP errors
                after the retries, a reply that is not chat-completions JSON, a busy
                backend (no slot within the deadline) or an open circuit breaker.
            DeadlineExceeded: the request's deadline (:mod:`ragtrust.deadline`) ran out, before or
                during the call (a wait cut short by the deadline is not a backend error).
        """
        payload: dict[str, object] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            payload["seed"] = self.seed
        deadline.check("the LLM call")
        with self.guard.call(wait_s=deadline.remaining(self.timeout_s)):
            try:
                reply = self._send(payload, response_format)
            except (TransientError, UnreachableError) as exc:
                self.guard.record_failure()
                raise BackendError(str(exc)) from exc.__cause__
            self.guard.record_success()
            return reply

    def _send(self, payload: dict[str, object], response_format: Mapping[str, object] | None) -> ChatReply:
        """Post ``payload`` with retries, stepping down the ``response_format`` forms the server rejects."""
        while True:
            fmt = _response_format(response_format, self._rejected_formats)
            body = {**payload, "response_format": fmt} if fmt is not None else payload
            response = self._retrying(body)
            if fmt is not None and response.status_code >= 400 and "response_format" in response.text:
                # the server does not take this form of constrained reply: try the next one
                self._rejected_formats.add(str(fmt.get("type")))
                continue
            if response.status_code >= 400 and _CONTEXT_ERROR.search(response.text):
                raise ContextLengthError(
                    f"LLM at {self.endpoint}: the prompt exceeds the model's context window ({self._snippet(response)})"
                )
            return self._parse(response)

    def _retrying(self, body: Mapping[str, object]) -> httpx.Response:
        """One request with tenacity's retries on timeouts, 429 and 5xx, within the deadline."""
        attempts = self.max_retries + 1
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(TransientError),
            stop=tenacity.stop_after_attempt(attempts) | PastDeadline(),
            wait=RetryAfterWait(tenacity.wait_exponential_jitter(self.backoff_s, 30.0, 2, self.backoff_s)),
            reraise=True,
        )
        try:
            return retrying(self._attempt, body)
        except TransientError as exc:
            tried = retrying.statistics.get("attempt_number", attempts)
            raise TransientError(f"{exc} ({tried} attempt{'s' if tried != 1 else ''})") from exc.__cause__

    def _attempt(self, body: Mapping[str, object]) -> httpx.Response:
        """One POST; a timeout, 429 or 5xx raises :class:`TransientError` (retried)."""
        deadline.check("the LLM call")
        timeout_s = deadline.remaining(self.timeout_s)
        try:
            response = self._post(body, timeout_s)
        except httpx.TimeoutException as exc:
            if timeout_s < self.timeout_s:  # the request's budget, not the LLM's own timeout, cut this wait
                self.guard.record_failure()  # still a backend that did not answer: a hung one opens the breaker
                raise DeadlineExceeded(
                    f"stopped waiting for the LLM at {self.endpoint}: the request's budget ran out after "
                    f"{timeout_s:.3g} s"
                ) from exc
            raise TransientError(f"LLM at {self.endpoint} timed out after {timeout_s:.3g} s") from exc
        except httpx.TransportError as exc:  # connection refused, DNS, TLS ...
            raise UnreachableError(
                f"cannot reach {self.endpoint}: is the server running? {_BASE_URL_HINT} ({exc})"
            ) from exc
        rejected_format = (
            "response_format" in body and response.status_code >= 400 and "response_format" in response.text
        )
        if rejected_format or (response.status_code != 429 and _CONTEXT_ERROR.search(response.text)):
            return response  # an answer about the request, not a failing server
        if response.status_code == 429 or response.status_code >= 500:
            raise TransientError(
                f"LLM at {self.endpoint} failed: HTTP {response.status_code}: {self._snippet(response)}",
                retry_after=retry_after_s(response),
            )
        return response

    def _post(self, body: Mapping[str, object], timeout_s: float) -> httpx.Response:
        """POST ``body``; the reply read within ``timeout_s`` in all and up to :attr:`max_reply_bytes`.

        httpx's timeout bounds each read, not the request: a server that sends a byte now and
        then would hold the call for as long as it likes.

        Raises:
            httpx.ReadTimeout: the reply was still arriving after ``timeout_s``.
            BackendError: the reply is longer than :attr:`max_reply_bytes`.
        """
        started = monotonic()
        chunks: list[bytes] = []
        size = 0
        with self._http().stream("POST", self.endpoint, json=body, timeout=timeout_s) as response:
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > self.max_reply_bytes:
                    raise BackendError(
                        f"LLM at {self.endpoint} sent a reply longer than {self.max_reply_bytes} bytes, more than "
                        f"max_tokens = {self.max_tokens} can be: is the server ignoring max_tokens?"
                    )
                chunks.append(chunk)
                if monotonic() - started > timeout_s:
                    raise httpx.ReadTimeout("the reply was still arriving", request=response.request)
        # the body is decoded already: the headers that describe its encoding on the wire go
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _WIRE_HEADERS]
        return httpx.Response(response.status_code, headers=headers, content=b"".join(chunks), request=response.request)

    def _snippet(self, response: httpx.Response) -> str:
        """The start of ``response``'s body for an error message, the API key masked."""
        return _snippet(response, secret=self.api_key)

    def _parse(self, response: httpx.Response) -> ChatReply:
        if response.status_code in (401, 403):
            raise BackendError(
                f"LLM at {self.endpoint} refused the request (HTTP {response.status_code}): check the API key "
                "(the environment variable named by [generator] api_key_env, default RAGTRUST_LLM_API_KEY)"
            )
        if response.status_code == 404:
            raise BackendError(
                f"LLM at {self.endpoint} answered 404: wrong base URL or unknown model {self.model!r}; "
                f"{_BASE_URL_HINT}, and check RAGTRUST_GENERATOR__MODEL ({self._snippet(response)})"
            )
        if response.status_code >= 400:
            raise BackendError(
                f"LLM at {self.endpoint} rejected the request: HTTP {response.status_code}: {self._snippet(response)}"
            )
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            raise BackendError(
                f"LLM at {self.endpoint} streamed its reply (text/event-stream) though ragtrust asked for one "
                "JSON reply: is base_url a chat-completions API that honours stream = false?"
            )
        try:
            data = response.json()
            choice = data["choices"][0]
            text = choice["message"]["content"]
        except (json.JSONDecodeError, ValueError) as exc:
            raise BackendError(f"LLM at {self.endpoint} returned invalid JSON: {self._snippet(response)}") from exc
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(
                f"LLM at {self.endpoint} returned JSON without choices[0].message.content: {self._snippet(response)}"
            ) from exc
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        if not isinstance(text, str):
            # tool_calls instead of text, a refusal object, a null: nothing to check
            raise BackendError(
                f"LLM at {self.endpoint} returned no text in choices[0].message.content "
                f"({type(text).__name__}, finish_reason {finish!r}): {self._snippet(response)}"
            )
        usage = data.get("usage")
        clean_usage = {k: int(v) for k, v in usage.items() if isinstance(v, int)} if isinstance(usage, dict) else {}
        return ChatReply(
            text=text,
            model=str(data.get("model") or self.model),
            usage=clean_usage,
            finish_reason=finish if isinstance(finish, str) else "",
        )


def _response_format(wanted: Mapping[str, object] | None, rejected: set[str]) -> dict[str, object] | None:
    """The form of ``wanted`` to send, given the forms the server rejected (``None``: send none)."""
    if wanted is None:
        return None
    kind = wanted.get("type")
    if kind not in rejected:
        return dict(wanted)
    inner = wanted.get("json_schema")
    if kind == "json_schema" and isinstance(inner, Mapping) and "json_object" not in rejected:
        return {"type": "json_object", "schema": inner.get("schema")}
    return None


def _snippet(response: httpx.Response, limit: int = 200, secret: str | None = None) -> str:
    text = response.text.strip().replace("\n", " ")
    if secret:  # a server or proxy that echoes the request's headers must not put the key in a message
        text = text.replace(secret, "<api key>")
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
        body = one_line(_MARKER.sub("", sentence.text))
        if not body.strip(" .!?") and out:
            out[-1] = (out[-1][0], tuple(dict.fromkeys(out[-1][1] + tuple(targets))))
            continue
        out.append((body, tuple(dict.fromkeys(targets))))
    return tuple(out)


@dataclass
class OpenAICompatibleGenerator:
    """Write a cited answer with an OpenAI-compatible chat model.

    Args:
        client: the chat client (endpoint, model, key, timeouts, retries, sampling).
        max_sentences: the answer length asked for in the prompt.
        context_tokens: the model's context window; 0 = do not fit the prompt.

    Example:
        >>> import httpx
        >>> reply = {"choices": [{"message": {"content": "Hash passwords [1]."}}]}
        >>> client = ChatClient("http://llm.test/v1", "m",
        ...     transport=httpx.MockTransport(lambda r: httpx.Response(200, json=reply)))
        >>> OpenAICompatibleGenerator(client).generate("How?", [Passage("p1", "Hash passwords.", url="u1")]).sentences
        (('Hash passwords.', ('u1',)),)
    """

    client: ChatClient
    max_sentences: int = 4
    context_tokens: int = 0
    name: str = "openai"

    @classmethod
    def from_config(
        cls, cfg: GeneratorConfig, env: Mapping[str, str] | None = None, *, max_sentences: int = 4
    ) -> OpenAICompatibleGenerator:
        """Build from ``[generator]`` settings (see :meth:`ChatClient.from_config`)."""
        return cls(ChatClient.from_config(cfg, env), max_sentences=max_sentences, context_tokens=cfg.context_tokens)

    @property
    def model(self) -> str:
        """The model name sent with each request."""
        return self.client.model

    @property
    def prompt_version(self) -> str:
        """The version of the answer prompt (:data:`ragtrust.prompts.PROMPT_VERSIONS`)."""
        return PROMPT_VERSIONS["answer"]

    def warm_up(self) -> None:
        """Open the connection pool (no request is sent)."""
        self.client.warm_up()

    def generate(self, query: str, passages: Sequence[Passage]) -> GeneratedAnswer:
        """Write an answer citing ``[n]`` = the n-th passage; no passages means no answer (no call).

        Raises:
            BackendError: see :meth:`ChatClient.complete` (a context-length rejection is
                retried once at half the budget first).
        """
        if not passages:
            return GeneratedAnswer(text="", model=self.model)
        budget = ContextBudget(self.context_tokens, self.client.max_tokens)
        messages, notes = build_answer_messages(query, passages, self.max_sentences, budget)
        try:
            reply = self.client.complete(messages)
        except ContextLengthError:
            retry = budget.after_rejection(messages)
            messages, notes = build_answer_messages(query, passages, self.max_sentences, retry)
            retried = "The model's server said the answer prompt exceeds its context window: it was sent again shorter."
            notes = (retried, *notes)
            reply = self.client.complete(messages)
        return GeneratedAnswer(
            text=reply.text.strip(),
            sentences=sentences_with_citations(reply.text, passages),
            model=reply.model,
            usage=dict(reply.usage),
            warnings=notes,
            # "length": stopped at max_tokens, mid-answer (OpenAI, vLLM, llama.cpp, Ollama say so)
            cut_off=reply.finish_reason == "length",
        )


@register("generator", "openai")
def openai_generator(
    base_url: str, model: str, *, max_sentences: int = 4, context_tokens: int = 0, **client: Any
) -> OpenAICompatibleGenerator:
    """The registry's ``openai`` generator: ``{"type": "openai", "params": {"base_url", "model", ...}}``.

    ``client`` takes :class:`ChatClient`'s other fields (``api_key``, ``timeout_s``,
    ``max_retries``, ``temperature``, ``max_tokens``, ``backoff_s``, ``transport``).
    """
    return OpenAICompatibleGenerator(
        ChatClient(base_url, model, **client), max_sentences=max_sentences, context_tokens=context_tokens
    )


__all__ = [
    "ChatClient",
    "ChatReply",
    "ContextLengthError",
    "OpenAICompatibleGenerator",
    "openai_generator",
    "sentences_with_citations",
]
