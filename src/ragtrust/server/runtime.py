"""The server's per-process state: the gate, its lanes of workers, warm-up and the store lock.

The lifespan hook creates one :class:`Runtime`; it warms the models in a worker (off the
event loop), and every endpoint runs its CPU-bound gate call through :meth:`Runtime.call`
in one of the lanes of :mod:`~ragtrust.server.admission` (``ask``, ``model``, ``light``):
at most ``workers`` at once per lane, a bounded queue behind them (a full queue is a 503
with ``Retry-After`` at once), the request's deadline carried into the pipeline, work
stopped when its client disconnects; asks share the store's :class:`ReadWriteLock` and
ingestion holds it alone.

Example:
    >>> lock = ReadWriteLock()
    >>> with lock.read(), lock.read():  # readers share the lock
    ...     "two readers"
    'two readers'
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from fastapi import Request

from ragtrust import deadline
from ragtrust.config import Settings
from ragtrust.deadline import Deadline
from ragtrust.documents import Verdict
from ragtrust.errors import DeadlineExceeded, StoreDamagedError
from ragtrust.pipeline.parts import Gate
from ragtrust.server import schemas as S
from ragtrust.server.admission import Lane
from ragtrust.server.errors import ApiError, map_exception
from ragtrust.server.metrics import ServerMetrics

logger = logging.getLogger("ragtrust.server")

T = TypeVar("T")

#: how often a running call checks that its client is still connected (seconds)
DISCONNECT_POLL_S = 0.25


GateFactory = Callable[[Settings, "str | Path | None"], Gate | None]


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
        workers: threads of the ``ask`` and ``model`` lanes: the most calls running at once in each.
        request_timeout_s: budget of one request, waiting for a worker included.
        max_queue: calls allowed to wait per lane (``None``: ``4 * workers``).
    """

    gate: Gate | None
    metrics: ServerMetrics
    workers: int
    request_timeout_s: float
    max_queue: int | None = None
    lanes: dict[str, Lane] = dataclasses.field(init=False)
    ready: asyncio.Event = dataclasses.field(init=False)
    lock: ReadWriteLock = dataclasses.field(default_factory=ReadWriteLock, init=False)
    warm_error: str | None = dataclasses.field(default=None, init=False)
    warm_error_type: str = dataclasses.field(default="model_error", init=False)
    _warm_task: asyncio.Task[None] | None = dataclasses.field(default=None, init=False)

    def __post_init__(self) -> None:
        """Create the lanes and the asyncio primitives (inside the running loop)."""
        queue = 4 * self.workers if self.max_queue is None else self.max_queue
        self.lanes = {
            "ask": Lane("ask", self.workers, queue),
            "model": Lane("model", self.workers, queue),
            "light": Lane("light", 2, max(queue, 32)),
        }
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
            await asyncio.get_running_loop().run_in_executor(self.lanes["model"].pool, gate.warm_up)
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
        """Stop warm-up and the lanes (running calls finish in their threads)."""
        if self._warm_task is not None and not self._warm_task.done():
            self._warm_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._warm_task
        for lane in self.lanes.values():
            lane.close()

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

    async def call(
        self, fn: Callable[[], T], *, lane: str = "model", write: bool = False, request: Request | None = None
    ) -> T:
        """Run ``fn`` in ``lane``'s pool under the request's deadline; see :mod:`~ragtrust.server.admission`.

        Refused at once (503 ``overloaded`` with ``Retry-After``) when the lane's queue is
        full; 503 ``timeout`` when the budget runs out waiting or working. Past the budget,
        or when ``request``'s client disconnects, the work is cancelled: the pipeline stops
        at its next stage, and the worker stays counted until it has.

        A ``write`` checks the deadline once, holding the store's write lock, just before
        ``fn`` starts; from then on it runs to the end and its outcome is the answer (a 503
        for a write that then commits would tell the client it failed when it did not).
        """
        ln = self.lanes[lane]
        if ln.full(budget_s=self.request_timeout_s):
            self.metrics.shed.labels(lane=ln.name).inc()
            wait = ln.retry_after_s()
            raise ApiError(
                503,
                "overloaded",
                f"the server is at capacity ({ln.workers} running, {ln.waiting} waiting in the {ln.name} queue); "
                f"retry in {wait} s",
                {"Retry-After": str(wait)},
            )
        budget = Deadline.after(self.request_timeout_s)
        loop = asyncio.get_running_loop()
        ln.waiting += 1
        try:
            await asyncio.wait_for(ln.slots.acquire(), budget.remaining())
        except TimeoutError:
            raise self._timeout("waiting for a free worker") from None
        finally:
            ln.waiting -= 1
        if request is not None and await request.is_disconnected():
            ln.slots.release()
            raise self._client_gone()

        commit = _WriteStart() if write else None

        def run() -> T:
            if commit is None:
                with deadline.bound(budget), self.lock.read():
                    return fn()
            with self.lock.write():
                budget.check("writing to the store")
                commit.begin()
                return fn()  # no deadline bound: a write that began is seen through

        started = loop.time()
        try:
            future = loop.run_in_executor(ln.pool, run)
        except BaseException:
            ln.slots.release()
            raise

        def finished(done: asyncio.Future[T]) -> None:
            ln.slots.release()
            ln.observe(loop.time() - started)
            if not done.cancelled():
                done.exception()  # retrieved here, so an abandoned call never logs "never retrieved"

        future.add_done_callback(finished)
        try:
            return await self._outcome(future, budget, request, commit)
        except asyncio.CancelledError:
            budget.cancel("the request was cancelled")
            raise
        except TimeoutError:
            budget.cancel("past the request's budget")
            raise self._timeout("processing") from None
        except DeadlineExceeded:
            raise self._timeout("processing") from None
        except Exception as exc:
            raise map_exception(exc) from None

    async def _outcome(
        self, future: asyncio.Future[T], budget: Deadline, request: Request | None, commit: _WriteStart | None
    ) -> T:
        """Wait for ``future`` until the deadline, checking whether the client is still there.

        A write that began (``commit``) is waited for to the end, past the deadline too.
        """
        while True:
            writing = commit is not None and commit.started
            timeout = DISCONNECT_POLL_S if writing else min(DISCONNECT_POLL_S, budget.remaining())
            done, _ = await asyncio.wait({future}, timeout=timeout)
            if done:
                return future.result()
            if writing:
                continue
            if budget.remaining() <= 0:
                if commit is not None and not commit.abandon():
                    continue  # the write began just now: see it through
                raise TimeoutError
            if request is not None and await request.is_disconnected():
                if commit is not None and not commit.abandon():
                    continue
                budget.cancel("the client disconnected")
                self.metrics.cancelled.inc()
                raise self._client_gone()

    def _client_gone(self) -> ApiError:
        return ApiError(499, "client_closed_request", "the client closed the connection; the work was stopped")

    def _timeout(self, phase: str) -> ApiError:
        self.metrics.timeouts.inc()
        return ApiError(
            503,
            "timeout",
            f"the request ran past the server's {self.request_timeout_s:g} s limit while {phase}; "
            "retry later or send fewer documents",
            {"Retry-After": "5"},
        )

    async def verdict_of(
        self, fn: Callable[[], Verdict], *, lane: str = "model", request: Request | None = None
    ) -> S.VerdictOut:
        """Run a gate call with :meth:`call`; its verdict as the response (metrics recorded)."""
        return self.verdict_out(await self.call(fn, lane=lane, request=request))

    def verdict_out(self, verdict: Verdict) -> S.VerdictOut:
        """Response model of a verdict; records the verdict metrics."""
        self.metrics.verdicts.labels(stage=verdict.stage, level=verdict.trust_level, decision=verdict.decision).inc()
        self.metrics.trust_score.labels(stage=verdict.stage).observe(verdict.trust_score)
        return S.VerdictOut.model_validate({**verdict.to_dict(), "decision": verdict.decision})


class _WriteStart:
    """Whether a store write began (then it is waited for) or was given up before it could.

    The worker calls :meth:`begin` holding the write lock; the event loop calls
    :meth:`abandon` when the budget runs out or the client leaves. One lock orders the two,
    so a write never begins after its request was answered with a timeout, and a request
    is never answered with a timeout after its write began.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = False
        self._abandoned = False

    def begin(self) -> None:
        """Mark the write begun, or raise :class:`DeadlineExceeded` when it was abandoned."""
        with self._lock:
            if self._abandoned:
                raise DeadlineExceeded("stopped before writing to the store: the request was given up")
            self.started = True

    def abandon(self) -> bool:
        """Give the write up unless it began; ``True`` when it is given up (it will never begin)."""
        with self._lock:
            if not self.started:
                self._abandoned = True
            return self._abandoned


def runtime_of(request: Request) -> Runtime:
    """The runtime of the app serving ``request``, or a 503 while the lifespan has not run."""
    runtime: Runtime | None = getattr(request.app.state, "ragtrust", None)
    if runtime is None:
        raise ApiError(503, "not_ready", "the server is starting (lifespan not run yet)", {"Retry-After": "5"})
    return runtime


__all__ = ["Gate", "GateFactory", "ReadWriteLock", "Runtime", "runtime_of"]
