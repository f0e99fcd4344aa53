"""The server's Prometheus metrics, kept by ``prometheus-client`` (Apache-2.0).

Each :class:`ServerMetrics` owns its own registry (never the process-wide default), so several
apps in one process - the tests build many - do not collide. ``/metrics`` renders it with
``prometheus_client.generate_latest`` in the text exposition format 0.0.4.

Counters are named without ``_total``: the library appends it, so the exposed names
(``ragtrust_http_requests_total`` ...) are those of the earlier hand-written registry. The
library also exposes a ``<name>_created`` gauge per counter and histogram series (its start
time), as every Prometheus client does.

Example:
    >>> from prometheus_client import Counter
    >>> reg = MetricsRegistry()
    >>> hits = Counter("demo_hits", "Hits.", ("route",), registry=reg)
    >>> hits.labels(route="/v1/ask").inc()
    >>> 'demo_hits_total{route="/v1/ask"} 1.0' in reg.render()
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

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

#: buckets of the trust-score histogram: tenths of [0, 1]
TRUST_SCORE_BUCKETS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

#: what ``generate_latest`` writes (with its default underscore escaping): text format 0.0.4
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4


class MetricsRegistry(CollectorRegistry):
    """A ``prometheus_client`` registry that also renders itself as text."""

    def render(self) -> str:
        """All metrics of this registry in the Prometheus text exposition format."""
        return generate_latest(self).decode("utf-8")


@dataclass
class ServerMetrics:
    """The metrics the ragtrust server exports, in a registry of their own.

    Example:
        >>> m = ServerMetrics()
        >>> m.shed.labels(lane="ask").inc()
        >>> 'ragtrust_requests_shed_total{lane="ask"} 1.0' in m.registry.render()
        True
    """

    registry: MetricsRegistry = field(default_factory=MetricsRegistry)

    def __post_init__(self) -> None:
        """Register the server's metrics."""
        reg = self.registry
        self.requests = Counter(
            "ragtrust_http_requests",
            "HTTP requests by method, route and status.",
            ("method", "route", "status"),
            registry=reg,
        )
        self.latency = Histogram(
            "ragtrust_http_request_duration_seconds",
            "HTTP request latency in seconds.",
            ("method", "route"),
            registry=reg,
            buckets=DEFAULT_LATENCY_BUCKETS_S,
        )
        self.in_flight = Gauge("ragtrust_http_requests_in_flight", "HTTP requests being served.", registry=reg)
        self.verdicts = Counter(
            "ragtrust_verdicts",
            "Verdicts by stage, trust level and decision.",
            ("stage", "level", "decision"),
            registry=reg,
        )
        self.trust_score = Histogram(
            "ragtrust_trust_score",
            "Trust scores of returned verdicts.",
            ("stage",),
            registry=reg,
            buckets=TRUST_SCORE_BUCKETS,
        )
        self.documents_ingested = Counter(
            "ragtrust_documents_ingested", "Documents ingested via the API.", registry=reg
        )
        self.timeouts = Counter("ragtrust_request_timeouts", "Requests past the per-request timeout.", registry=reg)
        self.shed = Counter(
            "ragtrust_requests_shed",
            "Requests refused at once (503, Retry-After): queue full.",
            ("lane",),
            registry=reg,
        )
        self.cancelled = Counter(
            "ragtrust_requests_cancelled",
            "Requests whose client disconnected; their work was stopped.",
            registry=reg,
        )
        self.models_ready = Gauge("ragtrust_models_ready", "1 when the models are warm, else 0.", registry=reg)


__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_LATENCY_BUCKETS_S",
    "TRUST_SCORE_BUCKETS",
    "MetricsRegistry",
    "ServerMetrics",
]
