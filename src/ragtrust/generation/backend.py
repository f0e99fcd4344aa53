"""Isolation of one LLM backend: a concurrency limit, a circuit breaker, and the retry rules.

A hung or failing LLM endpoint must not take the rest of ragtrust with it. Every request of a
:class:`~ragtrust.generation.openai.ChatClient` goes through its :class:`BackendGuard`:

- **Concurrency limit**: at most ``max_concurrency`` requests in flight to the backend; a
  caller waits for a slot only as long as its own deadline allows, then gets a
  :class:`~ragtrust.errors.BackendError` ("busy") instead of queueing forever.
- **Circuit breaker**: after ``failure_threshold`` consecutive transient failures (timeouts,
  refused connections, 429 / 5xx after the retries), the breaker *opens*: calls fail at once
  for ``cooldown_s`` seconds with a message saying when the next try is. Then one trial call
  is let through (*half-open*); its success closes the breaker, its failure opens it again.
  A reply the backend did send (a 4xx, a malformed body, a too-long prompt) proves it is up
  and does not count.

The retry rules (used with tenacity by the client): :class:`TransientError` is what is worth
retrying, :class:`RetryAfterWait` waits at least the server's ``Retry-After``, and
:class:`PastDeadline` stops when the next wait would outlive the request's deadline.

Example:
    >>> guard = BackendGuard("http://llm.test/v1", failure_threshold=2, cooldown_s=60)
    >>> with guard.call(wait_s=1):
    ...     guard.record_failure()
    >>> with guard.call(wait_s=1):
    ...     guard.record_failure()
    >>> guard.state
    'open'
    >>> with guard.call(wait_s=1):
    ...     pass
    Traceback (most recent call last):
    ...
    ragtrust.errors.BackendError: LLM at http://llm.test/v1 is unavailable: 2 failures in a row; the next try is in 60 s
"""

from __future__ import annotations

import contextlib
import email.utils
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx
import tenacity

from ragtrust import deadline
from ragtrust.errors import BackendError


@dataclass
class BackendGuard:
    """The concurrency limit and circuit breaker of one backend (thread-safe).

    Args:
        endpoint: the backend's URL (for messages).
        max_concurrency: requests in flight at once.
        failure_threshold: consecutive transient failures that open the breaker.
        cooldown_s: how long an open breaker refuses calls before one trial.
        clock: monotonic seconds (tests pass a fake).
    """

    endpoint: str
    max_concurrency: int = 2
    failure_threshold: int = 5
    cooldown_s: float = 30.0
    clock: Callable[[], float] = time.monotonic
    _slots: threading.BoundedSemaphore = field(init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _failures: int = field(default=0, init=False)
    _opened_at: float | None = field(default=None, init=False)
    _trial_running: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        """Validate the limits and create the slots."""
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.failure_threshold < 1:
            raise ValueError(f"failure_threshold must be >= 1, got {self.failure_threshold}")
        self._slots = threading.BoundedSemaphore(self.max_concurrency)

    @property
    def state(self) -> str:
        """``closed`` (calls pass), ``open`` (calls refused) or ``half-open`` (one trial allowed)."""
        with self._lock:
            return self._state()

    def _state(self) -> str:
        if self._opened_at is None:
            return "closed"
        if self.clock() - self._opened_at < self.cooldown_s:
            return "open"
        return "half-open"

    def _admit(self) -> bool:
        """Let the call through the breaker; ``True`` when it is the half-open trial."""
        with self._lock:
            state = self._state()
            if state == "closed":
                return False
            if state == "half-open" and not self._trial_running:
                self._trial_running = True
                return True
            assert self._opened_at is not None
            wait = max(1, math.ceil(self.cooldown_s - (self.clock() - self._opened_at)))
            if state == "half-open":  # another caller holds the trial
                wait = 1
            raise BackendError(
                f"LLM at {self.endpoint} is unavailable: {self._failures} failures in a row; "
                f"the next try is in {wait} s"
            )

    @contextlib.contextmanager
    def call(self, *, wait_s: float) -> Iterator[None]:
        """Hold a slot for one request, after the breaker lets it through.

        Raises:
            BackendError: the breaker is open, or no slot freed up within ``wait_s``.
        """
        trial = self._admit()
        try:
            if not self._slots.acquire(timeout=max(0.0, wait_s)):
                raise BackendError(
                    f"LLM at {self.endpoint} is busy: {self.max_concurrency} request(s) in flight and no slot "
                    f"freed up within {wait_s:.1f} s"
                )
            try:
                yield
            finally:
                self._slots.release()
        finally:
            if trial:
                with self._lock:
                    self._trial_running = False

    def record_success(self) -> None:
        """The backend answered: close the breaker."""
        with self._lock:
            self._failures = 0
            self._opened_at = None

    def record_failure(self) -> None:
        """A transient failure: open the breaker at the threshold (again, after a failed trial)."""
        with self._lock:
            self._failures += 1
            if self._failures >= self.failure_threshold:
                self._opened_at = self.clock()


class TransientError(BackendError):
    """A failure worth retrying (timeout, 429, 5xx), with the server's ``Retry-After`` if it sent one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class UnreachableError(BackendError):
    """No connection to the server (not retried; counts against the circuit breaker)."""


def retry_after_s(response: httpx.Response, cap_s: float = 60.0) -> float | None:
    """The server's ``Retry-After`` in seconds (a number or an HTTP date), at most ``cap_s``."""
    raw = response.headers.get("retry-after", "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(raw).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(cap_s, max(0.0, seconds))


class RetryAfterWait(tenacity.wait.wait_base):
    """Wait as ``base`` says, or as long as the server's ``Retry-After`` when that is longer."""

    def __init__(self, base: tenacity.wait.wait_base) -> None:
        self.base = base

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        """Seconds to wait before the next attempt."""
        wait = self.base(retry_state)
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None and outcome.failed else None
        after = getattr(exc, "retry_after", None)
        return max(wait, after) if after is not None else wait


class PastDeadline(tenacity.stop.stop_base):
    """Stop retrying when the next wait would run past the request's deadline."""

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        """Whether to give up now."""
        upcoming = retry_state.upcoming_sleep or 0.0
        return deadline.current() is not None and deadline.remaining(float("inf")) <= upcoming


__all__ = ["BackendGuard", "PastDeadline", "RetryAfterWait", "TransientError", "UnreachableError", "retry_after_s"]
