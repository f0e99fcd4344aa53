from __future__ import annotations

from ragtrust.config import EvidenceConfig
from ragtrust.documents import AnswerSentence, Passage, Span
from ragtrust.evidence.citations import GroundedAnswer
from ragtrust.generation.postprocess import NOT_STATED_PREFACE, evidence_answers_question, normalize_terms, postprocess

SPAN = Span("d1", 0, 5, "Hello", url="u1")


def grounded(*sentences: AnswerSentence) -> GroundedAnswer:
    return GroundedAnswer(text="(raw)", sentences=sentences, warnings=("w0",))


def test_duplicate_citations_and_sentences_are_removed() -> None:
    g = grounded(
        AnswerSentence("Use owasp asvs.", ("u1", "u1", "u2"), spans=(SPAN,), supported=True),
        AnswerSentence("use  OWASP ASVS.", ("u3",), supported=False),
    )
    out = postprocess(g, EvidenceConfig())
    (s,) = out.sentences
    assert s.citations == ("u1", "u2", "u3") and s.supported and s.spans == (SPAN,)
    assert out.text == "Use owasp asvs. [1][2][3]" and out.sources == ("u1", "u2", "u3")
    assert out.warnings == ("w0",)


def test_term_normalisation_is_case_insensitive_whole_word() -> None:
    terms = {"owasp": "OWASP", "javascript": "JavaScript", "c++": "C++"}
    assert normalize_terms("Owasp says javascript, not javascripts; c++ too.", terms) == (
        "OWASP says JavaScript, not javascripts; C++ too."
    )
    out = postprocess(
        grounded(AnswerSentence("owasp rules.", ("u1",), supported=True)), EvidenceConfig(terms={"owasp": "OWASP"})
    )
    assert out.sentences[0].text == "OWASP rules." and out.text == "OWASP rules. [1]"


def test_paragraphs_break_when_the_source_changes_or_after_three_sentences() -> None:
    sents = [AnswerSentence(f"Sentence {i}.", (u,), supported=True) for i, u in enumerate("aaaabb")]
    out = postprocess(grounded(*sents), EvidenceConfig())
    assert out.text.split("\n\n") == [
        "Sentence 0. [1] Sentence 1. [1] Sentence 2. [1]",
        "Sentence 3. [1]",
        "Sentence 4. [2] Sentence 5. [2]",
    ]


def test_preface_when_evidence_does_not_answer() -> None:
    s = AnswerSentence("Hash passwords.", ("u1",), supported=True)
    out = postprocess(grounded(s), EvidenceConfig(), answers_question=False)
    assert out.text.startswith(NOT_STATED_PREFACE) and out.text.endswith("Hash passwords. [1]")
    assert any("does not explicitly answer" in w for w in out.warnings)
    empty = postprocess(grounded(), EvidenceConfig())
    assert empty.text == NOT_STATED_PREFACE and empty.sentences == ()


def test_unsupported_count_is_recomputed() -> None:
    out = postprocess(
        grounded(AnswerSentence("A b c.", ("u",), supported=False), AnswerSentence("D e f.", ())), EvidenceConfig()
    )
    assert out.unsupported_sentences == 2


def test_evidence_answers_question_heuristic() -> None:
    pw = [Passage("p", "Store passwords with a slow salted hash such as Argon2id.")]
    assert evidence_answers_question("How should passwords be stored?", pw)
    assert evidence_answers_question("What is the recommended hash for stored passwords?", pw)
    assert not evidence_answers_question("What is the capital of France?", pw)
    assert not evidence_answers_question("How should passwords be stored?", [])
    dropped = [Passage("p", "Store passwords hashed.", status="dropped")]
    assert not evidence_answers_question("How should passwords be stored?", dropped)
    assert evidence_answers_question("How?", pw)  # no topic terms: any evidence will do


def test_evidence_answers_question_counts_the_documents_topic() -> None:
    from ragtrust.documents import Document, RetrievedDoc, Span

    text = "How should queries be protected from SQL injection? Build every query as a prepared statement."
    doc = Document(id="kb-01", text=text, metadata={"question": "How should queries be protected from SQL injection?"})
    start = text.index("Build")
    passage = Passage("p1", text[start:], doc_id="kb-01", spans=(Span("kb-01", start, len(text), text[start:]),))
    query = "How do I prevent SQL injection?"
    assert not evidence_answers_question(query, [passage])  # the passage alone names no topic term
    assert evidence_answers_question(query, [passage], [RetrievedDoc(doc, 0.9)])  # its rule's question does
    assert evidence_answers_question(query, [passage], [doc])  # plain Documents work too
    other = Document(id="kb-02", text="Store passwords hashed.", metadata={"question": "How to stop SQL injection?"})
    assert not evidence_answers_question(query, [passage], [other])  # context only from the passage's own source
