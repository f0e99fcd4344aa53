"""The FastAPI application: the trust layer as an HTTP service, plus the static web UI.

``create_app()`` builds the app; nothing heavy happens until the lifespan hook, which
warms the models in the worker pool (off the event loop) while ``/healthz`` already
answers and ``/readyz`` reports 503 until the models are warm.

Request path, outermost first: metrics (counts and latency per route template) -> API key
check (``/v1/*`` and ``/metrics`` when keys are configured, constant-time comparison) ->
body size limit (413 before the body reaches the app) -> FastAPI routing and validation ->
the endpoint, which runs the CPU-bound gate call in a bounded thread pool under a
per-request timeout. Every error is ``{"error": {"type", "message"}}``; no stack traces.

Example:
    >>> from ragtrust.server.app import create_app
    >>> app = create_app(gate=None, store_path=None, build_gate=lambda s, p: None)
    >>> app.title
    'ragtrust'
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import hmac
import ipaddress
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragtrust import __version__
from ragtrust.config import Settings, load_settings
from ragtrust.documents import Document, Passage, RetrievedDoc, Verdict
from ragtrust.errors import (
    BackendError,
    ConfigError,
    InputError,
    MissingDependencyError,
    ModelError,
    RagTrustError,
    StoreDamagedError,
)
from ragtrust.server import schemas as S
from ragtrust.server.metrics import CONTENT_TYPE, ServerMetrics

logger = logging.getLogger("ragtrust.server")

STATIC_DIR = Path(__file__).parent / "static"
#: paths that need an API key when keys are configured
PROTECTED_PREFIXES = ("/v1/", "/metrics")
#: Content-Security-Policy of the web UI: everything from this origin, nothing inline
UI_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)

T = TypeVar("T")


class Gate(Protocol):
    """What the server needs from :class:`ragtrust.pipeline.TrustGate`."""

    @property
    def store(self) -> Any:
        """The document store, or ``None``."""
        ...

    def warm_up(self) -> None:
        """Load the models."""
        ...

    def ask(self, question: str) -> Verdict:
        """Full pipeline on the store."""
        ...

    def screen(self, docs: Sequence[RetrievedDoc], query: str | None = None) -> Verdict:
        """Stage 1 only."""
        ...

    def verify(self, answer: str, docs: Sequence[RetrievedDoc], query: str | None = None) -> Verdict:
        """Stage 2 (with Stage 1 for P and C)."""
        ...

    def align(self, passages: Sequence[Passage], docs: Sequence[RetrievedDoc]) -> Any:
        """EvidenT alignment; returns an object with ``passages``, ``dropped``, ``diagnostics``."""
        ...


GateFactory = Callable[[Settings, "str | Path | None"], Gate | None]


# --------------------------------------------------------------------------- errors


class ApiError(Exception):
    """An error with its HTTP status and stable type, rendered as ``{"error": {...}}``."""

    def __init__(self, status: int, type: str, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.headers = dict(headers or {})


def error_response(status: int, type: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """Build the JSON error body every non-2xx response uses."""
    return JSONResponse({"error": {"type": type, "message": message}}, status_code=status, headers=dict(headers or {}))


def map_exception(exc: BaseException) -> ApiError:
    """Translate a ragtrust (or unexpected) exception into an :class:`ApiError`."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, StoreDamagedError):  # the operator's to fix (`ragtrust store check`), not the client's
        return ApiError(503, "store_damaged", str(exc))
    if isinstance(exc, InputError):
        return ApiError(422, "invalid_input", str(exc))
    if isinstance(exc, ConfigError):
        return ApiError(400, "config_error", str(exc))
    if isinstance(exc, MissingDependencyError):
        return ApiError(503, "missing_dependency", str(exc))
    if isinstance(exc, ModelError):
        return ApiError(503, "model_error", str(exc), {"Retry-After": "30"})
    if isinstance(exc, BackendError):
        return ApiError(502, "backend_error", str(exc))
    if isinstance(exc, RagTrustError):
        return ApiError(500, "ragtrust_error", str(exc))
    logger.error("unhandled error in request", exc_info=exc)
    return ApiError(500, "internal_error", "internal server error; the server log has the details")


_STATUS_TYPES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}

_ERROR_DESCRIPTIONS = {
    400: "malformed JSON, a bad Content-Length, or a configuration error",
    401: "missing or wrong API key",
    404: "no document with this id",
    413: "request body too large",
    422: "request failed validation",
    502: "the answer writer or another backend failed",
    503: "models not ready, overloaded, timed out, or no store",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the error statuses a route can return (401 is added when keys are on)."""
    return {code: {"model": S.ErrorOut, "description": _ERROR_DESCRIPTIONS[code]} for code in codes}


#: errors of a route that reads a JSON body and calls the gate
ERROR_RESPONSES = error_responses(400, 413, 422, 503)


def _validation_message(exc: RequestValidationError) -> tuple[str, str, int]:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        ctx: Any = next((e.get("ctx", {}) for e in errors if e.get("type") == "json_invalid"), {})
        detail = ctx.get("error", "invalid JSON") if isinstance(ctx, dict) else "invalid JSON"
        return "malformed_json", f"the request body is not valid JSON ({detail})", 400
    parts = []
    for err in errors[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "validation_error", "; ".join(parts) + more, 422


def _install_error_handlers(app: FastAPI) -> None:
    async def api_error(_: Request, exc: Exception) -> JSONResponse:
        err = map_exception(exc)
        return error_response(err.status, err.type, err.message, err.headers)

    async def validation_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        kind, message, status = _validation_message(exc)
        return error_response(status, kind, message)

    async def http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        kind = _STATUS_TYPES.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        return error_response(exc.status_code, kind, message, exc.headers)

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RagTrustError, api_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, api_error)


# --------------------------------------------------------------------------- runtime


class ReadWriteLock:
    """Many readers or one writer (writers first): asks read the store, ingestion writes it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        """Hold the lock shared."""
        with self._cond:
            while self._writer or self._waiting_writers:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """Hold the lock exclusively."""
        with self._cond:
            self._waiting_writers += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._waiting_writers -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


@dataclasses.dataclass
class Runtime:
    """Per-process serving state, created in the lifespan hook.

    Attributes:
        gate: the trust gate (``None`` when the app was built without one).
        workers: threads in the pool; also the most gate calls running at once.
        request_timeout_s: budget of one request, waiting for a worker included.
    """

    gate: Gate | None
    metrics: ServerMetrics
    workers: int
    request_timeout_s: float
    pool: concurrent.futures.ThreadPoolExecutor = dataclasses.field(init=False)
    slots: asyncio.Semaphore = dataclasses.field(init=False)
    ready: asyncio.Event = dataclasses.field(init=False)
    lock: ReadWriteLock = dataclasses.field(default_factory=ReadWriteLock, init=False)
    warm_error: str | None = dataclasses.field(default=None, init=False)
    warm_error_type: str = dataclasses.field(default="model_error", init=False)
    _warm_task: asyncio.Task[None] | None = dataclasses.field(default=None, init=False)

    def __post_init__(self) -> None:
        """Create the pool and the asyncio primitives (inside the running loop)."""
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="ragtrust")
        self.slots = asyncio.Semaphore(self.workers)
        self.ready = asyncio.Event()

    def start_warm_up(self) -> None:
        """Warm the models in the pool; ``/readyz`` turns 200 when done."""
        self._warm_task = asyncio.get_running_loop().create_task(self._warm_up())

    async def _warm_up(self) -> None:
        gate = self.gate
        if gate is None:
            self.warm_error = "the server has no trust gate"
            return
        started = time.perf_counter()
        try:
            await asyncio.get_running_loop().run_in_executor(self.pool, gate.warm_up)
        except StoreDamagedError as exc:  # reported by /readyz and every endpoint, as 503 store_damaged
            self.warm_error, self.warm_error_type = str(exc), "store_damaged"
            logger.error("%s", exc)
            return
        except Exception as exc:  # reported by /readyz and every endpoint
            self.warm_error = f"model warm-up failed: {exc}"
            logger.error("model warm-up failed", exc_info=exc)
            return
        logger.info("models warm in %.2f s", time.perf_counter() - started)
        self.metrics.models_ready.set(1)
        self.ready.set()

    async def wait_ready(self, timeout_s: float | None = None) -> bool:
        """Wait until warm-up ends; ``True`` when the models are warm."""
        task = self._warm_task
        if task is not None:
            await asyncio.wait_for(asyncio.shield(task), timeout_s)
        return self.ready.is_set()

    async def close(self) -> None:
        """Stop warm-up and the pool (running calls finish in their threads)."""
        if self._warm_task is not None and not self._warm_task.done():
            self._warm_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._warm_task
        self.pool.shutdown(wait=False, cancel_futures=True)

    def require_gate(self, *, warm: bool = True) -> Gate:
        """Return the gate, or raise a 503 when there is none or its models are not warm."""
        if self.gate is None:
            raise ApiError(503, "not_configured", "the server was started without a trust gate")
        if warm and not self.ready.is_set():
            if self.warm_error:
                raise ApiError(503, self.warm_error_type, self.warm_error)
            raise ApiError(503, "not_ready", "the models are still loading; retry shortly", {"Retry-After": "5"})
        return self.gate

    def require_store(self, *, warm: bool = True) -> Any:
        """Return the gate's store, or raise a 503 naming the flag that provides one."""
        store = self.require_gate(warm=warm).store
        if store is None:
            message = "the server has no document store: start it with `ragtrust serve --store DIR`"
            raise ApiError(503, "no_store", message)
        return store

    async def call(self, fn: Callable[[], T], *, write: bool = False) -> T:
        """Run ``fn`` in the pool, at most ``workers`` at once, within the request timeout.

        A call that times out keeps its worker until it finishes (threads cannot be
        killed), so the pool never runs more than ``workers`` calls at once.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.request_timeout_s
        try:
            await asyncio.wait_for(self.slots.acquire(), self.request_timeout_s)
        except TimeoutError:
            raise self._timeout("waiting for a free worker") from None

        def locked() -> T:
            with self.lock.write() if write else self.lock.read():
                return fn()

        try:
            future = loop.run_in_executor(self.pool, locked)
        except BaseException:
            self.slots.release()
            raise
        future.add_done_callback(lambda _: self.slots.release())
        try:
            return await asyncio.wait_for(asyncio.shield(future), max(0.0, deadline - loop.time()))
        except TimeoutError:
            raise self._timeout("processing") from None
        except Exception as exc:
            raise map_exception(exc) from None

    def _timeout(self, phase: str) -> ApiError:
        self.metrics.timeouts.inc()
        return ApiError(
            503,
            "timeout",
            f"the request ran past the server's {self.request_timeout_s:g} s limit while {phase}; "
            "retry later or send fewer documents",
            {"Retry-After": "5"},
        )

    def verdict_out(self, verdict: Verdict) -> S.VerdictOut:
        """Response model of a verdict; records the verdict metrics."""
        self.metrics.verdicts.inc(stage=verdict.stage, level=verdict.trust_level, decision=verdict.decision)
        self.metrics.trust_score.observe(verdict.trust_score, stage=verdict.stage)
        return S.VerdictOut.model_validate({**verdict.to_dict(), "decision": verdict.decision})


def _runtime(request: Request) -> Runtime:
    runtime: Runtime | None = getattr(request.app.state, "ragtrust", None)
    if runtime is None:
        raise ApiError(503, "not_ready", "the server is starting (lifespan not run yet)", {"Retry-After": "5"})
    return runtime


def _plain(value: Any) -> Any:
    """JSON-safe copy of reports and diagnostics (numpy scalars, dataclasses, tuples)."""

    def default(obj: Any) -> Any:
        if hasattr(obj, "to_dict"):
            return obj.to_dict()
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return dataclasses.asdict(obj)
        if hasattr(obj, "item"):
            return obj.item()
        if isinstance(obj, (set, frozenset)):
            return sorted(obj, key=str)
        if isinstance(obj, Path):
            return str(obj)
        return repr(obj)

    return json.loads(json.dumps(value, default=default))


def _as_dict(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    plain = _plain(value)
    return plain if isinstance(plain, dict) else {"value": plain}


# --------------------------------------------------------------------------- middleware


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


# --------------------------------------------------------------------------- routes


def _add_routes(app: FastAPI) -> None:  # noqa: C901 - one small function per endpoint
    # routes go straight on the app (not an included APIRouter) so that the metrics
    # middleware can match a route template for requests answered before routing

    @app.post(
        "/v1/ask",
        responses=error_responses(400, 413, 422, 502, 503),
        response_model=S.VerdictOut,
        tags=["trust"],
        summary="Full pipeline on the store",
    )
    async def ask(body: S.AskRequest, request: Request) -> S.VerdictOut:
        """Retrieve from the store, screen, ground, answer, verify: one Verdict."""
        rt = _runtime(request)
        if not body.question.strip():
            raise ApiError(422, "invalid_input", "the question is empty: send a non-empty 'question'")
        rt.require_store()
        gate = rt.require_gate()
        verdict = await rt.call(lambda: gate.ask(body.question))
        return rt.verdict_out(verdict)

    @app.post(
        "/v1/screen",
        responses=ERROR_RESPONSES,
        response_model=S.VerdictOut,
        tags=["trust"],
        summary="Stage 1: screen documents",
    )
    async def screen(body: S.ScreenRequest, request: Request) -> S.VerdictOut:
        """Poison probability per document and for the set (no answer)."""
        rt = _runtime(request)
        gate = rt.require_gate()
        docs = S.to_retrieved(body.documents)
        verdict = await rt.call(lambda: gate.screen(docs, query=body.query))
        return rt.verdict_out(verdict)

    @app.post(
        "/v1/verify",
        responses=ERROR_RESPONSES,
        response_model=S.VerdictOut,
        tags=["trust"],
        summary="Stage 2: verify an answer",
    )
    async def verify(body: S.VerifyRequest, request: Request) -> S.VerdictOut:
        """NLI factuality of an answer against the documents, fused into a Verdict."""
        rt = _runtime(request)
        gate = rt.require_gate()
        docs = S.to_retrieved(body.documents)
        verdict = await rt.call(lambda: gate.verify(body.answer, docs, query=body.query))
        return rt.verdict_out(verdict)

    @app.post(
        "/v1/align",
        responses=ERROR_RESPONSES,
        response_model=S.AlignResponse,
        tags=["evidence"],
        summary="Align passages",
    )
    async def align(body: S.AlignRequest, request: Request) -> S.AlignResponse:
        """Keep, truncate, re-attribute or drop extracted passages (EvidenT n-gram alignment)."""
        rt = _runtime(request)
        gate = rt.require_gate()
        docs = S.to_retrieved(body.documents)
        passages = S.to_passages(body.passages)
        result = await rt.call(lambda: gate.align(passages, docs))
        return S.AlignResponse(
            passages=[S.PassageOut.model_validate(p.to_dict()) for p in result.passages],
            dropped=[S.PassageOut.model_validate(p.to_dict()) for p in result.dropped],
            diagnostics=_as_dict(result.diagnostics) or {},
        )

    @app.post(
        "/v1/documents",
        responses=ERROR_RESPONSES,
        response_model=S.IngestResponse,
        tags=["store"],
        summary="Ingest documents",
    )
    async def ingest(body: S.IngestRequest, request: Request) -> S.IngestResponse:
        """Add documents to the store, all or nothing; returns their ids."""
        rt = _runtime(request)
        store = rt.require_store()
        documents = S.to_documents(body.documents)
        report = await rt.call(lambda: store.add(documents, tier=body.tier), write=True)
        rt.metrics.documents_ingested.inc(len(documents))
        return S.IngestResponse(ids=[d.id for d in documents], report=_as_dict(report) or {})

    @app.get(
        "/v1/documents/{doc_id:path}",
        responses=error_responses(404, 503),
        response_model=S.DocumentOut,
        tags=["store"],
        summary="One document",
    )
    async def get_document(doc_id: str, request: Request) -> S.DocumentOut:
        """Return a stored document's text, metadata and provenance record (for the span viewer)."""
        rt = _runtime(request)
        store = rt.require_store(warm=False)

        def load() -> tuple[Document, Any]:
            try:
                doc: Document = store.get(doc_id)
            except InputError as exc:
                raise ApiError(404, "not_found", str(exc)) from None
            ledger = getattr(store, "ledger", None)
            parent = str(doc.metadata.get("parent_id") or doc.id.split("#", 1)[0])
            return doc, ledger.get(parent) if ledger is not None else None

        doc, record = await rt.call(load)
        return S.DocumentOut(
            id=doc.id,
            text=doc.text,
            url=doc.url,
            source=doc.source,
            metadata=_as_dict(dict(doc.metadata)) or {},
            content_hash=doc.content_hash,
            provenance=_as_dict(record),
        )

    @app.get("/healthz", response_model=S.HealthOut, tags=["ops"], summary="Liveness")
    async def healthz() -> S.HealthOut:
        """200 while the process serves requests."""
        return S.HealthOut(version=__version__)

    @app.get(
        "/readyz",
        responses=error_responses(503),
        response_model=S.ReadyOut,
        tags=["ops"],
        summary="Readiness (models warm)",
    )
    async def readyz(request: Request) -> S.ReadyOut:
        """200 once the models are warm; 503 before (or when warm-up failed)."""
        rt = _runtime(request)
        gate = rt.require_gate()
        return S.ReadyOut(ready=True, store=gate.store is not None)

    @app.get(
        "/metrics",
        response_class=PlainTextResponse,
        tags=["ops"],
        summary="Prometheus metrics",
    )
    async def metrics(request: Request) -> PlainTextResponse:
        """Request counts, latencies, verdict levels (Prometheus text format 0.0.4)."""
        rt = _runtime(request)
        return PlainTextResponse(rt.metrics.registry.render(), media_type=CONTENT_TYPE)

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        """Serve the web UI."""
        return FileResponse(
            STATIC_DIR / "index.html",
            headers={
                "Content-Security-Policy": UI_CSP,
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "no-cache",
            },
        )

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        """The UI's icon, where browsers look for it (an SVG: every current browser reads it)."""
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")


def _openapi(app: FastAPI, secured: bool) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        components = schema.setdefault("components", {})
        # the schemes are always declared (how a client sends a key); they are required only when keys are on
        components["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <key>"},
            "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        }
        unauthorized = error_responses(401)[401]
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                responses = operation.get("responses", {})
                # FastAPI adds its own 422 to routes with parameters; ours are declared where they can happen
                if "HTTPValidationError" in json.dumps(responses.get("422", {})):
                    del responses["422"]
                if secured and path.startswith(PROTECTED_PREFIXES):
                    operation["security"] = [{"bearer": []}, {"apiKey": []}]
                    responses["401"] = {
                        "description": unauthorized["description"],
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}},
                    }
        schemas = components.get("schemas", {})
        if "HTTPValidationError" not in json.dumps(schema.get("paths", {})):
            for unused in ("HTTPValidationError", "ValidationError"):
                schemas.pop(unused, None)
        app.openapi_schema = schema
        return schema

    return build


# --------------------------------------------------------------------------- factory


def is_loopback_host(host: str) -> bool:
    """Tell whether ``host`` is ``localhost`` or a loopback address (127.0.0.0/8, ::1).

    Example:
        >>> is_loopback_host("127.0.0.1"), is_loopback_host("0.0.0.0")
        (True, False)
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def build_default_gate(settings: Settings, store_path: str | Path | None) -> Gate:
    """Build a :class:`~ragtrust.pipeline.TrustGate` from settings, on the store at ``store_path``.

    Raises:
        ConfigError / InputError: the store does not exist or cannot be opened.
    """
    from ragtrust.pipeline import TrustGate

    store = None
    embedder = None
    if store_path is not None:
        from ragtrust.ingest.store import Store
        from ragtrust.models.embedder import default_embedder

        embedder = default_embedder(settings)
        store = Store.open(store_path, embedder, create=False, settings=settings)
    gate: Gate = TrustGate.from_settings(settings, store=store, embedder=embedder)
    return gate


def create_app(
    settings: Settings | None = None,
    *,
    gate: Gate | None = None,
    store_path: str | Path | None = None,
    api_keys: Sequence[str] | None = None,
    max_body_bytes: int = 1_000_000,
    request_timeout_s: float = 30,
    workers: int = 2,
    build_gate: GateFactory | None = None,
) -> FastAPI:
    """Build the ragtrust HTTP service.

    Args:
        settings: configuration (``load_settings()`` when ``None``); used to build the gate.
        gate: a ready-made :class:`~ragtrust.pipeline.TrustGate` (tests, embedding apps).
            When ``None``, one is built from ``settings`` on the store at ``store_path``.
        store_path: the store folder for ``/v1/ask`` and ``/v1/documents``.
        api_keys: when non-empty, ``/v1/*`` and ``/metrics`` need one of these keys
            (``Authorization: Bearer`` or ``X-API-Key``). Read ``RAGTRUST_API_KEYS`` at the
            edge (the CLI does) and pass the keys here.
        max_body_bytes: larger request bodies get 413.
        request_timeout_s: per-request budget (waiting for a worker included); past it, 503.
        workers: threads for model work; at most this many gate calls run at once.
        build_gate: ``(settings, store_path) -> gate`` used when ``gate`` is ``None``
            (default :func:`build_default_gate`).

    Returns:
        The FastAPI app; models warm in its lifespan hook.

    Raises:
        ConfigError: invalid limits, or the gate cannot be built from the settings.
    """
    if max_body_bytes < 1:
        raise ConfigError(f"max_body_bytes must be >= 1, got {max_body_bytes}")
    if request_timeout_s <= 0:
        raise ConfigError(f"request_timeout_s must be > 0, got {request_timeout_s}")
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    keys = [k for k in (api_keys or ()) if k]
    if gate is None:
        settings = settings if settings is not None else load_settings()
        gate = (build_gate or build_default_gate)(settings, store_path)
    metrics = ServerMetrics()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = Runtime(gate=gate, metrics=metrics, workers=workers, request_timeout_s=request_timeout_s)
        app.state.ragtrust = runtime
        runtime.start_warm_up()
        try:
            yield
        finally:
            await runtime.close()
            app.state.ragtrust = None

    # FastAPIOffline serves /docs and /redoc with their assets from the package: no CDN
    app = FastAPIOffline(
        title="ragtrust",
        version=__version__,
        description=(
            "A trust layer for RAG: screen retrieved documents for poisoning, ground answers in "
            "verbatim evidence, verify with NLI and fuse the results into a Trust Index. Errors are "
            '`{"error": {"type", "message"}}`. When the server has API keys, `/v1/*` and `/metrics` need '
            "`Authorization: Bearer <key>` or `X-API-Key: <key>`."
        ),
        lifespan=lifespan,
    )
    app.state.ragtrust = None
    app.state.metrics = metrics
    _install_error_handlers(app)
    _add_routes(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.openapi = _openapi(app, secured=bool(keys))  # type: ignore[method-assign]
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=max_body_bytes)
    if keys:
        app.add_middleware(ApiKeyMiddleware, keys=keys)
    app.add_middleware(MetricsMiddleware, fastapi_app=app, metrics=metrics)
    return app


__all__ = [
    "PROTECTED_PREFIXES",
    "ApiError",
    "ApiKeyMiddleware",
    "BodyLimitMiddleware",
    "Gate",
    "MetricsMiddleware",
    "ReadWriteLock",
    "Runtime",
    "build_default_gate",
    "create_app",
    "error_response",
    "is_loopback_host",
    "map_exception",
]
