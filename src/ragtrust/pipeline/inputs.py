"""The documents :meth:`TrustGate.screen` / :meth:`~TrustGate.verify` / :meth:`~TrustGate.answer_from` accept.

Each item may be

* a ``str``: a document's text, with the id ``doc-<n>`` (its 1-based position);
* a ``dict`` of the JSONL / HTTP API shape: ``{"id", "text", "url"?, "similarity"?,
  "metadata"?}`` (``score`` is accepted for ``similarity``, its older name);
* a :class:`~ragtrust.documents.Document` or a :class:`~ragtrust.documents.RetrievedDoc`.

A single item is taken as a list of one. Ranks follow the order given (a ``RetrievedDoc``
keeps its own). Anything else is one :class:`~ragtrust.errors.InputError` naming the item.

Example:
    >>> docs = as_retrieved_docs(["Use bcrypt.", {"id": "kb-2", "text": "Salt hashes.", "similarity": 0.8}])
    >>> [(d.id, d.similarity, d.rank) for d in docs]
    [('doc-1', None, 1), ('kb-2', 0.8, 2)]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from ragtrust.documents import Document, RetrievedDoc
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


__all__ = ["ACCEPTED", "DocsIn", "as_retrieved_docs"]
