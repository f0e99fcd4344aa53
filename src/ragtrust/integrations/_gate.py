"""What the LangChain and LlamaIndex adapters share: screen a retrieved set, gate it, annotate it.

Both adapters turn the framework's documents into :class:`~ragtrust.documents.RetrievedDoc`,
run :meth:`TrustGate.screen <ragtrust.pipeline.TrustGate.screen>` (Stage 1 and the document
gate under the gate's ``screening.policy``) and read the verdict back per document:

* ``drop-suspicious`` (default): a suspicious document is left out;
* ``flag``: every document is kept, the suspicious ones marked in their metadata;
* ``block``: a suspicious document stops the whole set (:class:`ContextBlockedError`, or no
  documents with ``on_block="empty"``).

A document the store's ledger has quarantined is left out under every policy, as in the gate.

Fail closed: when Stage 1 itself failed (a signal raised, so the verdict has ``errors``), no
document was really screened, so the whole set is blocked under *every* policy, exactly as
policy ``block`` blocks it (:class:`ContextBlockedError`, or no documents with
``on_block="empty"``): an unscreened document must never come back marked ``kept``.

A document that shows no text (empty, or only whitespace and invisible characters, see
:func:`~ragtrust.documents.is_blank`) carries nothing to screen or to answer from: the
adapters leave it out before screening and log a warning naming it (:func:`without_blank`).

Example:
    >>> from ragtrust.documents import DocumentScreening
    >>> annotation(DocumentScreening(doc_id="d1", url=None, poison_probability=0.1))["action"]
    'kept'
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ragtrust.documents import Document, DocumentScreening, RetrievedDoc, Verdict, is_blank
from ragtrust.errors import ConfigError, RagTrustError

if TYPE_CHECKING:
    from ragtrust.pipeline import TrustGate

#: the metadata key every adapter writes its per-document screening under
METADATA_KEY = "ragtrust"
#: what a blocked set does: raise :class:`ContextBlockedError`, or give no documents
OnBlock = Literal["raise", "empty"]

logger = logging.getLogger("ragtrust.integrations")

_T = TypeVar("_T")


class ContextBlockedError(RagTrustError):
    """No retrieved document may be used: policy ``block`` and a suspicious one, or Stage 1 failed.

    A failed screening (``verdict.errors`` not empty) blocks the set under every policy: the
    documents were not screened, so none may pass as clean (fail closed).

    Attributes:
        verdict: the Stage 1 verdict that blocked the set (per-document P_i and signals, and
            the internal failures under ``errors``).
    """

    def __init__(self, verdict: Verdict) -> None:
        """Name the failures, or the suspicious documents, in the message."""
        if verdict.errors:
            super().__init__(
                f"Stage 1 screening failed ({'; '.join(verdict.errors)}); "
                "no context is given (fail closed: unscreened documents are never passed on)"
            )
        else:
            ids = ", ".join(d.doc_id for d in verdict.documents if d.suspicious) or "see verdict.documents"
            super().__init__(f"policy 'block': suspicious document(s) were retrieved ({ids}); no context is given")
        self.verdict = verdict


@dataclass(frozen=True)
class GatedSet:
    """The screened set: the verdict, which inputs survive the gate, and whether it was blocked.

    Attributes:
        verdict: the Stage 1 verdict (``stage == "screen"``).
        keep: per input document, whether it may be used.
        annotations: per input document, the metadata the adapters attach (see :func:`annotation`).
        blocked: policy ``block`` and a suspicious document, or Stage 1 failed (any policy).
    """

    verdict: Verdict
    keep: tuple[bool, ...]
    annotations: tuple[dict[str, Any], ...]
    blocked: bool


def check_gate(value: Any) -> TrustGate:
    """``value`` when it is a :class:`TrustGate`, else :class:`~ragtrust.errors.ConfigError` (a ValueError)."""
    from ragtrust.pipeline import TrustGate

    if not isinstance(value, TrustGate):
        raise ConfigError(f"gate must be a ragtrust TrustGate, got {type(value).__name__}")
    return value


def unique_ids(candidates: Sequence[str | None], prefix: str) -> list[str]:
    """One distinct id per document: the framework's id when it has one, else ``prefix-N``.

    The gate matches screenings to documents by id, so a repeated id gets ``#N`` appended.
    """
    seen: set[str] = set()
    out: list[str] = []
    for i, candidate in enumerate(candidates, start=1):
        base = candidate or f"{prefix}-{i}"
        doc_id = base if base not in seen else f"{base}#{i}"
        seen.add(doc_id)
        out.append(doc_id)
    return out


def without_blank(items: Sequence[_T], texts: Sequence[object], kind: str) -> list[_T]:
    """``items`` less those whose text shows nothing (:func:`~ragtrust.documents.is_blank`), each one logged.

    A blank document has nothing to screen and nothing to answer from, so it is left out
    rather than passed on as ``kept`` with P = 0. A text that is not a string is left in:
    turning the document into a :class:`RetrievedDoc` refuses it with an InputError.

    Example:
        >>> without_blank(["a", "b"], ["Use TLS.", " \u200b"], "document")
        ['a']
    """
    out = []
    for i, (item, text) in enumerate(zip(items, texts, strict=True), start=1):
        if isinstance(text, str) and is_blank(text):
            logger.warning("ragtrust: retrieved %s #%d shows no text (nothing to screen): left out", kind, i)
        else:
            out.append(item)
    return out


def retrieved(
    doc_id: str, text: str, metadata: Mapping[str, Any], rank: int, score: float | None, retriever: str
) -> RetrievedDoc:
    """A framework document as ragtrust's :class:`RetrievedDoc` (its URL from ``source`` / ``url``)."""
    url = metadata.get("url") or metadata.get("source")
    plain = {k: v for k, v in metadata.items() if k != METADATA_KEY}
    similarity = score if score is not None and 0.0 <= score <= 1.0 else None
    return RetrievedDoc(
        document=Document(id=doc_id, text=text, url=str(url) if url else None, metadata=plain),
        score=similarity,
        rank=rank,
        retriever=retriever,
    )


def annotation(screening: DocumentScreening) -> dict[str, Any]:
    """The per-document metadata: P_i, suspicious, the gate's action and each firing signal's reasons."""
    firing = [s for s in screening.signals if not s.skipped and s.score > 0]
    return {
        "poison_probability": screening.poison_probability,
        "suspicious": screening.suspicious,
        "action": screening.action,
        "signals": {s.name: s.score for s in screening.signals if not s.skipped},
        "reasons": [reason for s in firing for reason in s.reasons],
        "skipped": [f"{s.name}: {s.skip_reason}" for s in screening.signals if s.skipped],
    }


def screen_and_gate(gate: TrustGate, docs: Sequence[RetrievedDoc], query: str | None) -> GatedSet:
    """Stage 1 on ``docs`` and the gate's policy applied to it (``docs`` must not be empty)."""
    verdict = gate.screen(docs, query)
    by_id = {d.doc_id: d for d in verdict.documents}
    screenings = [by_id[d.id] for d in docs]
    threshold = gate.settings.screening.drop_threshold
    suspicious = any(s.suspicious or s.poison_probability > threshold for s in screenings)
    # fail closed: a signal that failed leaves P_i = 0 and action "kept" on documents it never
    # read, so an internal error blocks the set under every policy, never passes it as clean
    blocked = bool(verdict.errors) or (gate.settings.screening.policy == "block" and suspicious)
    return GatedSet(
        verdict=verdict,
        keep=tuple(not blocked and s.action != "dropped" for s in screenings),
        annotations=tuple(annotation(s) for s in screenings),
        blocked=blocked,
    )


__all__ = [
    "METADATA_KEY",
    "ContextBlockedError",
    "GatedSet",
    "OnBlock",
    "annotation",
    "check_gate",
    "retrieved",
    "screen_and_gate",
    "unique_ids",
    "without_blank",
]
