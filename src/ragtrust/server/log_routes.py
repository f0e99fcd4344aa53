"""The verdict log over HTTP: API verdicts appended, ``GET /v1/log`` and ``GET /v1/log/{id}`` to read it.

Every ``/v1/ask``, ``/v1/screen`` and ``/v1/verify`` verdict is appended; ``GET /v1/log`` lists
recent ones for the web UI's Log view (``level``, ``operation`` and ``since`` filter as in
``ragtrust log list``), ``GET /v1/log/{id}`` returns one in full.

The log is :class:`~ragtrust.verdict_log.VerdictLog` in ``app.state.verdict_log`` (``None``: not
logged; see :func:`~ragtrust.server.app.create_app`). Reading it needs the ``read`` scope when
the server has API keys (the middleware's rule for every ``GET /v1/...``). An append runs off
the event loop and never fails a request.

Example:
    >>> LogOut(enabled=False).model_dump()
    {'enabled': False, 'entries': []}
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Query, Request
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from ragtrust.errors import InputError
from ragtrust.server import schemas as S
from ragtrust.server.auth import principal_of
from ragtrust.server.errors import ApiError, error_responses
from ragtrust.server.runtime import runtime_of
from ragtrust.verdict_log import LogEntry, VerdictLog, parse_level, parse_operation, parse_since


class LogEntryOut(BaseModel):
    """One logged verdict: when, what, who, and the decision."""

    id: int
    at: str
    operation: str
    source: str
    principal: str | None = None
    query: str
    answer: str
    trust_score: float
    level: str
    trusted: bool
    decision: str
    reasons: list[str] = []
    models: dict[str, str] = {}
    timings_s: dict[str, float] = {}


class LogOut(BaseModel):
    """Recent verdicts, newest first; ``enabled`` is false when this server keeps no log."""

    enabled: bool
    entries: list[LogEntryOut] = []


class LogEntryDetailOut(BaseModel):
    """One logged verdict with the verdict as it was returned."""

    entry: LogEntryOut
    verdict: dict[str, Any]


def _out(entry: LogEntry) -> LogEntryOut:
    data = entry.to_dict()
    data.pop("verdict", None)
    return LogEntryOut.model_validate(data)


T = TypeVar("T")


def _reading(read: Callable[[], T]) -> Callable[[], T]:
    """``read`` with a log that cannot be read back as 503 ``log_damaged``: the operator's to fix, not the client's.

    The filters are parsed before, so the only :class:`InputError` a read raises is a damaged
    file or row (a 422 would blame the request).
    """

    def run() -> T:
        try:
            return read()
        except InputError as exc:
            raise ApiError(503, "log_damaged", str(exc)) from exc

    return run


def log_of(request: Request) -> VerdictLog | None:
    """The app's verdict log (``None`` when verdicts are not logged)."""
    log = getattr(request.app.state, "verdict_log", None)
    return log if isinstance(log, VerdictLog) else None


async def logged(request: Request, operation: str, verdict: Awaitable[S.VerdictOut]) -> S.VerdictOut:
    """Await ``verdict`` and append it to the app's log (off the event loop; never raises)."""
    out = await verdict
    log = log_of(request)
    if log is not None:
        who = principal_of(request)
        principal = who.name if who.authenticated else None
        await run_in_threadpool(
            log.append, out.model_dump(mode="json"), operation=operation, source="api", principal=principal
        )
    return out


def add_log_routes(app: FastAPI) -> None:
    """Add ``GET /v1/log`` and ``GET /v1/log/{entry_id}``."""

    @app.get(
        "/v1/log",
        responses=error_responses(422, 503),
        response_model=LogOut,
        tags=["log"],
        summary="Recent verdicts",
    )
    async def verdict_log(
        request: Request,
        level: str | None = Query(None, description="only this level: HIGH, MEDIUM, LOW or VERY LOW"),
        operation: str | None = Query(None, description="only this operation: ask, screen or verify"),
        since: str | None = Query(
            None, description="only verdicts since an age (30m, 12h, 7d) or an ISO date / time (UTC without a zone)"
        ),
        limit: int = Query(50, ge=1, le=1000, description="most entries returned, newest first"),
    ) -> LogOut:
        """The most recent logged verdicts (``enabled: false`` when the server keeps no log).

        The filters are those of ``ragtrust log list``.
        """
        rt = runtime_of(request)
        # a bad filter: 422 before any work
        wanted = parse_level(level) if level else None
        kind = parse_operation(operation) if operation else None
        after = parse_since(since) if since else None
        log = log_of(request)
        if log is None:
            return LogOut(enabled=False)
        entries = await rt.call(
            _reading(lambda: log.entries(level=wanted, operation=kind, since=after, limit=limit)), lane="light"
        )
        return LogOut(enabled=True, entries=[_out(e) for e in entries])

    @app.get(
        "/v1/log/{entry_id}",
        responses=error_responses(404, 422, 503),
        response_model=LogEntryDetailOut,
        tags=["log"],
        summary="One logged verdict",
    )
    async def verdict_log_entry(entry_id: int, request: Request) -> LogEntryDetailOut:
        """A logged verdict in full, as the API returned it."""
        rt = runtime_of(request)
        log = log_of(request)
        if log is None:
            raise ApiError(404, "not_found", "this server keeps no verdict log ([log] enabled = false)")
        entry = await rt.call(_reading(lambda: log.get(entry_id)), lane="light")
        if entry is None:
            raise ApiError(404, "not_found", f"no entry {entry_id} in the verdict log (pruned, or never there)")
        return LogEntryDetailOut(entry=_out(entry), verdict=dict(entry.verdict or {}))


__all__ = ["LogEntryDetailOut", "LogEntryOut", "LogOut", "add_log_routes", "log_of", "logged"]
