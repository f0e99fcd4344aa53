"""A store whose ledger or segment files are lost or damaged fails closed (issue 19, items 2 and 6).

Without its provenance ledger a store cannot tell a quarantined document from a vetted
one, so it refuses to open instead of starting a new, empty ledger; ``ragtrust store
check`` names the damage and ``ragtrust store repair`` re-creates the ledger with every
document unvetted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ragtrust.models.embedder as embedder_module
import ragtrust.models.nli as nli_module
from ragtrust.cli import store as store_cli
from ragtrust.cli.main import app
from ragtrust.documents import Document
from ragtrust.errors import InputError, StoreDamagedError
from ragtrust.ingest.store import REPAIR_REASON, Store, check_store, open_ledger, repair_store
from ragtrust.testing import HashingEmbedder, LexicalNLI

runner = CliRunner()

DOCS = [
    Document(id="md5", text="Store passwords with unsalted MD5 hashes for speed."),
    Document(id="bcrypt", text="Store passwords with bcrypt, scrypt or Argon2id."),
]


@pytest.fixture(autouse=True)
def fake_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_cli, "_embedder", lambda settings: HashingEmbedder())
    monkeypatch.setattr(store_cli, "_nli", lambda settings: LexicalNLI())
    monkeypatch.setattr(embedder_module, "default_embedder", lambda settings=None: HashingEmbedder())
    monkeypatch.setattr(nli_module, "default_nli", lambda settings=None, **kw: LexicalNLI())
    monkeypatch.delenv("RAGTRUST_STORE", raising=False)


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    store = Store.open(root, HashingEmbedder(), create=True)
    store.add(DOCS, tier="vetted")
    store.ledger.set_tier("md5", "quarantined", "weak hash")
    store.close()
    return root


def _files(root: Path) -> dict[str, bytes]:
    """Every file of the store and its bytes (SQLite's -shm / -wal of a reader aside)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(("-shm", "-wal"))
    }


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("damage", ["deleted", "emptied", "overwritten"])
def test_a_lost_ledger_refuses_to_open_instead_of_starting_an_empty_one(tmp_path: Path, damage: str) -> None:
    root = _store(tmp_path)
    ledger = root / "ledger.sqlite"
    if damage == "deleted":
        ledger.unlink()
    elif damage == "emptied":
        ledger.write_bytes(b"")
    else:
        ledger.write_bytes(b"not a database at all, just some bytes")
    for opener in (
        lambda: Store.open(root, HashingEmbedder()),
        lambda: Store.open(root, HashingEmbedder(), create=True),  # ingest into it
        lambda: open_ledger(root),  # vet / quarantine / ledger
    ):
        with pytest.raises(StoreDamagedError, match=r"store damaged: ledger\.sqlite: .*store repair"):
            opener()
    if damage == "deleted":
        assert not ledger.exists(), "the ledger is never silently re-created"


def test_a_new_store_still_creates_its_ledger(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "new", HashingEmbedder(), create=True)
    store.add(DOCS[:1])
    assert (tmp_path / "new" / "ledger.sqlite").is_file()
    assert store.ledger.ids() == ["md5"]


def test_a_damaged_ledger_is_caught_before_an_ingest_publishes(tmp_path: Path) -> None:
    root = _store(tmp_path)
    store = Store.open(root, HashingEmbedder())
    generation = store.generation
    (root / "ledger.sqlite").unlink()
    with pytest.raises(StoreDamagedError):
        store.add([Document(id="new", text="Rotate keys every year.")])
    with pytest.raises(StoreDamagedError):
        store.delete(["bcrypt"])
    assert (root / "CURRENT").read_text().strip() == generation


def test_cli_commands_on_a_store_without_ledger_exit_2_with_one_line(tmp_path: Path) -> None:
    root = _store(tmp_path)
    (root / "ledger.sqlite").unlink()
    new = tmp_path / "new.md"  # not the folder holding the store: its own files are never documents
    new.write_text("# TLS\n\nUse TLS 1.2 or later.\n", encoding="utf-8")
    for args in (
        ["ask", "How should I store passwords?", "--store", str(root)],
        ["scan", "--store", str(root)],
        ["vet", "md5", "--store", str(root)],
        ["ingest", str(new), "--store", str(root)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        line = _one_line(result.stderr)
        assert "store damaged: ledger.sqlite: missing" in line and "TRUSTED" not in result.output
    assert not (root / "ledger.sqlite").exists()


def test_store_check_names_the_missing_ledger_and_repair_records_every_document_unvetted(tmp_path: Path) -> None:
    root = _store(tmp_path)
    sound = runner.invoke(app, ["store", "check", "--store", str(root)])
    assert sound.exit_code == 0, sound.output
    assert "2 document(s)" in sound.stdout

    (root / "ledger.sqlite").unlink()
    damaged = runner.invoke(app, ["store", "check", "--store", str(root), "--json"])
    assert damaged.exit_code == 2, damaged.output
    assert json.loads(damaged.stdout)["problems"] == ["ledger.sqlite: missing"]

    repaired = runner.invoke(app, ["store", "repair", "--store", str(root)])
    assert repaired.exit_code == 0, repaired.output
    assert "all 2 document(s) recorded UNVETTED" in repaired.stdout
    assert "quarantines are lost" in repaired.stdout
    with open_ledger(root) as ledger:
        records = ledger.get_many(["md5", "bcrypt"])
    assert {k: (r.tier, r.vetted_hash, r.tier_reason) for k, r in records.items()} == {
        "md5": ("unvetted", None, REPAIR_REASON),
        "bcrypt": ("unvetted", None, REPAIR_REASON),
    }
    assert runner.invoke(app, ["store", "check", "--store", str(root)]).exit_code == 0
    assert Store.open(root, HashingEmbedder()).ledger.ids(tier="vetted") == []


def test_repair_moves_an_unreadable_ledger_and_its_stale_wal_aside(tmp_path: Path) -> None:
    root = _store(tmp_path)
    (root / "ledger.sqlite").write_bytes(b"garbage")
    (root / "ledger.sqlite-wal").write_bytes(b"stale wal")
    result = repair_store(root)
    assert result.recreated and result.recorded == ("bcrypt", "md5")
    assert sorted(p.split(".damaged-")[0] for p in result.moved_aside) == ["ledger.sqlite", "ledger.sqlite-wal"]
    assert all((root / name).exists() for name in result.moved_aside)
    assert check_store(root).ok


def test_repair_keeps_a_sound_ledger_and_adds_only_the_documents_it_misses(tmp_path: Path) -> None:
    root = _store(tmp_path)
    with open_ledger(root) as ledger:
        ledger._conn.execute("DELETE FROM documents WHERE doc_id = 'bcrypt'")
    check = check_store(root)
    assert check.problems == ("ledger.sqlite: does not list 1 document(s): bcrypt",)
    result = repair_store(root)
    assert not result.recreated and result.recorded == ("bcrypt",)
    with open_ledger(root) as ledger:
        assert ledger.get("md5") is not None and ledger.get("md5").tier == "quarantined"  # type: ignore[union-attr]
        assert ledger.get("bcrypt").tier == "unvetted"  # type: ignore[union-attr]


def test_store_check_reads_every_ledger_record_not_only_the_ids(tmp_path: Path) -> None:
    import sqlite3

    root = _store(tmp_path)
    conn = sqlite3.connect(root / "ledger.sqlite")
    with conn:  # a flipped byte in the quarantine's time: the ids still read, the record does not
        conn.execute("UPDATE documents SET tier_changed_at = CAST(x'ff3032' AS TEXT) WHERE doc_id = 'md5'")
    conn.close()
    check = check_store(root)  # was "sound", while every question retrieving md5 failed its quarantine lookup
    assert not check.ok
    [problem] = check.problems
    assert problem.startswith("ledger.sqlite: unreadable (Could not decode to UTF-8 column 'tier_changed_at'")


def test_a_truncated_chunks_file_is_reported_as_store_damage(tmp_path: Path) -> None:
    root = _store(tmp_path)
    chunks = next((root / "segments").glob("*/chunks.jsonl"))
    chunks.write_bytes(chunks.read_bytes()[:40])
    relative = chunks.relative_to(root).as_posix()

    with pytest.raises(StoreDamagedError, match=rf"store damaged: {relative}: line 1: "):
        Store.open(root, HashingEmbedder()).documents()
    assert isinstance(StoreDamagedError("x", "y"), InputError)

    scan = runner.invoke(app, ["scan", "--store", str(root)])
    assert scan.exit_code == 2, scan.output
    line = _one_line(scan.stderr)
    assert f"store damaged: {relative}: line 1:" in line and "internal error" not in line

    check = runner.invoke(app, ["store", "check", "--store", str(root)])
    assert check.exit_code == 2
    assert f"damaged: {relative}: line 1:" in check.stderr


def test_a_chunk_edited_in_the_store_files_is_damage_and_never_served_as_vetted(tmp_path: Path) -> None:
    from ragtrust.documents import RetrievedDoc
    from ragtrust.screening.provenance import ProvenanceSignal

    root = _store(tmp_path)
    chunks = next((root / "segments").glob("*/chunks.jsonl"))
    rows = [json.loads(line) for line in chunks.read_text(encoding="utf-8").splitlines()]
    for row in rows:  # what a flipped bit or a hand edit does: still JSON, another text, the same recorded hashes
        row["text"] = row["text"].replace("bcrypt, scrypt or Argon2id", "unsalted SHA-1")
    chunks.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    relative = chunks.relative_to(root).as_posix()

    check = check_store(root)
    assert not check.ok
    assert check.problems == (
        f"{relative}: the text of 1 chunk(s) is not the text ingested (edited or corrupted): bcrypt#0",
    )
    store = Store.open(root, HashingEmbedder())
    edited = store.get("bcrypt#0")
    assert "unsalted SHA-1" in edited.text and store.ledger.get("bcrypt").tier == "vetted"  # type: ignore[union-attr]
    [result] = ProvenanceSignal(store.ledger).score_batch([RetrievedDoc(edited, 0.9, 1)])
    assert result.score == 0.9 and result.reasons[0].startswith("content changed since vetted")
    store.close()
    cli = runner.invoke(app, ["store", "check", "--store", str(root)])
    assert cli.exit_code == 2 and "bcrypt#0" in cli.stderr


def _interrupted_ingest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vetted store into which an ingest published ``session-notes`` and was killed before recording the ledger."""
    from ragtrust.data.kb import load_knowledge_base

    root = tmp_path / "store"
    store = Store.open(root, HashingEmbedder(), create=True)
    store.add(load_knowledge_base(), tier="vetted")
    notes = Document(
        id="session-notes",
        text="Session cookies must set the Secure, HttpOnly and SameSite attributes. "
        "Rotate the session identifier after every login.",
    )

    def killed(*args: object, **kwargs: object) -> None:  # kill -9 after CURRENT was swapped
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(Store, "_ledger_record", killed)
        with pytest.raises(KeyboardInterrupt):
            store.add([notes], tier="unvetted")
    store.close()
    return root


def test_a_document_published_by_an_ingest_stopped_before_the_ledger_is_never_trusted_as_vetted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtrust import TrustGate
    from ragtrust.config import load_settings

    root = _interrupted_ingest(tmp_path, monkeypatch)
    store = Store.open(root, HashingEmbedder())
    assert "session-notes" in {d.id for d in store.parents()} and store.ledger.get("session-notes") is None
    assert check_store(root).problems == ("ledger.sqlite: does not list 1 document(s): session-notes",)
    gate = TrustGate.from_settings(load_settings(env={}), store=store, nli=LexicalNLI(), embedder=HashingEmbedder())
    verdict = gate.ask("Which attributes must session cookies set?")
    assert any(s.spans and s.spans[0].doc_id == "session-notes#0" for s in verdict.sentences)
    assert not verdict.trusted  # was TRUSTED: the ledger's silence read as "another source, nothing to vet"
    assert (
        "sentence 1 rests only on documents that were never vetted (session-notes#0: unrecorded), "
        "while vetted documents were retrieved"
    ) in verdict.decision_reasons
    store.close()


def test_a_store_scan_reads_a_document_the_ledger_does_not_list_as_never_vetted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _interrupted_ingest(tmp_path, monkeypatch)
    result = runner.invoke(app, ["scan", "--store", str(root), "--json"])
    assert result.exit_code in (0, 3), result.output
    [row] = [r for r in json.loads(result.stdout)["rows"] if r["id"] == "session-notes#0"]
    [provenance] = [s for s in row["signals"] if s["name"] == "provenance"]
    assert not provenance["skipped"] and provenance["score"] == 0.4  # was skipped: "not in the provenance ledger"
    assert provenance["details"]["tier"] == "unrecorded" and "ragtrust store repair" in provenance["reasons"][0]


@pytest.mark.parametrize("damage", ["emptied", "blank line", "deleted", "deleted with its manifests"])
def test_a_lost_current_pointer_is_damage_never_an_empty_store(tmp_path: Path, damage: str) -> None:
    root = _store(tmp_path)
    current = root / "CURRENT"
    generation = current.read_text(encoding="utf-8")
    if damage == "emptied":
        current.write_bytes(b"")
    elif damage == "blank line":
        current.write_text("\n", encoding="utf-8")
    else:
        current.unlink()
    if damage == "deleted with its manifests":  # the ledger still records the documents
        for manifest in (root / "generations").glob("*.json"):
            manifest.unlink()
    files = _files(root)
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "new", "text": "Rotate signing keys every year."}) + "\n", encoding="utf-8")

    ingest = runner.invoke(app, ["ingest", str(new), "--store", str(root)])
    assert ingest.exit_code == 2, ingest.output
    assert "store damaged: CURRENT: " in _one_line(ingest.stderr)
    assert _files(root) == files  # nothing published, nothing removed
    for args in (
        ["ask", "How should I store passwords?", "--store", str(root)],
        ["screen", "--docs", str(new), "--store", str(root)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "store damaged: CURRENT: " in _one_line(result.stderr) and "nothing was retrieved" not in result.output
    check = runner.invoke(app, ["store", "check", "--store", str(root), "--json"])
    assert check.exit_code == 2 and json.loads(check.stdout)["problems"][0].startswith("CURRENT: ")
    with pytest.raises(StoreDamagedError, match=r"store damaged: CURRENT: .*store check"):
        Store.open(root, HashingEmbedder(), create=True)

    if damage != "deleted with its manifests":  # the message's fix: name the newest generation again
        assert f"({generation.strip()}) into CURRENT" in _one_line(ingest.stderr)
        current.write_text(generation, encoding="utf-8")
        assert sorted(d.id for d in Store.open(root, HashingEmbedder()).parents()) == ["bcrypt", "md5"]


def test_an_empty_folder_and_one_whose_first_ingest_failed_are_still_new_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in DOCS), encoding="utf-8")
    assert runner.invoke(app, ["ingest", str(docs), "--store", str(empty)]).exit_code == 0
    assert len(Store.open(empty, HashingEmbedder())) == 2

    first = tmp_path / "first"
    with monkeypatch.context() as patch:  # the first ingest fails after its segment, before publishing

        def boom(*args: object, **kwargs: object) -> str:
            raise RuntimeError("disk full (simulated)")

        patch.setattr(Store, "_publish", boom)
        with pytest.raises(RuntimeError):
            Store.open(first, HashingEmbedder(), create=True).add(DOCS)
    assert (first / "ledger.sqlite").is_file() and not (first / "CURRENT").exists()
    result = runner.invoke(app, ["ingest", str(docs), "--store", str(first), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] == 2 and check_store(first).ok
