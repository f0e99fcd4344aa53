"""Answers with unsupported sentences (issue 16): ``trust.unsupported = "refuse" | "drop"``.

Golden decisions on the bundled knowledge base with the deterministic fakes: a scripted
writer copies the first sentence of an evidence passage (supported: a verbatim span) and
invents another (no span, no entailment). Under ``refuse`` (the default) the answer is not
trusted and the reason names the invented sentence; under ``drop`` the sentence leaves the
answer, the verdict lists it with a warning, and the rest is decided on. An answer with no
supported sentence is never trusted.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragtrust.config import Settings, load_settings
from ragtrust.data.kb import load_knowledge_base, load_rules
from ragtrust.documents import Document, Passage, RetrievedDoc, Verdict
from ragtrust.errors import ConfigError
from ragtrust.pipeline import TrustGate
from ragtrust.server.schemas import VerdictOut
from ragtrust.testing import HashingEmbedder, LexicalNLI, ScriptedGenerator

#: Stage 1 without the learned injection classifier (as tests/test_pipeline.py)
SIGNALS = ["linguistic", "structural", "intra_consistency", "cross_consistency", "semantic_outlier", "provenance"]
#: HashingEmbedder's cosines are on another scale than the fitted relevance thresholds
NO_RELEVANCE_FLOOR = {"context_threshold": 0.0, "answer_threshold": 0.0}
INVENTED = "The moon is made of green cheese and sings at night."
OTHER_INVENTED = "Every firewall should be painted blue on Tuesdays."
QUESTION_ID = "kb-01"  # SQL injection: parameterised queries


@pytest.fixture(scope="module")
def kb() -> list[Document]:
    return load_knowledge_base()


@pytest.fixture(scope="module")
def question() -> str:
    return next(r.question for r in load_rules() if r.id == QUESTION_ID)


def settings(mode: str | None) -> Settings:
    trust = {} if mode is None else {"unsupported": mode}
    overrides = {"screening": {"signals": SIGNALS}, "relevance": NO_RELEVANCE_FLOOR, "trust": trust}
    return load_settings(env={}, overrides=overrides)


def first_sentence(passages: Sequence[Passage]) -> str:
    """The first sentence of the first passage, without its full stop."""
    return passages[0].text.split(". ")[0].rstrip(".")


def ask(kb: list[Document], question: str, mode: str | None, script: ScriptedGenerator) -> Verdict:
    gate = TrustGate.from_documents(kb, settings(mode), nli=LexicalNLI(), embedder=HashingEmbedder(), generator=script)
    return gate.ask(question)


def supported_then_invented() -> ScriptedGenerator:
    return ScriptedGenerator(script=lambda _q, passages: f"{first_sentence(passages)} [1]. {INVENTED[:-1]} [1].")


def invented_first_citing_another_source() -> ScriptedGenerator:
    # the invented sentence cites passage 2 first: it holds [1] until it is dropped
    return ScriptedGenerator(
        script=lambda _q, passages: f"{OTHER_INVENTED[:-1]} [2]. {first_sentence(passages)} [1]. {INVENTED}"
    )


def only_invented() -> ScriptedGenerator:
    return ScriptedGenerator(answer=f"{INVENTED[:-1]} [1]. {OTHER_INVENTED}")


def assert_consistent(verdict: Verdict, kb: list[Document]) -> None:
    """``trusted`` iff no reason; every span points into its document; the JSON round-trips."""
    assert verdict.trusted is (verdict.decision_reasons == ())
    if not verdict.trusted:
        assert verdict.trust_level in {"LOW", "VERY LOW"}
    texts = {d.id: d.text for d in kb}
    for sentence in (*verdict.sentences, *verdict.dropped_sentences):
        for span in sentence.spans:
            assert texts[span.doc_id][span.start : span.end] == span.text
    assert Verdict.from_dict(verdict.to_dict()) == verdict
    out = VerdictOut.model_validate({**verdict.to_dict(), "decision": verdict.decision})
    assert [s.text for s in out.dropped_sentences] == [s.text for s in verdict.dropped_sentences]


def test_refuse_is_the_default() -> None:
    assert load_settings(env={}).trust.unsupported == "refuse"


@pytest.mark.parametrize("mode", [None, "refuse"])
def test_refuse_one_unsupported_sentence_is_not_trusted_and_named(
    kb: list[Document], question: str, mode: str | None
) -> None:
    verdict = ask(kb, question, mode, supported_then_invented())
    assert [s.supported for s in verdict.sentences] == [True, False]
    assert not verdict.trusted
    assert verdict.decision_reasons == (f"1 of 2 answer sentences are not supported by the evidence: {INVENTED!r}",)
    assert INVENTED in verdict.answer  # refused, not rewritten
    assert verdict.dropped_sentences == ()
    assert_consistent(verdict, kb)


def test_refuse_names_at_most_three_sentences_and_shortens_long_ones(kb: list[Document], question: str) -> None:
    long = "Quantum " + "banana " * 30 + "servers hum."
    invented = [long, "Cats run the web.", "Dogs write SQL.", "Birds sign tokens."]
    script = ScriptedGenerator(script=lambda _q, p: " ".join([f"{first_sentence(p)}.", *invented]))
    verdict = ask(kb, question, "refuse", script)
    (reason,) = verdict.decision_reasons
    assert reason.startswith("4 of 5 answer sentences are not supported by the evidence: 'Quantum banana")
    assert "\u2026'" in reason and long not in reason  # shortened
    assert reason.endswith("'Dogs write SQL.', \u2026 (1 more)")
    assert "Birds" not in reason


def test_drop_removes_the_unsupported_sentence_and_trusts_the_rest(kb: list[Document], question: str) -> None:
    refused = ask(kb, question, "refuse", supported_then_invented())
    verdict = ask(kb, question, "drop", supported_then_invented())
    (kept,) = verdict.sentences
    (dropped,) = verdict.dropped_sentences
    assert kept.supported and kept.spans
    assert dropped.text == INVENTED and not dropped.supported
    assert verdict.answer == f"{kept.text} [1]"
    assert INVENTED not in verdict.answer
    assert verdict.trusted, verdict.decision_reasons
    assert any(
        w.startswith("1 of 2 answer sentence(s) were removed from the answer") and INVENTED in w
        for w in verdict.warnings
    )
    # F is the verifier's score of the answer as written (SPEC 4): dropping does not raise it
    assert verdict.factuality == refused.factuality
    assert verdict.trust_score == refused.trust_score
    assert_consistent(verdict, kb)


def test_drop_renumbers_the_citations_of_the_remaining_sentences(kb: list[Document], question: str) -> None:
    verdict = ask(kb, question, "drop", invented_first_citing_another_source())
    (kept,) = verdict.sentences
    assert [s.text for s in verdict.dropped_sentences] == [OTHER_INVENTED, INVENTED]
    # the kept sentence's source is now the first cited: [1], as the UI and CLI number it
    assert len(kept.citations) == 1
    assert verdict.answer == f"{kept.text} [1]"
    assert verdict.trusted, verdict.decision_reasons
    assert_consistent(verdict, kb)


@pytest.mark.parametrize("mode", ["refuse", "drop"])
def test_an_answer_with_no_supported_sentence_is_not_trusted(kb: list[Document], question: str, mode: str) -> None:
    verdict = ask(kb, question, mode, only_invented())
    assert not verdict.trusted
    assert "no sentence of the answer is supported by the documents" in verdict.decision_reasons
    if mode == "drop":
        assert verdict.sentences == () and verdict.answer == ""
        assert [s.text for s in verdict.dropped_sentences] == [INVENTED, OTHER_INVENTED]
    else:
        assert [s.supported for s in verdict.sentences] == [False, False]
    assert_consistent(verdict, kb)


def test_verify_drops_the_unsupported_sentences_of_a_given_answer(kb: list[Document], question: str) -> None:
    doc = next(d for d in kb if d.id.startswith(QUESTION_ID))
    supported = doc.text.split("? ", 1)[1].split(". ")[0].rstrip(".") + "."  # after the rule's question
    docs = [RetrievedDoc(doc, 0.8, 1)]
    answer = f"{supported} {INVENTED}"
    gate = TrustGate.from_documents(kb, settings("drop"), nli=LexicalNLI(), embedder=HashingEmbedder())
    verdict = gate.verify(answer, docs, question)
    assert verdict.answer == supported
    assert [s.text for s in verdict.dropped_sentences] == [INVENTED]
    refused = TrustGate.from_documents(kb, settings("refuse"), nli=LexicalNLI(), embedder=HashingEmbedder())
    assert any("not supported by the evidence" in r for r in refused.verify(answer, docs, question).decision_reasons)


def test_the_extractive_writer_is_unchanged_by_the_default(kb: list[Document], question: str) -> None:
    gate = TrustGate.from_documents(kb, settings(None), nli=LexicalNLI(), embedder=HashingEmbedder())
    verdict = gate.ask(question)
    assert verdict.sentences and all(s.supported for s in verdict.sentences)
    assert verdict.trusted, verdict.decision_reasons


# ---------------------------------------------------------------------------------- config
def test_the_setting_is_read_from_env_toml_and_round_trips(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert load_settings(env={"RAGTRUST_TRUST__UNSUPPORTED": "drop"}).trust.unsupported == "drop"
    config = tmp_path / "ragtrust.toml"
    config.write_text('[trust]\nunsupported = "drop"\n', encoding="utf-8")
    loaded = load_settings(config, env={})
    assert loaded.trust.unsupported == "drop"
    assert loaded.to_dict()["trust"]["unsupported"] == "drop"
    assert load_settings(env={}, overrides=loaded.to_dict()) == loaded


@pytest.mark.parametrize("value", ["ignore", "DROP", ""])
def test_a_bad_value_is_one_clear_config_error(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env={"RAGTRUST_TRUST__UNSUPPORTED": value})
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("invalid configuration: trust.unsupported:")
    assert "'refuse' or 'drop'" in message


def test_a_partial_verbatim_match_does_not_ground_a_sentence_nli_rejects(kb: list[Document], question: str) -> None:
    # the first words copied from the passage, the rest invented: the citation guard finds a
    # short verbatim span (overlap below its threshold: "no verbatim support") and the NLI
    # model no entailment; the partial span alone must not count as grounding
    def half_copied(_q: str, passages: Sequence[Passage]) -> str:
        return " ".join(first_sentence(passages).split()[:6]) + f" {INVENTED[:-1]} [1]."

    verdict = ask(kb, question, "refuse", ScriptedGenerator(script=half_copied))
    (sentence,) = verdict.sentences
    assert sentence.spans  # the copied words are traced to the passage
    assert not sentence.supported
    assert not verdict.trusted
    assert "no sentence of the answer is supported by the documents" in verdict.decision_reasons
    assert_consistent(verdict, kb)
