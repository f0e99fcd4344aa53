"""Provenance signal: evidence from the ledger that surface signals cannot see.

In-place edits (entity swaps, subtle weakening) leave no textual artifact (SPEC section
10). When the corpus has history, they leave a trace in the provenance ledger
(:mod:`ragtrust.ingest.ledger`): the served text no longer matches the version that was
vetted. Per retrieved document (a chunk maps to its parent through
``metadata["parent_id"]``, or the ``<id>#<n>`` id form):

=========================================================  ============  ==================
situation                                                  score         reason
=========================================================  ============  ==================
parent quarantined                                         0.95          "quarantined on …"
vetted, and the chunk's text is not in the vetted version  0.9           "content changed since vetted on …"
vetted, parent changed since, this chunk's text unchanged  0.15          "document changed since vetted …"
source marked unvetted (never vetted)                      0.4           "unvetted source …"
vetted and unchanged                                       0.0           —
no tier recorded                                           0.0           — (nothing known)
in the store, not in its ledger (an interrupted ingest)    0.4           "… not in its provenance ledger"
not in the ledger / no ledger                              skipped       reason given
=========================================================  ============  ==================

Every finding carries the ledger's tier in ``details["tier"]`` and a quarantined document
also ``details["quarantined"] = True``: the pipeline reads that structured flag
(:func:`quarantine_note`) and withholds a quarantined document from the generator under
every policy, whatever its score (a score can be re-weighted; quarantine is a decision a
person or a scan already made).

The chunk comparison is on normalised text (:func:`ragtrust.documents.normalize_text`):
a chunk is unchanged when it occurs verbatim in the vetted version of its parent, so
chunk boundaries that moved do not matter and only the edited passage is flagged. The
changed words are returned as spans (word-level diff against the vetted text).

Example:
    >>> import tempfile, pathlib
    >>> from ragtrust.documents import Document, RetrievedDoc
    >>> from ragtrust.ingest.ledger import Ledger
    >>> ledger = Ledger(pathlib.Path(tempfile.mkdtemp()) / "l.sqlite")
    >>> _ = ledger.record(Document(id="kb", text="Use a 2048-bit RSA key."), "kb.md", tier="vetted")
    >>> _ = ledger.record(Document(id="kb", text="Use a 512-bit RSA key."), "kb.md")
    >>> r = ProvenanceSignal(ledger).score(RetrievedDoc(Document(id="kb#0", text="Use a 512-bit RSA key.",
    ...     metadata={"parent_id": "kb"})))
    >>> r.score, r.reasons[0].startswith("content changed since vetted on")
    (0.9, True)
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ragtrust.documents import RetrievedDoc, SignalResult, Span, content_hash, normalize_text
from ragtrust.ingest.ledger import Ledger, ProvenanceRecord
from ragtrust.registry import register
from ragtrust.screening.base import Signal
from ragtrust.text import word_tokens

_MAX_SPANS = 5
#: the signal's name (its results are looked up by it)
PROVENANCE = "provenance"
#: the ledger tier that withholds a document from every answer
QUARANTINED = "quarantined"
#: ``details["tier"]`` of a store document its ledger does not list (never vetted)
UNRECORDED = "unrecorded"


def parent_id_of(doc: RetrievedDoc, ledger: Ledger | None = None) -> str:
    """Return the ledger key of a retrieved document.

    That is ``metadata["parent_id"]``, else the id without a trailing ``#<n>`` (when the
    ledger does not know the chunk id itself), else the id.
    """
    parent = doc.document.metadata.get("parent_id")
    if isinstance(parent, str) and parent:
        return parent
    doc_id = doc.id
    head, sep, tail = doc_id.rpartition("#")
    if sep and tail.isdigit() and (ledger is None or ledger.get(doc_id) is None):
        return head
    return doc_id


def _day(timestamp: str | None) -> str:
    return (timestamp or "an unknown date")[:10]


@register("signal", PROVENANCE)
@dataclass
class ProvenanceSignal(Signal):
    """Scores documents from their provenance record (see the module docstring).

    Attributes:
        ledger: the store's provenance ledger; ``None`` skips every document.
        in_store: whether a parent id is a live document of the store the ledger belongs to
            (``Store.holds``); such a document the ledger does not list was published by an
            ingest stopped before it recorded the ledger, and scores as unvetted (tier
            ``"unrecorded"``) instead of being skipped like a document from another source.
        changed_score: a passage that differs from the vetted version.
        quarantined_score: a document quarantined by a person or a scan.
        unvetted_score: a document explicitly marked as from an unvetted source.
        drifted_score: a passage unchanged although its document changed since vetting.
    """

    # a data source read per document (a scan keys each row by its records), not a parameter
    ledger: Ledger | None = field(default=None, compare=False)
    in_store: Callable[[str], bool] | None = field(default=None, compare=False, repr=False)
    changed_score: float = 0.9
    quarantined_score: float = 0.95
    unvetted_score: float = 0.4
    drifted_score: float = 0.15
    name: ClassVar[str] = PROVENANCE
    document_level: ClassVar[bool] = True
    _vetted_text: dict[tuple[str, str], str | None] = field(default_factory=dict, init=False, repr=False)

    def score_batch(self, docs: Sequence[RetrievedDoc], query: str | None = None) -> list[SignalResult]:
        """One provenance finding per document."""
        if self.ledger is None:
            return [self.skipped("no provenance ledger: documents do not come from a store") for _ in docs]
        out: list[SignalResult] = []
        for doc in docs:
            try:
                out.append(self._score_one(doc))
            except Exception as exc:  # noqa: BLE001 - a signal never raises on a document
                out.append(self.skipped(f"provenance lookup failed: {exc}"))
        return out

    def _score_one(self, doc: RetrievedDoc) -> SignalResult:
        assert self.ledger is not None
        parent = parent_id_of(doc, self.ledger)
        record = self.ledger.get(parent)
        if record is None:
            if self.in_store is not None and self.in_store(parent):
                return SignalResult(
                    self.name,
                    self.unvetted_score,
                    reasons=(
                        f"{parent!r} is in the store but not in its provenance ledger (an ingest stopped before "
                        "recording it): never vetted; ingest it again or run `ragtrust store repair`",
                    ),
                    details={"parent_id": parent, "tier": UNRECORDED},
                )
            return self.skipped(f"{parent!r} is not in the provenance ledger")
        details: dict[str, Any] = {"parent_id": parent, "tier": record.tier, "content_hash": record.content_hash}
        if record.tier == QUARANTINED:
            return SignalResult(
                self.name,
                self.quarantined_score,
                reasons=(_quarantine_reason(record),),
                details={**details, "quarantined": True},
            )
        if record.tier == "unvetted":
            vetted_before = f", last vetted on {_day(record.vetted_at)}" if record.vetted_at else ", never vetted"
            return SignalResult(
                self.name,
                self.unvetted_score,
                reasons=(f"from an unvetted source ({record.source}){vetted_before}",),
                details=details,
            )
        if record.vetted_hash is not None:
            return self._against_vetted(doc, record, details)
        return SignalResult(self.name, 0.0, details=details)

    def _against_vetted(self, doc: RetrievedDoc, record: ProvenanceRecord, details: dict[str, Any]) -> SignalResult:
        assert self.ledger is not None and record.vetted_hash is not None
        details["vetted_hash"] = record.vetted_hash
        day = _day(record.vetted_at)
        text = doc.document.text
        own_hash = doc.document.metadata.get("parent_hash")
        # a text that is not the one its hash was recorded for (a chunk edited or corrupted in
        # the store's files after ingest) is compared with the vetted text, never taken on trust
        intact = doc.document.content_hash == content_hash(text)
        if intact and not record.changed_since_vetted and own_hash in (None, record.vetted_hash):
            return SignalResult(self.name, 0.0, details=details)
        vetted = self._vetted(record.doc_id, record.vetted_hash)
        if vetted is None:  # no stored text: judge by hashes alone
            return SignalResult(
                self.name,
                self.changed_score,
                reasons=(f"content changed since vetted on {day} (version {record.versions})",),
                details=details,
            )
        if normalize_text(text) and normalize_text(text) in normalize_text(vetted):
            if not record.changed_since_vetted:
                return SignalResult(self.name, 0.0, details=details)
            return SignalResult(
                self.name,
                self.drifted_score,
                reasons=(f"document changed since vetted on {day}; this passage is unchanged",),
                details=details,
            )
        spans = _changed_spans(doc.id, text, vetted)
        changed = "; ".join(repr(s.text) for s in spans[:3])
        reason = f"content changed since vetted on {day}" + (f": now reads {changed}" if changed else "")
        return SignalResult(self.name, self.changed_score, reasons=(reason,), spans=tuple(spans), details=details)

    def _vetted(self, doc_id: str, vetted_hash: str) -> str | None:
        key = (doc_id, vetted_hash)
        if key not in self._vetted_text:
            assert self.ledger is not None
            if len(self._vetted_text) > 256:
                self._vetted_text.clear()
            self._vetted_text[key] = self.ledger.version_text(doc_id, vetted_hash)
        return self._vetted_text[key]


def _quarantine_reason(record: ProvenanceRecord) -> str:
    why = f": {record.tier_reason}" if record.tier_reason else ""
    return f"quarantined on {_day(record.tier_changed_at)}{why}"


def quarantine_note(results: Sequence[SignalResult]) -> str | None:
    """Why a document is quarantined, read from its provenance finding; ``None`` if it is not.

    Looks for a ``provenance`` result that ran (not skipped) and carries the structured
    flag ``details["quarantined"]`` (or ``details["tier"] == "quarantined"``, as written by
    older versions); the note is that result's first reason.

    Example:
        >>> quarantine_note([SignalResult("provenance", 0.95, reasons=("quarantined on 2026-08-17: scan",),
        ...     details={"tier": "quarantined", "quarantined": True})])
        'quarantined on 2026-08-17: scan'
        >>> quarantine_note([SignalResult("provenance", 0.0, details={"tier": "vetted"})]) is None
        True
    """
    for r in results:
        if r.name != PROVENANCE or r.skipped:
            continue
        if r.details.get("quarantined") is True or r.details.get("tier") == QUARANTINED:
            return r.reasons[0] if r.reasons else QUARANTINED
    return None


def ledger_quarantine_note(ledger: Ledger, doc: RetrievedDoc) -> str | None:
    """Why ``doc`` (or its parent document) is quarantined, asked of the ledger directly.

    For when the provenance signal gave no finding (not configured, or it failed): the
    pipeline still withholds a quarantined document. ``None`` when the ledger does not know
    the document or its tier is not ``quarantined``.
    """
    record = ledger.get(parent_id_of(doc, ledger))
    if record is None or record.tier != QUARANTINED:
        return None
    return _quarantine_reason(record)


def _changed_spans(doc_id: str, text: str, vetted: str) -> list[Span]:
    """Spans of ``text`` whose words do not line up with the vetted text (word-level diff)."""
    mine = word_tokens(text)
    theirs = [t.text for t in word_tokens(vetted)]
    matcher = difflib.SequenceMatcher(None, [t.text for t in mine], theirs, autojunk=False)
    spans: list[Span] = []
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "insert") and i2 > i1:
            start, end = mine[i1].start, mine[i2 - 1].end
            spans.append(Span(doc_id=doc_id, start=start, end=end, text=text[start:end]))
            if len(spans) >= _MAX_SPANS:
                break
    return spans


__all__ = ["PROVENANCE", "QUARANTINED", "ProvenanceSignal", "ledger_quarantine_note", "parent_id_of", "quarantine_note"]
