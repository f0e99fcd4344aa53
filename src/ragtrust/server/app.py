"""The FastAPI application: the trust layer as an HTTP service, plus the static web UI.

``create_app()`` builds the app; nothing heavy happens until the lifespan hook, which
warms the models in the worker pool (off the event loop) while ``/healthz`` already
answers and ``/readyz`` reports 503 until the models are warm.

Request path, outermost first: metrics (counts and latency per route template) -> Host
allow-list (400 ``bad_host``, when given) -> API key and scope check (``/v1/*`` and
``/metrics``: read / write / vet, see :mod:`~ragtrust.server.auth`) ->
body size limit (413 before the body reaches the app) -> FastAPI routing and validation ->
the endpoint, which runs the CPU-bound gate call in a bounded thread pool under a
per-request timeout. Every error is ``{"error": {"type", "message"}}``; no stack traces.

The parts live by job: :mod:`~ragtrust.server.errors` (the error body and status mapping),
:mod:`~ragtrust.server.runtime` (worker pool, warm-up, store lock),
:mod:`~ragtrust.server.middleware` and :mod:`~ragtrust.server.routes`; their public names
still import from here.

Example:
    >>> from ragtrust.server.app import create_app
    >>> app = create_app(gate=None, store_path=None, build_gate=lambda s, p: None)
    >>> app.title
    'ragtrust'
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from ragtrust import __version__
from ragtrust.config import Settings, load_settings
from ragtrust.errors import ConfigError
from ragtrust.server.admission import default_workers
from ragtrust.server.auth import ApiKey, parse_api_keys
from ragtrust.server.errors import ApiError, error_response, error_responses, install_error_handlers, map_exception
from ragtrust.server.metrics import ServerMetrics
from ragtrust.server.middleware import (
    PROTECTED_PREFIXES,
    ApiKeyMiddleware,
    BodyLimitMiddleware,
    HostAllowListMiddleware,
    MetricsMiddleware,
    parse_allowed_hosts,
)
from ragtrust.server.routes import STATIC_DIR, add_routes
from ragtrust.server.runtime import Gate, GateFactory, ReadWriteLock, Runtime
from ragtrust.verdict_log import VerdictLog, open_verdict_log


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
        auth_errors = error_responses(401, 403)
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                responses = operation.get("responses", {})
                # FastAPI adds its own 422 to routes with parameters; ours are declared where they can happen
                if "HTTPValidationError" in json.dumps(responses.get("422", {})):
                    del responses["422"]
                if secured and path.startswith(PROTECTED_PREFIXES):
                    # with keys, any protected route may answer 401 (no / wrong key) or 403 (a missing scope)
                    operation["security"] = [{"bearer": []}, {"apiKey": []}]
                    for code, error in auth_errors.items():
                        responses[str(code)] = {
                            "description": error["description"],
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}},
                        }
        schemas = components.get("schemas", {})
        if "HTTPValidationError" not in json.dumps(schema.get("paths", {})):
            for unused in ("HTTPValidationError", "ValidationError"):
                schemas.pop(unused, None)
        app.openapi_schema = schema
        return schema

    return build


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
    api_keys: Sequence[str | ApiKey] | None = None,
    allowed_hosts: Sequence[str] | None = None,
    max_body_bytes: int = 1_000_000,
    request_timeout_s: float = 30,
    workers: int | None = None,
    max_queue: int | None = None,
    build_gate: GateFactory | None = None,
    verdict_log: VerdictLog | None = None,
) -> FastAPI:
    """Build the ragtrust HTTP service.

    Args:
        settings: configuration (``load_settings()`` when ``None``); used to build the gate.
        gate: a ready-made :class:`~ragtrust.pipeline.TrustGate` (tests, embedding apps).
            When ``None``, one is built from ``settings`` on the store at ``store_path``.
        store_path: the store folder for ``/v1/ask`` and ``/v1/documents``.
        api_keys: when non-empty, ``/v1/*`` and ``/metrics`` need one of these keys
            (``Authorization: Bearer`` or ``X-API-Key``): :class:`~ragtrust.server.auth.ApiKey`
            objects or ``[name=]key[:scope+scope]`` strings (a plain key may read and write,
            not vet). Read ``RAGTRUST_API_KEYS`` at the edge (the CLI does) and pass them
            here. Without keys every caller may read and write, and nobody may vet.
        allowed_hosts: answer only requests whose ``Host`` header is one of these
            (``localhost``, ``127.0.0.1:8000``, ``*.example.org``); ``None`` or ``"*"`` in
            the list: no check.
        max_body_bytes: larger request bodies get 413.
        request_timeout_s: per-request budget (waiting for a worker included); past it, 503.
        workers: threads for model work (``None``: :func:`~ragtrust.server.admission.default_workers`,
            one per two cores); at most this many gate calls run at once per lane
            (``ask``, and ``model`` for screen / verify / align / ingest).
        max_queue: calls allowed to wait for a worker per lane (``None``: ``4 * workers``);
            past it a request gets 503 with ``Retry-After`` at once.
        build_gate: ``(settings, store_path) -> gate`` used when ``gate`` is ``None``
            (default :func:`build_default_gate`).
        verdict_log: where ``/v1/ask``, ``/v1/screen`` and ``/v1/verify`` verdicts are appended
            (``GET /v1/log`` reads it). ``None``: an app that builds its own gate logs where the
            settings say (``[log]``: beside the store folder by default, see
            :mod:`ragtrust.verdict_log`); an app given a ready-made ``gate`` keeps no log.

    Returns:
        The FastAPI app; models warm in its lifespan hook.

    Raises:
        ConfigError: invalid limits, or the gate cannot be built from the settings.
    """
    if max_body_bytes < 1:
        raise ConfigError(f"max_body_bytes must be >= 1, got {max_body_bytes}")
    if request_timeout_s <= 0:
        raise ConfigError(f"request_timeout_s must be > 0, got {request_timeout_s}")
    workers = default_workers() if workers is None else workers
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    if max_queue is not None and max_queue < 0:
        raise ConfigError(f"max_queue must be >= 0, got {max_queue}")
    keys = parse_api_keys(api_keys or (), source="api_keys")
    parse_allowed_hosts(allowed_hosts or ())  # a bad entry fails here, not on the first request
    if gate is None:
        settings = settings if settings is not None else load_settings()
        gate = (build_gate or build_default_gate)(settings, store_path)
        if verdict_log is None:  # never raises: a log that cannot be opened is one warning, no log
            verdict_log = open_verdict_log(settings, store_path)
    metrics = ServerMetrics()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = Runtime(
            gate=gate, metrics=metrics, workers=workers, request_timeout_s=request_timeout_s, max_queue=max_queue
        )
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
    app.state.verdict_log = verdict_log
    install_error_handlers(app)
    add_routes(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.openapi = _openapi(app, secured=bool(keys))  # type: ignore[method-assign]
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=max_body_bytes)
    app.add_middleware(ApiKeyMiddleware, keys=keys)  # without keys: everyone is anonymous (read+write)
    if allowed_hosts is not None and "*" not in allowed_hosts:
        app.add_middleware(HostAllowListMiddleware, allowed_hosts=allowed_hosts)
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
