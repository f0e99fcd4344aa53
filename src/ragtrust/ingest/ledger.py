"""The provenance ledger: where each document came from, what it said, and who vetted it.

A SQLite database (WAL journal, so readers never block the writer) kept in the store
directory. It is keyed by the *parent* document id (chunks map to it through
``metadata["parent_id"]``) and holds, per document:

- ``source`` (path or URL), the current ``content_hash`` (sha256 of the normalised text),
  ``first_seen`` and ``last_changed`` (UTC ISO-8601 timestamps);
- every version: hash, source, time, and the text itself (zlib-compressed) so a vetted
  version can be compared with what is served now;
- a trust tier, ``vetted`` / ``unvetted`` / ``quarantined`` (``None`` until set), with the
  hash and time of the last vetting, and an event log of tier changes and deletions.

Every event and the current tier record *who* made the change (``actor``: an API key's
name, an OS user, ``unknown`` when the caller did not say): the audit trail. Ledgers
written before the column existed are migrated in place when opened (their past events
read ``unknown``).

Re-recording a document whose content hash changed appends a version and keeps the tier:
a document vetted at version 1 and edited in place is still marked vetted, but its
``vetted_hash`` no longer matches, which is what the provenance signal
(:mod:`ragtrust.screening.provenance`) reports as "content changed since vetted".

Example:
    >>> import tempfile, pathlib
    >>> from ragtrust.documents import Document
    >>> ledger = Ledger(pathlib.Path(tempfile.mkdtemp()) / "ledger.sqlite")
    >>> ledger.record(Document(id="kb-1", text="Use bcrypt."), source="kb.md", tier="vetted")
    'added'
    >>> ledger.record(Document(id="kb-1", text="Use MD5."), source="kb.md")
    'changed'
    >>> rec = ledger.get("kb-1")
    >>> (rec.tier, rec.versions, rec.changed_since_vetted)
    ('vetted', 2, True)
"""

from __future__ import annotations

import difflib
import os
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, cast, get_args

from ragtrust.documents import Document, _JsonMixin, shown_id
from ragtrust.errors import InputError, StoreDamagedError, StoreReadOnlyError
from ragtrust.ingest.sqlite_ro import connect_read_only

Tier = Literal["vetted", "unvetted", "quarantined"]
LedgerEvent = Literal["added", "unchanged", "changed"]
TIERS: tuple[str, ...] = get_args(Tier)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    last_changed TEXT NOT NULL,
    version INTEGER NOT NULL,
    tier TEXT,
    tier_reason TEXT NOT NULL DEFAULT '',
    tier_changed_at TEXT,
    tier_changed_by TEXT,
    vetted_hash TEXT,
    vetted_at TEXT,
    deleted_at TEXT
);
CREATE TABLE IF NOT EXISTS versions (
    doc_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    source TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    text BLOB NOT NULL,
    PRIMARY KEY (doc_id, version)
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id TEXT NOT NULL,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    actor TEXT NOT NULL DEFAULT 'unknown'
);
CREATE INDEX IF NOT EXISTS events_doc ON events(doc_id);
"""
#: columns added since the first ledger format: (table, column, definition, fill for existing rows)
_MIGRATIONS = (
    ("events", "actor", "TEXT NOT NULL DEFAULT 'unknown'", None),
    ("documents", "tier_changed_by", "TEXT", "UPDATE documents SET tier_changed_by = 'unknown' WHERE tier IS NOT NULL"),
)
#: who changed a tier when the caller did not say
UNKNOWN_ACTOR = "unknown"


def utc_now() -> str:
    """Return the current UTC time as ISO-8601 with seconds (``2026-08-17T09:30:00+00:00``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class VersionRecord(_JsonMixin):
    """One recorded version of a document."""

    doc_id: str
    version: int
    content_hash: str
    source: str
    recorded_at: str


@dataclass(frozen=True)
class LedgerEntry(_JsonMixin):
    """One event of a document's life: ``added``, ``changed``, ``vetted``, ``quarantined``..."""

    doc_id: str
    at: str
    kind: str
    detail: str = ""
    actor: str = UNKNOWN_ACTOR


@dataclass(frozen=True)
class ProvenanceRecord(_JsonMixin):
    """What the ledger knows about one document now.

    Attributes:
        tier: ``vetted`` / ``unvetted`` / ``quarantined``, or ``None`` when never set.
        tier_changed_at / tier_changed_by: when and by whom the tier was last set.
        vetted_hash / vetted_at: hash and time of the content that was last vetted.
        versions: how many versions were recorded.
        deleted_at: when the document was deleted from the store (``None`` if live).
    """

    doc_id: str
    source: str
    content_hash: str
    first_seen: str
    last_changed: str
    tier: str | None
    vetted_hash: str | None
    vetted_at: str | None
    versions: int
    tier_reason: str = ""
    tier_changed_at: str | None = None
    deleted_at: str | None = None
    tier_changed_by: str | None = None

    @property
    def changed_since_vetted(self) -> bool:
        """True when a vetted version exists and the current content differs from it."""
        return self.vetted_hash is not None and self.vetted_hash != self.content_hash


class Ledger:
    """SQLite provenance ledger (see the module docstring).

    Args:
        path: the database file (created with its folder when missing).
        clock: returns the current time as an ISO-8601 string (tests inject a fixed one).

    Thread-safe: one connection guarded by a lock; other processes coordinate through
    SQLite's own locking (WAL mode, 30 s busy timeout).
    """

    def __init__(self, path: str | Path, *, clock: Callable[[], str] = utc_now, read_only: bool = False) -> None:
        self.path = Path(path)
        self.clock = clock
        #: opened with SQLite's ``mode=ro`` (a store without write access): every write raises
        #: :class:`~ragtrust.errors.StoreReadOnlyError`
        self.read_only = read_only
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            if read_only:
                self._conn = connect_read_only(self.path)
            else:
                self._conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.executescript(_SCHEMA)
            self._file = self._identity()
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{self.path}: not a ragtrust provenance ledger ({exc})") from exc

    def _identity(self) -> tuple[int, int] | None:
        """The ledger file's (device, inode), ``None`` when it is gone."""
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            return None
        return found.st_dev, found.st_ino

    def check_file(self) -> None:
        """Raise when the file this ledger reads was deleted or replaced since it was opened (see :meth:`_live`)."""
        with self._lock:
            self._live()

    def _live(self) -> sqlite3.Connection:
        """The connection, after checking the file it reads is still the ledger's (call under the lock).

        An open SQLite connection keeps reading a file that was deleted or replaced under it:
        provenance would come from a ledger no longer on disk, and a vetting would be written
        where nobody reads it. Either is damage (fail closed) until the store is opened again.

        Raises:
            StoreDamagedError: ``ledger.sqlite`` was deleted or replaced while the ledger was open.
        """
        now = self._identity()
        if now != self._file:
            what = "missing (deleted while" if now is None else "replaced by another file (while"
            detail = f"{what} the store was open): provenance cannot be read"
            hint = "restore it, then restart the server or open the store again"
            raise StoreDamagedError(self.path.name, detail, hint)
        return self._conn

    def _missing_columns(self) -> list[tuple[str, str, str, str | None]]:
        have = {t: {row[1] for row in self._conn.execute(f"PRAGMA table_info({t})")} for t in ("events", "documents")}
        return [m for m in _MIGRATIONS if m[1] not in have[m[0]]]

    def _migrate(self) -> None:
        """Add the columns a ledger of an older format lacks (in one transaction, idempotent).

        A read-only ledger of the older format is read as it is: its tier changes read
        ``unknown`` (the columns are added the next time it is opened with write access).
        """
        self._by_sql, self._actor_sql = "tier_changed_by", "actor"
        if not self._missing_columns():
            return
        if self.read_only:
            self._by_sql = "CASE WHEN tier IS NULL THEN NULL ELSE 'unknown' END"
            self._actor_sql = "'unknown'"
            return
        try:
            with self._write() as db:  # BEGIN IMMEDIATE, then look again: two processes migrate it once
                for table, column, definition, fill in self._missing_columns():
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
                    if fill:
                        db.execute(fill)
        except sqlite3.OperationalError as exc:  # e.g. a read-only file: say what to do, not "not a ledger"
            raise InputError(
                f"{self.path}: this ledger predates the audit trail (who changed a tier) and could not be "
                f"upgraded ({exc}); open the store once with write access to upgrade it"
            ) from exc

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise StoreReadOnlyError(
                self.path.parent.name,
                "cannot change its provenance ledger: no write access to its folder or files (queries still work)",
            )
        with self._lock:
            db = self._live()
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    # -- writing -------------------------------------------------------------------------
    def record(self, doc: Document, source: str, tier: str | None = None, *, actor: str = UNKNOWN_ACTOR) -> LedgerEvent:
        """Record (a version of) a parent document.

        Args:
            doc: the parent document (its ``content_hash`` and text are stored).
            source: where it came from (path or URL).
            tier: set the trust tier too (``vetted`` also vets this exact content).
            actor: who recorded it (an API key's name, an OS user), kept with the events.

        Returns:
            ``"added"`` (new, or re-added after a delete), ``"changed"`` (new version) or
            ``"unchanged"``.
        """
        return self.record_many([doc], source, tier, actor=actor)[0]

    def record_many(
        self,
        docs: Sequence[Document],
        source: str = "",
        tier: str | None = None,
        *,
        reason: str = "set at ingestion",
        actor: str = UNKNOWN_ACTOR,
    ) -> list[LedgerEvent]:
        """:meth:`record` for many documents in one transaction.

        ``source`` applies to all; when empty each document's ``source`` (or ``url``, or
        id) is used. ``reason`` is recorded with the tier (when ``tier`` is given), ``actor``
        with every event.
        """
        if tier is not None:
            _check_tier(tier)
        actor = _check_actor(actor)
        events: list[LedgerEvent] = []
        with self._write() as db:
            for doc in docs:
                where = source or doc.source or doc.url or doc.id
                events.append(self._record_one(db, doc, where, tier, reason, actor))
        return events

    def _record_one(
        self, db: sqlite3.Connection, doc: Document, source: str, tier: str | None, reason: str, actor: str
    ) -> LedgerEvent:
        now = self.clock()
        row = db.execute(
            "SELECT content_hash, version, deleted_at FROM documents WHERE doc_id = ?", (doc.id,)
        ).fetchone()
        event: LedgerEvent
        if row is None:
            event = "added"
            db.execute(
                "INSERT INTO documents (doc_id, source, content_hash, first_seen, last_changed, version) "
                "VALUES (?, ?, ?, ?, ?, 1)",
                (doc.id, source, doc.content_hash, now, now),
            )
            self._add_version(db, doc, 1, source, now)
        else:
            old_hash, version, deleted_at = row
            event = "added" if deleted_at else ("unchanged" if old_hash == doc.content_hash else "changed")
            if old_hash != doc.content_hash:
                version += 1
                self._add_version(db, doc, version, source, now)
                db.execute(
                    "UPDATE documents SET content_hash = ?, last_changed = ?, version = ? WHERE doc_id = ?",
                    (doc.content_hash, now, version, doc.id),
                )
            db.execute("UPDATE documents SET source = ?, deleted_at = NULL WHERE doc_id = ?", (source, doc.id))
        if event != "unchanged":
            db.execute(
                "INSERT INTO events (doc_id, at, kind, detail, actor) VALUES (?, ?, ?, ?, ?)",
                (doc.id, now, event, doc.content_hash[:12], actor),
            )
        if tier is not None:
            self._set_tier(db, doc.id, tier, reason, now, actor)
        return event

    @staticmethod
    def _add_version(db: sqlite3.Connection, doc: Document, version: int, source: str, now: str) -> None:
        db.execute(
            "INSERT OR REPLACE INTO versions (doc_id, version, content_hash, source, recorded_at, text) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (doc.id, version, doc.content_hash, source, now, zlib.compress(doc.text.encode("utf-8"))),
        )

    def set_tier(self, doc_id: str, tier: Tier | str, reason: str = "", *, actor: str = UNKNOWN_ACTOR) -> None:
        """Set a document's trust tier; ``vetted`` vets its current content.

        ``actor`` (who) is recorded with the tier and in the event log.

        Raises:
            InputError: unknown tier, an empty actor, or a document the ledger does not know.
        """
        _check_tier(tier)
        actor = _check_actor(actor)
        with self._write() as db:
            self._set_tier(db, doc_id, tier, reason, self.clock(), actor)

    def _set_tier(self, db: sqlite3.Connection, doc_id: str, tier: str, reason: str, now: str, actor: str) -> None:
        row = db.execute("SELECT content_hash FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
        if row is None:
            raise InputError(f"document {shown_id(doc_id)} is not in the provenance ledger: ingest it first")
        vetting = ", vetted_hash = content_hash, vetted_at = ?" if tier == "vetted" else ""
        db.execute(
            f"UPDATE documents SET tier = ?, tier_reason = ?, tier_changed_at = ?, tier_changed_by = ?{vetting} "
            "WHERE doc_id = ?",
            (tier, reason, now, actor, *((now,) if vetting else ()), doc_id),
        )
        db.execute(
            "INSERT INTO events (doc_id, at, kind, detail, actor) VALUES (?, ?, ?, ?, ?)",
            (doc_id, now, tier, reason or row[0][:12], actor),
        )

    def delete(self, doc_id: str, *, actor: str = UNKNOWN_ACTOR) -> None:
        """Mark a document deleted (its history, tier and vetting are kept for audit)."""
        actor = _check_actor(actor)
        with self._write() as db:
            now = self.clock()
            db.execute("UPDATE documents SET deleted_at = ? WHERE doc_id = ?", (now, doc_id))
            db.execute(
                "INSERT INTO events (doc_id, at, kind, detail, actor) VALUES (?, ?, 'deleted', '', ?)",
                (doc_id, now, actor),
            )

    # -- reading -------------------------------------------------------------------------
    def get(self, doc_id: str, *, include_deleted: bool = False) -> ProvenanceRecord | None:
        """Return the document's current record, or ``None`` when unknown (or deleted)."""
        with self._lock:
            row = (
                self._live()
                .execute(
                    "SELECT doc_id, source, content_hash, first_seen, last_changed, tier, vetted_hash, vetted_at, "
                    f"version, tier_reason, tier_changed_at, deleted_at, {self._by_sql} "
                    "FROM documents WHERE doc_id = ?",
                    (doc_id,),
                )
                .fetchone()
            )
        if row is None or (row[11] and not include_deleted):
            return None
        return ProvenanceRecord(*row)

    def get_many(self, doc_ids: Sequence[str], *, include_deleted: bool = False) -> dict[str, ProvenanceRecord]:
        """Return the records of the given live documents (unknown ids, and deleted ones unless asked, are absent)."""
        out: dict[str, ProvenanceRecord] = {}
        for doc_id in dict.fromkeys(doc_ids):
            rec = self.get(doc_id, include_deleted=include_deleted)
            if rec is not None:
                out[doc_id] = rec
        return out

    def history(self, doc_id: str) -> list[VersionRecord]:
        """All versions of a document, oldest first (empty when unknown)."""
        with self._lock:
            rows = (
                self._live()
                .execute(
                    "SELECT doc_id, version, content_hash, source, recorded_at FROM versions WHERE doc_id = ? "
                    "ORDER BY version",
                    (doc_id,),
                )
                .fetchall()
            )
        return [VersionRecord(*r) for r in rows]

    def events(self, doc_id: str) -> list[LedgerEntry]:
        """Return the document's event log (added, changed, vetted, quarantined, deleted), oldest first."""
        with self._lock:
            rows = (
                self._live()
                .execute(
                    f"SELECT doc_id, at, kind, detail, {self._actor_sql} FROM events WHERE doc_id = ? ORDER BY seq",
                    (doc_id,),
                )
                .fetchall()
            )
        return [LedgerEntry(*r) for r in rows]

    def version_text(self, doc_id: str, content_hash: str) -> str | None:
        """Return the stored text of the version with this hash (``None`` when not recorded)."""
        with self._lock:
            row = (
                self._live()
                .execute(
                    "SELECT text FROM versions WHERE doc_id = ? AND content_hash = ? ORDER BY version DESC LIMIT 1",
                    (doc_id, content_hash),
                )
                .fetchone()
            )
        return None if row is None else zlib.decompress(row[0]).decode("utf-8")

    def ids(self, tier: str | None = None) -> list[str]:
        """Ids of live documents, optionally only those of one tier."""
        with self._lock:
            if tier is None:
                rows = self._live().execute("SELECT doc_id FROM documents WHERE deleted_at IS NULL ORDER BY doc_id")
            else:
                rows = self._live().execute(
                    "SELECT doc_id FROM documents WHERE deleted_at IS NULL AND tier = ? ORDER BY doc_id", (tier,)
                )
            return [r[0] for r in rows.fetchall()]

    def closest_ids(self, doc_id: str, n: int = 3, *, include_deleted: bool = False) -> list[str]:
        """Known ids closest to ``doc_id``, best first, for "did you mean" hints.

        An id equal to ``doc_id`` but for case, or ending in ``/<doc_id>`` (the folder left
        out), is the answer on its own; otherwise up to ``n`` ids with a case-insensitive
        difflib ratio >= 0.6. Empty when nothing is close.
        """
        where = "" if include_deleted else " WHERE deleted_at IS NULL"
        with self._lock:
            known = [r[0] for r in self._live().execute(f"SELECT doc_id FROM documents{where}").fetchall()]
        by_lower: dict[str, str] = {}
        for known_id in sorted(known):
            by_lower.setdefault(known_id.lower(), known_id)
        wanted = doc_id.lower()
        exact = [k for low, k in by_lower.items() if low == wanted or low.endswith("/" + wanted)]
        if exact:
            return exact[:n]
        return [by_lower[m] for m in difflib.get_close_matches(wanted, list(by_lower), n=n, cutoff=0.6)]


def _check_tier(tier: str) -> None:
    if tier not in TIERS:
        raise InputError(f"unknown trust tier {tier!r}; expected one of {', '.join(TIERS)}")


def _check_actor(actor: str) -> str:
    name = actor.strip()
    if not name or any(ch in name for ch in "\r\n\x00"):
        raise InputError(f"the actor recorded with a ledger change must be a non-empty one-line name, got {actor!r}")
    return name


def as_tier(value: str) -> Tier:
    """Validate and narrow a tier name."""
    _check_tier(value)
    return cast(Tier, value)


__all__ = [
    "TIERS",
    "UNKNOWN_ACTOR",
    "Ledger",
    "LedgerEntry",
    "LedgerEvent",
    "ProvenanceRecord",
    "Tier",
    "VersionRecord",
    "as_tier",
    "utc_now",
]
