"""Request and response schemas of the HTTP API, kept apart from the domain types.

The domain dataclasses (:mod:`ragtrust.documents`) may grow; these Pydantic models are the
published contract (they are what ``/openapi.json`` shows). Requests convert *into* domain
objects with the same validation the CLI uses (:func:`ragtrust.io.parse_document_row`);
responses are built *from* the domain objects' ``to_dict()``.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

from ragtrust.documents import Document, Passage, RetrievedDoc, check_document_id, is_blank
from ragtrust.errors import InputError
from ragtrust.io import parse_document_row

#: most documents one request may carry (screen / verify / align / ingest)
MAX_DOCUMENTS = 200
#: longest question or answer accepted, in characters
MAX_QUERY_CHARS = 4_000
MAX_ANSWER_CHARS = 20_000


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")


# --------------------------------------------------------------------------- requests


class DocumentIn(_Request):
    """A retrieved document sent for screening or verification."""

    id: str = Field(min_length=1, max_length=512, description="stable document id")
    text: str = Field(min_length=1, description="full document text; spans index into it")
    url: str | None = Field(None, description="citation target (defaults to the id)")
    # a JSON number only: true or "0.5" is a mistake, not a similarity (the --docs reader agrees)
    similarity: Annotated[float, Strict()] | None = Field(
        None, ge=0.0, le=1.0, description="retrieval similarity in [0, 1] (the verdict's documents[].similarity)"
    )
    score: Annotated[float, Strict()] | None = Field(
        None, ge=0.0, le=1.0, description="older name of similarity (still read)"
    )
    metadata: dict[str, Any] = Field(default_factory=dict)


class IngestDocumentIn(_Request):
    """A document to add to the store."""

    id: str = Field(min_length=1, max_length=512)
    text: str = Field(min_length=1)
    url: str | None = None
    source: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class PassageIn(_Request):
    """An extracted evidence passage (EvidenT's ``collected_passages`` item)."""

    passage_id: str = Field(min_length=1, max_length=512)
    text: str = Field(min_length=1, description="the passage as the extractor returned it")
    url: str | None = Field(None, description="the URL the extractor attributed it to")
    doc_id: str | None = None


class AskRequest(_Request):
    """A question for the full pipeline on the server's store."""

    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)


class ScreenRequest(_Request):
    """Stage 1 only: screen retrieved documents for poisoning."""

    documents: list[DocumentIn] = Field(min_length=1, max_length=MAX_DOCUMENTS)
    query: str | None = Field(None, max_length=MAX_QUERY_CHARS)


class VerifyRequest(_Request):
    """Stage 2 (with Stage 1 for P and C): verify an answer against documents."""

    answer: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS)
    documents: list[DocumentIn] = Field(min_length=1, max_length=MAX_DOCUMENTS)
    query: str | None = Field(None, max_length=MAX_QUERY_CHARS)


class AlignRequest(_Request):
    """EvidenT alignment: keep, truncate, re-attribute or drop passages."""

    passages: list[PassageIn] = Field(min_length=1, max_length=MAX_DOCUMENTS)
    documents: list[DocumentIn] = Field(min_length=1, max_length=MAX_DOCUMENTS)


class IngestRequest(_Request):
    """Documents to add to the store, all or nothing."""

    documents: list[IngestDocumentIn] = Field(min_length=1, max_length=MAX_DOCUMENTS)
    # a Literal, so a misspelt tier is a 422 naming the three, not a 403 asking for the 'vet' scope
    tier: Literal["vetted", "unvetted", "quarantined"] | None = Field(
        None, description="source trust tier recorded in the provenance ledger"
    )


class TierRequest(_Request):
    """A trust tier to set on a stored document (needs the ``vet`` scope)."""

    tier: Literal["vetted", "unvetted", "quarantined"] = Field(
        description="vetted (its current content becomes the trusted version), unvetted or quarantined"
    )
    reason: str = Field("", max_length=1_000, description="why; recorded in the provenance ledger")


# --------------------------------------------------------------------------- conversion


def _unique_ids(ids: Sequence[str], what: str) -> None:
    dupes = sorted(i for i, n in collections.Counter(ids).items() if n > 1)
    if dupes:
        raise InputError(f"duplicate {what} id(s) {dupes[:5]}: ids must be unique within a request")


def to_retrieved(documents: Sequence[DocumentIn]) -> list[RetrievedDoc]:
    """Request documents as :class:`RetrievedDoc` (ranks follow request order).

    Raises:
        InputError: a document fails the domain validation, or ids repeat.
    """
    _unique_ids([d.id for d in documents], "document")
    out: list[RetrievedDoc] = []
    for i, doc in enumerate(documents):
        row = doc.model_dump(exclude_none=True)
        parsed = parse_document_row(row, f"documents[{i}]")
        out.append(RetrievedDoc(document=parsed.document, score=parsed.score, rank=i + 1, retriever="request"))
    return out


def to_passages(passages: Sequence[PassageIn]) -> list[Passage]:
    """Request passages as domain :class:`Passage` objects."""
    _unique_ids([p.passage_id for p in passages], "passage")
    return [Passage(passage_id=p.passage_id, text=p.text, url=p.url, doc_id=p.doc_id) for p in passages]


def to_documents(documents: Sequence[IngestDocumentIn]) -> list[Document]:
    """Request documents as domain :class:`Document` objects for ingestion.

    Raises:
        InputError: an id is unusable (:func:`~ragtrust.documents.check_document_id`), a text has nothing visible
            (:func:`~ragtrust.documents.is_blank`), the metadata is too deep, or ids repeat.
    """
    _unique_ids([d.id for d in documents], "document")
    out = []
    for i, doc in enumerate(documents):
        check_document_id(doc.id, f"documents[{i}]")
        if is_blank(doc.text):
            raise InputError(f"documents[{i}]: 'text' must have visible characters (not only whitespace or controls)")
        out.append(Document(id=doc.id, text=doc.text, url=doc.url, source=doc.source or "api", metadata=doc.metadata))
    return out


# --------------------------------------------------------------------------- responses


class SpanOut(_Response):
    """A character span ``text == document.text[start:end]`` (code-point offsets)."""

    doc_id: str
    start: int
    end: int
    text: str
    url: str | None = None
    page: int | None = Field(default=None, description="1-based PDF page of the span's start; null when unknown")


class SignalOut(_Response):
    """One screening signal on one document (score 1 = suspicious)."""

    name: str
    score: float = 0.0
    reasons: list[str] = []
    spans: list[SpanOut] = []
    skipped: bool = False
    skip_reason: str | None = None
    details: dict[str, Any] = {}


class DocumentScreeningOut(_Response):
    """Stage-1 result of one document."""

    doc_id: str
    url: str | None
    poison_probability: float
    signals: list[SignalOut] = []
    similarity: float | None = None
    weight: float = 0.0
    suspicious: bool = False
    action: str = "kept"


class AnswerSentenceOut(_Response):
    """One answer sentence with its citations and verified spans."""

    text: str
    citations: list[str] = []
    spans: list[SpanOut] = []
    support: float | None = None
    supported: bool = False
    best_doc_id: str | None = None


class PassageOut(_Response):
    """An evidence passage after alignment."""

    passage_id: str
    text: str
    url: str | None = None
    doc_id: str | None = None
    spans: list[SpanOut] = []
    status: str = "unverified"
    overlap: float | None = None


class ClaimRefOut(_Response):
    """One side of a knowledge conflict: a claim with its span ``text == document.text[start:end]``."""

    doc_id: str
    start: int
    end: int
    text: str
    url: str | None = None
    origin: str = Field(
        default="retrieved",
        description="'retrieved' (in the top-K), 'store' (a witness from the store) or 'vetted' (the last vetted "
        "version of the document)",
    )
    page: int | None = Field(default=None, description="1-based PDF page of the claim's start; null when unknown")


class ConflictOut(_Response):
    """Two claims that disagree, both sides with their spans, and who the evidence blames."""

    left: ClaimRefOut
    right: ClaimRefOut
    kind: str = Field(
        description="'number', 'date', 'entity', 'negation', 'modal', 'quantifier', 'antonym' (a token diff "
        "found it), 'permission' (one claim forbids what the other permits), 'answer' (two answers with "
        "different values) or 'nli' (the NLI model called the pair a contradiction)"
    )
    strength: float = Field(description="in [0, 1]")
    left_words: str = Field(default="", description="the words of the left claim that differ (diff findings)")
    right_words: str = Field(default="", description="the words of the right claim that differ (diff findings)")
    contradiction: float | None = Field(
        default=None, description="NLI contradiction probability of the pair (max of both directions)"
    )
    blamed: str | None = Field(
        default=None, description="id of the document the evidence says is wrong; null = contested"
    )
    resolution: str = Field(default="", description="how the blame was decided, in words")


class VerdictOut(_Response):
    """A verdict: trust score and level, F / C / P, documents, answer and spans, conflicts."""

    query: str
    trust_score: float
    trust_level: Literal["HIGH", "MEDIUM", "LOW", "VERY LOW"]
    trusted: bool
    decision: Literal["trusted", "flagged"]
    tau: float
    factuality: float
    consistency: float
    poison_probability: float
    trust_raw: float = 0.0
    dampener: float = 1.0
    retrieval_modifier: float = 1.0
    max_similarity: float | None = None
    answer: str = ""
    preface: str = Field(
        default="", description="what the writer put before the answer's sentences (e.g. 'does not explicitly state')"
    )
    sentences: list[AnswerSentenceOut] = []
    dropped_sentences: list[AnswerSentenceOut] = Field(
        default=[],
        description="sentences removed from the answer because the evidence does not support them "
        "(trust.unsupported = 'drop'); empty otherwise",
    )
    documents: list[DocumentScreeningOut] = []
    passages: list[PassageOut] = []
    context_relevance: float | None = Field(
        default=None,
        description="best relevance of an evidence sentence (in its topic context) to the question; "
        "null when not measured",
    )
    answer_relevance: float | None = Field(default=None, description="cosine question-answer; null when not measured")
    warnings: list[str] = []
    errors: list[str] = []
    decision_reasons: list[str] = Field(
        default=[], description="the conditions of the decision that failed, in words; empty when trusted"
    )
    conflicts: list[ConflictOut] = Field(
        default=[],
        description="claims of the retrieved documents (or their witnesses) that disagree; a contested conflict "
        "that touches a sentence of the answer makes the verdict untrusted",
    )
    stage: str = "full"
    timings_s: dict[str, float] = {}
    models: dict[str, str] = {}


class AlignResponse(_Response):
    """Aligned passages, the dropped ones, and alignment diagnostics."""

    passages: list[PassageOut]
    dropped: list[PassageOut]
    diagnostics: dict[str, float]


class IngestResponse(_Response):
    """The ids now in the store and the store's ingest report."""

    ids: list[str]
    report: dict[str, Any] = {}


class DocumentOut(_Response):
    """A stored document with its provenance record (for the span viewer)."""

    id: str
    text: str
    url: str | None = None
    source: str | None = None
    metadata: dict[str, Any] = {}
    content_hash: str = ""
    provenance: dict[str, Any] | None = None


class ProvenanceOut(_Response):
    """A document's provenance record: its tier, and who set it when (the audit trail)."""

    doc_id: str
    source: str
    content_hash: str
    first_seen: str
    last_changed: str
    tier: str | None
    vetted_hash: str | None
    vetted_at: str | None
    versions: int
    tier_reason: str = ""
    tier_changed_at: str | None = None
    deleted_at: str | None = None
    tier_changed_by: str | None = None
    changed_since_vetted: bool = False


class HealthOut(_Response):
    """Liveness."""

    status: Literal["ok"] = "ok"
    version: str


class ReadyOut(_Response):
    """Readiness: the models are warm and the store (if any) is open."""

    ready: bool
    store: bool
    detail: str | None = None


class ErrorBody(_Response):
    """The error object."""

    type: str = Field(description="stable machine-readable error kind, e.g. 'invalid_input'")
    message: str = Field(description="what went wrong and how to fix it")


class ErrorOut(_Response):
    """Every non-2xx response has this shape."""

    error: ErrorBody


__all__ = [
    "MAX_DOCUMENTS",
    "AlignRequest",
    "AlignResponse",
    "AnswerSentenceOut",
    "AskRequest",
    "ClaimRefOut",
    "ConflictOut",
    "DocumentIn",
    "DocumentOut",
    "DocumentScreeningOut",
    "ErrorBody",
    "ErrorOut",
    "HealthOut",
    "IngestDocumentIn",
    "IngestRequest",
    "IngestResponse",
    "PassageIn",
    "PassageOut",
    "ProvenanceOut",
    "ReadyOut",
    "ScreenRequest",
    "SignalOut",
    "SpanOut",
    "TierRequest",
    "VerdictOut",
    "VerifyRequest",
    "to_documents",
    "to_passages",
    "to_retrieved",
]
