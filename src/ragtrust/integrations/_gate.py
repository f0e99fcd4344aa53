"""What the LangChain and LlamaIndex adapters share: screen a retrieved set, gate it, annotate it.

Both adapters turn the framework's documents into :class:`~ragtrust.documents.RetrievedDoc`,
run :meth:`TrustGate.screen <ragtrust.pipeline.TrustGate.screen>` (Stage 1 and the document
gate under the gate's ``screening.policy``) and read the verdict back per document:

* ``drop-suspicious`` (default): a suspicious document is left out;
* ``flag``: every document is kept, the suspicious ones marked in their metadata;
* ``block``: a suspicious document stops the whole set (:class:`ContextBlockedError`, or no
  documents with ``on_block="empty"``).

A document the store's ledger has quarantined is left out under every policy, as in the gate.

Example:
    >>> from ragtrust.documents import DocumentScreening
    >>> annotation(DocumentScreening(doc_id="d1", url=None, poison_probability=0.1))["action"]
    'kept'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ragtrust.documents import Document, DocumentScreening, RetrievedDoc, Verdict
from ragtrust.errors import ConfigError, RagTrustError

if TYPE_CHECKING:
    from ragtrust.pipeline import TrustGate

#: the metadata key every adapter writes its per-document screening under
METADATA_KEY = "ragtrust"
#: what a blocked set does: raise :class:`ContextBlockedError`, or give no documents
OnBlock = Literal["raise", "empty"]


class ContextBlockedError(RagTrustError):
    """Policy ``block``: a retrieved document is suspicious, so none may be used.

    Attributes:
        verdict: the Stage 1 verdict that blocked the set (per-document P_i and signals).
    """

    def __init__(self, verdict: Verdict) -> None:
        """Name the suspicious documents in the message."""
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
        blocked: policy ``block`` and a suspicious document.
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
    blocked = gate.settings.screening.policy == "block" and suspicious
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
]
