"""The server's errors: every non-2xx response is ``{"error": {"type", "message"}}``.

:func:`map_exception` turns the ragtrust error tree into HTTP statuses (a user's mistake is
4xx, a backend or model failure 5xx, an unexpected exception a 500 without its stack trace);
:func:`install_error_handlers` makes FastAPI's own validation and routing errors speak the
same body.

Example:
    >>> from ragtrust.errors import InputError
    >>> err = map_exception(InputError("empty question"))
    >>> err.status, err.type
    (422, 'invalid_input')
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragtrust.errors import (
    BackendError,
    ConfigError,
    InputError,
    MissingDependencyError,
    ModelError,
    RagTrustError,
    StoreDamagedError,
    StoreReadOnlyError,
    redact_paths,
)
from ragtrust.server import schemas as S

logger = logging.getLogger("ragtrust.server")


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
        exc.message = redact_paths(exc.message)  # a body names a file, never its absolute path on this machine
        return exc
    message = redact_paths(str(exc))
    if isinstance(exc, StoreReadOnlyError):  # a write to a store this server cannot write: not the client's input
        return ApiError(409, "store_read_only", str(exc))
    if isinstance(exc, StoreDamagedError):  # the operator's to fix (`ragtrust store check`), not the client's
        return ApiError(503, "store_damaged", message)
    if isinstance(exc, InputError):
        return ApiError(422, "invalid_input", message)
    if isinstance(exc, ConfigError):
        return ApiError(400, "config_error", message)
    if isinstance(exc, MissingDependencyError):
        return ApiError(503, "missing_dependency", message)
    if isinstance(exc, ModelError):
        return ApiError(503, "model_error", message, {"Retry-After": "30"})
    if isinstance(exc, BackendError):
        return ApiError(502, "backend_error", message)
    if isinstance(exc, RagTrustError):
        return ApiError(500, "ragtrust_error", message)
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
    400: "malformed JSON, a bad Content-Length, a Host not on the allow-list, or a configuration error",
    401: "missing or wrong API key",
    403: "the API key lacks the scope this request needs (read, write or vet)",
    404: "no document with this id",
    409: "the store is read-only: queries work, writes do not",
    413: "request body too large",
    415: "the body was not sent as JSON (Content-Type: application/json)",
    422: "request failed validation",
    502: "the answer writer or another backend failed",
    503: "models not ready, overloaded, timed out, or no store",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the error statuses a route can return (401 is added when keys are on)."""
    return {code: {"model": S.ErrorOut, "description": _ERROR_DESCRIPTIONS[code]} for code in codes}


#: errors of a route that reads a JSON body and calls the gate
ERROR_RESPONSES = error_responses(400, 413, 415, 422, 503)


def _is_json(content_type: str) -> bool:
    """``application/json`` or ``application/<x>+json`` (parameters ignored): what FastAPI parses as JSON."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _validation_message(exc: RequestValidationError, content_type: str | None) -> tuple[str, str, int]:
    errors = exc.errors()
    unparsed = content_type is None or not _is_json(content_type)
    if unparsed and any(tuple(e.get("loc", ()))[:1] == ("body",) for e in errors):
        # FastAPI left the body unparsed: its errors ("a valid dictionary") would hide the cause
        got = f"got {content_type!r}" if content_type else "the request has no Content-Type"
        return "unsupported_media_type", f"send the body as JSON with 'Content-Type: application/json' ({got})", 415
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


def install_error_handlers(app: FastAPI) -> None:
    """Render every error raised while serving ``app`` as the JSON error body."""

    async def api_error(_: Request, exc: Exception) -> JSONResponse:
        err = map_exception(exc)
        return error_response(err.status, err.type, err.message, err.headers)

    async def validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        kind, message, status = _validation_message(exc, request.headers.get("content-type"))
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


__all__ = [
    "ERROR_RESPONSES",
    "ApiError",
    "error_response",
    "error_responses",
    "install_error_handlers",
    "map_exception",
]
