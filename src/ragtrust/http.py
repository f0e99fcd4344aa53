"""The one HTTP client factory: an ``httpx.Client`` that sends a bearer token when given one.

The chat client (``generation.openai``) and the remote retriever (``retrieval.remote``) build
their connection pool lazily with it.

Example:
    >>> import httpx
    >>> client = bearer_client("k", timeout_s=5.0, transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    >>> client.headers["Authorization"]
    'Bearer k'
    >>> "Authorization" in bearer_client(None, timeout_s=5.0).headers
    False
"""

from __future__ import annotations

import httpx


def bearer_client(
    api_key: str | None, *, timeout_s: float, transport: httpx.BaseTransport | None = None
) -> httpx.Client:
    """An ``httpx.Client`` with ``Authorization: Bearer <api_key>`` when ``api_key`` is set."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.Client(timeout=timeout_s, transport=transport, headers=headers)
