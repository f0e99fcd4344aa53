"""Check and repair a store without loading a model: :func:`check_store`, :func:`repair_store`.

A check reads the live generation (manifest, segments) and opens the provenance ledger
read-only; it names every damaged file and writes nothing. A repair re-creates a missing or
unreadable ledger with every document recorded *unvetted* (vetting cannot be recovered), and
never touches the chunks or their vectors. Both run under ``ragtrust store check`` /
``ragtrust store repair``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtrust.documents import Document, content_hash
from ragtrust.errors import InputError, StoreDamagedError
from ragtrust.ingest.ledger import Ledger
from ragtrust.ingest.snapshot import live_rows
from ragtrust.ingest.store_files import (
    LEDGER_FILE,
    current_generation,
    ledger_damage,
    missing_message,
    read_manifest_file,
    read_only_error,
    read_segment_files,
    store_exists,
    store_writable,
    writer_lock,
)

#: the tier reason recorded for every document by :func:`repair_store`
REPAIR_REASON = "ledger re-created by `ragtrust store repair`: earlier tiers and vetting were lost"


@dataclass(frozen=True)
class StoreCheck:
    """What :func:`check_store` found.

    Attributes:
        generation: the live generation ("" when ``CURRENT`` is unreadable).
        documents / chunks: live parent documents and chunks of that generation.
        problems: one line per damaged file (``<file>: <what is wrong>``); empty when sound.
    """

    root: str
    generation: str
    documents: int
    chunks: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when nothing is damaged."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "store": self.root,
            "ok": self.ok,
            "generation": self.generation,
            "documents": self.documents,
            "chunks": self.chunks,
            "problems": list(self.problems),
        }


@dataclass(frozen=True)
class StoreRepair:
    """What :func:`repair_store` did.

    Attributes:
        recreated: the ledger was missing or unreadable and was re-created.
        moved_aside: files of the unreadable ledger, renamed (kept for forensics).
        recorded: ids now recorded *unvetted* (every document when ``recreated``, else the
            documents the ledger did not list).
        documents: live parent documents of the store.
    """

    root: str
    recreated: bool
    moved_aside: tuple[str, ...]
    recorded: tuple[str, ...]
    documents: int

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "store": self.root,
            "recreated": self.recreated,
            "moved_aside": list(self.moved_aside),
            "recorded_unvetted": list(self.recorded),
            "documents": self.documents,
        }


def _live_generation(
    root: Path,
) -> tuple[str, dict[str, Any], list[Document], dict[str, Document], list[str]]:
    """Read the live generation without an embedder: (name, manifest, live chunks, live parents, chunk segments)."""
    generation = current_generation(root)
    if generation is None:  # pragma: no cover - the callers checked store_exists
        raise InputError(missing_message(root))
    manifest = read_manifest_file(root, generation)
    chunks, segment_of, _, parents = live_rows(manifest, lambda name: read_segment_files(root, name))
    return generation, manifest, chunks, parents, segment_of


def _edited_chunks(chunks: Sequence[Document], segment_of: Sequence[str]) -> list[str]:
    """One problem per segment whose chunks' text no longer hashes to the hash recorded at ingest."""
    edited: dict[str, list[str]] = {}
    for chunk, segment in zip(chunks, segment_of, strict=True):
        if chunk.content_hash != content_hash(chunk.text):
            edited.setdefault(segment, []).append(chunk.id)
    return [
        f"segments/{segment}/chunks.jsonl: the text of {len(ids)} chunk(s) is not the text ingested "
        f"(edited or corrupted): {_some(ids)}"
        for segment, ids in edited.items()
    ]


def _ledger_ids(root: Path) -> set[str]:
    """Ids of the live documents the ledger lists (opened read-only: a check writes nothing)."""
    import sqlite3

    from ragtrust.ingest.sqlite_ro import connect_read_only

    try:
        conn = connect_read_only(root / LEDGER_FILE)
        try:
            # every column of every record, decoded as a query will (a text that is no longer
            # UTF-8 fails there, not only in a later provenance lookup), and SQLite's page check
            rows = conn.execute("SELECT doc_id, deleted_at, * FROM documents").fetchall()
            verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreDamagedError(LEDGER_FILE, f"unreadable ({exc})") from exc
    if verdict != "ok":
        raise StoreDamagedError(LEDGER_FILE, f"damaged ({verdict})")
    return {r[0] for r in rows if r[1] is None}


def check_store(path: str | Path) -> StoreCheck:
    """Verify a store without loading a model: manifest, segments, ledger.

    Checks that ``CURRENT`` names a readable manifest, that every segment's
    ``chunks.jsonl``, ``parents.jsonl`` and ``vectors.npy`` parse and agree, that every
    chunk's text is the one ingested (it hashes to the hash recorded with it), that every
    document of the manifest has its text stored, and that the provenance ledger opens
    and lists every live document.

    Raises:
        InputError: there is no store at ``path``.

    Example:
        >>> import tempfile
        >>> from ragtrust.documents import Document, content_hash
        >>> from ragtrust.ingest.store import Store
        >>> from ragtrust.testing import HashingEmbedder
        >>> root = tempfile.mkdtemp()
        >>> _ = Store.open(root, HashingEmbedder(), create=True).add([Document(id="kb", text="Use TLS.")])
        >>> check_store(root).ok
        True
    """
    root = Path(path).expanduser()
    if not store_exists(root):
        raise InputError(missing_message(root))
    problems: list[str] = []
    generation, documents, chunk_count = "", 0, 0
    try:
        generation, manifest, chunks, parents, segment_of = _live_generation(root)
    except StoreDamagedError as exc:
        problems.append(f"{exc.file}: {exc.detail}")
        manifest, chunks, parents = {"parents": {}}, [], {}
    else:
        documents, chunk_count = len(manifest["parents"]), len(chunks)
        problems.extend(_edited_chunks(chunks, segment_of))
        unstored = sorted(set(manifest["parents"]) - set(parents))
        if unstored:
            problems.append(
                f"generations/{generation}.json: {len(unstored)} document(s) without stored text: " + _some(unstored)
            )
    damage = ledger_damage(root)
    if damage is not None:
        problems.append(f"{LEDGER_FILE}: {damage}")
    else:
        try:
            listed = _ledger_ids(root)
        except StoreDamagedError as exc:
            problems.append(f"{exc.file}: {exc.detail}")
        else:
            unlisted = sorted(set(manifest["parents"]) - listed)
            if unlisted:
                problems.append(f"{LEDGER_FILE}: does not list {len(unlisted)} document(s): " + _some(unlisted))
    return StoreCheck(str(root), generation, documents, chunk_count, tuple(problems))


def _some(ids: Sequence[str], n: int = 5) -> str:
    return ", ".join(ids[:n]) + (f" (and {len(ids) - n} more)" if len(ids) > n else "")


def repair_store(path: str | Path) -> StoreRepair:
    """Re-create a missing or unreadable ledger, every document recorded *unvetted*.

    Vetting and quarantine cannot be recovered: every document of the live generation is
    recorded with tier ``unvetted`` and the reason :data:`REPAIR_REASON`; vet or quarantine
    them again. An unreadable ledger file (and its ``-wal`` / ``-shm``) is renamed, not
    deleted. A sound ledger is kept; documents it does not list are recorded unvetted.

    Raises:
        InputError: there is no store at ``path``.
        StoreDamagedError: a manifest or segment is damaged (only the ledger is repaired).
        StoreReadOnlyError: this process cannot write the store.
    """
    root = Path(path).expanduser()
    if not store_exists(root):
        raise InputError(missing_message(root))
    if not store_writable(root):
        raise read_only_error(root, "cannot repair it")
    with writer_lock(root):
        _, manifest, _, parents, _ = _live_generation(root)
        damage = ledger_damage(root)
        if damage is None:
            try:
                listed = _ledger_ids(root)
            except StoreDamagedError:
                damage = "unreadable"
        moved: list[str] = []
        if damage is not None:
            stamp = time.strftime("%Y%m%d%H%M%S")
            for suffix in ("", "-wal", "-shm"):  # a stale -wal must not be replayed into the new ledger
                file = root / f"{LEDGER_FILE}{suffix}"
                if file.exists():
                    target = file.with_name(f"{file.name}.damaged-{stamp}")
                    os.replace(file, target)
                    moved.append(target.name)
            listed = set()
        wanted = [parents[i] for i in sorted(parents) if i not in listed]
        by_source: dict[str, list[Document]] = {}
        for doc in wanted:
            by_source.setdefault(str(manifest["parents"][doc.id].get("source") or doc.id), []).append(doc)
        with Ledger(root / LEDGER_FILE) as ledger:
            for source, docs in by_source.items():
                ledger.record_many(docs, source, "unvetted", reason=REPAIR_REASON)
    return StoreRepair(str(root), damage is not None, tuple(moved), tuple(d.id for d in wanted), len(parents))


__all__ = ["REPAIR_REASON", "StoreCheck", "StoreRepair", "check_store", "repair_store"]
