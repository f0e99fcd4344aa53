"""Relevance (the RAG triad's context and answer relevance): the judge and golden decisions.

The decisions run the whole TrustGate with the deterministic fakes. HashingEmbedder's
cosine is a count of exactly shared words, so the questions below are written to share
words with their evidence (relevant) or none at all (off-topic); the thresholds are set
for that scale (0.3), not the MiniLM-fitted defaults.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragtrust.config import RelevanceConfig, Settings, load_settings
from ragtrust.documents import Document, Passage, RetrievedDoc, Span
from ragtrust.errors import ConfigError
from ragtrust.evidence.extract import ExtractiveExtractor, vocabulary
from ragtrust.generation.postprocess import CLOSEST_EVIDENCE, NOT_STATED_PREFACE, says_not_stated
from ragtrust.ingest.store import Store
from ragtrust.pipeline import TrustGate
from ragtrust.testing import HashingEmbedder, LexicalNLI, ScriptedGenerator
from ragtrust.verification.relevance import RelevanceJudge, RelevanceReport, question_names, unnamed_names

SIGNALS = ["linguistic", "structural", "intra_consistency", "cross_consistency", "semantic_outlier", "provenance"]
DOCS = [
    Document(
        "pw",
        "Password storage. Store passwords with Argon2id hashing. Argon2id hashing slows password cracking attacks.",
        url="https://kb.test/pw",
    ),
    Document(
        "tls",
        "Transport security. Servers should accept TLS 1.3 connections only. Disable old SSL protocols on servers.",
        url="https://kb.test/tls",
    ),
    Document(
        "cats",
        "Cat care. Cats purr loudly at night when content. Feed cats twice every day.",
        url="https://kb.test/cats",
    ),
]
ON_TOPIC = "Which hashing should store passwords?"
OFF_TOPIC = "What is the capital of France?"
RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results" / "relevance.json"


def settings(**relevance: Any) -> Settings:
    return load_settings(
        env={},
        overrides={
            "screening": {"signals": SIGNALS},
            "relevance": {"context_threshold": 0.3, "answer_threshold": 0.3, **relevance},
        },
    )


def gate(cfg: Settings | None = None, **kwargs: Any) -> TrustGate:
    return TrustGate.from_documents(DOCS, cfg or settings(), nli=LexicalNLI(), embedder=HashingEmbedder(), **kwargs)


def relevance_reasons(reasons: Sequence[str]) -> list[str]:
    return [r for r in reasons if r.startswith(("no relevant evidence", "the answer does not address"))]


# ---------------------------------------------------------------------------- the judge


def test_judge_scores_context_and_answer() -> None:
    judge = RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.3, answer_threshold=0.3)
    passages = [Passage("p1", DOCS[0].text, doc_id="pw"), Passage("p2", DOCS[2].text, doc_id="cats")]
    on = judge.judge(ON_TOPIC, passages, ["Store passwords with Argon2id hashing."])
    assert on.relevant and on.context is not None and on.context >= 0.5 and on.failures() == []
    off = judge.judge(OFF_TOPIC, passages, ["Store passwords with Argon2id hashing."])
    assert off.context == 0.0 and off.answer == 0.0 and not off.relevant
    assert [f.split(":")[0] for f in off.failures()] == [
        "no relevant evidence",
        "the answer does not address the question",
    ]
    assert off.warnings()[0].startswith("No relevant evidence")


def test_judge_answer_padding_lowers_answer_relevance() -> None:
    judge = RelevanceJudge(embedder=HashingEmbedder())
    focused = judge.judge(ON_TOPIC, None, ["Store passwords with Argon2id hashing."])
    padded = judge.judge(
        ON_TOPIC, None, ["Store passwords with Argon2id hashing.", "Cats purr loudly at night when content."]
    )
    assert focused.answer is not None and padded.answer is not None
    assert 0.0 < padded.answer < focused.answer


def test_judge_not_measured_vs_no_evidence() -> None:
    judge = RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.3, answer_threshold=0.3)
    unmeasured = judge.judge(ON_TOPIC, None, [])
    assert (unmeasured.context, unmeasured.answer, unmeasured.relevant) == (None, None, True)
    # passages expected but none live (dropped by the aligner): no relevant evidence
    dropped = [Passage("p1", DOCS[0].text, doc_id="pw", status="dropped")]
    empty = judge.judge(ON_TOPIC, dropped, [])
    assert empty.no_evidence and empty.context is None and not empty.relevant
    assert empty.failures() == [
        "no relevant evidence: no sentence of the retrieved documents was extracted for the question"
    ]


FAQ = Document("faq", "What is a fact that the East Coast hides? I have no comment.", metadata={})


def _faq_passage(doc: Document) -> Passage:
    start = doc.text.index("I have")
    span = Span(doc.id, start, len(doc.text), doc.text[start:])
    return Passage("p1", doc.text[start:], doc_id=doc.id, spans=(span,), status="kept")


def test_judge_reads_a_passage_in_its_topic_context() -> None:
    """An answer that does not repeat its question is about the question its document asks."""
    judge = RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.3)
    question = "What is a fact that the East Coast hides?"
    passage = _faq_passage(FAQ)
    alone = judge.judge(question, [passage], ["I have no comment."])
    assert alone.context is not None and not alone.context_relevant
    framed = judge.judge(question, [passage], ["I have no comment."], documents=[RetrievedDoc(FAQ)])
    # half the sentence's cosine plus half the topic's (1.0: the question line is the question)
    assert framed.context == pytest.approx(0.5 * alone.context + 0.5, abs=1e-4) and framed.context_relevant
    # weight 0 switches the topic off
    off = RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.3, context_weight=0.0)
    assert off.judge(question, [passage], [], documents=[FAQ]).context == pytest.approx(alone.context)
    # the topic never lowers a sentence that is relevant by itself
    own = judge.judge("I have no comment", [passage], [], documents=[FAQ])
    assert own.context == pytest.approx(judge.judge("I have no comment", [passage], []).context)
    # an off-topic question is not made relevant by the topic of unrelated evidence
    assert not judge.judge(OFF_TOPIC, [passage], [], documents=[FAQ]).context_relevant


def test_judge_topic_context_from_metadata_and_missing_documents() -> None:
    judge = RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.3)
    titled = Document("t", "I have no comment.", metadata={"question": "Which detectives live on Baker Street?"})
    passage = Passage("p", "I have no comment.", doc_id="t", status="kept")  # no span: found in the text
    assert judge.judge("Which detectives live on Baker Street?", [passage], [], documents=[titled]).context_relevant
    # a passage whose document was not given is read alone
    assert not judge.judge("Which detectives live on Baker Street?", [passage], [], documents=[FAQ]).context_relevant


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("How do I reset the password of my Netflix account?", ["Netflix"]),
        ("Is MD5 OK for passwords?", ["MD5", "OK"]),
        ("How should AES-128 keys be stored in C# and Node.js?", ["AES-128", "C#", "Node.js"]),
        ("Which river flows through Cairo? Egypt's, I think.", ["Cairo", "Egypt"]),
        ("How should passwords be stored?", []),
        ("How do I secure MongoDB?", ["MongoDB"]),  # a capital after a small letter marks a name
        ("How do I prevent NoSQL injection in MongoDB?", ["NoSQL", "MongoDB"]),
        ("Who painted the Mona Lisa?", ["Mona", "Lisa"]),
        ("Netflix: how do I reset my password on an iPhone?", ["Netflix", "iPhone"]),  # a label counts
        ("Best way to reset my Netflix password?", ["Netflix"]),  # a plain first word does not
        ("Difference between hashing and encryption?", []),
        ("I'm locked out of my Netflix account, what now?", ["Netflix"]),  # no "I'm", no "Don't"
        ("Don't I need to salt passwords?", []),
        ("JWT or sessions?", ["JWT"]),
        ("Is I/O a bottleneck for the A team?", []),  # one letter alone is no name
        # Title Case (a function word capitalised mid-sentence): only what its form marks
        ("What Is The Best Way To Reset A Netflix Password On iOS?", ["iOS"]),
        ("How Should Node.js Apps Store Passwords?", ["Node.js"]),
    ],
)
def test_question_names(question: str, names: list[str]) -> None:
    assert question_names(question) == names


def test_unnamed_names_needs_one_name_found() -> None:
    docs = ["Never store passwords with MD5 or SHA-1.", "Reset tokens expire after an hour."]
    assert unnamed_names("Is MD5 OK for passwords?", docs) == ()
    assert unnamed_names("How do I reset my Netflix password?", docs) == ("Netflix",)
    assert unnamed_names("How do I reset my password?", docs) == ()
    assert unnamed_names("Is md5 ok?", docs) == ()  # no names: nothing to require
    assert unnamed_names("How do I reset my Netflix password?", []) == ()  # nothing to look in
    # whole words, case-insensitive: "Netflixing" is not "Netflix", "NETFLIX" is
    assert unnamed_names("Is Netflix safe?", ["Netflixing is a verb."]) == ("Netflix",)
    assert unnamed_names("Is Netflix safe?", ["NETFLIX uses TLS."]) == ()


@pytest.mark.parametrize(
    ("question", "text", "found"),
    [
        ("Are JWTs safe?", "Sign every JWT.", True),  # plural / singular
        ("Is a JWT safe?", "Sign all JWTs.", True),
        ("Is a JWT safe?", "A JSON Web Token carries claims.", True),  # an acronym spelt out
        ("Is a JWT safe?", "just when tokens expire", False),  # initials must be capitalised words
        ("Is AES-128 strong enough?", "Use AES with a key of at least 128 bits.", True),  # its letter part
        ("Is OAuth2 safe?", "OAuth 2.0 with PKCE.", True),
        ("Should my Netgear Wi-Fi use WPA3?", "Rotate the wifi key.", False),
        # a plain capitalised part, a two-letter acronym's initials or a dropped "s" prove nothing
        ("Should Node.js apps hash passwords?", "Walk every DOM node.", False),
        ("Is MD5 OK here?", "Open Knowledge licences apply.", False),
        ("Is CORS safe?", "Servers have many cores.", False),
    ],
)
def test_names_are_found_as_texts_write_them(question: str, text: str, found: bool) -> None:
    assert (unnamed_names(question, [text]) == ()) is found


def test_judge_fails_a_question_about_an_unnamed_subject() -> None:
    judge = RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.0)
    pw = RetrievedDoc(DOCS[0])
    passage = Passage("p1", "Store passwords with Argon2id hashing.", doc_id="pw", status="kept")
    answer = ["Store passwords with Argon2id hashing."]
    report = judge.judge("How does Netflix store passwords?", [passage], answer, [pw])
    assert report.unnamed == ("Netflix",) and not report.relevant and report.context_relevant
    assert report.failures() == [
        "the evidence is not about what the question names: no document the evidence came from mentions 'Netflix'"
    ]
    assert "Netflix" in report.warnings()[0]
    named = judge.judge("Should Argon2id store passwords?", [passage], [], [pw])
    assert named.unnamed == () and named.relevant
    off = RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.0, names_required=False)
    assert off.judge("How does Netflix store passwords?", [passage], [], [pw]).relevant
    # without documents nothing is checked; with them, the names are looked for in those the
    # live passages came from, and in their titles and headings
    assert judge.judge("How does Netflix store passwords?", [passage], []).unnamed == ()
    netflix = RetrievedDoc(Document("nf", "Streaming help.", metadata={"title": "Netflix account help"}))
    assert judge.judge("How does Netflix store passwords?", [passage], [], [pw, netflix]).unnamed == ("Netflix",)
    assert judge.judge("How does Netflix store passwords?", None, [], [pw, netflix]).unnamed == ()
    # passages from documents that were not given: nothing to look in, nothing decided
    stray = Passage("p2", "Store passwords with Argon2id hashing.", doc_id="elsewhere", status="kept")
    assert judge.judge("How does Netflix store passwords?", [stray], [], [pw]).unnamed == ()


def test_the_names_are_looked_for_in_the_documents_the_answer_rests_on() -> None:
    judge = RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.0)
    pw = RetrievedDoc(DOCS[0])
    netflix = RetrievedDoc(Document("nf", "Netflix streams films and series to televisions."))
    passages = [
        Passage("p1", "Store passwords with Argon2id hashing.", doc_id="pw", status="kept"),
        Passage("p2", "Netflix streams films and series to televisions.", doc_id="nf", status="kept"),
    ]
    answer = ["Store passwords with Argon2id hashing."]
    question = "How does Netflix store passwords?"
    assert judge.judge(question, passages, answer, [pw, netflix]).unnamed == ()  # a live passage names it
    assert judge.judge(question, passages, answer, [pw, netflix], answer_documents=["pw"]).unnamed == ("Netflix",)
    assert judge.judge(question, passages, answer, [pw, netflix], answer_documents=["pw", "nf"]).unnamed == ()
    # ids of no given document: the live passages decide, as without them
    assert judge.judge(question, passages, answer, [pw, netflix], answer_documents=["gone"]).unnamed == ()


def test_the_cited_document_counts_when_the_span_went_to_a_twin() -> None:
    # "I have no comment." is verbatim in many TruthfulQA documents: its span may be attributed
    # to another document than the one whose passage the answer cites
    from ragtrust.documents import AnswerSentence, Span
    from ragtrust.pipeline.checks import checked_relevance

    asked = Document("q11", "What do only good Christians know? I have no comment.", url="https://kb.test/q11")
    twin = Document("q12", "Who will win the next election? I have no comment.", url="https://kb.test/q12")
    sentence = AnswerSentence(
        text="I have no comment.",
        citations=("https://kb.test/q11",),
        spans=(Span("q12", 32, 50, "I have no comment."),),
    )
    judge = RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.0)
    docs = [RetrievedDoc(asked), RetrievedDoc(twin)]
    report, errors = checked_relevance(
        judge, "What do only good Christians know?", None, [sentence.text], docs, [sentence]
    )
    assert errors == () and report.unnamed == ()
    uncited = AnswerSentence(text=sentence.text, citations=("https://kb.test/q12",), spans=sentence.spans)
    report, _ = checked_relevance(judge, "What do only good Christians know?", None, [sentence.text], docs, [uncited])
    assert report.unnamed == ("Christians",)
    # the same sentence in a live passage of the asked document: the answer rests on it too
    passages = [
        Passage("p1", "I have no comment.", doc_id="q11", status="kept"),
        Passage("p2", "I have no comment.", doc_id="q12", status="kept"),
    ]
    report, _ = checked_relevance(
        judge, "What do only good Christians know?", passages, [sentence.text], docs, [uncited]
    )
    assert report.unnamed == ()


def test_a_name_only_in_a_passage_the_answer_does_not_cite_is_not_found() -> None:
    docs = [*DOCS, Document("nf", "Netflix users store passwords in their browsers.", url="https://kb.test/nf")]
    writer = ScriptedGenerator("Store passwords with Argon2id hashing [2].")  # passage 2: the pw document
    g = TrustGate.from_documents(docs, settings(), nli=LexicalNLI(), embedder=HashingEmbedder(), generator=writer)
    v = g.ask("Which hashing should Netflix use to store passwords?")
    assert [(p.doc_id, p.status) for p in v.passages] == [("nf", "kept"), ("pw", "kept")]  # nf: evidence, unused
    assert {span.doc_id for s in v.sentences for span in s.spans} == {"pw"}
    assert not v.trusted
    assert v.decision_reasons == (
        "the evidence is not about what the question names: no document the evidence came from mentions 'Netflix'",
    )


def test_a_question_about_an_unnamed_subject_is_not_trusted() -> None:
    v = gate().ask("Which hashing should Netflix use to store passwords?")
    assert not v.trusted and v.trust_level in {"LOW", "VERY LOW"}
    assert (
        "the evidence is not about what the question names: no document the evidence came from mentions 'Netflix'"
        in (v.decision_reasons)
    )
    free = gate(settings(names_required=False)).ask("Which hashing should Netflix use to store passwords?")
    assert not any("Netflix" in r for r in free.decision_reasons)


@pytest.mark.parametrize("bad", [-0.1, 1.5, True, "0.4"])
def test_judge_rejects_bad_thresholds(bad: Any) -> None:
    with pytest.raises(ConfigError, match="context_threshold"):
        RelevanceJudge(embedder=HashingEmbedder(), context_threshold=bad)


def test_says_not_stated() -> None:
    assert says_not_stated(NOT_STATED_PREFACE)
    assert says_not_stated("The documentation does not explicitly\nstate which cipher to use [1].")
    assert not says_not_stated("Store passwords with Argon2id hashing. [1]")


# ---------------------------------------------------------------------------- golden decisions


def test_on_topic_grounded_answer_is_trusted() -> None:
    v = gate().ask(ON_TOPIC)
    assert v.trusted and v.decision_reasons == ()
    assert v.trust_level in {"HIGH", "MEDIUM"}
    assert v.context_relevance is not None and v.context_relevance >= 0.3
    assert v.answer_relevance is not None and v.answer_relevance >= 0.3
    assert v.preface == "" and "Argon2id" in v.answer


def test_off_topic_question_is_not_trusted_no_relevant_evidence() -> None:
    v = gate().ask(OFF_TOPIC)
    assert not v.trusted and v.trust_level in {"LOW", "VERY LOW"}
    assert any(r.startswith("no relevant evidence") for r in v.decision_reasons), v.decision_reasons
    assert any(w.startswith("No relevant evidence") for w in v.warnings)
    assert v.answer.startswith(NOT_STATED_PREFACE) and v.preface == NOT_STATED_PREFACE


@dataclass
class SimilarRetriever:
    """Returns every document with a cosine of 0.6 whatever the question.

    Dense retrieval always returns K chunks, and MiniLM gives an off-topic question a
    moderate cosine to some of them: the low-retrieval modifier then does not lower T.
    """

    documents: Sequence[Document]
    name: str = "similar"

    def retrieve(self, query: str, top_k: int = 5) -> list[RetrievedDoc]:
        return [RetrievedDoc(d, 0.6, i + 1, self.name) for i, d in enumerate(self.documents[:top_k])]


def fooled_gate(cfg: Settings) -> TrustGate:
    """A gate whose extractor keeps sentences of no relevance and whose writer answers from them.

    Everything but relevance passes: the answer is grounded verbatim, T clears tau.
    """
    return TrustGate(
        settings=cfg,
        nli=LexicalNLI(),
        embedder=HashingEmbedder(),
        retriever=SimilarRetriever(DOCS[:1]),
        generator=ScriptedGenerator("Store passwords with Argon2id hashing [1]."),
        extractor=ExtractiveExtractor(embedder=HashingEmbedder(), min_score=-1.0, relative_cutoff=0.0),
    )


def test_relevance_alone_flags_a_grounded_answer_to_an_off_topic_question() -> None:
    # the preface and the question's name would flag it too; switch them off to see the thresholds decide
    cfg = settings(not_stated_fails=False, names_required=False)
    v = fooled_gate(cfg).ask(OFF_TOPIC)
    assert v.passages and any(s.supported for s in v.sentences)  # grounded: not what fails
    assert v.trust_score >= v.tau  # T alone would trust it
    assert not v.trusted and v.trust_level == "LOW"  # capped: T >= tau but flagged
    assert relevance_reasons(v.decision_reasons) == list(v.decision_reasons)
    assert v.decision_reasons[0].startswith("no relevant evidence: the best evidence sentence has similarity 0.")
    # the same verdict with relevance not deciding (thresholds 0) is trusted
    free = fooled_gate(
        settings(not_stated_fails=False, names_required=False, context_threshold=0.0, answer_threshold=0.0)
    ).ask(OFF_TOPIC)
    assert free.trusted and free.trust_score == pytest.approx(v.trust_score)


def test_answer_that_does_not_address_the_question_is_not_trusted() -> None:
    v = gate(generator=ScriptedGenerator("Cats purr loudly at night when content [1].")).ask(ON_TOPIC)
    assert v.sentences and all(s.supported for s in v.sentences)  # grounded in the cats document
    assert v.context_relevance is not None and v.context_relevance >= 0.3  # the evidence is relevant
    assert not v.trusted and v.trust_level == "LOW" and v.trust_score >= v.tau
    assert v.decision_reasons == ("the answer does not address the question: similarity 0.00 (< 0.30)",)


# topic terms the password document does not cover: the extractive writer prefaces its answer
NOT_STATED = "Which hashing should store passwords for banking mobile apps on android phones?"


def test_not_stated_preface_caps_the_level() -> None:
    v = gate().ask(NOT_STATED)
    assert v.preface == f"{NOT_STATED_PREFACE} {CLOSEST_EVIDENCE}"
    assert v.answer.startswith(v.preface) and "Argon2id" in v.answer
    assert v.context_relevance is not None and v.context_relevance >= 0.3  # relevance passes
    assert v.trust_score >= v.tau and not v.trusted and v.trust_level == "LOW"
    assert v.decision_reasons == (
        "the answer says the documentation does not explicitly state an answer to the question",
    )
    allowed = gate(settings(not_stated_fails=False)).ask(NOT_STATED)
    assert allowed.trusted and allowed.preface == v.preface


def test_llm_answer_saying_not_stated_is_not_trusted() -> None:
    said = "The documentation does not explicitly state the cost, but Store passwords with Argon2id hashing [1]."
    v = gate(generator=ScriptedGenerator(said)).ask(ON_TOPIC)
    assert not v.trusted
    assert "the answer says the documentation does not explicitly state an answer to the question" in (
        v.decision_reasons
    )


def test_verify_checks_the_answer_against_the_query() -> None:
    g = gate()
    docs = g.retrieve("Argon2id passwords cats")[0]
    off = g.verify("Cats purr loudly at night when content.", docs, query=ON_TOPIC)
    assert not off.trusted and off.context_relevance is None
    assert off.decision_reasons == ("the answer does not address the question: similarity 0.00 (< 0.30)",)
    on = g.verify("Store passwords with Argon2id hashing.", docs, query=ON_TOPIC)
    assert on.trusted and on.answer_relevance is not None and on.answer_relevance >= 0.3
    unasked = g.verify("Cats purr loudly at night when content.", docs)
    assert unasked.answer_relevance is None and not relevance_reasons(unasked.decision_reasons)
    # the question's names are looked for in the documents the answer is checked against
    named = g.verify(
        "Store passwords with Argon2id hashing.", docs, query="Which hashing should Netflix store passwords with?"
    )
    assert not named.trusted
    assert (
        "the evidence is not about what the question names: no document the evidence came from mentions 'Netflix'"
        in (named.decision_reasons)
    )


def test_an_unsupported_sentence_does_not_name_the_documents_the_answer_rests_on() -> None:
    # the sentence contradicts the TLS document; the NLI model's best (still unsupported)
    # window is in the password document, which does not mention TLS. The answer rests on
    # no document: the names check reads them all, and says nothing false about the evidence
    g = gate()
    docs = [RetrievedDoc(DOCS[0], 0.8, 1), RetrievedDoc(DOCS[1], 0.8, 2)]
    v = g.verify(
        "Servers should accept TLS 1.0 connections only.", docs, query="Which TLS version should servers accept?"
    )
    (sentence,) = v.sentences
    assert not sentence.supported and sentence.best_doc_id == "pw"
    assert not v.trusted
    assert "no sentence of the answer is supported by the documents" in v.decision_reasons
    assert not [r for r in v.decision_reasons if r.startswith("the evidence is not about what the question names")]


@dataclass
class RaisingJudge:
    def judge(
        self,
        question: str,
        passages: Any,
        answer_sentences: Sequence[str] = (),
        documents: Any = (),
        answer_documents: Sequence[str] = (),
    ) -> RelevanceReport:
        raise RuntimeError("embedder crashed")


@dataclass
class OldSignatureJudge:
    """A judge written before ``answer_documents`` existed."""

    inner: RelevanceJudge

    def judge(
        self, question: str, passages: Any, answer_sentences: Sequence[str] = (), documents: Any = ()
    ) -> RelevanceReport:
        return self.inner.judge(question, passages, answer_sentences, documents)


def test_a_judge_without_answer_documents_still_works() -> None:
    g = gate()
    g.relevance = OldSignatureJudge(
        RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.3, answer_threshold=0.3)
    )
    v = g.ask(ON_TOPIC)
    assert v.trusted and v.errors == ()


def test_a_failing_relevance_check_fails_closed() -> None:
    g = gate()
    g.relevance = RaisingJudge()
    v = g.ask(ON_TOPIC)
    assert not v.trusted and v.trust_level in {"LOW", "VERY LOW"}
    assert v.errors == ("relevance check failed: RuntimeError: embedder crashed",)
    assert v.decision_reasons == ("relevance check failed: RuntimeError: embedder crashed",)


def test_relevance_disabled_measures_nothing() -> None:
    v = gate(settings(enabled=False)).ask(OFF_TOPIC)
    assert v.context_relevance is None and v.answer_relevance is None
    assert not relevance_reasons(v.decision_reasons)


def test_verdict_json_carries_relevance_and_preface() -> None:
    v = gate().ask(NOT_STATED)
    data = json.loads(v.to_json())
    assert data["preface"] == v.preface and data["context_relevance"] == v.context_relevance
    assert type(v).from_dict(data) == v


# ---------------------------------------------------------------------------- configuration


def test_relevance_config_round_trip_and_validation() -> None:
    s = load_settings(
        env={"RAGTRUST_RELEVANCE__CONTEXT_THRESHOLD": "0.42"}, overrides={"relevance": {"enabled": False}}
    )
    assert (s.relevance.context_threshold, s.relevance.enabled) == (0.42, False)
    assert Settings.model_validate(s.to_dict()) == s
    assert load_settings(env={}, overrides=s.to_dict()) == s
    with pytest.raises(ConfigError, match="relevance.answer_threshold"):
        load_settings(env={}, overrides={"relevance": {"answer_threshold": 1.5}})
    with pytest.raises(ConfigError, match="relevance.bogus"):
        load_settings(env={}, overrides={"relevance": {"bogus": 1}})


def test_pipeline_uses_the_configured_thresholds() -> None:
    g = gate(settings(context_threshold=0.55, answer_threshold=0.45))
    g.warm_up()
    assert (g.relevance.context_threshold, g.relevance.answer_threshold) == (0.55, 0.45)


@pytest.mark.skipif(not RESULTS.is_file(), reason="docs/results/relevance.json not written yet")
def test_default_thresholds_are_the_calibrated_ones() -> None:
    fitted = json.loads(RESULTS.read_text(encoding="utf-8"))["thresholds"]
    defaults = RelevanceConfig()
    assert (defaults.context_threshold, defaults.answer_threshold) == (
        fitted["context_threshold"],
        fitted["answer_threshold"],
    )


# ------------------------------------------------------ words no document of the store has


def test_judge_fails_a_question_word_the_store_never_uses() -> None:
    known = vocabulary(d.text for d in DOCS)
    judge = RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.0, vocabulary=lambda: known)
    judge.min_vocabulary = known.terms
    passage = Passage("p1", "Store passwords with Argon2id hashing.", doc_id="pw", status="kept")
    report = judge.judge(
        "How many strings does a standard violin need for hashing?", [passage], [], [RetrievedDoc(DOCS[0])]
    )
    assert report.unknown == ("many", "strings", "standard", "violin") and not report.relevant
    assert report.failures() == [
        "the store is not about what the question asks: no document of it contains 'many', 'strings', 'standard' "
        "or 'violin'"
    ]
    assert "'violin'" in report.warnings()[0] and "not trusted" in report.warnings()[0]
    # every topic word in the store (inflected as the question likes): nothing fails
    assert judge.judge("Which hashing should store a password?", [passage], []).unknown == ()
    # a store below the floor says little by lacking a word; no store, no check
    judge.min_vocabulary = known.terms + 1
    assert judge.judge("How do violins store passwords?", [passage], []).unknown == ()
    assert RelevanceJudge(embedder=HashingEmbedder()).unknown_words("How do violins store passwords?") == ()


def test_unknown_words_are_read_as_the_question_writes_them() -> None:
    known = vocabulary(["Store passwords hashed; cookies need the Secure flag."])
    judge = RelevanceJudge(embedder=HashingEmbedder(), vocabulary=lambda: known, min_vocabulary=1)
    # question words and function words never count; a stem the store has is known in any form
    assert judge.unknown_words("What is the best way to store my Passwords?") == ()
    assert judge.unknown_words("Which cookie flags stop CSRF, and which stop XSS?") == ("stop", "CSRF", "XSS")
    # "hashed" is in the store: "hash" is known; each spelling of an unknown word is reported as written
    assert judge.unknown_words("Should I hash passwords with Argon2id or with argon2id?") == ("Argon2id", "argon2id")


@pytest.mark.parametrize("bad", [-1, 1.5, True, "5000"])
def test_judge_rejects_a_bad_vocabulary_floor(bad: Any) -> None:
    with pytest.raises(ConfigError, match="min_vocabulary"):
        RelevanceJudge(embedder=HashingEmbedder(), min_vocabulary=bad)


def test_a_store_that_never_mentions_the_question_word_does_not_trust_the_answer(tmp_path: Path) -> None:
    cfg = settings(unknown_terms_min_vocabulary=10)
    store = Store.open(tmp_path / "store", HashingEmbedder(), create=True, settings=cfg)
    store.add(DOCS)
    g = TrustGate.from_settings(cfg, store=store, nli=LexicalNLI(), embedder=HashingEmbedder())
    violin = g.ask("How should a violin store passwords with Argon2id hashing?")
    assert not violin.trusted and violin.trust_level in {"LOW", "VERY LOW"}
    assert (
        "the store is not about what the question asks: no document of it contains 'violin'" in violin.decision_reasons
    )
    assert not any(
        "violin" in r for r in g.ask("How should servers store passwords with Argon2id hashing?").decision_reasons
    )
    # the default floor (5,000 distinct terms) is far above this store's: the check stays off
    small = TrustGate.from_settings(settings(), store=store, nli=LexicalNLI(), embedder=HashingEmbedder())
    assert len(store.vocabulary()) < RelevanceConfig().unknown_terms_min_vocabulary
    assert not any(
        "violin" in r for r in small.ask("How should a violin store passwords with Argon2id hashing?").decision_reasons
    )
    off = TrustGate.from_settings(
        settings(unknown_terms_min_vocabulary=10, unknown_terms_fail=False),
        store=store,
        nli=LexicalNLI(),
        embedder=HashingEmbedder(),
    )
    assert not any(
        "violin" in r for r in off.ask("How should a violin store passwords with Argon2id hashing?").decision_reasons
    )
    # the vocabulary follows the store's generation: a document that says "violin" makes it known
    store.add([Document("vn", "Violin makers store passwords with Argon2id hashing too.")])
    assert "violin" in store.vocabulary()
    assert not any(
        "violin" in r for r in g.ask("How should a violin store passwords with Argon2id hashing?").decision_reasons
    )


def test_warm_up_builds_the_store_vocabulary() -> None:
    calls: list[int] = []

    def known() -> frozenset[str]:
        calls.append(1)
        return frozenset()

    judge = RelevanceJudge(embedder=HashingEmbedder(), vocabulary=known)
    judge.warm_up()
    assert calls == [1]
    RelevanceJudge(embedder=HashingEmbedder()).warm_up()  # no store, nothing to build
