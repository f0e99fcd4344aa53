"""The decision: what the stages found (:class:`Outcome`) fused into a :class:`~ragtrust.documents.Verdict`.

``Verdict.trusted`` needs ``T >= tau`` *and* no failed condition: no internal failure, an
answer with a sentence that can be checked against the evidence (not "...", "[1]" or "?"),
every sentence of it grounded (``trust.unsupported = "refuse"``; under ``"drop"``
:func:`drop_unsupported` removes the others first and some sentence must remain), no
suspicious document in the context, no text in the context that screening could not read
(a script the injection classifier's vocabulary lacks), evidence about the question and an
answer that addresses it, no "does not explicitly state", no answer built on a contested
claim, and, when vetted documents were retrieved, no sentence resting only on never-vetted
ones (``trust.unvetted``).
:func:`failed_conditions` lists the conditions that failed (in words, the
``decision_reasons``) with the warnings that go with them; :func:`decide` scores T (see
:mod:`ragtrust.trust`) and assembles the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ragtrust.config import Settings
from ragtrust.documents import AnswerSentence, Conflict, Passage, RetrievedDoc, Verdict
from ragtrust.pipeline.gating import Gated
from ragtrust.pipeline.rules import (
    conflict_use,
    foreign_citations,
    score_reason,
    suspicious_use,
    unchecked_answer,
    unsupported_use,
    unvetted_use,
)
from ragtrust.pipeline.stopwatch import Stopwatch
from ragtrust.trust import TrustResult, compute_trust

if TYPE_CHECKING:
    from ragtrust.screening.aggregate import ScreeningReport
    from ragtrust.verification.relevance import RelevanceReport


@dataclass
class Outcome:
    """What the stages found for one verdict, filled in step by step.

    Attributes:
        stage: ``screen`` (Stage 1 alone), ``verify`` (a given answer) or ``full``.
        query: the question ("" when none was given).
        docs: the retrieved documents, in retrieval order.
        report: Stage 1's screening report.
        gated: what the document gate kept, flagged or dropped.
        warnings: warnings so far, for a person.
        factuality / factuality_errors: F and the verifier's failures.
        passages: the verified evidence passages the generator saw.
        answer / preface / sentences: the answer, what the writer put before it, its sentences.
        dropped: the unsupported sentences :func:`drop_unsupported` removed from the answer.
        refusal: why there is no answer to trust (blocked, nothing kept, no evidence...).
        relevance / relevance_errors: the relevance judge's report and failures.
        not_stated: the answer says the documentation does not explicitly state one.
        outside_citations: a given answer's citations that name none of its documents (``verify``).
    """

    stage: str
    query: str
    docs: Sequence[RetrievedDoc]
    report: ScreeningReport
    gated: Gated
    warnings: list[str] = field(default_factory=list)
    factuality: float = 0.5
    factuality_errors: Sequence[str] = ()
    passages: tuple[Passage, ...] = ()
    answer: str = ""
    preface: str = ""
    sentences: tuple[AnswerSentence, ...] = ()
    dropped: tuple[AnswerSentence, ...] = ()
    refusal: str | None = None
    relevance: RelevanceReport | None = None
    relevance_errors: Sequence[str] = ()
    not_stated: bool = False
    outside_citations: tuple[str, ...] = ()

    @property
    def errors(self) -> list[str]:
        """Internal failures of every stage (any one fails the decision: fail closed)."""
        return [*self.report.errors, *self.gated.errors, *self.factuality_errors, *self.relevance_errors]

    @property
    def max_similarity(self) -> float | None:
        """S_max: the best retrieval score, ``None`` when the retriever gave none."""
        scores = [d.score for d in self.docs if d.score is not None]
        return max(scores) if scores else None

    @property
    def conflicts(self) -> tuple[Conflict, ...]:
        """The conflicts Stage 1 found among the documents (and their witnesses)."""
        return tuple(getattr(self.report, "conflicts", ()) or ())


def failed_conditions(out: Outcome, settings: Settings) -> tuple[list[str], list[str]]:
    """The conditions of the decision besides ``T >= tau`` that failed, and the warnings (all so far)."""
    warnings = list(out.warnings)
    reasons = [f"screening failed: {e}" for e in out.report.errors]
    reasons += [*out.gated.errors, *out.factuality_errors, *out.relevance_errors]
    if out.refusal is not None:
        reasons.append(out.refusal)
    # Under policy 'flag' a suspicious document stays in the context: T may still clear tau
    # (a relevance-weighted P moves little), but the answer is then written from, or checked
    # against, suspicious text, and is never trusted.
    used = [d for d in out.gated.documents if d.action == "flagged"]
    if used:
        used_reasons, used_warnings = suspicious_use(out.stage, used, out.passages)
        reasons.extend(used_reasons)
        warnings.extend(used_warnings)
    # Text a screening signal could not read (a script the injection classifier's vocabulary
    # lacks) was never screened: kept in the context, it is missing integrity data (fail closed).
    unread = [
        d.doc_id
        for d in out.gated.documents
        if d.action != "dropped"
        and any(not r.skipped and isinstance(r.details.get("unscreened"), str) for r in d.signals)
    ]
    if unread:
        reasons.append(
            f"the context holds text that could not be screened for instructions ({', '.join(unread)}: "
            "a script the injection classifier cannot read)"
        )
    # A document kept in the context that no signal read (every configured signal skipped it
    # or did not apply: ``provenance`` alone without a store) was never screened: P = 0 there
    # means "not looked at", not "clean" (fail closed).
    unscreened = [
        d.doc_id for d in out.gated.documents if d.action != "dropped" and not any(not r.skipped for r in d.signals)
    ]
    if unscreened:
        reasons.append(
            f"no screening signal read {', '.join(unscreened)} (the configured signals, "
            f"{', '.join(_signal_names(settings))}, skipped it or do not apply here)"
        )
    # A sentence that is not grounded (no verified span, no NLI entailment) is the writer's
    # own: under 'refuse' it fails the answer, under 'drop' it was removed (issue 16).
    if out.stage != "screen":
        unsupported_reasons, unsupported_warnings = unsupported_use(
            out.sentences, out.dropped, settings.trust.unsupported
        )
        reasons.extend(unsupported_reasons)
        warnings.extend(unsupported_warnings)
        # "...", "[1]", "?": no sentence to check, so F is 0.5 "inconclusive" and nothing is
        # unsupported. A refusal (blocked, nothing kept, nothing written) already says why.
        if out.refusal is None:
            unchecked_reasons, unchecked_warnings = unchecked_answer(out.sentences, out.dropped)
            reasons.extend(unchecked_reasons)
            warnings.extend(unchecked_warnings)
        foreign_reasons, foreign_warnings = foreign_citations(out.outside_citations)
        reasons.extend(foreign_reasons)
        warnings.extend(foreign_warnings)
    # The RAG triad's other two legs: evidence about the question, an answer that addresses
    # it. T measures neither (a grounded answer to another question scores as well).
    if out.relevance is not None:
        reasons.extend(out.relevance.failures())
        warnings.extend(out.relevance.warnings())
    # "The documentation does not explicitly state an answer": the sentences that follow
    # are the closest evidence, not an answer, however well grounded they are.
    if out.not_stated and settings.relevance.not_stated_fails and out.stage != "screen":
        reasons.append("the answer says the documentation does not explicitly state an answer to the question")
    # Two sources that disagree: an answer built on a contested claim (or on the side the
    # witnesses blame) is not trusted, whatever T says.
    conflict_reasons, conflict_warnings = conflict_use(out.stage, out.conflicts, out.sentences, out.gated.documents)
    reasons.extend(conflict_reasons)
    warnings.extend(conflict_warnings)
    # A store that vets its documents: a sentence resting only on never-vetted ones (added
    # beside the vetted sources and never checked) is not what the store vouches for.
    if out.stage != "screen":
        unvetted_reasons, unvetted_warnings = unvetted_use(out.sentences, out.gated.documents, settings.trust.unvetted)
        reasons.extend(unvetted_reasons)
        warnings.extend(unvetted_warnings)
    return reasons, warnings


def _signal_names(settings: Settings) -> list[str]:
    """The names of the configured screening signals (a spec is a name or ``{"type": name, ...}``)."""
    from ragtrust.registry import canonical_spec

    return [canonical_spec(spec, "signal")["type"] for spec in settings.screening.signals]


def drop_unsupported(out: Outcome, settings: Settings) -> None:
    """Under ``trust.unsupported = "drop"``, remove the unsupported sentences from the answer.

    The answer is rendered again from the remaining sentences (``[n]`` markers renumbered
    by first use, the writer's preface kept), so ``answer`` and ``sentences`` agree; the
    removed ones go to ``out.dropped``. F is not recomputed: it stays the verifier's score
    of the answer as written (SPEC 4, every sentence). Call it after the sentences' support
    is known and before relevance is judged, so that the rest is decided on what remains.
    """
    if settings.trust.unsupported != "drop" or out.stage == "screen":
        return
    dropped = tuple(s for s in out.sentences if not s.supported)
    if not dropped:
        return
    from ragtrust.generation.postprocess import render_body

    out.sentences = tuple(s for s in out.sentences if s.supported)
    out.dropped = dropped
    out.answer = render_body(out.sentences, out.preface)


def score_warnings(out: Outcome, settings: Settings) -> list[str]:
    """Warnings about the score's inputs: internal failures, weak retrieval, unsupported sentences."""
    warnings = [f"Internal failure, verdict not trusted: {err}" for err in out.errors]
    s_max = out.max_similarity
    if s_max is not None and s_max < settings.trust.low_retrieval_threshold:
        warnings.append(
            f"Low-confidence retrieval: the best match has similarity {s_max:.2f} "
            f"(< {settings.trust.low_retrieval_threshold:.2f}); the trust score was reduced."
        )
    unsupported = [s for s in out.sentences if not s.supported]
    if out.sentences and unsupported and out.stage != "screen":
        warnings.append(
            f"{len(unsupported)} of {len(out.sentences)} answer sentence(s) are not supported by the documents."
        )
    return warnings


def decide(out: Outcome, settings: Settings, watch: Stopwatch, models: Mapping[str, str]) -> Verdict:
    """Fuse T and decide: trusted iff T >= tau and no other condition failed (see :mod:`ragtrust.trust`)."""
    reasons, warnings = failed_conditions(out, settings)
    with watch.stage("trust"):
        result = compute_trust(
            out.factuality,
            out.report.consistency,
            out.report.poison_probability,
            out.max_similarity,
            settings.trust,
            # any failed condition besides the score: never trusted, level at most LOW
            failed=bool(reasons),
        )
    if result.trust_score < settings.trust.tau:
        reasons.append(score_reason(result.trust_score, settings.trust.tau))
    warnings.extend(score_warnings(out, settings))
    return _assemble(out, settings, result, warnings, reasons, watch, models)


def _assemble(
    out: Outcome,
    settings: Settings,
    result: TrustResult,
    warnings: Sequence[str],
    reasons: Sequence[str],
    watch: Stopwatch,
    models: Mapping[str, str],
) -> Verdict:
    relevance = out.relevance
    return Verdict(
        query=out.query,
        trust_score=result.trust_score,
        trust_level=result.level,
        trusted=result.trusted,
        tau=settings.trust.tau,
        factuality=out.factuality,
        consistency=out.report.consistency,
        poison_probability=out.report.poison_probability,
        trust_raw=result.trust_raw,
        dampener=result.dampener,
        retrieval_modifier=result.retrieval_modifier,
        max_similarity=out.max_similarity,
        answer=out.answer,
        preface=out.preface,
        sentences=tuple(out.sentences),
        dropped_sentences=tuple(out.dropped),
        documents=out.gated.documents,
        passages=tuple(out.passages),
        context_relevance=None if relevance is None else relevance.context,
        answer_relevance=None if relevance is None else relevance.answer,
        warnings=tuple(dict.fromkeys(warnings)),
        errors=tuple(out.errors),
        decision_reasons=tuple(dict.fromkeys(reasons)),
        conflicts=out.conflicts,
        stage=out.stage,
        timings_s=dict(watch.timings),
        models=dict(models),
    )


def empty_verdict(
    question: str, warnings: Sequence[str], settings: Settings, watch: Stopwatch, models: Mapping[str, str]
) -> Verdict:
    """The verdict when nothing was retrieved: no evidence, never trusted.

    It is scored with F = 0.5 (nothing to verify), C = 0 and P = 1, and reports the F, C
    and P it scored with. P = 1 because nothing was screened: an unscreened context counts
    as the worst case (fail closed), which gives the lowest T that F = 0.5 allows. S_max is
    scored as 0 (the low-retrieval floor) and reported as ``None``: no document, no
    similarity.
    """
    poison = 1.0
    result = compute_trust(0.5, 0.0, poison, 0.0, settings.trust, failed=True)
    return Verdict(
        query=question,
        trust_score=result.trust_score,
        trust_level=result.level,
        trusted=False,
        tau=settings.trust.tau,
        factuality=0.5,
        consistency=0.0,
        poison_probability=poison,
        trust_raw=result.trust_raw,
        dampener=result.dampener,
        retrieval_modifier=result.retrieval_modifier,
        max_similarity=None,
        warnings=tuple(warnings),
        errors=("no documents retrieved",),
        decision_reasons=(
            "nothing was retrieved: there is no evidence to answer from",
            score_reason(result.trust_score, settings.trust.tau),
        ),
        timings_s=dict(watch.timings),
        models=dict(models),
    )


__all__ = ["Outcome", "decide", "drop_unsupported", "empty_verdict", "failed_conditions", "score_warnings"]
