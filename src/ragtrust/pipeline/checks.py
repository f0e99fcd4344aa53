"""Stage 2 checks run fail closed: factuality and relevance failures become verdict errors.

A verifier or relevance judge that raises does not take the verdict down with it: the
failure is recorded (``Verdict.errors``) and the verdict is never trusted.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragtrust.documents import AnswerSentence, Passage, RetrievedDoc
from ragtrust.errors import RagTrustError

if TYPE_CHECKING:
    from ragtrust.verification.factuality import FactualityReport, SentenceSupport


def checked_factuality(verifier: Any, answer: str, docs: Sequence[RetrievedDoc]) -> FactualityReport:
    """The verifier's report, or an inconclusive one (F = 0.5) naming its failure."""
    from ragtrust.verification import FactualityReport

    try:
        report: FactualityReport = verifier.verify(answer, docs)
    except RagTrustError as exc:
        return FactualityReport(
            factuality=0.5, sentences=(), errors=(f"verification failed: {exc}",), inconclusive=True
        )
    except Exception as exc:  # fail closed on anything unexpected
        return FactualityReport(
            factuality=0.5,
            sentences=(),
            errors=(f"verification crashed: {type(exc).__name__}: {exc}",),
            inconclusive=True,
        )
    return report


def _accepts(function: Any, name: str) -> bool:
    """Whether ``function`` takes the keyword ``name`` (a judge written before it was added does not)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # no signature to read: call it the old way
        return False
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def checked_relevance(
    judge: Any,
    question: str,
    passages: Sequence[Passage] | None,
    answer_sentences: Sequence[str],
    documents: Sequence[RetrievedDoc] = (),
    sentences: Sequence[AnswerSentence] = (),
) -> tuple[Any, tuple[str, ...]]:
    """The relevance report (``None`` when there is no judge) and any failure of the judge (fail closed).

    ``documents``: the documents the passages came from (their topic context counts);
    ``sentences``: the answer's checked sentences, whose verified spans, best NLI support,
    citations and the live passages that state them word for word name the documents the
    answer rests on (where the names check looks first).
    """
    if judge is None:
        return None, ()
    # the answer rests on the documents of its verified spans, of its best NLI support, of its
    # citations, and of every live passage that states one of its sentences word for word (a
    # sentence several documents share, "I have no comment.", is cited from one of them). An
    # unsupported sentence's best window is only the one that came nearest: no document the
    # answer rests on (its words may be in another document, which a false reason would deny)
    cited = {url for s in sentences for url in s.citations}
    said = [" ".join(s.text.split()) for s in sentences if s.text.strip()]
    rests_on = [span.doc_id for s in sentences for span in s.spans]
    rests_on += [s.best_doc_id for s in sentences if s.best_doc_id and s.supported]
    rests_on += [d.document.id for d in documents if d.document.cite in cited]
    for passage in passages or ():
        if passage.status != "dropped" and any(text in " ".join(passage.text.split()) for text in said):
            rests_on += [span.doc_id for span in passage.spans] + ([passage.doc_id] if passage.doc_id else [])
    try:
        extra = {"answer_documents": rests_on} if _accepts(judge.judge, "answer_documents") else {}
        return judge.judge(question, passages, answer_sentences, documents=documents, **extra), ()
    except Exception as exc:  # noqa: BLE001 - fail closed: recorded, verdict not trusted
        return None, (f"relevance check failed: {type(exc).__name__}: {exc}",)


def merge_support(
    sentences: Sequence[AnswerSentence], supports: Sequence[SentenceSupport]
) -> tuple[AnswerSentence, ...]:
    """The answer's sentences with their NLI support; grounded = a verified verbatim span OR entailment.

    A verified span is the citation guard's ``supported`` (overlap with a cited document above
    its threshold), not any span: the guard also traces a sentence's partial matches, and a
    few copied words ("MD5 and SHA-1 must ... be used for password storage.") ground nothing.
    """
    by_text = {s.text: s for s in supports}
    merged = []
    for sentence in sentences:
        support = by_text.get(sentence.text)
        if support is None:
            merged.append(sentence)
            continue
        merged.append(
            AnswerSentence(
                text=sentence.text,
                citations=sentence.citations,
                spans=sentence.spans,
                support=support.support,
                # the guard's flag, not any span: spans include partial matches (five shared
                # words of "... securely hashed using MD5" are located, but do not ground it)
                supported=support.supported or sentence.supported,
                best_doc_id=support.best_doc_id,
            )
        )
    return tuple(merged)


def no_evidence() -> FactualityReport:
    """The report when there is nothing to check against: inconclusive, F = 0.5."""
    from ragtrust.verification import FactualityReport

    return FactualityReport(factuality=0.5, sentences=(), inconclusive=True)


__all__ = ["checked_factuality", "checked_relevance", "merge_support", "no_evidence"]
