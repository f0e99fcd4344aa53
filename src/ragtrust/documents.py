"""Domain types: documents, retrieval results, evidence spans and the Verdict.

All types are frozen dataclasses with a stable JSON form: ``to_dict()`` gives plain JSON
types (tuples become lists, mappings become dicts) and ``from_dict()`` reads it back.

Example:
    >>> doc = Document(id="kb-1", text="Use parameterised queries.")
    >>> doc.content_hash[:12]
    '800497e44ecf'
    >>> Document.from_dict(doc.to_dict()) == doc
    True
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import numbers
import types
import typing
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ragtrust.errors import InputError

T = TypeVar("T", bound="_JsonMixin")

TrustLevel = Literal["HIGH", "MEDIUM", "LOW", "VERY LOW"]


def normalize_text(text: str) -> str:
    """NFKC-normalise and collapse whitespace: the form content hashes are taken of."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def content_hash(text: str) -> str:
    """sha256 (hex) of the normalised text, so whitespace-only edits keep the hash."""
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


_INVISIBLE = frozenset({"Cc", "Cf"})
"""Unicode categories that show nothing: controls (Cc) and format characters (Cf)."""


def is_blank(text: str) -> bool:
    r"""Tell whether ``text`` holds nothing but whitespace, control and invisible format characters.

    Format characters (Unicode category Cf: zero-width spaces and joiners, bidi controls,
    the byte-order mark, tag characters) and control characters (category Cc: NUL, the C0
    and C1 controls) show nothing, so a text of them alone is as empty as one of spaces.
    The readers of documents and questions people give (the dict / JSONL / HTTP forms,
    ``--docs``) refuse such a text with this one test.

    Example:
        >>> is_blank(" \u200b\ufeff\n"), is_blank("\x00\x01\x7f"), is_blank("\u200bUse TLS.")
        (True, True, False)
    """
    stripped = text.strip()
    if not stripped:
        return True
    if unicodedata.category(stripped[0]) not in _INVISIBLE:  # the common case: a visible first character
        return False
    return all(c.isspace() or unicodedata.category(c) in _INVISIBLE for c in stripped)


def check_rank(value: Any, what: str = "RetrievedDoc.rank") -> int:
    """``value`` as a rank (an integer >= 1; booleans are not integers).

    ``what`` names the value in the error, e.g. ``"docs.jsonl:3: 'rank'"``.

    Raises:
        InputError: ``"{what} must be a positive integer, got ..."``.

    Example:
        >>> check_rank(2)
        2
        >>> check_rank("one", "r.jsonl:1: 'rank'")
        Traceback (most recent call last):
        ...
        ragtrust.errors.InputError: r.jsonl:1: 'rank' must be a positive integer, got 'one'
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InputError(f"{what} must be a positive integer, got {_shown(value)}")
    return int(value)


def check_similarity(value: Any, what: str = "RetrievedDoc.score") -> float | None:
    """``value`` as a similarity: ``None`` or a number in [0, 1] (not NaN, not a boolean).

    Raises:
        InputError: ``"{what} must be a number in [0, 1] or null, got ..."``.

    Example:
        >>> check_similarity(1), check_similarity(None)
        (1.0, None)
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= float(value) <= 1.0:
        # NaN fails the range test too: it compares false with everything
        raise InputError(f"{what} must be a number in [0, 1] or null, got {_shown(value)}")
    return float(value)


def check_url(value: Any, what: str = "url") -> str | None:
    """``value`` as a URL field: ``None`` or a string (a number or an object is refused).

    Example:
        >>> check_url("https://x/1"), check_url(None)
        ('https://x/1', None)
    """
    if value is not None and not isinstance(value, str):
        raise InputError(f"{what} must be a string or null, got {type(value).__name__} {_shown(value)}")
    return value


def check_document_id(doc_id: str, where: str = "document") -> None:
    r"""Refuse an id a store cannot take or serve; every reader of ids from outside calls it.

    Ids may hold ``/`` (``ragtrust ingest`` names a file by its path below the folder), but
    not a ``.`` or ``..`` segment (a URL resolver drops or climbs it: ``/v1/documents/{id}``),
    nor leading or trailing whitespace, nor control or format characters (a newline, NUL,
    U+200B: they hide in a listing and break a URL or a log line); a blank id names nothing,
    and ``<id>#<n>`` is how the store names a document's chunks.

    Raises:
        InputError: ``"{where}: 'id' must ..."``, naming the rule and quoting the id.

    Example:
        >>> check_document_id("kb/a.md")
        >>> check_document_id("kb/a.md#3", "line 2")
        Traceback (most recent call last):
        ...
        ragtrust.errors.InputError: line 2: 'id' looks like a chunk id (<id>#<n>), got 'kb/a.md#3'; rename the document
    """
    if is_blank(doc_id):
        raise InputError(f"{where}: 'id' must have visible characters, got {shown_id(doc_id)}")
    if doc_id != doc_id.strip():
        raise InputError(f"{where}: 'id' must not start or end with whitespace, got {shown_id(doc_id)}")
    bad = next((c for c in doc_id if unicodedata.category(c) in _INVISIBLE), None)
    if bad is not None:
        raise InputError(
            f"{where}: 'id' must not contain control or invisible characters (found U+{ord(bad):04X}), "
            f"got {shown_id(doc_id)}"
        )
    if any(part in (".", "..") for part in doc_id.split("/")):
        raise InputError(f"{where}: 'id' must not have a '.' or '..' path segment, got {shown_id(doc_id)}")
    _, sep, tail = doc_id.rpartition("#")
    if sep and tail.isdigit():
        raise InputError(f"{where}: 'id' looks like a chunk id (<id>#<n>), got {shown_id(doc_id)}; rename the document")


#: deepest nesting of objects and arrays a document's metadata may have; the same bound as
#: ``ingest.max_depth`` for folders. Serialising recurses, so an unbounded depth (a
#: 900-deep JSON list) raised RecursionError where it should refuse the input.
MAX_METADATA_DEPTH = 32


def check_metadata_depth(metadata: Any, what: str = "metadata") -> None:
    """Refuse ``metadata`` nested more than :data:`MAX_METADATA_DEPTH` objects / arrays deep.

    Walks with an explicit stack, so any depth is measured without recursion.

    Raises:
        InputError: ``"{what} is nested more than 32 levels deep; ..."``.

    Example:
        >>> check_metadata_depth({"a": [{"b": 1}]})
        >>> deep: list[object] = []
        >>> for _ in range(40):
        ...     deep = [deep]
        >>> check_metadata_depth({"x": deep}, "m")
        Traceback (most recent call last):
        ...
        ragtrust.errors.InputError: m is nested more than 32 levels deep; flatten it
    """
    stack: list[tuple[Any, int]] = [(metadata, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            children: Any = value.values()
        elif isinstance(value, (list, tuple)):
            children = value
        else:
            continue
        if depth > MAX_METADATA_DEPTH:
            raise InputError(f"{what} is nested more than {MAX_METADATA_DEPTH} levels deep; flatten it")
        stack.extend((child, depth + 1) for child in children if isinstance(child, (Mapping, list, tuple)))


def _shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: an error message quotes input, never all of it."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: the most characters of an id an error message quotes (the OWASP store's longest chunk id has 80)
SHOWN_ID_CHARS = 120


def shown_id(doc_id: str) -> str:
    """A document id quoted for an error message, cut after :data:`SHOWN_ID_CHARS` characters.

    Example:
        >>> shown_id("kb/a.md#3"), len(shown_id("x" * 5000))
        ("'kb/a.md#3'", 120)
    """
    return _shown(doc_id, SHOWN_ID_CHARS)


def _to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
    if isinstance(value, Mapping):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    return value


def _from_jsonable(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        for arg in args:
            try:
                return _from_jsonable(arg, value)
            except (TypeError, ValueError, KeyError):
                continue
        return value
    if origin is tuple:
        targs = typing.get_args(tp)
        inner = targs[0] if targs else Any
        return tuple(_from_jsonable(inner, v) for v in value)
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        margs = typing.get_args(tp)
        inner = margs[1] if len(margs) == 2 else Any
        return {k: _from_jsonable(inner, v) for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise TypeError(f"expected an object for {tp.__name__}, got {type(value).__name__}")
        return tp.from_dict(value)  # type: ignore[attr-defined]
    return value


def _type_hints(cls: type) -> dict[str, Any]:
    """Resolved field types of a dataclass (resolving them is slow; classes do not change)."""
    return _cached_type_hints(cls)


@functools.cache
def _cached_type_hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


class _JsonMixin:
    """``to_dict`` / ``from_dict`` / ``to_json`` for frozen dataclasses."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form of this object."""
        result: dict[str, Any] = _to_jsonable(self)
        return result

    def to_json(self, **kwargs: Any) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)

    @classmethod
    def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
        """Rebuild an object from :meth:`to_dict` output; unknown keys are an error."""
        if not isinstance(data, Mapping):
            raise InputError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        hints = _type_hints(cls)
        known = {f.name for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
        unknown = set(data) - known
        if unknown:
            raise InputError(f"{cls.__name__}: unknown field(s) {sorted(unknown)}; expected {sorted(known)}")
        try:
            kwargs = {k: _from_jsonable(hints[k], v) for k, v in data.items()}
            return cls(**kwargs)
        except (TypeError, AttributeError) as exc:  # a field of the wrong JSON type
            raise InputError(f"{cls.__name__}: {exc}") from exc


@dataclass(frozen=True)
class Document(_JsonMixin):
    """A document (or chunk) of the corpus.

    Attributes:
        id: stable identifier (chunk ids look like ``<doc-id>#<n>``).
        text: the full text; spans index into it.
        url: where a reader can find it (a citation target); defaults to ``id``.
        source: origin (file path, store, retriever name).
        metadata: free-form JSON metadata (title, headings, tier, ...).
    """

    id: str
    text: str
    url: str | None = None
    source: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    content_hash: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        """Validate the types and fill the content hash.

        An empty text is not refused here: signals screen such a document as ``skipped`` (a
        retriever or framework may return one), and a store must stay readable. The entry
        points that take documents from people (the JSONL, dict and HTTP forms, ``--docs``)
        refuse a text that :func:`is_blank` calls empty.
        """
        if not isinstance(self.id, str) or not self.id.strip():
            raise InputError(f"Document.id must be a non-empty string, got {_shown(self.id)}")
        if not isinstance(self.text, str):
            raise InputError(f"Document {self.id!r}: text must be a string, got {type(self.text).__name__}")
        try:
            self.text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(
                f"Document {self.id!r}: text is not valid Unicode (an unpaired surrogate at offset {exc.start})"
            ) from exc
        check_url(self.url, f"Document {self.id!r}: url")
        if not isinstance(self.metadata, Mapping):
            raise InputError(f"Document {self.id!r}: metadata must be a mapping, got {type(self.metadata).__name__}")
        check_metadata_depth(self.metadata, f"Document {self.id!r}: metadata")
        if not self.content_hash:
            object.__setattr__(self, "content_hash", content_hash(self.text))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Document:
        """Rebuild a document from :meth:`to_dict` output; unknown keys are an error.

        Same contract as the generic version, without its per-field type dispatch: every
        field is plain JSON already, and stores read documents by the hundred thousand.
        """
        if not isinstance(data, Mapping):
            raise InputError(f"Document: expected a JSON object, got {type(data).__name__}")
        unknown = set(data) - _DOCUMENT_FIELDS
        if unknown:
            raise InputError(f"Document: unknown field(s) {sorted(unknown)}; expected {sorted(_DOCUMENT_FIELDS)}")
        kwargs = dict(data)
        if kwargs.get("metadata") is None:
            kwargs.pop("metadata", None)
        elif isinstance(kwargs["metadata"], Mapping):
            kwargs["metadata"] = dict(kwargs["metadata"])
        else:
            raise InputError(f"Document: metadata must be an object, got {type(kwargs['metadata']).__name__}")
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise InputError(f"Document: {exc}") from exc

    @property
    def cite(self) -> str:
        """The citation target: the URL when known, else the id."""
        return self.url or self.id


_DOCUMENT_FIELDS = frozenset(f.name for f in dataclasses.fields(Document) if f.init)


@dataclass(frozen=True)
class RetrievedDoc(_JsonMixin):
    """A document returned by a retriever with its similarity and rank.

    ``score`` is a similarity in [0, 1] in cosine terms (``None`` when the source gives
    none; also read as :attr:`similarity`, the verdict's name); ``rank`` starts at 1.
    """

    document: Document
    score: float | None = None
    rank: int = 1
    retriever: str = ""

    def __post_init__(self) -> None:
        """Validate: a :class:`Document`, a similarity in [0, 1] or ``None``, a rank >= 1."""
        if not isinstance(self.document, Document):
            raise InputError(
                f"RetrievedDoc.document must be a Document, got {type(self.document).__name__}; "
                "wrap the text as Document(id=..., text=...)"
            )
        what = f"RetrievedDoc {self.document.id!r}"
        object.__setattr__(self, "score", check_similarity(self.score, f"{what}: score (similarity)"))
        object.__setattr__(self, "rank", check_rank(self.rank, f"{what}: rank"))
        if not isinstance(self.retriever, str):
            raise InputError(f"{what}: retriever must be a string, got {type(self.retriever).__name__}")

    @property
    def id(self) -> str:
        """Shortcut for ``document.id``."""
        return self.document.id

    @property
    def similarity(self) -> float | None:
        """``score`` by the name the verdict uses (``DocumentScreening.similarity``, JSON ``similarity``)."""
        return self.score


@dataclass(frozen=True)
class Span(_JsonMixin):
    """A character span ``text == document.text[start:end]`` in a document.

    ``page`` is the 1-based PDF page holding the span's start (``None`` for other sources
    or when unknown); see :func:`ragtrust.ingest.documents_office.with_pages`.
    """

    doc_id: str
    start: int
    end: int
    text: str
    url: str | None = None
    page: int | None = None

    def __post_init__(self) -> None:
        """Offsets must be ordered and non-negative."""
        if self.start < 0 or self.end < self.start:
            raise InputError(f"Span offsets must satisfy 0 <= start <= end, got {self.start}..{self.end}")


@dataclass(frozen=True)
class Passage(_JsonMixin):
    """An evidence passage attributed to a document (EvidenT's extraction contract)."""

    passage_id: str
    text: str
    url: str | None = None
    doc_id: str | None = None
    spans: tuple[Span, ...] = ()
    status: str = "unverified"  # kept | truncated | reattributed | dropped | unverified
    overlap: float | None = None

    def __post_init__(self) -> None:
        """Text fields must be strings: the aligner and the citation guard read them as text."""
        for name in ("passage_id", "text"):
            if not isinstance(getattr(self, name), str):
                raise InputError(f"Passage.{name} must be a string, got {type(getattr(self, name)).__name__}")
        check_url(self.url, f"Passage {self.passage_id!r}: url")
        if self.doc_id is not None and not isinstance(self.doc_id, str):
            raise InputError(f"Passage {self.passage_id!r}: doc_id must be a string or null, got {_shown(self.doc_id)}")


@dataclass(frozen=True)
class Query(_JsonMixin):
    """A user question."""

    text: str
    top_k: int | None = None

    def __post_init__(self) -> None:
        """Reject empty questions."""
        if not isinstance(self.text, str) or not self.text.strip():
            raise InputError("the question is empty: pass a non-empty question text")


@dataclass(frozen=True)
class SignalResult(_JsonMixin):
    """One signal's finding on one document; ``score`` in [0, 1], 1 = suspicious."""

    name: str
    score: float = 0.0
    reasons: tuple[str, ...] = ()
    spans: tuple[Span, ...] = ()
    skipped: bool = False
    skip_reason: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        """Scores outside [0, 1] are a programming error of the signal."""
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"signal {self.name}: score {self.score} outside [0, 1]")


@dataclass(frozen=True)
class DocumentScreening(_JsonMixin):
    """Stage-1 result for one retrieved document."""

    doc_id: str
    url: str | None
    poison_probability: float
    signals: tuple[SignalResult, ...] = ()
    similarity: float | None = None
    weight: float = 0.0
    suspicious: bool = False
    action: str = "kept"  # kept | flagged | dropped


@dataclass(frozen=True)
class AnswerSentence(_JsonMixin):
    """One sentence of the answer with its citations, verified spans and NLI support."""

    text: str
    citations: tuple[str, ...] = ()
    spans: tuple[Span, ...] = ()
    support: float | None = None
    supported: bool = False
    best_doc_id: str | None = None


@dataclass(frozen=True)
class ClaimRef(_JsonMixin):
    """One side of a knowledge conflict: a claim with its span in its document.

    Attributes:
        doc_id / start / end / text: ``document.text[start:end] == text``.
        url: the document's citation target.
        origin: ``retrieved`` (in the top-K), ``store`` (a witness pulled from the store) or
            ``vetted`` (the last vetted version of the document, from the provenance ledger).
        page: the 1-based PDF page of the claim's start (``None`` for other sources), as
            :attr:`Span.page`.
    """

    doc_id: str
    start: int
    end: int
    text: str
    url: str | None = None
    origin: str = "retrieved"
    page: int | None = None


@dataclass(frozen=True)
class Conflict(_JsonMixin):
    """Two claims that disagree (issue 15; :mod:`ragtrust.screening.conflicts`).

    Attributes:
        left / right: the two claims.
        kind: ``number`` / ``date`` / ``entity`` / ``negation`` / ``modal`` / ``quantifier`` /
            ``antonym`` (a token diff found it), ``permission`` (one forbids what the other
            permits), ``answer`` (two answers with different values)
            or ``nli`` (the NLI model called the pair a contradiction).
        strength: in [0, 1].
        left_words / right_words: the words that differ (diff findings).
        contradiction: the NLI contradiction probability of the pair (max of both directions).
        blamed: the id of the document the evidence says is wrong; ``None`` = contested.
        resolution: how the blame was decided, in words.
    """

    left: ClaimRef
    right: ClaimRef
    kind: str
    strength: float
    left_words: str = ""
    right_words: str = ""
    contradiction: float | None = None
    blamed: str | None = None
    resolution: str = ""

    @property
    def doc_ids(self) -> tuple[str, str]:
        """The two documents' ids."""
        return self.left.doc_id, self.right.doc_id


@dataclass(frozen=True)
class Verdict(_JsonMixin):
    """The result of one query through the trust layer (SPEC section 2).

    Attributes:
        trust_score: T_final in [0, 1] after dampener and low-retrieval modifier.
        trust_level: HIGH / MEDIUM / LOW / VERY LOW (never above LOW when not trusted).
        trusted: ragtrust's decision: ``trust_score >= tau`` (the paper's Trust Index) *and*
            no internal failure, an answer was given, every sentence of it is grounded
            (``trust.unsupported``), and no suspicious document was used in its context (see
            :mod:`ragtrust.trust`).
        factuality / consistency / poison_probability: F, C, P.
        documents: per-document poison probabilities with the signal values behind them.
        sentences: the answer's sentences with citations and verified spans.
        dropped_sentences: the sentences removed from ``answer`` because the evidence does
            not support them (``trust.unsupported = "drop"``; a warning names them); empty
            otherwise. F was computed over the answer as written, these included.
        warnings: plain-language warnings for a person.
        errors: internal failures (any makes ``trusted`` false: fail closed).
        context_relevance: best relevance of a sentence of the evidence to the question, the
            sentence read in its topic context (a cosine; see
            :mod:`ragtrust.verification.relevance`; ``None`` when not measured); below
            ``relevance.context_threshold`` there is no relevant evidence and the verdict is
            not trusted.
        answer_relevance: cosine between the question and the answer (``None`` when not
            measured); below ``relevance.answer_threshold`` the answer does not address the
            question and the verdict is not trusted.
        preface: what the answer writer put before the answer's sentences (the extractive
            writer's "The documentation does not explicitly state an answer to this
            question."); empty when none. Such an answer is not trusted.
        decision_reasons: the conditions of the decision that failed, in words (e.g.
            ``"T = 0.412 < tau 0.5"``, ``"a suspicious document (kb-3, P = 0.91) was used in
            the context"``); empty exactly when ``trusted``.
        conflicts: claims of the retrieved documents (or their witnesses) that disagree, both
            sides with their spans; a contested conflict that touches a sentence of the answer
            makes the verdict untrusted.
    """

    query: str
    trust_score: float
    trust_level: TrustLevel
    trusted: bool
    tau: float
    factuality: float
    consistency: float
    poison_probability: float
    trust_raw: float = 0.0
    dampener: float = 1.0
    retrieval_modifier: float = 1.0
    max_similarity: float | None = None
    answer: str = ""
    preface: str = ""
    sentences: tuple[AnswerSentence, ...] = ()
    dropped_sentences: tuple[AnswerSentence, ...] = ()
    documents: tuple[DocumentScreening, ...] = ()
    passages: tuple[Passage, ...] = ()
    context_relevance: float | None = None
    answer_relevance: float | None = None
    warnings: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    decision_reasons: tuple[str, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    stage: str = "full"  # full | screen | verify
    timings_s: Mapping[str, float] = field(default_factory=dict, hash=False, compare=False)
    models: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def decision(self) -> str:
        """``trusted`` or ``flagged``."""
        return "trusted" if self.trusted else "flagged"


__all__ = [
    "AnswerSentence",
    "ClaimRef",
    "Conflict",
    "Document",
    "DocumentScreening",
    "Passage",
    "Query",
    "RetrievedDoc",
    "SignalResult",
    "Span",
    "TrustLevel",
    "Verdict",
    "check_document_id",
    "check_metadata_depth",
    "check_rank",
    "check_similarity",
    "check_url",
    "content_hash",
    "is_blank",
    "normalize_text",
    "shown_id",
]
