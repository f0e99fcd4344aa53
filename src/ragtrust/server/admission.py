"""Admission control: a bounded queue in front of each thread pool, and the deadline of a call.

The pipeline is CPU-bound, so accepting more requests than the workers can finish only makes
every request late. Each :class:`Lane` runs at most ``workers`` calls at once and lets at
most ``max_queue`` more wait; a request that finds the queue full, or that would likely not
finish within its budget at the lane's recent service time, is answered ``503`` with a
``Retry-After`` at once (an estimate from that service time), instead of waiting out a
timeout. A call that is admitted runs under a
:class:`~ragtrust.deadline.Deadline`: when the budget runs out or the client disconnects, the
deadline is cancelled and the pipeline stops at its next stage, so abandoned work frees its
worker early.

The server has three lanes: ``ask`` (the full pipeline, which may wait on an LLM backend),
``model`` (screen / verify / align / ingest: model work without an LLM) and ``light``
(reading a stored document), so a hung LLM endpoint can fill the ``ask`` lane without
delaying ``/v1/screen``, and a long queue of asks never delays the span viewer.

Example:
    >>> lane = Lane("model", workers=2, max_queue=4)
    >>> lane.full(budget_s=30), lane.retry_after_s()
    (False, 1)
    >>> lane.close()
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import math
import os
import threading
from dataclasses import dataclass, field

#: lanes of the server and what runs in each
LANES = ("ask", "model", "light")
#: calls whose durations make a lane's ``slow_s``
RECENT = 20


def default_workers(cpus: int | None = None) -> int:
    """Calls to run at once per lane: one per two cores (each call's ONNX sessions use two threads).

    On 2 cores, 1 worker answered 50 clients on 512-token OWASP chunks with p50 1.4 s and
    3.6 requests/s, 2 workers with p50 3.0 s and 3.3 requests/s: two calls at once only
    share the cores (docs/benchmarks.md).

    Example:
        >>> default_workers(2), default_workers(8), default_workers(1)
        (1, 4, 1)
    """
    return max(1, (cpus if cpus is not None else os.cpu_count() or 2) // 2)


@dataclass
class Lane:
    """A thread pool with a bounded wait queue (create it inside the running event loop).

    Attributes:
        name: the lane's name (metrics, messages).
        workers: calls running at once (the pool's threads).
        max_queue: calls allowed to wait for a worker; one more is refused at once.
        service_s: moving average of a call's duration (the wait for a worker, ``Retry-After``).
        slow_s: the 90th percentile of the last :data:`RECENT` calls (how long one more call
            may take: requests on long documents vary several-fold).
    """

    name: str
    workers: int
    max_queue: int
    service_s: float = 1.0
    slow_s: float = 1.0
    waiting: int = field(default=0, init=False)
    _recent: collections.deque[float] = field(
        default_factory=lambda: collections.deque(maxlen=RECENT), init=False, repr=False
    )
    pool: concurrent.futures.ThreadPoolExecutor = field(init=False, repr=False)
    slots: asyncio.Semaphore = field(init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        """Create the pool and the slots."""
        if self.workers < 1 or self.max_queue < 0:
            raise ValueError(f"lane {self.name}: workers must be >= 1 and max_queue >= 0")
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=self.name)
        self.slots = asyncio.Semaphore(self.workers)

    def full(self, budget_s: float | None = None) -> bool:
        """Whether the next call is refused (every worker busy and the queue full, or too slow).

        With ``budget_s``, a call that would likely not finish within it is refused too. The
        likely finish is the wait for a worker (the calls ahead, spread over the workers, at
        the mean service time) plus one slow call (the recent 90th percentile), so a slow
        lane sheds early instead of admitting requests that would time out in the queue.
        """
        if not self.slots.locked():
            return False
        if self.waiting >= self.max_queue:
            return True
        return budget_s is not None and self.expected_finish_s() > budget_s

    def expected_finish_s(self) -> float:
        """Likely seconds until a call admitted now has finished (when every worker is busy)."""
        return self.service_s * (self.waiting + 1) / self.workers + max(self.service_s, self.slow_s)

    def retry_after_s(self) -> int:
        """Whole seconds until a worker is likely free for a new call (at least 1)."""
        backlog = (self.waiting + self.workers) / self.workers
        return max(1, math.ceil(self.service_s * backlog))

    def observe(self, seconds: float) -> None:
        """Fold one call's duration into :attr:`service_s` and :attr:`slow_s`."""
        seconds = max(0.0, seconds)
        with self._lock:
            self.service_s = 0.8 * self.service_s + 0.2 * seconds
            self._recent.append(seconds)
            ordered = sorted(self._recent)
            self.slow_s = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]

    def close(self) -> None:
        """Stop the pool; running calls finish in their threads, queued ones are dropped."""
        self.pool.shutdown(wait=False, cancel_futures=True)


__all__ = ["LANES", "Lane", "default_workers"]
