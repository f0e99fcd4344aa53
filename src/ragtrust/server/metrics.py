"""A small, thread-safe Prometheus registry: counters, gauges and histograms with labels.

Written here instead of depending on ``prometheus-client`` because the server needs only
three metric kinds and the text exposition format (version 0.0.4) is simple. Values are
kept per label set; ``render()`` gives the text a Prometheus scraper reads at ``/metrics``.

Example:
    >>> reg = MetricsRegistry()
    >>> hits = reg.counter("demo_hits_total", "Hits.", ("route",))
    >>> hits.inc(route="/v1/ask")
    >>> 'demo_hits_total{route="/v1/ask"} 1' in reg.render()
    True
"""

from __future__ import annotations

import bisect
import math
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

#: latency buckets in seconds: from cache hits (ms) to full CPU verdicts (tens of seconds)
DEFAULT_LATENCY_BUCKETS_S: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _format_value(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _label_text(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    parts = [f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


@dataclass
class _Metric(ABC):
    name: str
    help: str
    label_names: tuple[str, ...] = ()
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    kind = "untyped"

    def _key(self, labels: dict[str, str]) -> tuple[str, ...]:
        if set(labels) != set(self.label_names):
            raise ValueError(f"metric {self.name}: expected labels {list(self.label_names)}, got {sorted(labels)}")
        return tuple(str(labels[n]) for n in self.label_names)

    def _header(self) -> list[str]:
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]

    @abstractmethod
    def render(self) -> list[str]:
        """Exposition lines of this metric."""


@dataclass
class _ScalarMetric(_Metric):
    """One float per label set: the shared body of counters and gauges."""

    _values: dict[tuple[str, ...], float] = field(default_factory=dict, init=False, repr=False)

    def _add(self, amount: float, labels: dict[str, str]) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        """Return the current value (0 for a label set never seen)."""
        with self._lock:
            return self._values.get(self._key(labels), 0.0)

    def render(self) -> list[str]:
        """Exposition lines of this metric."""
        with self._lock:
            items = sorted(self._values.items())
        lines = self._header()
        lines += [f"{self.name}{_label_text(self.label_names, k)} {_format_value(v)}" for k, v in items]
        return lines


@dataclass
class Counter(_ScalarMetric):
    """A monotonically increasing value per label set."""

    kind = "counter"

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        """Add ``amount`` (>= 0) to the counter of these labels."""
        if amount < 0:
            raise ValueError(f"counter {self.name} cannot decrease (amount={amount})")
        self._add(amount, labels)


@dataclass
class Gauge(_ScalarMetric):
    """A value that goes up and down per label set."""

    kind = "gauge"

    def set(self, value: float, **labels: str) -> None:
        """Set the gauge."""
        key = self._key(labels)
        with self._lock:
            self._values[key] = float(value)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        """Add ``amount`` (may be negative)."""
        self._add(amount, labels)

    def dec(self, amount: float = 1.0, **labels: str) -> None:
        """Subtract ``amount``."""
        self._add(-amount, labels)


@dataclass
class Histogram(_Metric):
    """Cumulative bucket counts, sum and count per label set."""

    buckets: tuple[float, ...] = DEFAULT_LATENCY_BUCKETS_S
    _counts: dict[tuple[str, ...], list[int]] = field(default_factory=dict, init=False, repr=False)
    _sums: dict[tuple[str, ...], float] = field(default_factory=dict, init=False, repr=False)
    kind = "histogram"

    def __post_init__(self) -> None:
        """Buckets must be sorted and finite (``+Inf`` is implicit)."""
        if list(self.buckets) != sorted(self.buckets) or any(math.isinf(b) for b in self.buckets):
            raise ValueError(f"histogram {self.name}: buckets must be sorted and finite")

    def observe(self, value: float, **labels: str) -> None:
        """Record one observation."""
        key = self._key(labels)
        index = bisect.bisect_left(self.buckets, value)  # first bucket with bound >= value
        with self._lock:
            counts = self._counts.setdefault(key, [0] * (len(self.buckets) + 1))
            counts[index] += 1
            self._sums[key] = self._sums.get(key, 0.0) + value

    def count(self, **labels: str) -> int:
        """Return the number of observations for these labels."""
        with self._lock:
            return sum(self._counts.get(self._key(labels), []))

    def render(self) -> list[str]:
        """Exposition lines: ``_bucket`` (cumulative), ``_sum`` and ``_count``."""
        with self._lock:
            items = sorted((k, list(v), self._sums[k]) for k, v in self._counts.items())
        lines = self._header()
        bounds = [*self.buckets, math.inf]
        for key, counts, total in items:
            running = 0
            for bound, n in zip(bounds, counts, strict=True):
                running += n
                le = f'le="{_format_value(bound)}"'
                lines.append(f"{self.name}_bucket{_label_text(self.label_names, key, le)} {running}")
            lines.append(f"{self.name}_sum{_label_text(self.label_names, key)} {_format_value(total)}")
            lines.append(f"{self.name}_count{_label_text(self.label_names, key)} {running}")
        return lines


@dataclass
class MetricsRegistry:
    """Holds metrics by name and renders them all in the Prometheus text format."""

    _metrics: dict[str, _Metric] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def _add(self, metric: _Metric) -> None:
        with self._lock:
            if metric.name in self._metrics:
                raise ValueError(f"metric {metric.name} is already registered")
            self._metrics[metric.name] = metric

    def counter(self, name: str, help: str, labels: Sequence[str] = ()) -> Counter:
        """Register and return a counter."""
        metric = Counter(name, help, tuple(labels))
        self._add(metric)
        return metric

    def gauge(self, name: str, help: str, labels: Sequence[str] = ()) -> Gauge:
        """Register and return a gauge."""
        metric = Gauge(name, help, tuple(labels))
        self._add(metric)
        return metric

    def histogram(
        self,
        name: str,
        help: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] = DEFAULT_LATENCY_BUCKETS_S,
    ) -> Histogram:
        """Register and return a histogram."""
        metric = Histogram(name, help, tuple(labels), tuple(buckets))
        self._add(metric)
        return metric

    def render(self) -> str:
        """All metrics in the Prometheus text exposition format."""
        with self._lock:
            metrics = list(self._metrics.values())
        lines: list[str] = []
        for metric in metrics:
            lines += metric.render()
        return "\n".join(lines) + "\n"


@dataclass
class ServerMetrics:
    """The metrics the ragtrust server exports."""

    registry: MetricsRegistry = field(default_factory=MetricsRegistry)

    def __post_init__(self) -> None:
        """Register the server's metrics."""
        reg = self.registry
        self.requests = reg.counter(
            "ragtrust_http_requests_total", "HTTP requests by method, route and status.", ("method", "route", "status")
        )
        self.latency = reg.histogram(
            "ragtrust_http_request_duration_seconds", "HTTP request latency in seconds.", ("method", "route")
        )
        self.in_flight = reg.gauge("ragtrust_http_requests_in_flight", "HTTP requests being served.")
        self.verdicts = reg.counter(
            "ragtrust_verdicts_total", "Verdicts by stage, trust level and decision.", ("stage", "level", "decision")
        )
        self.trust_score = reg.histogram(
            "ragtrust_trust_score",
            "Trust scores of returned verdicts.",
            ("stage",),
            buckets=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
        )
        self.documents_ingested = reg.counter("ragtrust_documents_ingested_total", "Documents ingested via the API.")
        self.timeouts = reg.counter("ragtrust_request_timeouts_total", "Requests past the per-request timeout.")
        self.shed = reg.counter(
            "ragtrust_requests_shed_total", "Requests refused at once (503, Retry-After): queue full.", ("lane",)
        )
        self.cancelled = reg.counter(
            "ragtrust_requests_cancelled_total", "Requests whose client disconnected; their work was stopped."
        )
        self.models_ready = reg.gauge("ragtrust_models_ready", "1 when the models are warm, else 0.")


__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_LATENCY_BUCKETS_S",
    "Counter",
    "Gauge",
    "Histogram",
    "MetricsRegistry",
    "ServerMetrics",
]
