"""The corpus scan's result: one :class:`ScanRow` per document in a :class:`ScanReport`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtrust.documents import Conflict, SignalResult, Span, _JsonMixin
from ragtrust.io import write_jsonl
from ragtrust.screening.witness import Witness

#: progress callback: (stage, done, total); stages: "signals", "embed", "witnesses"
ScanProgress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ScanRow(_JsonMixin):
    """One document's scan result.

    ``witnesses`` are the corpus neighbours its claims were compared with; ``conflicts`` the
    claim conflicts that touch it (``blamed`` names the document the evidence says is wrong,
    ``None`` = contested), strongest first.
    """

    id: str
    url: str | None
    source: str | None
    poison_probability: float
    suspicious: bool
    signals: tuple[SignalResult, ...] = ()
    reasons: tuple[str, ...] = ()
    spans: tuple[Span, ...] = ()
    witnesses: tuple[Witness, ...] = ()
    parent_id: str | None = None
    conflicts: tuple[Conflict, ...] = ()


@dataclass
class ScanReport:
    """The result of :func:`scan_corpus`.

    Attributes:
        rows: one row per document, in input order.
        threshold: P above which a document is suspicious.
        engine: ``local`` or ``ray``.
        signals: names of the signals that ran; ``left_out``: batch-level ones not run.
        witnesses: corpus neighbours per document (0: the witness step did not run).
        seconds: wall time.
    """

    rows: list[ScanRow]
    threshold: float
    engine: str
    signals: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    witnesses: int = 0
    seconds: float = 0.0

    def suspicious(self, threshold: float | None = None) -> list[ScanRow]:
        """Rows with P above the threshold, most suspicious first."""
        limit = self.threshold if threshold is None else threshold
        return sorted(
            (r for r in self.rows if r.poison_probability > limit), key=lambda r: (-r.poison_probability, r.id)
        )

    def summary_rows(self, limit: int = 20, threshold: float | None = None) -> list[dict[str, Any]]:
        """Readable rows of the suspicious documents: id, P, reasons, span texts."""
        return [
            {
                "id": r.id,
                "poison_probability": round(r.poison_probability, 3),
                "reasons": list(r.reasons),
                "spans": [s.text for s in r.spans][:5],
            }
            for r in self.suspicious(threshold)[:limit]
        ]

    def top(self, n: int = 5) -> list[dict[str, Any]]:
        """The ``n`` highest-P documents, flagged or not, with their strongest signal.

        So a clean scan still shows how close the corpus came to the threshold. Each item:
        ``id``, ``poison_probability``, ``suspicious``, ``signal`` (the name of the
        highest-scoring signal that ran, ``None`` when every signal scored 0), ``signal_score``
        and ``reason`` (that signal's first reason, or ``None``).
        """
        ranked = sorted(self.rows, key=lambda r: (-r.poison_probability, r.id))[:n]
        out: list[dict[str, Any]] = []
        for r in ranked:
            ran = [s for s in r.signals if not s.skipped and s.score > 0]
            strongest = max(ran, key=lambda s: s.score, default=None)
            out.append(
                {
                    "id": r.id,
                    "poison_probability": round(r.poison_probability, 3),
                    "suspicious": r.suspicious,
                    "signal": strongest.name if strongest else None,
                    "signal_score": round(strongest.score, 3) if strongest else None,
                    "reason": strongest.reasons[0] if strongest and strongest.reasons else None,
                }
            )
        return out

    def conflicts(self) -> list[Conflict]:
        """The distinct claim conflicts of the scan, strongest first.

        A conflict between two documents is found from both sides (each is scored with the
        other as a witness); it is listed once, as the more suspicious document's row has it.
        """
        seen: dict[frozenset[tuple[str, int]], Conflict] = {}
        for row in sorted(self.rows, key=lambda r: (-r.poison_probability, r.id)):
            for c in row.conflicts:
                key = frozenset({(c.left.doc_id, c.left.start), (c.right.doc_id, c.right.start)})
                seen.setdefault(key, c)
        return sorted(seen.values(), key=lambda c: -c.strength)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (summary, the top 5 by P, the distinct conflicts, every row)."""
        return {
            "engine": self.engine,
            "threshold": self.threshold,
            "signals": self.signals,
            "left_out": self.left_out,
            "witnesses": self.witnesses,
            "seconds": self.seconds,
            "documents": len(self.rows),
            "suspicious": [r.id for r in self.suspicious()],
            "top": self.top(),
            "conflicts": [c.to_dict() for c in self.conflicts()],
            "rows": [r.to_dict() for r in self.rows],
        }

    def write_jsonl(self, path: str | Path) -> None:
        """One JSON object per document (atomic write)."""
        write_jsonl(path, (r.to_dict() for r in self.rows))


__all__ = ["ScanProgress", "ScanReport", "ScanRow"]
