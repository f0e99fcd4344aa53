"""The server's ASGI middlewares, outermost first: metrics, Host check, API keys, body size limit.

:class:`MetricsMiddleware` counts every request under its route template (requests answered
before routing too); :class:`HostAllowListMiddleware` answers 400 ``bad_host`` to a request
whose ``Host`` header is not allowed (a DNS-rebinding page talking to a loopback server);
:class:`ApiKeyMiddleware` identifies the caller of :data:`PROTECTED_PREFIXES` (constant-time
comparison), leaves its :class:`~ragtrust.server.auth.Principal` in the ASGI scope and
answers 401 / 403 before the body is read; :class:`BodyLimitMiddleware` answers 413 before
an oversized body reaches the app.

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

from ragtrust.errors import ConfigError
from ragtrust.server.auth import ANONYMOUS_PRINCIPAL, PRINCIPAL_KEY, ApiKey, Principal, required_scope
from ragtrust.server.errors import error_response
from ragtrust.server.metrics import ServerMetrics

#: paths that need an API key when keys are configured
PROTECTED_PREFIXES = ("/v1/", "/metrics")
#: the methods counted under their own name in the metrics; any other one (a client may send
#: any token, "FOO1", "FOO2"...) counts as ``other``, so clients cannot add label values without end
METRIC_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _route_label(app: FastAPI, scope: Scope, unrouted: Scope) -> str:
    route = scope.get("route")
    if route is None:  # answered before routing (401, 413), or by a mount: find the route the request hits
        for candidate in app.router.routes:
            # ``unrouted``: the scope as it came in (a mount rewrites its path, and FastAPI names no route for it)
            match, _ = candidate.matches(unrouted)
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

        unrouted = dict(scope)
        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.in_flight.dec()
            route = _route_label(self.fastapi_app, scope, unrouted)
            method = str(scope.get("method", ""))
            method = method if method in METRIC_METHODS else "other"
            self.metrics.requests.labels(method=method, route=route, status=str(status)).inc()
            self.metrics.latency.labels(method=method, route=route).observe(time.perf_counter() - started)


class ApiKeyMiddleware:
    """Identifies the caller of a protected path and checks the scope its method and path need.

    With ``keys``, a protected request needs ``Authorization: Bearer <key>`` or
    ``X-API-Key: <key>`` (401 otherwise) and acts as that key's principal; without keys
    every caller is :data:`~ragtrust.server.auth.ANONYMOUS_PRINCIPAL` (``read+write``). The
    principal is left in ``scope["ragtrust.principal"]`` for the routes (an ingest with a
    ``tier`` checks ``vet`` there); a missing scope is 403 ``forbidden``.
    """

    def __init__(self, app: ASGIApp, *, keys: Sequence[ApiKey]) -> None:
        self.app = app
        self.keys = [(k.secret.encode("utf-8"), k.principal()) for k in keys]

    def _identify(self, presented: bytes) -> Principal | None:
        found: Principal | None = None
        for secret, principal in self.keys:  # compare with every key: time does not reveal which matched
            if hmac.compare_digest(presented, secret) and found is None:
                found = principal
        return found

    def _principal(self, scope: Scope) -> Principal | str:
        """The caller's principal, or why it has none (the 401 message)."""
        if not self.keys:
            return ANONYMOUS_PRINCIPAL
        headers = dict(scope.get("headers", ()))
        presented = headers.get(b"x-api-key")
        auth = headers.get(b"authorization", b"")
        if not presented and auth[:7].lower() == b"bearer ":  # an empty X-API-Key (a proxy's) is no key
            presented = auth[7:].strip()
        if not presented:
            return "an API key is required: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'"
        return self._identify(presented) or "the API key is not valid"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Reject protected requests without a valid key or scope (before the body is read)."""
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not path.startswith(PROTECTED_PREFIXES):
            await self.app(scope, receive, send)
            return
        principal = self._principal(scope)
        if isinstance(principal, str):
            response = error_response(401, "unauthorized", principal, {"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        method = str(scope.get("method", "GET"))
        needed = required_scope(method, path)
        if not principal.can(needed):
            message = principal.refusal(needed, f"{method} {path}")
            await error_response(403, "forbidden", message)(scope, receive, send)
            return
        scope[PRINCIPAL_KEY] = principal
        await self.app(scope, receive, send)


#: the Host allow-list of a server bound to loopback (any port)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def _split_host(value: str) -> tuple[str, str | None]:
    """``"[::1]:8000"`` -> ``("[::1]", "8000")``, ``"Example.org"`` -> ``("example.org", None)``."""
    value = value.strip().lower()
    if value.startswith("["):
        host, _, rest = value.partition("]")
        return host + "]", (rest[1:] if rest.startswith(":") else None)
    host, sep, port = value.rpartition(":")
    if sep and port.isdigit() and ":" not in host:
        return host, port
    return value, None


def parse_allowed_hosts(allowed_hosts: Sequence[str]) -> list[tuple[str, str | None]]:
    """Check Host allow-list entries and split each into ``(host, port or None)``.

    Raises:
        ConfigError: an entry that is not a host (empty, a URL, a list).
    """
    out: list[tuple[str, str | None]] = []
    for entry in allowed_hosts:
        if not entry.strip() or any(ch in entry for ch in " /,"):
            raise ConfigError(f"allowed host {entry!r} is not a host: expected e.g. localhost or api.example.org")
        out.append(_split_host(entry))
    return out


class HostAllowListMiddleware:
    """Answers 400 ``bad_host`` to a request whose ``Host`` header is not on the allow-list.

    An entry is a host (``localhost``, ``127.0.0.1``, ``[::1]``, ``api.example.org``: any
    port), a host with a port (``localhost:8000``: that port only) or ``*.example.org`` (any
    subdomain). A request without a Host header is refused: it cannot be told apart from a
    rebinding page. Checked before anything else, on every path.
    """

    def __init__(self, app: ASGIApp, *, allowed_hosts: Sequence[str]) -> None:
        self.app = app
        self.allowed = parse_allowed_hosts(allowed_hosts)

    def allows(self, host_header: str) -> bool:
        """Tell whether a request with this ``Host`` header may pass."""
        host, port = _split_host(host_header)
        for allowed, allowed_port in self.allowed:
            if allowed_port is not None and allowed_port != port:
                continue
            if host == allowed or (allowed.startswith("*.") and host.endswith(allowed[1:])):
                return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a request for a host this server does not answer to."""
        if scope["type"] != "http":  # lifespan; the app has no websockets
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        raw = headers.get(b"host")
        host = raw.decode("latin-1") if raw is not None else ""
        if host and self.allows(host):
            await self.app(scope, receive, send)
            return
        message = (
            f"this server does not answer to host {host[:100]!r}; start it with --allowed-host HOST to add a name"
            if host
            else "the request has no Host header; this server answers only to the hosts on its allow-list"
        )
        await error_response(400, "bad_host", message)(scope, receive, send)


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


__all__ = [
    "LOOPBACK_HOSTS",
    "PROTECTED_PREFIXES",
    "ApiKeyMiddleware",
    "BodyLimitMiddleware",
    "HostAllowListMiddleware",
    "MetricsMiddleware",
    "parse_allowed_hosts",
]
