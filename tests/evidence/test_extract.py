from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from ragtrust.errors import BackendError, ConfigError, InputError
from ragtrust.evidence import ExtractiveExtractor, LLMExtractor, NGramAligner
from ragtrust.evidence.extract import parse_collected_passages, passages_from_json, read_passages_json, stem
from ragtrust.registry import build
from ragtrust.testing import HashingEmbedder, retrieved

DOCS = retrieved(
    [
        "# SQL Injection\n\nSQL injection is stopped by parameterised queries.\nThey keep user input "
        "separate from the query. Escaping is a weak fallback. Cats are unrelated to this topic entirely.",
        "Passwords must be hashed with Argon2id or bcrypt. Never store passwords in plain text anywhere.",
        "The weather in Tampere is cold in winter and the lakes freeze over for months.",
    ]
)


class FakeChat:
    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.calls: list[list[Mapping[str, str]]] = []

    def chat(self, messages: Sequence[Mapping[str, str]]) -> str:
        self.calls.append(list(messages))
        return self.replies.pop(0)


def test_stemmer_is_light_and_deterministic() -> None:
    assert [stem(w) for w in ("queries", "query", "hashing", "hashes", "passwords", "use")] == [
        "query",
        "query",
        "hash",
        "hash",
        "password",
        "use",
    ]


def test_extractive_passages_are_verbatim_with_spans() -> None:
    passages = ExtractiveExtractor().extract("How do parameterised queries stop SQL injection?", DOCS)
    assert passages, "relevant sentences exist"
    by_id = {d.id: d.document for d in DOCS}
    for p in passages:
        doc = by_id[p.doc_id]
        (span,) = p.spans
        assert doc.text[span.start : span.end] == span.text == p.text
        assert p.url == doc.cite
    assert passages[0].doc_id == "doc-0" and "parameterised queries" in passages[0].text
    assert all(p.doc_id != "doc-2" for p in passages)  # the weather is never relevant
    assert [p.passage_id for p in passages] == [f"p{i + 1}" for i in range(len(passages))]
    # aligned: all kept, nothing dropped
    result = NGramAligner().align(passages, DOCS)
    assert {p.status for p in result.passages} == {"kept"} and result.dropped == ()


def test_adjacent_sentences_merge_into_one_span() -> None:
    passages = ExtractiveExtractor(max_sentences_per_doc=2, relative_cutoff=0.0).extract(
        "parameterised queries keep user input separate from the query", DOCS
    )
    first = passages[0]
    assert first.doc_id == "doc-0"
    assert "parameterised queries." in first.text and "They keep user input" in first.text  # crosses a newline
    assert "\n" in first.text


def test_limits_and_no_relevant_sentence() -> None:
    assert len(ExtractiveExtractor(max_passages=1).extract("passwords hashed Argon2id SQL injection", DOCS)) == 1
    assert ExtractiveExtractor().extract("quantum chromodynamics gluons", DOCS) == []
    assert ExtractiveExtractor().extract("anything", []) == []


def test_embedder_changes_scores_but_stays_verbatim() -> None:
    extractor = build("extractor", {"type": "extractive", "params": {"max_passages": 3}}, embedder=HashingEmbedder())
    assert isinstance(extractor, ExtractiveExtractor) and extractor.embedder is not None
    passages = extractor.extract("store passwords safely", DOCS)
    assert passages[0].doc_id == "doc-1"
    for p in passages:
        assert p.spans[0].text == p.text


GOOD = json.dumps(
    {
        "collected_passages": [
            {
                "passage_id": 1,
                "passage": "Passwords must be hashed with Argon2id or bcrypt.",
                "url": DOCS[1].document.url,
            },
            {"passage_id": "2", "passage": "Use MD5 for passwords.", "url": "https://never.retrieved/x"},
        ]
    }
)


def test_llm_extractor_valid_reply() -> None:
    chat = FakeChat([GOOD])
    passages = LLMExtractor(chat).extract("how to store passwords", DOCS)
    assert [p.passage_id for p in passages] == ["1", "2"]
    assert passages[0].doc_id == "doc-1" and passages[1].doc_id is None
    assert passages[1].url == "https://never.retrieved/x"
    assert len(chat.calls) == 1
    prompt = chat.calls[0][1]["content"]
    assert DOCS[0].document.url in prompt and "how to store passwords" in prompt
    # the fabricated one is dropped by the aligner
    result = NGramAligner().align(passages, DOCS)
    assert [p.passage_id for p in result.passages] == ["1"] and [p.passage_id for p in result.dropped] == ["2"]


def test_llm_extractor_accepts_code_fences_and_prose() -> None:
    assert len(LLMExtractor(FakeChat([f"```json\n{GOOD}\n```"])).extract("q", DOCS)) == 2
    assert len(LLMExtractor(FakeChat([f"Here you go: {GOOD} Hope it helps."])).extract("q", DOCS)) == 2


def test_llm_extractor_repairs_malformed_json_once() -> None:
    chat = FakeChat(['{"collected_passages": [{"passage_id": "1", "passage": "x", ', GOOD])
    passages = LLMExtractor(chat).extract("q", DOCS)
    assert len(passages) == 2 and len(chat.calls) == 2
    repair = chat.calls[1]
    assert repair[-2]["role"] == "assistant" and repair[-1]["role"] == "user"
    assert "could not be used" in repair[-1]["content"] and "JSON" in repair[-1]["content"]


def test_llm_extractor_repairs_schema_violation() -> None:
    chat = FakeChat(['{"passages": []}', '{"collected_passages": []}'])
    assert LLMExtractor(chat).extract("q", DOCS) == []
    assert "collected_passages" in chat.calls[1][-1]["content"]


def test_llm_extractor_fails_clearly_after_one_repair() -> None:
    chat = FakeChat(["not json", "still not json"])
    with pytest.raises(BackendError, match="after one repair attempt"):
        LLMExtractor(chat).extract("q", DOCS)
    assert len(chat.calls) == 2


def test_llm_extractor_no_docs_no_call() -> None:
    chat = FakeChat([])
    assert LLMExtractor(chat).extract("q", []) == [] and chat.calls == []


def test_parse_collected_passages_rejects_empty_passage() -> None:
    with pytest.raises(ValueError, match="schema"):
        parse_collected_passages('{"collected_passages": [{"passage_id": "1", "passage": "", "url": "u"}]}')


def test_passages_from_json_shapes_and_errors(tmp_path: Path) -> None:
    ps = passages_from_json([{"text": "a b c", "url": DOCS[0].document.url}, {"passage": "d", "id": "x"}], DOCS)
    assert [(p.passage_id, p.doc_id) for p in ps] == [("p1", "doc-0"), ("x", None)]
    for bad in ({"x": 1}, "text", [1], [{"url": "u"}], [{"passage": "a", "url": 3}]):
        with pytest.raises(InputError):
            passages_from_json(bad)
    f = tmp_path / "p.json"
    f.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="invalid JSON"):
        read_passages_json(f)


def test_sentence_context_collects_title_question_and_heading() -> None:
    from ragtrust.documents import Document
    from ragtrust.evidence.extract import sentence_context

    text = (
        "# Injection\n\n## Prepared statements\n\nBind every variable. Check names.\n\nWhy escape?\n\nEscaping is weak."
    )
    doc = Document(id="d", text=text, metadata={"title": "Injection Prevention", "question": "How to stop SQLi?"})
    assert (
        sentence_context(doc, text.index("Check")) == "Injection Prevention | How to stop SQLi? | Prepared statements"
    )
    assert sentence_context(doc, text.index("Escaping")).endswith("| Why escape?")
    assert sentence_context(Document(id="e", text="Plain text only."), 3) == ""


def test_sentence_contexts_of_a_long_document_cost_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    # A 1.1 MB document (about 7,000 sentences) spent over a minute finding each sentence's
    # heading by reading every sentence before it again. The contexts are unchanged, and
    # each sentence is now read a bounded number of times however long the document is.
    import ragtrust.evidence.extract as extract
    from ragtrust.documents import Document, RetrievedDoc
    from ragtrust.text import split_sentences

    sections = [f"## Section {i}\n\nBind every variable of query {i}. Check table {i} names." for i in range(200)]
    doc = Document(id="big", text="\n\n".join(sections), metadata={"title": "Injection"})
    docs = [RetrievedDoc(doc, 0.8, 1)]
    sentences = split_sentences(doc.text)
    expected = {s.start: extract.sentence_context(doc, s.start, sentences) for s in sentences}

    calls = 0
    real = extract.is_evidence_sentence

    def counting(text: str) -> bool:
        nonlocal calls
        calls += 1
        return real(text)

    monkeypatch.setattr(extract, "is_evidence_sentence", counting)
    seen: dict[str, list[str]] = {}
    real_scores = extract.relevance_scores

    def capture(query: str, texts: Sequence[str], *args: object, **kwargs: object) -> list[float]:
        seen["texts"] = list(texts)
        return real_scores(query, texts, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(extract, "relevance_scores", capture)
    scored = ExtractiveExtractor(embedder=None).score_sentences("query names", docs)
    assert calls <= 3 * len(sentences)
    candidates = [sentences[k] for _, k, _ in scored]
    assert len(candidates) == 400
    contexts = list(dict.fromkeys(expected[s.start] for s in candidates))
    assert seen["texts"] == [*(s.text for s in candidates), *contexts]
    assert contexts[0] == "Injection | Section 0" and contexts[-1] == "Injection | Section 199"


def test_retrieval_priors_from_scores_or_ranks() -> None:
    from ragtrust.documents import Document, RetrievedDoc
    from ragtrust.evidence.extract import retrieval_priors

    assert retrieval_priors(retrieved(["a", "b", "c"], scores=[0.5, 0.25, 0.0])) == [1.0, 0.5, 0.0]
    unscored = [RetrievedDoc(Document(id=f"d{i}", text="x"), score=None, rank=i) for i in (1, 2, 4)]
    assert retrieval_priors(unscored) == [1.0, 0.5, 0.25]


def test_context_rank_and_relative_cutoff_focus_the_evidence() -> None:
    from ragtrust.documents import Document, RetrievedDoc

    rule = Document(
        id="kb-01",
        text="How should queries be protected from SQL injection? Build every query as a prepared statement. "
        "Check table names against an allow-list.",
        metadata={"question": "How should queries be protected from SQL injection?"},
    )
    other = Document(id="kb-33", text="Filtering alone cannot fully prevent the attack, so monitor the model.")
    docs = [RetrievedDoc(rule, 0.8, 1), RetrievedDoc(other, 0.4, 2)]
    query = "How do I prevent SQL injection?"
    plain = ExtractiveExtractor(context_weight=0.0, rank_weight=0.0, relative_cutoff=0.0).extract(query, docs)
    # alone, the neighbour's sentence (it says "prevent") outranks the rule's answer (no query word)
    assert plain[0].doc_id == "kb-33"
    focused = ExtractiveExtractor().extract(query, docs)
    assert focused[0].doc_id == "kb-01" and focused[0].text.startswith("Build every query")
    # the neighbour scores 0.25 against the rule's 1/3: a relative cut-off of 0.8 drops it
    assert {p.doc_id for p in ExtractiveExtractor(relative_cutoff=0.8).extract(query, docs)} == {"kb-01"}
    assert {p.doc_id for p in ExtractiveExtractor(relative_cutoff=0.0).extract(query, docs)} == {"kb-01", "kb-33"}
    with pytest.raises(ConfigError, match="rank_weight"):
        ExtractiveExtractor(rank_weight=2.0)


def test_a_link_alone_is_not_evidence_however_long_its_target() -> None:
    # "- [Java RegEx](https://docs.oracle.com/...)" answered "How do I prevent XXE in Java?": the
    # URL's pieces counted as words
    docs = retrieved(
        [
            "## References\n\n- [Java RegEx](https://docs.oracle.com/javase/8/docs/api/java/util/regex/Pattern.html)\n"
            "- Java parsers such as DocumentBuilderFactory must disable external entities to prevent XXE.",
        ]
    )
    passages = ExtractiveExtractor(relative_cutoff=0.0).extract("How do I prevent XXE in Java?", docs)
    assert passages and all("Java RegEx" not in p.text for p in passages)
    assert any("DocumentBuilderFactory" in p.text for p in passages)


def test_front_matter_is_not_evidence() -> None:
    text = "---\ntitle: Front Matter Doc\nauthor: x\n---\n# Passwords\n\nPasswords must be hashed with bcrypt."
    for question in ("How should passwords be stored?", "What does the front matter doc say about passwords?"):
        assert [p.text for p in ExtractiveExtractor().extract(question, retrieved([text]))] == [
            "Passwords must be hashed with bcrypt."
        ]


def test_the_sentence_right_under_a_heading_is_evidence() -> None:
    # a user's page (2026-12-08) wrote its heading with no blank line after it: the first
    # sentence was read as part of the heading and never became evidence
    page = (
        "# API keys\nNever commit API keys to a public repository; store them in a secrets manager.\n"
        "Rotate an API key at once if it may have leaked."
    )
    passages = ExtractiveExtractor().extract("Can I commit API keys to a public repository?", retrieved([page]))
    assert passages and passages[0].text.startswith("Never commit API keys")
    assert all(not p.text.startswith("#") for p in passages)
