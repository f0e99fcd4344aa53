"""The stopwatch behind ``Verdict.timings_s``: seconds per stage, summed when a stage repeats.

Each stage starts with :func:`ragtrust.deadline.check`: work whose request is overdue or
whose client has gone stops there (a no-op outside the server).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ragtrust import deadline
from ragtrust.pipeline.telemetry import stage_span


@dataclass
class Stopwatch:
    """Seconds spent per named stage.

    Example:
        >>> watch = Stopwatch()
        >>> with watch.stage("screen"):
        ...     pass
        >>> list(watch.timings)
        ['screen']
    """

    timings: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block and add it to ``name``'s total (after the deadline check)."""
        deadline.check(name)
        start = time.perf_counter()
        try:
            with stage_span(name):  # an OpenTelemetry span when telemetry is on, else nothing
                yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start


__all__ = ["Stopwatch"]
