"""Calibrating relevance (the RAG triad's context and answer relevance) on a real store.

:func:`run_relevance_eval` asks every question of two sets through the full
:class:`~ragtrust.pipeline.TrustGate` over a store:

* **on-topic**: questions the store can answer (default: the 36 OWASP questions shipped in
  ``ragtrust/data/owasp_questions.jsonl``);
* **off-topic**: questions it cannot (default: ``ragtrust/data/offtopic_questions.jsonl``,
  written by the ragtrust project: geography, cooking, sport, general knowledge,
  celebrities, everyday life, and a "shared vocabulary" group whose words also occur in
  security texts: storing bread, injecting insulin, a Netflix password).

Each question is asked once, with the relevance thresholds at 0 so that relevance is
measured but decides nothing; every other condition of the decision (T >= tau, grounding,
the "does not explicitly state" preface, ...) applies as configured. Then:

1. :func:`fit` fits both thresholds together on the decision: the pair of cuts whose
   decisions have the best Youden J (share of on-topic questions trusted minus share of
   off-topic ones trusted; the most permissive pair among equals). Rounded to three
   decimals when rounding changes no decision.
2. A verdict is trusted under thresholds ``(c, a)`` iff it was trusted without relevance
   and ``context >= c`` and ``answer >= a`` (a part that was not measured passes).
3. Figures: in-sample (the fitted thresholds on the questions they were fitted on, an
   optimistic figure), **leave-one-out** (each question decided by thresholds fitted on
   the others: the honest one), and with the thresholds the configuration holds now.

The fitting itself (steps 1 to 3) is in :mod:`~ragtrust.eval.relevance_fit`; its names still
import from here.

Example:
    >>> fit_threshold([0.7, 0.6, 0.55], [0.1, 0.2, 0.3])
    0.425
    >>> decide(Row("q", "?", True, "", 0.5, 0.5, None, 0.8, "MEDIUM", True, (), False, 0.0), 0.4, 0.4)
    True
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtrust.config import Settings
from ragtrust.errors import InputError
from ragtrust.eval.relevance_fit import Row, auc, calibrate, decide, figures, fit, fit_threshold
from ragtrust.io import atomic_write_text, read_question_rows
from ragtrust.record import utc_stamp, versions

#: the off-topic question set shipped with ragtrust (written by the project)
OFFTOPIC_FILE = "offtopic_questions.jsonl"
#: the on-topic question set shipped with ragtrust
ONTOPIC_FILE = "owasp_questions.jsonl"
#: decision reasons that come from relevance (left out of "trusted without relevance")
_RELEVANCE_REASONS = ("no relevant evidence", "the answer does not address the question")


@dataclass(frozen=True)
class RelevanceQuestion:
    """A question and its label, ``on_topic``: whether the store can answer it."""

    id: str
    question: str
    on_topic: bool
    category: str = ""


_ROW_FIELDS = frozenset(f.name for f in dataclasses.fields(Row))


def load_relevance_questions(path: str | Path | None, *, on_topic: bool) -> list[RelevanceQuestion]:
    """Read a JSONL question file (``{"id"?, "question", "category"?}`` per line).

    Args:
        path: the file; ``None`` reads the shipped set (OWASP questions when ``on_topic``,
            else the project's off-topic questions).
        on_topic: the label of every question of the file.

    Raises:
        InputError: a line is not JSON or has no question; the file has no question.
    """
    rows = read_question_rows(path, ONTOPIC_FILE if on_topic else OFFTOPIC_FILE)
    default = "on-topic" if on_topic else "off-topic"
    return [
        RelevanceQuestion(str(row.get("id") or f"q{n}"), question, on_topic, str(row.get("category") or default))
        for _, n, row, question in rows
    ]


def measure(
    gate: Any,
    questions: Sequence[RelevanceQuestion],
    progress: Callable[[int, int], None] | None = None,
) -> list[Row]:
    """Ask every question through ``gate`` (a :class:`TrustGate` whose thresholds are 0)."""
    rows = []
    for i, q in enumerate(questions, start=1):
        start = time.perf_counter()
        verdict = gate.ask(q.question)
        latency = time.perf_counter() - start
        other = tuple(r for r in verdict.decision_reasons if not r.startswith(_RELEVANCE_REASONS))
        rows.append(
            Row(
                id=q.id,
                question=q.question,
                on_topic=q.on_topic,
                category=q.category,
                context=verdict.context_relevance,
                answer=verdict.answer_relevance,
                max_similarity=verdict.max_similarity,
                trust_score=verdict.trust_score,
                trust_level=verdict.trust_level,
                trusted_without_relevance=not other,
                other_reasons=other,
                prefaced=bool(verdict.preface),
                latency_s=latency,
                relevance_s=float(verdict.timings_s.get("relevance", 0.0)),
            )
        )
        if progress is not None:
            progress(i, len(questions))
    return rows


def run_relevance_eval(
    store_dir: str | Path,
    settings: Settings,
    *,
    on_topic: Sequence[RelevanceQuestion] | None = None,
    off_topic: Sequence[RelevanceQuestion] | None = None,
    command: str = "",
    progress: Callable[[int, int], None] | None = None,
    gate: Any = None,
) -> dict[str, Any]:
    """Ask both question sets over a store, fit the thresholds and report (see the module docstring).

    Args:
        store_dir: a store built by ``ragtrust ingest``.
        settings: the configuration; its relevance thresholds are reported as ``configured``
            and set to 0 for the measurement.
        on_topic: questions the store answers; default: the shipped OWASP questions.
        off_topic: questions it cannot answer; default: the shipped off-topic questions.
        command: the command line, recorded in the report.
        progress: called with (done, total) after each question.
        gate: a ready :class:`~ragtrust.pipeline.TrustGate` (tests); default: one over the store.
    """
    from ragtrust.pipeline import TrustGate

    questions = [
        *(on_topic if on_topic is not None else load_relevance_questions(None, on_topic=True)),
        *(off_topic if off_topic is not None else load_relevance_questions(None, on_topic=False)),
    ]
    configured = (settings.relevance.context_threshold, settings.relevance.answer_threshold)
    measuring = settings.with_overrides(
        {"relevance": {"enabled": True, "context_threshold": 0.0, "answer_threshold": 0.0}}
    )
    if gate is None:
        from ragtrust.ingest.store import Store
        from ragtrust.models.embedder import default_embedder

        store = Store.open(store_dir, default_embedder(measuring), settings=measuring)
        gate = TrustGate.from_settings(measuring, store=store)
    started = time.perf_counter()
    rows = measure(gate, questions, progress)
    elapsed = time.perf_counter() - started
    return {
        "command": command,
        "date": utc_stamp(),
        "store": str(store_dir),
        "models": dict(gate.model_ids()),
        "versions": versions("ragtrust", "onnxruntime", "python"),
        "config": settings.to_dict(),
        "procedure": (
            "each question asked once through TrustGate.ask with relevance thresholds 0 (measured, not deciding); "
            "a verdict is trusted iff trusted without relevance and context >= c and answer >= a; (c, a) fitted "
            "jointly by the Youden J of that decision (ties: the most permissive pair); leave-one-out refits both "
            "thresholds without the question it decides"
        ),
        "questions": {
            "on_topic": sum(q.on_topic for q in questions),
            "off_topic": sum(not q.on_topic for q in questions),
        },
        "elapsed_s": round(elapsed, 1),
        "relevance_check_ms": _latency_ms([r.relevance_s for r in rows]),
        **calibrate(rows, configured),
        "rows": [dataclasses.asdict(r) for r in rows],
    }


def combine_reports(reports: Sequence[Mapping[str, Any]], command: str = "") -> dict[str, Any]:
    """One pair of thresholds for several stores: fit on the pooled rows of their reports.

    Each report is one :func:`run_relevance_eval` (one store, its on-topic questions, the
    off-topic ones). The thresholds are fitted on every row together (Youden J, as for one
    store), so they hold across corpora rather than for the one they were fitted on; the
    figures are given pooled (in sample and leave-one-out) and per store at the pooled
    thresholds (leave-one-out per store: each question decided by thresholds fitted on all
    the other rows of every store).

    Raises:
        InputError: no report, a report without rows, or two reports of one store (its
            questions would count twice, and each would stay in its own leave-one-out fit).
    """
    if not reports:
        raise InputError("nothing to combine: pass the reports of `ragtrust eval relevance` runs")
    rows: list[Row] = []
    corpus: list[str] = []
    for report in reports:
        if not report.get("rows"):
            raise InputError(f"report of {report.get('store', '?')} has no rows")
        if str(report.get("store", "?")) in corpus:
            raise InputError(
                f"two reports of store {report.get('store', '?')}: combine one report per store "
                "(its questions would count twice and leak into their own leave-one-out fit)"
            )
        for r in report["rows"]:
            fields = {k: v for k, v in r.items() if k in _ROW_FIELDS}
            rows.append(Row(**{**fields, "other_reasons": tuple(r.get("other_reasons", ()))}))
            corpus.append(str(report.get("store", "?")))
    pooled = calibrate(rows)
    thresholds = (pooled["thresholds"]["context_threshold"], pooled["thresholds"]["answer_threshold"])
    loo = []
    for i in range(len(rows)):
        loo.append(decide(rows[i], *fit([r for j, r in enumerate(rows) if j != i])))
    per_store: dict[str, Any] = {}
    for name in dict.fromkeys(corpus):
        idx = [i for i, c in enumerate(corpus) if c == name]
        sub = [rows[i] for i in idx]
        per_store[name] = {
            "own_fit": dict(zip(("context_threshold", "answer_threshold"), fit(sub), strict=True)),
            "without_relevance": figures(sub, [r.trusted_without_relevance for r in sub]),
            "in_sample": figures(sub, [decide(r, *thresholds) for r in sub]),
            "leave_one_out": figures(sub, [loo[i] for i in idx]),
        }
    return {
        "command": command,
        "date": utc_stamp(),
        "combined": [
            {k: r.get(k) for k in ("command", "date", "store", "models", "versions", "questions")} for r in reports
        ],
        "procedure": "thresholds fitted on the pooled rows of the combined reports (see each report's procedure)",
        **pooled,
        "per_store": per_store,
        "rows": [{"store": c, **dataclasses.asdict(r)} for c, r in zip(corpus, rows, strict=True)],
    }


def write_relevance_report(report: Mapping[str, Any], out: str | Path) -> Path:
    """Write the report as indented JSON (atomically)."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return path


def _latency_ms(values: Sequence[float]) -> dict[str, float]:
    """Median and maximum of per-question durations, in milliseconds."""
    ordered = sorted(values)
    if not ordered:
        return {}
    return {"median": round(1000 * ordered[len(ordered) // 2], 2), "max": round(1000 * ordered[-1], 2)}


__all__ = [
    "RelevanceQuestion",
    "Row",
    "auc",
    "calibrate",
    "combine_reports",
    "decide",
    "figures",
    "fit",
    "fit_threshold",
    "load_relevance_questions",
    "measure",
    "run_relevance_eval",
    "write_relevance_report",
]
