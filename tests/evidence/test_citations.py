from __future__ import annotations

import pytest

from ragtrust.documents import Document, Passage, RetrievedDoc
from ragtrust.evidence import CitationGuard, ExtractiveExtractor, NGramAligner
from ragtrust.generation.base import GeneratedAnswer
from ragtrust.generation.extractive import ExtractiveGenerator
from ragtrust.testing import retrieved

DOCS = retrieved(
    [
        "Always use parameterised queries so that user input is never executed as SQL code.",
        "Store passwords with a slow salted hash such as Argon2id, never with MD5 or SHA-1.",
    ]
)
U0, U1 = DOCS[0].document.url, DOCS[1].document.url
PASSAGES = [
    Passage("p1", DOCS[0].document.text, url=U0, doc_id="doc-0", status="kept"),
    Passage("p2", DOCS[1].document.text, url=U1, doc_id="doc-1", status="kept"),
]


def test_llm_answer_citing_a_url_never_retrieved() -> None:
    raw = GeneratedAnswer(
        "Always use parameterised queries so that user input is never executed as SQL code [1]. "
        "Store passwords with a slow salted hash such as Argon2id [https://evil.example/md5-is-fine]. "
        "MD5 is fine for passwords [https://evil.example/md5-is-fine]."
    )
    g = CitationGuard().apply(raw, PASSAGES, DOCS)
    assert g.removed_citations == 2
    assert "evil.example" not in g.text
    assert set(g.sources) <= {U0, U1}
    assert any("evil.example" in w for w in g.warnings)
    first, second, third = g.sentences
    assert first.citations == (U0,) and first.supported
    # the second sentence lost its bogus citation but its text comes from doc-1: re-attributed
    assert second.citations == (U1,) and second.supported
    assert any("re-attributed" in w for w in g.warnings)
    assert third.citations == () and not third.supported and third.spans == ()
    assert g.unsupported_sentences == 1
    assert g.text.endswith("MD5 is fine for passwords.")
    for s in (first, second):
        for span in s.spans:
            doc = {d.id: d.document for d in DOCS}[span.doc_id]
            assert doc.text[span.start : span.end] == span.text


def test_passage_numbers_out_of_range_are_removed() -> None:
    raw = GeneratedAnswer("Store passwords with a slow salted hash such as Argon2id. [2][7]")
    g = CitationGuard().apply(raw, PASSAGES, DOCS)
    assert g.removed_citations == 1
    assert g.sources == (U1,) and g.text == "Store passwords with a slow salted hash such as Argon2id. [1]"
    (s,) = g.sentences
    assert s.supported and s.best_doc_id == "doc-1" and s.support is not None and s.support > 0.7


def test_markers_after_the_full_stop_belong_to_the_sentence_before() -> None:
    raw = GeneratedAnswer("Always use parameterised queries. [1] Store passwords with a slow salted hash. [2]")
    g = CitationGuard().apply(raw, PASSAGES, DOCS)
    assert [s.citations for s in g.sentences] == [(U0,), (U1,)]
    assert g.text == "Always use parameterised queries. [1] Store passwords with a slow salted hash. [2]"


def test_url_and_doc_id_citations_are_resolved_and_renumbered() -> None:
    raw = GeneratedAnswer(f"Store passwords with a slow salted hash [{U1}]. Always use parameterised queries [doc-0].")
    g = CitationGuard().apply(raw, PASSAGES, DOCS)
    assert g.removed_citations == 0 and g.sources == (U1, U0)
    assert g.text.endswith("[2]") and "[1]" in g.text


def test_non_citation_brackets_stay_text() -> None:
    raw = GeneratedAnswer("Never use MD5 [sic] or SHA-1 for passwords [2].")
    g = CitationGuard().apply(raw, PASSAGES, DOCS)
    assert "[sic]" in g.sentences[0].text and g.removed_citations == 0


def test_paraphrase_is_flagged_unsupported_but_keeps_its_citation() -> None:
    raw = GeneratedAnswer("Prepared statements stop attackers from running their own database commands [1].")
    g = CitationGuard().apply(raw, PASSAGES, DOCS)
    (s,) = g.sentences
    assert s.citations == (U0,) and not s.supported and g.unsupported_sentences == 1
    assert any("no verbatim support" in w for w in g.warnings)


def test_reattribution_can_be_disabled() -> None:
    raw = GeneratedAnswer("Store passwords with a slow salted hash such as Argon2id [1].")
    on = CitationGuard().apply(raw, PASSAGES, DOCS)
    off = CitationGuard(reattribute=False).apply(raw, PASSAGES, DOCS)
    assert on.sentences[0].citations == (U1,) and on.sentences[0].supported
    assert off.sentences[0].citations == (U0,) and not off.sentences[0].supported


def test_extractive_pipeline_end_to_end_has_no_out_of_set_citation() -> None:
    query = "How should passwords be stored?"
    passages = NGramAligner().align(ExtractiveExtractor().extract(query, DOCS), DOCS).passages
    answer = ExtractiveGenerator().generate(query, passages)
    g = CitationGuard().apply(answer, passages, DOCS)
    assert g.removed_citations == 0 and g.unsupported_sentences == 0
    assert g.sentences and all(s.supported and s.spans for s in g.sentences)
    assert set(g.sources) <= {d.document.cite for d in DOCS}


@pytest.mark.parametrize("text", ["", "   ", "[1]"])
def test_empty_answers(text: str) -> None:
    g = CitationGuard().apply(GeneratedAnswer(text), PASSAGES, DOCS)
    assert g.sentences == () and g.text == "" and g.unsupported_sentences == 0


def test_reattribution_between_chunks_of_one_source_names_the_chunks() -> None:
    url = "file:///kb/Password_Storage_Cheat_Sheet.md"
    chunks = [
        RetrievedDoc(document=Document(id=f"kb/Password_Storage_Cheat_Sheet.md#{i}", text=t, url=url), rank=i + 1)
        for i, t in enumerate(d.document.text for d in DOCS)
    ]
    passages = [Passage(f"p{i + 1}", c.document.text, url=url, doc_id=c.id) for i, c in enumerate(chunks)]
    raw = GeneratedAnswer("Store passwords with a slow salted hash such as Argon2id [1].")
    g = CitationGuard().apply(raw, passages, chunks)
    assert g.sentences[0].best_doc_id == "kb/Password_Storage_Cheat_Sheet.md#1" and g.sentences[0].supported
    (warning,) = [w for w in g.warnings if "sentence 1" in w]
    assert "another passage of the same source Password_Storage_Cheat_Sheet.md" in warning
    assert (
        "cited kb/Password_Storage_Cheat_Sheet.md#0" in warning
        and "from kb/Password_Storage_Cheat_Sheet.md#1" in warning
    )
    assert "re-attributed" not in warning  # no "cited X but its text comes from X"


def test_reattribution_between_sources_keeps_the_url_wording() -> None:
    raw = GeneratedAnswer("Store passwords with a slow salted hash such as Argon2id [1].")
    g = CitationGuard().apply(raw, PASSAGES, DOCS)
    assert f"sentence 1: cited {U0} but its text comes from {U1}; citation re-attributed" in g.warnings


def test_brackets_quoted_from_a_document_are_its_text_not_citations() -> None:
    # a slash made "[read/write]" and a Markdown link's text look like URL citations, which
    # were removed: the quoted sentence lost a word ("Grant the scope ...") and its link text
    docs = retrieved(
        [
            "Grant the [read/write] scope only to administrators of the service.",
            "See [grafana/shared-workflows](https://github.com/grafana/shared-workflows) for a pinned workflow.",
            "Read a[0] first, then the rest of the array.",
        ]
    )
    passages = [Passage(f"p{i + 1}", d.document.text, url=d.document.url, doc_id=d.id) for i, d in enumerate(docs)]
    sentences = tuple((d.document.text, (d.document.url,)) for d in docs)
    for raw in (
        GeneratedAnswer(" ".join(s for s, _ in sentences), sentences=sentences),
        GeneratedAnswer(" ".join(f"{d.document.text} [{i + 1}]" for i, d in enumerate(docs))),
    ):
        g = CitationGuard().apply(raw, passages, docs)
        assert [s.text for s in g.sentences] == [d.document.text for d in docs]
        assert g.removed_citations == 0 and g.unsupported_sentences == 0
        assert g.sources == tuple(d.document.url for d in docs)


def test_a_bracketed_url_beside_quoted_text_is_still_a_citation() -> None:
    raw = GeneratedAnswer("Store passwords with a slow salted hash such as Argon2id [https://evil.example/md5].")
    g = CitationGuard().apply(raw, PASSAGES, DOCS)
    assert g.removed_citations == 1 and "evil.example" not in g.text
