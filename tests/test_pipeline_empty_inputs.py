r"""Answers and questions with nothing to check, and inputs of the wrong type (fail closed).

Golden decisions on the bundled knowledge base with the deterministic fakes. An answer with
no sentence that can be checked ("...", "[1]", "?") used to be TRUSTED at T = 0.800 HIGH
with F = 0.5 and no sentence; it is not trusted, with the reason in words and the level
capped. A question, answer or query of only whitespace and invisible format characters
(U+200B, U+202E: ``str.strip`` keeps them) is empty; a query that is not a ``str`` is an
:class:`~ragtrust.errors.InputError` naming it, not an ``AttributeError`` or a trusted verdict.
"""

from __future__ import annotations

from typing import Any

import pytest

from ragtrust.config import Settings, load_settings
from ragtrust.data.kb import load_knowledge_base, load_rules
from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import InputError
from ragtrust.pipeline import TrustGate
from ragtrust.testing import HashingEmbedder, LexicalNLI, ScriptedGenerator

#: Stage 1 without the learned injection classifier (as tests/test_pipeline.py)
SIGNALS = ["linguistic", "structural", "intra_consistency", "cross_consistency", "semantic_outlier", "provenance"]
#: HashingEmbedder's cosines are on another scale than the fitted relevance thresholds
NO_RELEVANCE_FLOOR = {"context_threshold": 0.0, "answer_threshold": 0.0}
UNCHECKED = "the answer has no sentence that can be checked against the evidence"
QUERY = "SQL injection?"
#: zero-width space + right-to-left override; word joiner; BOM, left-to-right mark and whitespace
INVISIBLE = ["\u200b\u202e", "\u2060", "\ufeff \u200e\n\t"]


def settings(**trust: Any) -> Settings:
    overrides = {"screening": {"signals": SIGNALS}, "relevance": NO_RELEVANCE_FLOOR, "trust": trust}
    return load_settings(env={}, overrides=overrides)


@pytest.fixture(scope="module")
def kb() -> list[Document]:
    return load_knowledge_base()


@pytest.fixture(scope="module")
def question() -> str:
    return next(r.question for r in load_rules() if r.id == "kb-01")  # SQL injection


@pytest.fixture
def gate(kb: list[Document]) -> TrustGate:
    return TrustGate.from_documents(kb, settings(), nli=LexicalNLI(), embedder=HashingEmbedder())


@pytest.fixture(scope="module")
def docs(kb: list[Document]) -> list[RetrievedDoc]:
    picked = [d for d in kb if d.id in ("kb-01", "kb-02")]
    return [
        RetrievedDoc(document=d, score=s, rank=i + 1) for i, (d, s) in enumerate(zip(picked, (0.8, 0.6), strict=True))
    ]


def supported_sentence(kb: list[Document]) -> str:
    """kb-01's first rule sentence: verbatim evidence, a trusted answer (the control)."""
    return kb[0].text.split("? ", 1)[1].split(". ")[0] + "."


# --------------------------------------------------------------------------- nothing to check


@pytest.mark.parametrize("answer", ["...", "[1]", "?", "- \u2026", "\u200b[2]\u202e"])
@pytest.mark.parametrize("mode", ["refuse", "drop"])
def test_an_answer_with_no_checkable_sentence_is_not_trusted(
    kb: list[Document], docs: list[RetrievedDoc], answer: str, mode: str
) -> None:
    gate = TrustGate.from_documents(kb, settings(unsupported=mode), nli=LexicalNLI(), embedder=HashingEmbedder())
    control = gate.verify(supported_sentence(kb), docs, QUERY)
    assert control.trusted and control.decision_reasons == ()  # the same documents can back an answer

    verdict = gate.verify(answer, docs, QUERY)
    assert verdict.sentences == () and verdict.factuality == 0.5  # nothing checked: F "inconclusive"
    assert verdict.trust_score >= verdict.tau  # T alone would trust it (it read 0.800 HIGH) ...
    assert not verdict.trusted and verdict.decision == "flagged"  # ... the decision does not
    assert verdict.trust_level == "LOW"  # capped like every failed condition
    assert verdict.decision_reasons == (UNCHECKED,)
    assert any("no sentence that could be checked" in w and "not trusted" in w for w in verdict.warnings)


def test_an_answer_with_no_checkable_sentence_is_not_trusted_without_a_query(
    gate: TrustGate, docs: list[RetrievedDoc]
) -> None:
    verdict = gate.verify("...", docs)
    assert not verdict.trusted and verdict.decision_reasons == (UNCHECKED,)


@pytest.mark.parametrize("answer", ["...", "[1]", "?", "\u200b\u202e"])
def test_a_generator_that_writes_no_checkable_sentence_is_not_trusted(
    kb: list[Document], question: str, answer: str
) -> None:
    writer = ScriptedGenerator(answer)
    gate = TrustGate.from_documents(kb, settings(), nli=LexicalNLI(), embedder=HashingEmbedder(), generator=writer)
    verdict = gate.ask(question)
    assert verdict.sentences == ()
    assert not verdict.trusted and verdict.trust_level in {"LOW", "VERY LOW"}
    assert "the generator wrote no answer from the evidence" in verdict.decision_reasons
    assert UNCHECKED not in verdict.decision_reasons  # the refusal already says why


# --------------------------------------------------------------------------- empty after invisible characters


@pytest.mark.parametrize("question", INVISIBLE)
def test_a_question_of_invisible_characters_is_empty(gate: TrustGate, question: str) -> None:
    with pytest.raises(InputError, match="^the question is empty"):
        gate.ask(question)
    with pytest.raises(InputError, match="^the question is empty"):
        gate.answer_from(question, ["Use parameterised queries."])


@pytest.mark.parametrize("answer", INVISIBLE)
def test_an_answer_of_invisible_characters_is_empty(gate: TrustGate, docs: list[RetrievedDoc], answer: str) -> None:
    with pytest.raises(InputError, match="^the answer to verify is empty"):
        gate.verify(answer, docs, QUERY)


@pytest.mark.parametrize("query", INVISIBLE)
def test_a_query_of_invisible_characters_is_no_query(
    gate: TrustGate, kb: list[Document], docs: list[RetrievedDoc], query: str
) -> None:
    answer = supported_sentence(kb)
    verified, without = gate.verify(answer, docs, query), gate.verify(answer, docs)
    assert verified.query == without.query == ""
    assert verified.answer_relevance is None  # nothing to measure the answer's relevance against
    assert verified.trusted is without.trusted
    screened = gate.screen(docs, query)
    assert screened.query == "" and screened.poison_probability == gate.screen(docs).poison_probability


# --------------------------------------------------------------------------- wrong types


@pytest.mark.parametrize(("query", "kind"), [(5, "int"), (b"sql", "bytes"), (["sql"], "list"), ({"q": 1}, "dict")])
def test_a_query_that_is_not_a_str_is_an_input_error(
    gate: TrustGate, kb: list[Document], docs: list[RetrievedDoc], query: Any, kind: str
) -> None:
    message = f"^query must be a str or None; got {kind}$"
    with pytest.raises(InputError, match=message):
        gate.verify(supported_sentence(kb), docs, query=query)
    with pytest.raises(InputError, match=message):
        gate.screen(docs, query=query)


@pytest.mark.parametrize(("value", "kind"), [(5, "int"), (b"Use TLS.", "bytes"), (None, "NoneType")])
def test_an_answer_or_question_that_is_not_a_str_is_an_input_error(
    gate: TrustGate, docs: list[RetrievedDoc], value: Any, kind: str
) -> None:
    with pytest.raises(InputError, match=f"^the answer to verify must be a str; got {kind}$"):
        gate.verify(value, docs)
    with pytest.raises(InputError, match=f"^the question must be a str; got {kind}$"):
        gate.ask(value)
