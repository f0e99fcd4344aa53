"""What one write to a store changed (:class:`IngestReport`), and the progress callback type.

Example:
    >>> IngestReport(added=2, chunks=3, skipped=(("big", "too many chunks"),)).to_dict()["skipped"]
    [['big', 'too many chunks']]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: progress callback: (stage, done, total); stages: "chunk", "embed", "write"
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class IngestReport:
    """What one :meth:`Store.add` (or :meth:`Store.delete`) changed.

    Attributes:
        added / updated / unchanged / deleted: parent documents in each case.
        chunks: chunks written (embedded) by this call.
        total_chunks: chunks in the store afterwards.
        skipped: ``(path, reason)`` of inputs that could not be loaded (filled by callers
            that load files, e.g. the CLI, from :class:`~ragtrust.ingest.loaders.LoadReport`).
        seconds: wall time of the call.
        generation: the generation now live.
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    chunks: int = 0
    total_chunks: int = 0
    skipped: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0
    generation: str = ""
    added_ids: tuple[str, ...] = ()
    updated_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "chunks": self.chunks,
            "total_chunks": self.total_chunks,
            "skipped": [list(s) for s in self.skipped],
            "seconds": self.seconds,
            "generation": self.generation,
        }


__all__ = ["IngestReport", "Progress"]
