"""The server's ASGI middlewares, outermost first: metrics, API key check, body size limit.

:class:`MetricsMiddleware` counts every request under its route template (requests answered
before routing too); :class:`ApiKeyMiddleware` guards :data:`PROTECTED_PREFIXES` with a
constant-time comparison before the body is read; :class:`BodyLimitMiddleware` answers 413
before an oversized body reaches the app.

Example:
    >>> "/v1/" in PROTECTED_PREFIXES and "/healthz" not in PROTECTED_PREFIXES
    True
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Sequence

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragtrust.server.errors import error_response
from ragtrust.server.metrics import ServerMetrics

#: paths that need an API key when keys are configured
PROTECTED_PREFIXES = ("/v1/", "/metrics")


def _route_label(app: FastAPI, scope: Scope) -> str:
    route = scope.get("route")
    if route is None:  # answered before routing (401, 413): find the route it would hit
        for candidate in app.router.routes:
            match, _ = candidate.matches(scope)
            if match is not Match.NONE:
                route = candidate
                break
    path = getattr(route, "path", None)
    if path is None:
        return "<unmatched>"
    return path or "/static"


class MetricsMiddleware:
    """Counts requests and records latency per method, route template and status."""

    def __init__(self, app: ASGIApp, *, fastapi_app: FastAPI, metrics: ServerMetrics) -> None:
        self.app = app
        self.fastapi_app = fastapi_app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Time the request and record its status."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.in_flight.dec()
            route = _route_label(self.fastapi_app, scope)
            method = str(scope.get("method", ""))
            self.metrics.requests.inc(method=method, route=route, status=str(status))
            self.metrics.latency.observe(time.perf_counter() - started, method=method, route=route)


class ApiKeyMiddleware:
    """Requires ``Authorization: Bearer <key>`` or ``X-API-Key: <key>`` on protected paths."""

    def __init__(self, app: ASGIApp, *, keys: Sequence[str]) -> None:
        self.app = app
        self.keys = [k.encode("utf-8") for k in keys]

    def _valid(self, presented: bytes) -> bool:
        ok = False
        for key in self.keys:  # compare with every key: time does not reveal which matched
            ok |= hmac.compare_digest(presented, key)
        return ok

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Reject protected requests without a valid key (before the body is read)."""
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith(PROTECTED_PREFIXES):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        presented = headers.get(b"x-api-key")
        auth = headers.get(b"authorization", b"")
        if presented is None and auth[:7].lower() == b"bearer ":
            presented = auth[7:].strip()
        if presented and self._valid(presented):
            await self.app(scope, receive, send)
            return
        message = "an API key is required: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'"
        if presented:
            message = "the API key is not valid"
        response = error_response(401, "unauthorized", message, {"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


class BodyLimitMiddleware:
    """Rejects bodies larger than ``max_body_bytes`` with 413 (declared or streamed size)."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    def _too_large(self) -> JSONResponse:
        return error_response(
            413,
            "payload_too_large",
            f"the request body is larger than the server's limit of {self.max_body_bytes} bytes; "
            "send fewer or shorter documents",
            {"Connection": "close"},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Buffer the body up to the limit, then replay it to the app."""
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await error_response(400, "bad_request", "Content-Length is not a number")(scope, receive, send)
                return
            if size > self.max_body_bytes:
                await self._too_large()(scope, receive, send)
                return
        chunks: list[bytes] = []
        total = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            total += len(body)
            if total > self.max_body_bytes:
                await self._too_large()(scope, receive, send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


__all__ = ["PROTECTED_PREFIXES", "ApiKeyMiddleware", "BodyLimitMiddleware", "MetricsMiddleware"]
