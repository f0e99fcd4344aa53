"""A given answer's citations (``verify``): a source that is none of the documents fails the decision.

Golden decisions on the bundled knowledge base with the deterministic fakes. ``[n]`` names
the n-th document as given. An answer whose sentence is true but cites ``[7]`` with two
documents, or a URL nobody gave, read TRUSTED HIGH: the citations were stripped before NLI
and never read again. ``ask`` removes such citations from its own answers (the citation guard).
"""

from __future__ import annotations

import pytest

from ragtrust.config import Settings, load_settings
from ragtrust.data.kb import load_knowledge_base
from ragtrust.documents import Document, RetrievedDoc
from ragtrust.pipeline import TrustGate
from ragtrust.testing import HashingEmbedder, LexicalNLI

#: Stage 1 without the learned injection classifier (as tests/test_pipeline.py)
SIGNALS = ["linguistic", "structural", "intra_consistency", "cross_consistency", "semantic_outlier", "provenance"]
#: HashingEmbedder's cosines are on another scale than the fitted relevance thresholds
NO_RELEVANCE_FLOOR = {"context_threshold": 0.0, "answer_threshold": 0.0}
QUERY = "SQL injection?"


def settings() -> Settings:
    return load_settings(env={}, overrides={"screening": {"signals": SIGNALS}, "relevance": NO_RELEVANCE_FLOOR})


@pytest.fixture(scope="module")
def kb() -> list[Document]:
    return load_knowledge_base()


@pytest.fixture(scope="module")
def gate(kb: list[Document]) -> TrustGate:
    return TrustGate.from_documents(kb, settings(), nli=LexicalNLI(), embedder=HashingEmbedder())


@pytest.fixture(scope="module")
def docs(kb: list[Document]) -> list[RetrievedDoc]:
    picked = [d for d in kb if d.id in ("kb-01", "kb-02")]
    return [RetrievedDoc(document=d, score=0.8, rank=i + 1) for i, d in enumerate(picked)]


def rule(doc: RetrievedDoc) -> str:
    """The document's first rule sentence (after its question), without the full stop."""
    return doc.document.text.split("? ", 1)[1].split(". ")[0].rstrip(".")


@pytest.mark.parametrize(
    "cite", ["[1]", "[2]", "[1, 2]", "[kb-01]", "[{url}]", "[sic]"], ids=["1", "2", "1-2", "id", "url", "not-a-cite"]
)
def test_citations_of_given_documents_keep_the_answer_trusted(
    gate: TrustGate, docs: list[RetrievedDoc], cite: str
) -> None:
    answer = f"{rule(docs[0])} {cite.format(url=docs[0].document.cite)}."
    verdict = gate.verify(answer, docs, QUERY)
    assert verdict.trusted, verdict.decision_reasons


@pytest.mark.parametrize(
    ("cite", "named"),
    [
        ("[7]", "'[7]'"),
        ("[0]", "'[0]'"),
        ("[1, 3]", "'[3]'"),
        ("[https://elsewhere.test/x]", "'https://elsewhere.test/x'"),
    ],
)
def test_a_citation_of_a_source_not_given_fails_the_decision(
    gate: TrustGate, docs: list[RetrievedDoc], cite: str, named: str
) -> None:
    answer = f"{rule(docs[0])} {cite}."
    verdict = gate.verify(answer, docs, QUERY)
    (sentence,) = verdict.sentences
    assert sentence.supported  # the sentence is true: its citation is what is wrong
    assert not verdict.trusted and verdict.trust_level == "LOW"
    assert verdict.decision_reasons == (
        f"the answer cites a source that is none of the documents it was checked against: {named}",
    )
    assert any(named in w and "not trusted" in w for w in verdict.warnings)
