"""The server's metrics on ``prometheus-client``: same names and labels, one registry per app."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from tests.server.conftest import InstrumentedGate, memory_store

from ragtrust.server.app import create_app
from ragtrust.server.metrics import CONTENT_TYPE, DEFAULT_LATENCY_BUCKETS_S, TRUST_SCORE_BUCKETS, ServerMetrics

#: exposed sample name -> label names, as the hand-written registry exposed them before
EXPOSED = {
    "ragtrust_http_requests_total": {"method", "route", "status"},
    "ragtrust_http_request_duration_seconds_count": {"method", "route"},
    "ragtrust_http_requests_in_flight": set(),
    "ragtrust_verdicts_total": {"stage", "level", "decision"},
    "ragtrust_trust_score_count": {"stage"},
    "ragtrust_documents_ingested_total": set(),
    "ragtrust_request_timeouts_total": set(),
    "ragtrust_requests_shed_total": {"lane"},
    "ragtrust_requests_cancelled_total": set(),
    "ragtrust_models_ready": set(),
}


def _samples(text: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def _fill(m: ServerMetrics) -> None:
    m.requests.labels(method="POST", route="/v1/ask", status="200").inc()
    m.latency.labels(method="POST", route="/v1/ask").observe(0.3)
    m.in_flight.inc()
    m.verdicts.labels(stage="full", level="high", decision="allow").inc()
    m.trust_score.labels(stage="full").observe(0.85)
    m.documents_ingested.inc(3)
    m.timeouts.inc()
    m.shed.labels(lane="ask").inc()
    m.cancelled.inc()
    m.models_ready.set(1)


def test_names_labels_and_values_are_those_scrapers_knew() -> None:
    m = ServerMetrics()
    _fill(m)
    text = m.registry.render()
    samples = _samples(text)
    for name, labels in EXPOSED.items():
        assert name in samples, name
        assert {k for s in samples[name] for k in s.labels} == labels, name
    assert "ragtrust_request_timeouts_total 1" in text
    assert 'ragtrust_requests_shed_total{lane="ask"} 1' in text
    assert samples["ragtrust_documents_ingested_total"][0].value == 3
    assert "ragtrust_http_requests_total_total" not in text
    assert CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"


def test_histogram_buckets_are_kept() -> None:
    m = ServerMetrics()
    _fill(m)
    samples = _samples(m.registry.render())
    latency = samples["ragtrust_http_request_duration_seconds_bucket"]
    assert [float(s.labels["le"]) for s in latency] == [*DEFAULT_LATENCY_BUCKETS_S, float("inf")]
    assert [s.value for s in latency] == [0] * 6 + [1] * 8  # 0.3 s falls in the 0.5 s bucket
    trust = samples["ragtrust_trust_score_bucket"]
    assert [float(s.labels["le"]) for s in trust] == [*TRUST_SCORE_BUCKETS, float("inf")]
    assert samples["ragtrust_trust_score_sum"][0].value == 0.85


def test_each_server_metrics_owns_its_registry() -> None:
    first, second = ServerMetrics(), ServerMetrics()  # a second set would raise on a shared registry
    first.timeouts.inc()
    assert "ragtrust_request_timeouts_total 1" in first.registry.render()
    assert "ragtrust_request_timeouts_total 0" in second.registry.render()
    assert REGISTRY.get_sample_value("ragtrust_request_timeouts_total") is None  # never the global one


@pytest.mark.anyio
async def test_two_apps_in_one_process_count_apart(gate: InstrumentedGate, make_client: Any) -> None:
    async with make_client(create_app(gate=gate)) as one, make_client(create_app(gate=gate)) as two:
        await one.get("/healthz")
        first = await one.get("/metrics")
        second = await two.get("/metrics")
    assert first.headers["content-type"] == CONTENT_TYPE
    assert 'ragtrust_http_requests_total{method="GET",route="/healthz",status="200"} 1' in first.text
    assert "/healthz" not in second.text
    assert _samples(second.text)  # parses as Prometheus text


@pytest.mark.anyio
async def test_the_web_uis_static_files_count_under_their_mount(gate: InstrumentedGate, make_client: Any) -> None:
    async with make_client(create_app(gate=gate)) as client:
        assert (await client.get("/static/app.js")).status_code == 200
        assert (await client.get("/static/no-such-file.js")).status_code == 404
        text = (await client.get("/metrics")).text
    # were route="<unmatched>": the mount had rewritten the scope's path before the label was looked up
    assert 'ragtrust_http_requests_total{method="GET",route="/static",status="200"} 1' in text
    assert 'ragtrust_http_requests_total{method="GET",route="/static",status="404"} 1' in text
    assert "<unmatched>" not in text


@pytest.mark.anyio
async def test_a_method_a_client_invents_adds_no_label_value(make_client: Any) -> None:
    # every "FOO<n>" sent to /healthz (no key needed) was a new series: memory and /metrics grew without end
    async with make_client(create_app(gate=InstrumentedGate(store=memory_store()))) as client:
        for n in range(3):
            assert (await client.request(f"FOO{n}", "/healthz")).status_code == 405
        await client.request("PROPFIND", "/healthz")
        assert (await client.get("/healthz")).status_code == 200
        text = (await client.get("/metrics")).text
    requests = _samples(text)["ragtrust_http_requests_total"]
    assert {s.labels["method"] for s in requests} == {"GET", "other"}
    [other] = [s for s in requests if s.labels["method"] == "other"]
    assert other.labels == {"method": "other", "route": "/healthz", "status": "405"} and other.value == 4
