"""The ledger's audit trail: who changed a tier, and when (issue 19, "Roles").

Every event and the current tier carry an ``actor``; a ledger written before the column
existed is migrated in place when opened, its past changes reading ``unknown``.
"""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

import pytest

from ragtrust.documents import Document
from ragtrust.errors import InputError
from ragtrust.ingest.ledger import Ledger

#: the schema of the ledgers written before the audit trail (no actor, no tier_changed_by)
_OLD_SCHEMA = """
CREATE TABLE documents (
    doc_id TEXT PRIMARY KEY, source TEXT NOT NULL, content_hash TEXT NOT NULL, first_seen TEXT NOT NULL,
    last_changed TEXT NOT NULL, version INTEGER NOT NULL, tier TEXT, tier_reason TEXT NOT NULL DEFAULT '',
    tier_changed_at TEXT, vetted_hash TEXT, vetted_at TEXT, deleted_at TEXT
);
CREATE TABLE versions (
    doc_id TEXT NOT NULL, version INTEGER NOT NULL, content_hash TEXT NOT NULL, source TEXT NOT NULL,
    recorded_at TEXT NOT NULL, text BLOB NOT NULL, PRIMARY KEY (doc_id, version)
);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, doc_id TEXT NOT NULL, at TEXT NOT NULL, kind TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
);
"""
T0 = "2026-01-01T10:00:00+00:00"


def _clock() -> str:
    return "2026-08-17T09:30:00+00:00"


def test_every_change_records_who_made_it(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite", clock=_clock)
    ledger.record(Document(id="kb", text="Use bcrypt."), "kb.md", tier="vetted", actor="alice")
    ledger.record(Document(id="kb", text="Use MD5."), "kb.md", actor="mallory")
    ledger.set_tier("kb", "quarantined", "weak hash", actor="bob")
    ledger.delete("kb", actor="carol")
    events = [(e.kind, e.actor) for e in ledger.events("kb")]
    assert events == [("added", "alice"), ("vetted", "alice"), ("changed", "mallory"), ("quarantined", "bob")] + [
        ("deleted", "carol")
    ]
    record = ledger.get("kb", include_deleted=True)
    assert record is not None
    assert (record.tier, record.tier_changed_by, record.tier_changed_at) == ("quarantined", "bob", _clock())
    assert record.to_dict()["tier_changed_by"] == "bob"


def test_without_an_actor_the_ledger_says_unknown_and_an_untiered_document_names_nobody(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    ledger.record(Document(id="a", text="A."), "a.md")
    ledger.record(Document(id="b", text="B."), "b.md", tier="unvetted")
    assert ledger.get("a").tier_changed_by is None  # type: ignore[union-attr]
    assert ledger.get("b").tier_changed_by == "unknown"  # type: ignore[union-attr]
    assert [e.actor for e in ledger.events("b")] == ["unknown", "unknown"]


@pytest.mark.parametrize("actor", ["", "  ", "two\nlines"])
def test_an_empty_or_multiline_actor_is_refused_and_nothing_is_written(tmp_path: Path, actor: str) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    ledger.record(Document(id="a", text="A."), "a.md")
    with pytest.raises(InputError, match="non-empty one-line name"):
        ledger.set_tier("a", "vetted", actor=actor)
    with pytest.raises(InputError, match="non-empty one-line name"):
        ledger.record(Document(id="b", text="B."), "b.md", tier="vetted", actor=actor)
    assert ledger.get("a").tier is None and ledger.get("b") is None  # type: ignore[union-attr]


def _old_ledger(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(_OLD_SCHEMA)
    for doc_id, tier in (("kb", "vetted"), ("plain", None)):
        db.execute(
            "INSERT INTO documents VALUES (?, 'kb.md', 'h1', ?, ?, 1, ?, '', ?, ?, ?, NULL)",
            (doc_id, T0, T0, tier, T0 if tier else None, "h1" if tier else None, T0 if tier else None),
        )
        db.execute("INSERT INTO versions VALUES (?, 1, 'h1', 'kb.md', ?, ?)", (doc_id, T0, zlib.compress(b"text")))
        db.execute("INSERT INTO events (doc_id, at, kind, detail) VALUES (?, ?, 'added', 'h1')", (doc_id, T0))
    db.execute("INSERT INTO events (doc_id, at, kind, detail) VALUES ('kb', ?, 'vetted', 'ok')", (T0,))
    db.commit()
    db.close()


def test_an_old_ledger_is_migrated_in_place_and_keeps_its_history(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    _old_ledger(path)
    with Ledger(path, clock=_clock) as ledger:
        old = ledger.get("kb")
        assert old is not None and (old.tier, old.tier_changed_by, old.vetted_hash) == ("vetted", "unknown", "h1")
        assert ledger.get("plain").tier_changed_by is None  # type: ignore[union-attr]
        assert [(e.kind, e.actor) for e in ledger.events("kb")] == [("added", "unknown"), ("vetted", "unknown")]
        ledger.set_tier("kb", "quarantined", "bad", actor="dana")
    with Ledger(path) as again:  # a second open finds the columns and changes nothing
        assert again.get("kb").tier_changed_by == "dana"  # type: ignore[union-attr]
        assert [e.actor for e in again.events("kb")] == ["unknown", "unknown", "dana"]
    columns = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(events)")}
    assert "actor" in columns


def test_a_read_only_old_ledger_is_read_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    _old_ledger(path)
    with Ledger(path, read_only=True) as ledger:  # no write access: no migration, reads still work
        record = ledger.get("kb")
        assert record is not None and (record.tier, record.tier_changed_by) == ("vetted", "unknown")
        assert ledger.get("plain").tier_changed_by is None  # type: ignore[union-attr]
        assert [e.actor for e in ledger.events("kb")] == ["unknown", "unknown"]
    assert "actor" not in {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(events)")}
