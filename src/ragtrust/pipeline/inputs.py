"""The documents :meth:`TrustGate.screen` / :meth:`~TrustGate.verify` / :meth:`~TrustGate.answer_from` accept.

Each item may be

* a ``str``: a document's text, with the id ``doc-<n>`` (its 1-based position);
* a ``dict`` of the JSONL / HTTP API shape: ``{"id", "text", "url"?, "similarity"?,
  "metadata"?}`` (``score`` is accepted for ``similarity``, its older name);
* a :class:`~ragtrust.documents.Document` or a :class:`~ragtrust.documents.RetrievedDoc`.

A single item is taken as a list of one. Ranks follow the order given (a ``RetrievedDoc``
keeps its own). Anything else is one :class:`~ragtrust.errors.InputError` naming the item.

The texts are checked here too: a question or an answer to verify must be a ``str`` with
something visible in it (:func:`~ragtrust.documents.is_blank`: whitespace, control characters
and format characters such as U+200B or U+202E do not count); the optional ``query`` of screen / verify
is ``None`` or a ``str``, and one with nothing visible is no query.

Example:
    >>> docs = as_retrieved_docs(["Use bcrypt.", {"id": "kb-2", "text": "Salt hashes.", "similarity": 0.8}])
    >>> [(d.id, d.similarity, d.rank) for d in docs]
    [('doc-1', None, 1), ('kb-2', 0.8, 2)]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from ragtrust.documents import Document, RetrievedDoc, is_blank
from ragtrust.errors import InputError
from ragtrust.io import parse_document_row

#: one document as the gate's entry points accept it
DocsIn: TypeAlias = "str | Mapping[str, Any] | Document | RetrievedDoc"

#: what one item may be, for the error message
ACCEPTED = "a str (document text), a dict {id, text, url?, similarity?}, a Document or a RetrievedDoc"


def as_retrieved_docs(docs: Any, *, allow_empty: bool = False) -> list[RetrievedDoc]:
    """``docs`` as :class:`RetrievedDoc` objects (see the module docstring).

    Raises:
        InputError: no documents (unless ``allow_empty``), an item of another type, a dict
            without ``id`` / ``text``, an empty text, or an id given twice.
    """
    if isinstance(docs, (str, Mapping, Document, RetrievedDoc)):
        docs = [docs]
    try:
        items = list(docs)
    except TypeError:
        raise InputError(f"documents must be a list of {ACCEPTED}; got {type(docs).__name__}") from None
    if not items and not allow_empty:
        raise InputError("no documents given: pass at least one document")
    out = [_one(item, i) for i, item in enumerate(items)]
    ids = [d.id for d in out]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise InputError(f"duplicate document id(s) {', '.join(dupes[:5])}: ids must be unique")
    return out


def question_text(question: Any) -> str:
    r"""``question`` when it is a ``str`` with something visible in it.

    Raises:
        InputError: not a ``str``, or only whitespace, control and invisible format characters.

    Example:
        >>> question_text("\u200b\u202e")
        Traceback (most recent call last):
        ragtrust.errors.InputError: the question is empty: pass a non-empty question text
    """
    if not isinstance(question, str):
        raise InputError(f"the question must be a str; got {type(question).__name__}")
    if is_blank(question):
        raise InputError("the question is empty: pass a non-empty question text")
    return question


def answer_text(answer: Any) -> str:
    """``answer`` (to verify) when it is a ``str`` with something visible in it.

    Raises:
        InputError: not a ``str``, or only whitespace, control and invisible format characters.
    """
    if not isinstance(answer, str):
        raise InputError(f"the answer to verify must be a str; got {type(answer).__name__}")
    if is_blank(answer):
        raise InputError("the answer to verify is empty: pass a non-empty answer text")
    return answer


def optional_query(query: Any) -> str | None:
    r"""The ``query`` of screen / verify: ``None``, or a ``str`` (``None`` when nothing in it is visible).

    Raises:
        InputError: anything else (bytes, a list, a number), naming the argument.

    Example:
        >>> optional_query(" \u200b"), optional_query("SQL injection?")
        (None, 'SQL injection?')
    """
    if query is None:
        return None
    if not isinstance(query, str):
        raise InputError(f"query must be a str or None; got {type(query).__name__}")
    return None if is_blank(query) else query


def _one(item: Any, i: int) -> RetrievedDoc:
    if isinstance(item, RetrievedDoc):
        return item
    if isinstance(item, Document):
        return RetrievedDoc(document=item, rank=i + 1)
    if isinstance(item, str):
        if not item.strip():
            raise InputError(f"documents[{i}]: the text is empty")
        return RetrievedDoc(document=Document(id=f"doc-{i + 1}", text=item), rank=i + 1)
    if isinstance(item, Mapping):
        parsed = parse_document_row(dict(item), f"documents[{i}]")
        return RetrievedDoc(document=parsed.document, score=parsed.score, rank=parsed.rank if "rank" in item else i + 1)
    raise InputError(f"documents[{i}]: expected {ACCEPTED}; got {type(item).__name__}")


__all__ = ["ACCEPTED", "DocsIn", "answer_text", "as_retrieved_docs", "optional_query", "question_text"]
