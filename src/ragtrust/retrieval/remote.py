"""A remote HTTP search endpoint as a retriever (one source of federated retrieval).

Protocol: ``POST url`` with JSON ``{"query": str, "top_k": int}``; the reply is
``{"results": [{"id": str, "text": str, "url": str?, "score": float?}, ...]}``, best first.
``score`` is kept only when it is a number in [0, 1] (a cosine-like similarity); scores on
another scale (BM25, logits) are discarded (``None``) so that they cannot trigger or mask
the low-retrieval rule.

Example:
    >>> import httpx
    >>> reply = {"results": [{"id": "r1", "text": "Use TLS 1.3.", "url": "https://kb/tls", "score": 0.8}]}
    >>> transport = httpx.MockTransport(lambda _: httpx.Response(200, json=reply))
    >>> r = RemoteHTTPRetriever("http://search.test/q", transport=transport)
    >>> [(d.id, d.score, d.retriever) for d in r.retrieve("tls", 3)]
    [('r1', 0.8, 'remote')]
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import BackendError, ConfigError, InputError
from ragtrust.http import bearer_client
from ragtrust.registry import register


@register("retriever", "remote")
@dataclass
class RemoteHTTPRetriever:
    """Search a remote HTTP endpoint that speaks the JSON protocol of this module.

    Args:
        url: the search endpoint.
        transport: an httpx transport (tests pass ``httpx.MockTransport``).
        timeout_s: the longest one search may take, from sending the query to the last byte
            of the reply (a reply that keeps trickling in is cut off too).
        api_key: sent as ``Authorization: Bearer <key>`` when given.
        name: source name in warnings and ``RetrievedDoc.retriever``.
    """

    url: str
    transport: httpx.BaseTransport | None = None
    timeout_s: float = 10.0
    api_key: str | None = field(default=None, repr=False)  # never in a repr, a log line or a traceback
    name: str = "remote"
    _client: httpx.Client | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        """Refuse a url that no request could be sent to (a typo surfaces here, not at the first search)."""
        try:
            parsed = httpx.URL(self.url) if isinstance(self.url, str) else None
        except httpx.InvalidURL:
            parsed = None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
            raise ConfigError(
                f"RemoteHTTPRetriever url must be an http(s) URL such as http://host/search, got {self.url!r}"
            )

    def warm_up(self) -> None:
        """Create the connection pool (no request is sent)."""
        self._http()

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = bearer_client(self.api_key, timeout_s=self.timeout_s, transport=self.transport)
            return self._client

    def retrieve(self, query: str, top_k: int = 5) -> list[RetrievedDoc]:
        """Return the endpoint's results, best first, at most ``top_k``.

        Raises:
            BackendError: unreachable endpoint, HTTP error, or a reply not in the protocol.
        """
        started = time.monotonic()
        try:
            with self._http().stream("POST", self.url, json={"query": query, "top_k": top_k}) as response:
                body = self._read(response, started)
        except httpx.TimeoutException as exc:
            raise BackendError(f"search endpoint {self.url} timed out after {self.timeout_s:g} s") from exc
        except httpx.TransportError as exc:
            raise BackendError(f"cannot reach search endpoint {self.url}: is it running? ({exc})") from exc
        text = body.decode("utf-8", errors="replace")
        if response.status_code >= 400:
            raise BackendError(f"search endpoint {self.url} answered HTTP {response.status_code}: {text[:200]}")
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, ValueError) as exc:
            raise BackendError(f"search endpoint {self.url} returned invalid JSON: {text[:200]}") from exc
        try:
            return self._parse(data, top_k)
        except InputError as exc:
            raise BackendError(f"search endpoint {self.url}: {exc}") from exc

    def _read(self, response: httpx.Response, started: float) -> bytes:
        """The reply's body, read within ``timeout_s`` of ``started``.

        httpx's timeout bounds each read, not the request: a server that sends a byte now and
        then would hold the query for as long as it likes.
        """
        chunks: list[bytes] = []
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            if time.monotonic() - started > self.timeout_s:
                raise BackendError(
                    f"search endpoint {self.url} timed out after {self.timeout_s:g} s (its reply was still arriving)"
                )
        return b"".join(chunks)

    def _parse(self, data: Any, top_k: int) -> list[RetrievedDoc]:
        if not isinstance(data, Mapping) or not isinstance(data.get("results"), list):
            raise InputError('expected {"results": [{"id", "text", "url", "score"}, ...]}')
        out: list[RetrievedDoc] = []
        for i, row in enumerate(data["results"][:top_k], start=1):
            if not isinstance(row, Mapping) or not isinstance(row.get("text"), str) or not row["text"].strip():
                raise InputError(f"result {i} needs a non-empty 'text'")
            raw_id, url = row.get("id"), row.get("url")
            if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, (str, int))):
                raise InputError(f"result {i}: 'id' must be a string or an integer, got {type(raw_id).__name__}")
            if url is not None and not isinstance(url, str):
                raise InputError(f"result {i}: 'url' must be a string, got {type(url).__name__}")
            doc_id = str(raw_id) if raw_id not in (None, "") else (url or f"{self.name}-{i}")
            score = row.get("score")
            cosine = (
                float(score)
                if isinstance(score, (int, float)) and not isinstance(score, bool) and 0.0 <= float(score) <= 1.0
                else None
            )
            doc = Document(id=doc_id, text=row["text"], url=url or None, source=self.url)
            out.append(RetrievedDoc(document=doc, score=cosine, rank=i, retriever=self.name))
        return out


__all__ = ["RemoteHTTPRetriever"]
