"""A request's deadline and cancellation, carried through the pipeline in a context variable.

The server gives each request a :class:`Deadline` (its time budget and a cancel flag set
when the client goes away) and runs the gate call inside :func:`bound`. The pipeline calls
:func:`check` as each stage starts, so abandoned or overdue work stops between stages
instead of holding a worker to the end; the LLM client asks :func:`remaining` to cap its
own timeout, so a hung backend cannot keep a request past its budget. Outside
:func:`bound` (the CLI, a library call) there is no deadline and both are no-ops.

Example:
    >>> d = Deadline.after(60)
    >>> with bound(d):
    ...     check("screen")  # within budget: nothing happens
    >>> d.cancel("the client disconnected")
    >>> with bound(d):
    ...     check("verify")
    Traceback (most recent call last):
    ...
    ragtrust.errors.DeadlineExceeded: stopped before verify: the client disconnected
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from ragtrust.errors import DeadlineExceeded


@dataclass
class Deadline:
    """A point in time (``time.monotonic()``) past which work stops, and a cancel flag.

    Attributes:
        at: the monotonic time the budget ends.
        budget_s: the budget it was made with (for messages).
    """

    at: float
    budget_s: float
    _cancelled: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _why: str = field(default="", init=False, repr=False)

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        """A deadline ``seconds`` from now."""
        return cls(at=time.monotonic() + seconds, budget_s=seconds)

    def remaining(self) -> float:
        """Seconds left (0 when past or cancelled)."""
        if self._cancelled.is_set():
            return 0.0
        return max(0.0, self.at - time.monotonic())

    def cancel(self, why: str) -> None:
        """Stop the work at its next check (the client left, the server is shutting down)."""
        self._why = why
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancelled.is_set()

    def check(self, stage: str) -> None:
        """Raise :class:`DeadlineExceeded` when cancelled or past the deadline."""
        if self._cancelled.is_set():
            raise DeadlineExceeded(f"stopped before {stage}: {self._why}")
        if time.monotonic() >= self.at:
            raise DeadlineExceeded(f"stopped before {stage}: past the request's {self.budget_s:g} s budget")


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("ragtrust_deadline", default=None)


@contextlib.contextmanager
def bound(deadline: Deadline | None) -> Iterator[None]:
    """Run the block under ``deadline`` (``None``: no deadline)."""
    token = _CURRENT.set(deadline)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> Deadline | None:
    """The deadline of the work running in this context, if any."""
    return _CURRENT.get()


def check(stage: str) -> None:
    """Stop here when the current work is cancelled or overdue (no-op without a deadline)."""
    deadline = _CURRENT.get()
    if deadline is not None:
        deadline.check(stage)


def remaining(default: float) -> float:
    """Seconds left of the current deadline, or ``default`` without one."""
    deadline = _CURRENT.get()
    return default if deadline is None else min(default, deadline.remaining())


__all__ = ["Deadline", "DeadlineExceeded", "bound", "check", "current", "remaining"]
