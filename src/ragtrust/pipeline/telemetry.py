"""OpenTelemetry spans for the pipeline: one per operation, one per stage (off by default).

On with one setting, ``[telemetry] enabled = true`` in ``ragtrust.toml`` (or
``RAGTRUST_OTEL=1``), and ``pip install 'ragtrust[otel]'``. ragtrust imports only
``opentelemetry-api``, and only when telemetry is on: where the spans go (OTLP to Phoenix,
Langfuse, Jaeger...) is the application's SDK setup; with none, the API's tracer is a no-op.
A :meth:`TrustGate.ask <ragtrust.pipeline.TrustGate.ask>` gives::

    ragtrust.ask                gen_ai.operation.name, the verdict's numbers, a gen_ai.evaluation.result event
    ├── ragtrust.stage.retrieve
    ├── ragtrust.stage.screen   (Stage 1 and the document gate)
    ├── ragtrust.stage.extract, .align, .generate, .postprocess (grounding)
    ├── ragtrust.stage.verify   (Stage 2)
    ├── ragtrust.stage.relevance
    └── ragtrust.stage.decide   (the Trust Index)

``screen``, ``verify`` and ``answer_from`` give the stages they run under ``ragtrust.screen``,
``ragtrust.verify`` and ``ragtrust.answer_from``; a stage that repeats gives one span each
time. GenAI semantic-convention names are used where they fit (``gen_ai.operation.name``;
``gen_ai.request.model`` and the request parameters on the generate span of an LLM writer;
the ``gen_ai.evaluation.result`` event carrying the Trust Index as score and the level as
label); everything else is under ``ragtrust.``. Query and answer texts are recorded only
with ``capture_content = true``. The NLI counts are the gate's NLI engine counters over the
call (approximate when one gate serves concurrent requests).

Example:
    >>> from ragtrust.config import load_settings
    >>> enabled(load_settings(env={"RAGTRUST_OTEL": "1"}))
    True
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec
from urllib.parse import urlsplit

from ragtrust.config import Settings
from ragtrust.documents import Verdict
from ragtrust.errors import MissingDependencyError

if TYPE_CHECKING:
    from ragtrust.pipeline.gate import TrustGate

P = ParamSpec("P")

#: stage names of ``Verdict.timings_s`` whose span is named otherwise
SPAN_NAMES = {"trust": "decide"}
#: the NLI engine counters read before and after a call (see :class:`ragtrust.models.nli_engine.NLIEngine`)
NLI_COUNTERS = ("pairs_scored", "cache_hits", "calls")
#: the ``gen_ai.evaluation.name`` of the Trust Index
EVALUATION_NAME = "ragtrust.trust_index"


@dataclass(frozen=True)
class _Active:
    """The tracer of the operation in progress and the attributes of its stage spans."""

    tracer: Any
    stage_attributes: Mapping[str, Mapping[str, Any]]


_ACTIVE: contextvars.ContextVar[_Active | None] = contextvars.ContextVar("ragtrust_telemetry", default=None)


def enabled(settings: Settings) -> bool:
    """Whether ``settings`` turn telemetry on."""
    return bool(settings.telemetry.enabled)


def tracer() -> Any:
    """The OpenTelemetry tracer of ragtrust (raises the install line when ``opentelemetry-api`` is missing)."""
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise MissingDependencyError("telemetry (telemetry.enabled)", "pip install 'ragtrust[otel]'") from exc
    try:
        version = metadata.version("ragtrust")
    except metadata.PackageNotFoundError:  # a source tree that is not installed
        version = None
    return trace.get_tracer("ragtrust", version)


def stage_span(name: str) -> AbstractContextManager[Any]:
    """The span of one stage inside a traced operation; a no-op context outside one."""
    active = _ACTIVE.get()
    if active is None:
        return nullcontext()
    attributes = {"ragtrust.stage": name, **active.stage_attributes.get(name, {})}
    span: AbstractContextManager[Any] = active.tracer.start_as_current_span(
        f"ragtrust.stage.{SPAN_NAMES.get(name, name)}", attributes=attributes
    )
    return span


def traced(
    operation: str,
) -> Callable[[Callable[Concatenate[TrustGate, P], Verdict]], Callable[Concatenate[TrustGate, P], Verdict]]:
    """Run a :class:`TrustGate` method in an operation span when its settings turn telemetry on."""

    def wrap(method: Callable[Concatenate[TrustGate, P], Verdict]) -> Callable[Concatenate[TrustGate, P], Verdict]:
        @functools.wraps(method)
        def run(gate: TrustGate, /, *args: P.args, **kwargs: P.kwargs) -> Verdict:
            if not enabled(gate.settings) or _ACTIVE.get() is not None:
                return method(gate, *args, **kwargs)
            return _run_traced(operation, gate, lambda: method(gate, *args, **kwargs))

        return run

    return wrap


def _run_traced(operation: str, gate: TrustGate, call: Callable[[], Verdict]) -> Verdict:
    otel = tracer()
    token = _ACTIVE.set(_Active(otel, _stage_attributes(gate.settings)))
    try:
        name = f"ragtrust.{operation}"
        with otel.start_as_current_span(name, attributes={"gen_ai.operation.name": name}) as span:
            before = _nli_counts(gate.nli)
            verdict = call()
            span.set_attributes(verdict_attributes(verdict, capture_content=gate.settings.telemetry.capture_content))
            after = _nli_counts(gate.nli)
            for key in before.keys() & after.keys():
                span.set_attribute(f"ragtrust.nli.{key}", after[key] - before[key])
            span.add_event("gen_ai.evaluation.result", evaluation_attributes(verdict))
            return verdict
    finally:
        _ACTIVE.reset(token)


def _nli_counts(nli: Any) -> dict[str, int]:
    return {key: value for key in NLI_COUNTERS if isinstance(value := getattr(nli, key, None), int)}


def _stage_attributes(settings: Settings) -> dict[str, dict[str, Any]]:
    """What each stage span says about its component (the LLM writer in GenAI terms)."""
    retrieval = settings.retrieval
    out: dict[str, dict[str, Any]] = {
        "retrieve": {"ragtrust.retrieval.mode": retrieval.mode, "ragtrust.retrieval.top_k": retrieval.top_k},
        "screen": {"ragtrust.screening.policy": settings.screening.policy},
        "generate": {"ragtrust.generator.type": settings.generator.type},
    }
    if settings.generator.type == "openai":
        gen = settings.generator
        out["generate"].update(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": gen.model,
                "gen_ai.request.max_tokens": gen.max_tokens,
                "gen_ai.request.temperature": gen.temperature,
            }
        )
        url = urlsplit(gen.base_url)
        if url.hostname:
            out["generate"]["server.address"] = url.hostname
        if url.port:
            out["generate"]["server.port"] = url.port
    return out


def verdict_attributes(verdict: Verdict, *, capture_content: bool = False) -> dict[str, Any]:
    """The verdict's key numbers as span attributes (``None`` values left out).

    Example:
        >>> v = Verdict(query="q", trust_score=0.8, trust_level="HIGH", trusted=True, tau=0.5,
        ...             factuality=0.9, consistency=1.0, poison_probability=0.0)
        >>> verdict_attributes(v)["ragtrust.trust_score"], verdict_attributes(v)["ragtrust.documents.count"]
        (0.8, 0)
    """
    actions = [d.action for d in verdict.documents]
    attributes: dict[str, Any] = {
        "ragtrust.verdict.stage": verdict.stage,
        "ragtrust.trust_score": verdict.trust_score,
        "ragtrust.trust_level": verdict.trust_level,
        "ragtrust.trusted": verdict.trusted,
        "ragtrust.tau": verdict.tau,
        "ragtrust.factuality": verdict.factuality,
        "ragtrust.consistency": verdict.consistency,
        "ragtrust.poison_probability": verdict.poison_probability,
        "ragtrust.documents.count": len(verdict.documents),
        "ragtrust.documents.suspicious": sum(d.suspicious for d in verdict.documents),
        "ragtrust.documents.dropped": actions.count("dropped"),
        "ragtrust.documents.flagged": actions.count("flagged"),
        "ragtrust.sentences.count": len(verdict.sentences),
        "ragtrust.sentences.supported": sum(s.supported for s in verdict.sentences),
        "ragtrust.conflicts.count": len(verdict.conflicts),
        "ragtrust.warnings.count": len(verdict.warnings),
        "ragtrust.errors.count": len(verdict.errors),
        "ragtrust.decision_reasons": list(verdict.decision_reasons),
        "ragtrust.max_similarity": verdict.max_similarity,
        "ragtrust.context_relevance": verdict.context_relevance,
        "ragtrust.answer_relevance": verdict.answer_relevance,
        **{f"ragtrust.model.{name}": model for name, model in verdict.models.items()},
    }
    if capture_content:
        attributes.update({"ragtrust.query": verdict.query, "ragtrust.answer": verdict.answer})
    return {key: value for key, value in attributes.items() if value is not None}


def evaluation_attributes(verdict: Verdict) -> dict[str, Any]:
    """The ``gen_ai.evaluation.result`` event: the Trust Index as score, the level as label."""
    return {
        "gen_ai.evaluation.name": EVALUATION_NAME,
        "gen_ai.evaluation.score.value": verdict.trust_score,
        "gen_ai.evaluation.score.label": verdict.trust_level,
        "gen_ai.evaluation.explanation": "; ".join(verdict.decision_reasons) or "trusted",
    }


__all__ = ["enabled", "evaluation_attributes", "stage_span", "traced", "tracer", "verdict_attributes"]
