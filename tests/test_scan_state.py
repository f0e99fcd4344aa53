"""A store's last scan: unchanged rows are kept, changed documents and their neighbours scanned again."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import edited_nonce

from ragtrust.config import Settings
from ragtrust.documents import Document, RetrievedDoc, SignalResult
from ragtrust.errors import InputError
from ragtrust.ingest.ledger import Ledger
from ragtrust.models.cache import seal, unseal
from ragtrust.scan import scan_corpus
from ragtrust.scan.report import ScanReport
from ragtrust.scan.state import SCAN_STATE_FILE, ScanState, config_key, model_identity, row_keys
from ragtrust.screening.base import Signal
from ragtrust.screening.conflicts import LEDGER_FAILED, ClaimConflictSignal
from ragtrust.screening.provenance import ProvenanceSignal
from ragtrust.testing import HashingEmbedder, LexicalNLI

TEXTS = {
    "bcrypt": "Store passwords with bcrypt using a work factor of at least 12 rounds.",
    "bcrypt-2": "Passwords are stored with bcrypt using a work factor of at least 12 rounds.",
    "sql": "Use parameterised queries to prevent SQL injection in every database call.",
    "cookies": "Session cookies should be marked Secure, HttpOnly and SameSite.",
    "keys": "Rotate API keys regularly and store them in a secrets manager.",
}


class Counting(Signal):
    """A document-level signal that records the documents it scored."""

    name = "counting"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def score_batch(self, docs: Sequence[RetrievedDoc], query: str | None = None) -> list[SignalResult]:
        self.seen.extend(d.id for d in docs)
        return [SignalResult(self.name, 0.5 if "4 rounds" in d.document.text else 0.0) for d in docs]


def _docs(**edits: str) -> list[Document]:
    texts = {**TEXTS, **edits}
    return [Document(id=k, text=v, url=f"https://kb.test/{k}") for k, v in texts.items()]


def _scan(docs: list[Document], state: ScanState | None, *, config: str = "cfg", ledger=None, **kw) -> tuple:
    counting = Counting()
    signals: list[Signal] = [
        counting,
        ClaimConflictSignal(nli=LexicalNLI(), embedder=HashingEmbedder(), min_cosine=0.3),
    ]
    if ledger is not None:
        signals.append(ProvenanceSignal(ledger=ledger))
    report = scan_corpus(
        docs,
        signals=signals,
        embedder=HashingEmbedder(),
        nli=None,
        witnesses=2,
        min_similarity=0.3,
        vectors=HashingEmbedder().embed([d.text for d in docs]),
        state=state,
        config=config,
        ledger=ledger,
        **kw,
    )
    return report, set(counting.seen)


def _rows(report: ScanReport) -> list[dict]:
    return [r.to_dict() for r in report.rows]


def _witnessed_by(report: ScanReport, doc_id: str) -> set[str]:
    return {r.id for r in report.rows if any(w.id == doc_id for w in r.witnesses)}


def test_a_second_scan_keeps_every_row_and_an_edit_rescans_the_document_and_its_neighbours(tmp_path: Path) -> None:
    state = ScanState(tmp_path / SCAN_STATE_FILE)
    first, seen = _scan(_docs(), state)
    assert first.reused == 0 and seen == set(TEXTS)
    again, seen = _scan(_docs(), state)
    assert again.reused == len(TEXTS) and seen == set() and _rows(again) == _rows(first)
    assert again.to_dict()["reused"] == len(TEXTS)

    edited_docs = _docs(bcrypt="Store passwords with bcrypt using a work factor of at least 4 rounds.")
    edited, seen = _scan(edited_docs, state)
    neighbours = _witnessed_by(first, "bcrypt") | _witnessed_by(edited, "bcrypt")
    assert "bcrypt-2" in neighbours  # the other bcrypt document reads the edited one as a witness
    assert seen == {"bcrypt"} | neighbours and edited.reused == len(TEXTS) - len(seen)
    full, _ = _scan(edited_docs, None)  # the same rows as a scan of everything
    assert _rows(edited) == _rows(full)
    by_id = {r.id: r for r in edited.rows}
    assert by_id["bcrypt"].conflicts and by_id["bcrypt-2"].conflicts  # the neighbour now sees the conflict


def test_a_new_document_rescans_the_documents_it_becomes_a_witness_of(tmp_path: Path) -> None:
    state = ScanState(tmp_path / SCAN_STATE_FILE)
    _scan(_docs(), state)
    grown = [
        *_docs(),
        Document(id="bcrypt-3", text="Use bcrypt with a work factor of at least 12 rounds for passwords."),
    ]
    report, seen = _scan(grown, state)
    assert "bcrypt-3" in seen and _witnessed_by(report, "bcrypt-3") <= seen and _witnessed_by(report, "bcrypt-3")
    assert _rows(report) == _rows(_scan(grown, None)[0])
    # a document deleted from the corpus is forgotten by the state
    _scan(_docs(), state)
    stored = sqlite3.connect(tmp_path / SCAN_STATE_FILE).execute("SELECT key FROM scan_rows").fetchall()
    assert sorted(k for (k,) in stored) == sorted(TEXTS)


def test_any_change_of_configuration_threshold_or_weights_scans_everything(tmp_path: Path) -> None:
    state = ScanState(tmp_path / SCAN_STATE_FILE)
    _scan(_docs(), state)
    assert _scan(_docs(), state, config="other")[1] == set(TEXTS)
    assert _scan(_docs(), state, config="other", threshold=0.5)[1] == set(TEXTS)
    assert _scan(_docs(), state, config="other", threshold=0.5, weights={"counting": 0.3})[1] == set(TEXTS)
    assert _scan(_docs(), state, config="other", threshold=0.5, weights={"counting": 0.3})[1] == set()
    with pytest.raises(InputError, match="config key"):
        _scan(_docs(), state, config="")


def test_a_ledger_change_rescans_the_document_and_those_it_witnesses(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    docs = _docs()
    for d in docs:
        ledger.record(d, f"{d.id}.md", tier="vetted")
    state = ScanState(tmp_path / SCAN_STATE_FILE)
    first, _ = _scan(docs, state, ledger=ledger)
    assert _scan(docs, state, ledger=ledger)[1] == set()
    ledger.set_tier("bcrypt", "quarantined", "test")
    report, seen = _scan(docs, state, ledger=ledger)
    assert seen == {"bcrypt"} | _witnessed_by(first, "bcrypt")
    provenance = next(s for s in {r.id: r for r in report.rows}["bcrypt"].signals if s.name == "provenance")
    assert provenance.details["tier"] == "quarantined"
    assert _rows(report) == _rows(_scan(docs, None, ledger=ledger)[0])

    class Broken:
        def get(self, doc_id: str):
            raise sqlite3.OperationalError("disk I/O error")

    # a ledger that cannot be read gives no key: nothing is reused, nothing is kept for next time
    assert _scan(docs, state, ledger=Broken())[1] == set(TEXTS)
    assert _scan(docs, state, ledger=ledger)[1] == set(TEXTS)


def test_a_damaged_or_foreign_row_is_scanned_again_never_trusted(tmp_path: Path) -> None:
    path = tmp_path / SCAN_STATE_FILE
    _scan(_docs(), ScanState(path))
    db = sqlite3.connect(path)
    db.execute("UPDATE scan_rows SET probs = ? WHERE key = 'sql'", (b"\xff not json",))

    def stored(key: str) -> Any:
        return json.loads(unseal(db.execute("SELECT probs FROM scan_rows WHERE key = ?", (key,)).fetchone()[0]))

    # rows rewritten with a valid checksum (a forged file): the row's own checks still refuse them
    cookies = stored("cookies")
    cookies["row"]["id"] = "keys"  # a row stored under another document's id
    keys = stored("keys")
    keys["row"]["suspicious"] = "no"  # a field of the wrong type
    bcrypt = stored("bcrypt")
    bcrypt["row"]["signals"][0]["score"] = 0.9  # P no longer the fusion of the signals
    rows = {"cookies": cookies, "keys": keys, "bcrypt": bcrypt}
    db.executemany(
        "UPDATE scan_rows SET probs = ? WHERE key = ?", [(seal(json.dumps(v).encode()), k) for k, v in rows.items()]
    )
    db.commit()
    db.close()
    assert _scan(_docs(), ScanState(path))[1] == {"sql", "cookies", "keys", "bcrypt"}
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        (path.parent / name).unlink(missing_ok=True)
    path.write_bytes(b"not a database")
    report, seen = _scan(_docs(), ScanState(path))
    assert seen == set(TEXTS) and report.reused == 0


def test_reuse_off_scans_everything_and_saves_the_rows_and_a_read_only_state_is_only_read(tmp_path: Path) -> None:
    path = tmp_path / SCAN_STATE_FILE
    _scan(_docs(), ScanState(path))
    assert _scan(_docs(), ScanState(path, reuse=False))[1] == set(TEXTS)
    assert _scan(_docs(), ScanState(path))[1] == set()
    read_only = ScanState(path, read_only=True)
    edited = _docs(sql="Use prepared statements to prevent SQL injection in every database call.")
    assert "sql" in _scan(edited, read_only)[1]
    assert "sql" in _scan(edited, ScanState(path, read_only=True))[1]  # nothing was written


def test_the_config_key_names_settings_models_and_code() -> None:
    settings = Settings()
    base = config_key(settings, {"nli": LexicalNLI(), "embedder": HashingEmbedder()})
    assert base == config_key(Settings(), {"nli": LexicalNLI(), "embedder": HashingEmbedder()})
    changed = settings.model_copy(update={"screening": settings.screening.model_copy(update={"witnesses": 2})})
    assert config_key(changed, {"nli": LexicalNLI(), "embedder": HashingEmbedder()}) != base
    assert config_key(settings, {"nli": LexicalNLI(), "embedder": HashingEmbedder(dim=64)}) != base

    class Wrapped:
        def __init__(self, model: object) -> None:
            self.model = model

    class Calibrated:
        model_id = "m"
        calibration = {"intra": [0.8, 0.9]}

    assert model_identity(Wrapped(Calibrated()))["inner.model"]["calibration"] == {"intra": [0.8, 0.9]}
    other = Calibrated()
    other.calibration = {"intra": [0.7, 0.9]}
    assert config_key(settings, {"nli": Wrapped(other)}) != config_key(settings, {"nli": Wrapped(Calibrated())})


def test_the_code_and_a_model_file_changed_in_place_change_the_config_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ragtrust.scan.state as state_module

    settings = Settings()
    manifest = tmp_path / "model" / "manifest.json"
    manifest.parent.mkdir()
    manifest.write_text('{"threshold": 0.42}', encoding="utf-8")

    class FromFolder:
        model_id = "mine"

        def __init__(self) -> None:
            self.manifest_path = str(manifest)

    base = config_key(settings, {"injection": FromFolder()})
    manifest.write_text('{"threshold": 0.01}', encoding="utf-8")  # recalibrated in place, same path
    assert config_key(settings, {"injection": FromFolder()}) != base
    again = config_key(settings, {"injection": FromFolder()})
    monkeypatch.setattr(state_module, "source_digest", lambda: "another version of ragtrust")
    assert config_key(settings, {"injection": FromFolder()}) != again


def test_witnesses_at_another_cosine_are_another_key(tmp_path: Path) -> None:
    state = ScanState(tmp_path / SCAN_STATE_FILE)
    docs = _docs()
    vectors = HashingEmbedder().embed([d.text for d in docs])
    signal = ClaimConflictSignal(nli=LexicalNLI(), embedder=HashingEmbedder(), min_cosine=0.3)
    kw = {"signals": [signal], "embedder": HashingEmbedder(), "nli": None, "witnesses": 2, "min_similarity": 0.3}
    first = scan_corpus(docs, vectors=vectors, state=state, config="cfg", **kw)
    assert scan_corpus(docs, vectors=vectors, state=state, config="cfg", **kw).reused == len(docs)
    moved = vectors.copy()
    moved[:, 0] += 0.05  # the same texts and neighbours, other cosines
    report = scan_corpus(docs, vectors=moved, state=state, config="cfg", **kw)
    assert [[w.id for w in r.witnesses] for r in report.rows] == [[w.id for w in r.witnesses] for r in first.rows]
    assert report.reused == sum(1 for r in first.rows if not r.witnesses)


def test_a_ledger_that_cannot_be_read_keeps_nothing_and_reuses_nothing(tmp_path: Path) -> None:
    class Broken:
        def get(self, doc_id: str):
            raise sqlite3.OperationalError("database is locked")

    assert row_keys(_docs(), [[] for _ in TEXTS], config="cfg", ledger=Broken(), scan={}) == [None] * len(TEXTS)

    state = ScanState(tmp_path / SCAN_STATE_FILE)
    assert _scan(_docs(), state, ledger=Broken())[1] == set(TEXTS)
    assert _scan(_docs(), state, ledger=Broken())[1] == set(TEXTS)


def test_a_row_with_a_failure_in_it_is_not_kept(tmp_path: Path) -> None:
    class FailsOnce(Signal):
        name = "flaky"

        def __init__(self) -> None:
            self.calls = 0

        def score_batch(self, docs, query=None):
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("inference failed")
            return [SignalResult(self.name, 0.0) for _ in docs]

    flaky = FailsOnce()
    state = ScanState(tmp_path / SCAN_STATE_FILE)
    docs = _docs()
    kw = {"embedder": None, "nli": None, "witnesses": 0, "vectors": HashingEmbedder().embed([d.text for d in docs])}
    first = scan_corpus(docs, signals=[flaky], state=state, config="cfg", **kw)
    assert all(r.signals[0].skip_reason.startswith("error:") for r in first.rows)
    assert scan_corpus(docs, signals=[flaky], state=state, config="cfg", **kw).reused == 0
    assert scan_corpus(docs, signals=[flaky], state=state, config="cfg", **kw).reused == len(docs)


def test_a_chunk_without_parent_metadata_is_keyed_on_its_parent_record(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.record(Document(id="kb", text="Use a 64-bit nonce."), "kb.md", tier="vetted")
    docs = [Document(id="kb#0", text="Use a 64-bit nonce."), Document(id="other", text="Honey keeps for years.")]
    state = ScanState(tmp_path / SCAN_STATE_FILE)
    _scan(docs, state, ledger=ledger)
    ledger.set_tier("kb", "quarantined", "test")
    report, seen = _scan(docs, state, ledger=ledger)
    assert "kb#0" in seen and report.rows[0].suspicious  # the provenance signal reads kb's record


def test_a_ledger_change_during_the_scan_keeps_nothing_for_that_document(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite", clock=lambda: "2026-12-05T00:00:00+00:00")
    docs = _docs()
    for d in docs:
        ledger.record(d, f"{d.id}.md")
        ledger.set_tier(d.id, "vetted")
    before = ledger.get("sql")

    class Changes(Signal):
        """Changes a tier while the scan runs (as `ragtrust quarantine` beside it could)."""

        name = "changes"
        active = True

        def score_batch(self, docs, query=None):
            if self.active:
                ledger.set_tier("sql", "quarantined", "during the scan")
            return [SignalResult(self.name, 0.0) for _ in docs]

    changes = Changes()
    state = ScanState(tmp_path / SCAN_STATE_FILE)
    kw = {"embedder": None, "nli": None, "witnesses": 0, "ledger": ledger, "config": "cfg", "state": state}
    vectors = HashingEmbedder().embed([d.text for d in docs])
    signals = [changes, ProvenanceSignal(ledger=ledger)]
    first = scan_corpus(docs, signals=signals, vectors=vectors, **kw)
    assert {r.id: r for r in first.rows}["sql"].suspicious  # read while quarantined
    changes.active = False
    ledger.set_tier("sql", "vetted")
    assert ledger.get("sql") == before  # the very record the first scan's keys were computed from
    again = {r.id: r for r in scan_corpus(docs, signals=signals, vectors=vectors, **kw).rows}
    assert not again["sql"].suspicious  # scanned again, not the row read while quarantined


def test_a_vetted_version_that_cannot_be_read_is_said_and_the_row_not_kept(tmp_path: Path) -> None:
    class NoVersions(Ledger):
        def version_text(self, doc_id: str, content_hash: str) -> str | None:
            raise sqlite3.OperationalError("disk I/O error")

    ledger = NoVersions(tmp_path / "ledger.sqlite")
    docs = edited_nonce(ledger)
    state = ScanState(tmp_path / SCAN_STATE_FILE)
    kw = {"signals": [], "embedder": HashingEmbedder(), "nli": LexicalNLI(), "ledger": ledger, "witnesses": 3}
    vectors = HashingEmbedder().embed([d.text for d in docs])
    first = scan_corpus(docs, vectors=vectors, state=state, config="cfg", **kw)
    (conflicts,) = first.rows[0].signals
    assert any(n.startswith(LEDGER_FAILED) and "disk I/O error" in n for n in conflicts.details["notes"])
    assert not first.rows[0].conflicts  # the vetted version could not testify, and the row says why
    again = scan_corpus(docs, vectors=vectors, state=state, config="cfg", **kw)
    assert again.reused == 1 and again.rows[1].to_dict() == first.rows[1].to_dict()
