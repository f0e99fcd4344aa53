"""The stopwatch behind ``Verdict.timings_s``: seconds per stage, summed when a stage repeats."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


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
        """Time the block and add it to ``name``'s total."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start


__all__ = ["Stopwatch"]
