from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ragtrust.documents import Document
from ragtrust.errors import InputError
from ragtrust.ingest.ledger import Ledger


def _clock():
    ticks = itertools.count(1)
    return lambda: f"2026-08-{next(ticks):02d}T10:00:00+00:00"


def test_versions_tiers_and_events(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite", clock=_clock())
    v1 = Document(id="kb-1", text="Use a 2048-bit RSA key.")
    assert ledger.record(v1, "kb.md", tier="vetted") == "added"
    assert ledger.record(Document(id="kb-1", text="Use a  2048-bit RSA key. "), "kb.md") == "unchanged"
    assert ledger.record(Document(id="kb-1", text="Use a 512-bit RSA key."), "kb.md") == "changed"
    rec = ledger.get("kb-1")
    assert rec is not None
    assert (rec.tier, rec.versions, rec.first_seen[:10], rec.vetted_at[:10]) == (
        "vetted",
        2,
        "2026-08-01",
        "2026-08-01",
    )
    assert rec.changed_since_vetted and rec.vetted_hash == v1.content_hash
    assert [v.version for v in ledger.history("kb-1")] == [1, 2]
    assert ledger.version_text("kb-1", v1.content_hash) == v1.text
    ledger.set_tier("kb-1", "vetted", "reviewed")
    assert not ledger.get("kb-1").changed_since_vetted
    ledger.set_tier("kb-1", "quarantined", "suspicious edit")
    assert ledger.get("kb-1").tier == "quarantined"
    kinds = [e.kind for e in ledger.events("kb-1")]
    assert kinds == ["added", "vetted", "changed", "vetted", "quarantined"]


def test_delete_keeps_history_and_readd(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    ledger.record(Document(id="a", text="one"), "a.txt", tier="vetted")
    ledger.delete("a")
    assert ledger.get("a") is None and ledger.get("a", include_deleted=True) is not None
    assert ledger.record(Document(id="a", text="two"), "a.txt") == "added"
    rec = ledger.get("a")
    assert rec.versions == 2 and rec.changed_since_vetted  # re-adding does not launder a vetted doc


def test_errors_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    ledger = Ledger(path)
    with pytest.raises(InputError, match="not in the provenance ledger"):
        ledger.set_tier("nope", "vetted")
    ledger.record(Document(id="a", text="x"), "a.txt")
    with pytest.raises(InputError, match="unknown trust tier"):
        ledger.set_tier("a", "trusted")
    ledger.close()
    again = Ledger(path)
    assert again.get("a").tier is None and again.ids() == ["a"]
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InputError, match="not a ragtrust provenance ledger"):
        Ledger(bad)


def test_closest_ids_suggest_known_ids_for_a_near_miss(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    for doc_id in ("owasp/Password_Storage_Cheat_Sheet.md", "owasp/Session_Management_Cheat_Sheet.md", "gone.md"):
        ledger.record(Document(id=doc_id, text=doc_id), doc_id)
    ledger.delete("gone.md")
    assert ledger.closest_ids("owasp/password_storage_cheat_sheet.md") == ["owasp/Password_Storage_Cheat_Sheet.md"]
    assert ledger.closest_ids("Password_Storage_Cheat_Sheet.md") == ["owasp/Password_Storage_Cheat_Sheet.md"]
    assert ledger.closest_ids("owasp/Pasword_Storage_Cheat_Sheet.md")[0] == "owasp/Password_Storage_Cheat_Sheet.md"
    assert ledger.closest_ids("gone.mdx") == [] and ledger.closest_ids("gone.mdx", include_deleted=True) == ["gone.md"]
    assert ledger.closest_ids("unrelated") == []
