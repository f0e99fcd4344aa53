"""Relevance with the shipped embedder and its default (fitted) thresholds: the user case.

"What is the capital of France?" against a secure-coding corpus was TRUSTED MEDIUM before the
decision checked relevance. The thresholds come from ``ragtrust eval relevance`` on the OWASP
store (docs/results/relevance.md); this corpus is the 40-rule knowledge base, which was not
used to fit them.
"""

from __future__ import annotations

import pytest

from ragtrust.config import RelevanceConfig, load_settings
from ragtrust.data.kb import load_knowledge_base
from ragtrust.pipeline import TrustGate

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def gate() -> TrustGate:
    return TrustGate.from_documents(load_knowledge_base(), load_settings(env={}))


@pytest.mark.parametrize(
    "question", ["What is the capital of France?", "How long should I boil an egg for a runny yolk?"]
)
def test_an_off_topic_question_is_not_trusted(gate: TrustGate, question: str) -> None:
    verdict = gate.ask(question)
    assert not verdict.trusted
    assert verdict.trust_level in ("LOW", "VERY LOW")
    # the extractive writer finds no answer (its preface) or no evidence about the question
    assert any("no relevant evidence" in r or "does not explicitly state" in r for r in verdict.decision_reasons), (
        verdict.decision_reasons
    )


def test_a_question_the_corpus_answers_stays_trusted(gate: TrustGate) -> None:
    verdict = gate.ask("How should passwords be stored?")
    assert verdict.trusted, verdict.decision_reasons
    assert verdict.context_relevance is not None and verdict.answer_relevance is not None
    assert verdict.context_relevance >= RelevanceConfig().context_threshold
