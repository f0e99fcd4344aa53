"""The corpus scan's result: one :class:`ScanRow` per document in a :class:`ScanReport`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtrust.documents import Conflict, SignalResult, Span, _JsonMixin
from ragtrust.errors import InputError
from ragtrust.io import check_output_file, same_file, write_jsonl
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
        reused: rows kept from the store's last scan (:class:`~ragtrust.scan.state.ScanState`):
            documents whose text, ledger record, witnesses and configuration had not changed.
    """

    rows: list[ScanRow]
    threshold: float
    engine: str
    signals: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    witnesses: int = 0
    seconds: float = 0.0
    reused: int = 0

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
            "reused": self.reused,
            "suspicious": [r.id for r in self.suspicious()],
            "top": self.top(),
            "conflicts": [c.to_dict() for c in self.conflicts()],
            "rows": [r.to_dict() for r in self.rows],
        }

    def write_jsonl(self, path: str | Path) -> None:
        """One JSON object per document (atomic write)."""
        write_jsonl(path, (r.to_dict() for r in self.rows))


def check_report_path(
    report: str | Path | None, inputs: Sequence[str | Path] = (), store: str | Path | None = None
) -> None:
    """Refuse, before a scan runs, a report file that would overwrite what is scanned or cannot be written.

    Args:
        report: the JSONL file :meth:`ScanReport.write_jsonl` will write (``None``: no report, nothing to check).
        inputs: the files and folders scanned.
        store: the store folder scanned (or quarantined into).

    Raises:
        InputError: ``report`` is a folder or cannot be written; lies inside the store folder
            (it could replace the ledger or a segment file); or is one of the scanned files
            (named, or read from a named folder).

    Example:
        >>> import tempfile, pathlib
        >>> kb = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (kb / "a.md").write_text("Use TLS.")
        >>> check_report_path(kb / "scan.jsonl", [kb])
        >>> check_report_path(kb / "a.md", [kb])
        Traceback (most recent call last):
        ...
        ragtrust.errors.InputError: --report ... is one of the files scanned (read from ...): name a file ...
    """
    if report is None:
        return
    file = Path(report)
    what = f"--report {file}"
    check_output_file(file, what)
    if store is not None and _inside(file, Path(store)):
        raise InputError(
            f"{what} is inside the store folder {store}: it could overwrite the store's files (its ledger); "
            "write the report outside the store"
        )
    for given in map(Path, inputs):
        if same_file(file, given) or (given.is_dir() and file.is_file() and _read_from(file, given)):
            raise InputError(f"{what} is one of the files scanned (read from {given}): name a file that is not scanned")


def _inside(file: Path, folder: Path) -> bool:
    return file.resolve().is_relative_to(folder.resolve())


def _read_from(file: Path, folder: Path) -> bool:
    """Whether a scan of ``folder`` reads ``file`` (hidden files and folders are not read)."""
    if not _inside(file, folder):
        return False
    return not any(part.startswith(".") for part in file.resolve().relative_to(folder.resolve()).parts)


__all__ = ["ScanProgress", "ScanReport", "ScanRow", "check_report_path"]
