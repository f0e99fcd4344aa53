"""The document gate (``screening.policy``): which screened documents may reach the generator.

``drop-suspicious`` (default) withholds documents above ``drop_threshold`` from the generator
and from the evidence; ``flag`` keeps them (a verdict whose context held one is never
trusted, see :mod:`ragtrust.pipeline.rules`); ``block`` gives no answer when any is
retrieved. A document quarantined in the store's ledger is withheld under every policy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrust.documents import DocumentScreening, RetrievedDoc


@dataclass(frozen=True)
class Gated:
    """What the pre-generation gate decided for one retrieved set.

    Attributes:
        documents: the screenings with their ``action`` (kept / flagged / dropped).
        kept: the documents not dropped, in retrieval order.
        quarantined: id -> why, for documents the ledger has quarantined (always dropped).
        suspicious: ids above the drop threshold or suspicious (quarantined or not).
        blocked: policy ``block`` and at least one suspicious document: no answer.
        errors: quarantine lookups that failed (fail closed).
    """

    documents: tuple[DocumentScreening, ...]
    kept: tuple[RetrievedDoc, ...]
    quarantined: Mapping[str, str]
    suspicious: tuple[str, ...]
    blocked: bool
    errors: tuple[str, ...] = ()

    @property
    def context(self) -> list[RetrievedDoc]:
        """What may reach the generator: nothing when blocked, else the kept documents."""
        return [] if self.blocked else list(self.kept)

    @property
    def withheld_suspicious(self) -> list[str]:
        """Ids dropped for their screening alone (quarantined ones are named separately)."""
        return sorted(d.doc_id for d in self.documents if d.action == "dropped" and d.doc_id not in self.quarantined)

    def quarantine_warnings(self, consequence: str) -> list[str]:
        """One warning per quarantined document, naming it and what happened to it."""
        return [
            f"Document {doc_id} is quarantined ({why}) and {consequence}." for doc_id, why in self.quarantined.items()
        ]


def gate_documents(
    screenings: Sequence[DocumentScreening],
    docs: Sequence[RetrievedDoc],
    *,
    policy: str,
    drop_threshold: float,
    ledger: Any = None,
) -> Gated:
    """Apply the policy; a quarantined document is dropped under every policy.

    Quarantine is read from the provenance finding's structured flag; when the
    provenance signal gave none (not configured, or it failed) and there is a ``ledger``
    (the store's), the ledger is asked directly.
    """
    from ragtrust.screening.provenance import PROVENANCE, ledger_quarantine_note, quarantine_note

    out: list[DocumentScreening] = []
    quarantined: dict[str, str] = {}
    suspicious: list[str] = []
    errors: list[str] = []
    for s, doc in zip(screenings, docs, strict=True):
        note = quarantine_note(s.signals)
        ran = any(r.name == PROVENANCE and not r.skipped for r in s.signals)
        if note is None and ledger is not None and not ran:
            try:
                note = ledger_quarantine_note(ledger, doc)
            except Exception as exc:  # noqa: BLE001 - fail closed: recorded, verdict not trusted
                errors.append(f"quarantine lookup failed for {s.doc_id}: {type(exc).__name__}: {exc}")
        is_suspicious = s.poison_probability > drop_threshold or s.suspicious
        if is_suspicious:
            suspicious.append(s.doc_id)
        action = "kept"
        if note is not None:
            quarantined[s.doc_id] = note
            action = "dropped"
        elif is_suspicious:
            action = "dropped" if policy in ("drop-suspicious", "block") else "flagged"
        out.append(DocumentScreening(**{**_fields(s), "action": action}))
    dropped = {d.doc_id for d in out if d.action == "dropped"}
    return Gated(
        documents=tuple(out),
        kept=tuple(d for d in docs if d.id not in dropped),
        quarantined=quarantined,
        suspicious=tuple(suspicious),
        blocked=policy == "block" and bool(suspicious),
        errors=tuple(errors),
    )


def _fields(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


__all__ = ["Gated", "gate_documents"]
