"""The store's persisted screening caches (issue 20): a document screened once costs a lookup after."""

from __future__ import annotations

import os
import pickle
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from tests.screening.conftest import COOKIE_DOCS, CountingEmbedder

from ragtrust.documents import Document
from ragtrust.models.cache import DiskCache
from ragtrust.models.nli_engine import NLI_CACHE_FILE, NLIEngine
from ragtrust.screening.base import RESULTS_TABLE, SCREEN_CACHE_FILE, persist_caches
from ragtrust.screening.conflicts import ClaimConflictSignal
from ragtrust.screening.injection import InjectionSignal
from ragtrust.screening.intra import IntraConsistencySignal
from ragtrust.testing import HashingEmbedder, KeywordInjectionModel, LexicalNLI, retrieved

DOCS = COOKIE_DOCS


def test_disk_cache_round_trip_read_only_and_pickle(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    DiskCache(path, "claims").put_many([("a", np.arange(3, dtype=np.float32))])
    reader = DiskCache(path, "claims", read_only=True)
    assert not reader.persists
    reader.put_many([("b", np.ones(2, dtype=np.float32))])  # read-only: nothing written
    copy = pickle.loads(pickle.dumps(reader))
    got = copy.get_many(["a", "b", "a"])
    assert got[0] is not None and got[0].tolist() == [0.0, 1.0, 2.0] and got[1] is None and got[2] is not None
    other_table = DiskCache(path, "windows")  # tables never share entries
    assert other_table.get_many(["a"]) == [None]
    missing = tmp_path / "none" / "cache.sqlite"
    assert DiskCache(missing, "claims", read_only=True).get_many(["a"]) == [None] and not missing.parent.exists()
    with pytest.raises(ValueError, match="lowercase"):
        DiskCache(path, "claims; DROP TABLE nli")


def test_a_damaged_cache_file_is_a_miss_never_an_error(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"this is not a sqlite file" * 100)
    disk = DiskCache(path, "claims")
    disk.put_many([("a", np.ones(2, dtype=np.float32))])
    assert disk.get_many(["a"]) == [None] and not disk.persists


def test_claim_embeddings_and_nli_pairs_persist_across_processes(tmp_path: Path) -> None:
    docs = retrieved(DOCS)
    path = tmp_path / SCREEN_CACHE_FILE

    def signal(embedder: CountingEmbedder, nli: LexicalNLI) -> ClaimConflictSignal:
        made = ClaimConflictSignal(
            nli=NLIEngine(nli, cache_path=str(tmp_path / NLI_CACHE_FILE)),
            embedder=embedder,
            min_cosine=0.3,
        )
        assert persist_caches([made], path) == ["claim_conflict"]
        return made

    first_embedder, first_nli = CountingEmbedder(), LexicalNLI()
    first = signal(first_embedder, first_nli).score_batch(docs)
    assert first_embedder.texts and first_nli.pairs_seen > 0
    again_embedder, again_nli = CountingEmbedder(), LexicalNLI()  # a new process: empty memory
    again = signal(again_embedder, again_nli).score_batch(docs)
    assert again_embedder.texts == [] and again_nli.pairs_seen == 0
    assert [r.score for r in again] == [r.score for r in first] and max(r.score for r in first) > 0
    assert [r.details["conflicts"] for r in again] == [r.details["conflicts"] for r in first]
    # another embedder (another fingerprint) never reads these vectors
    other = CountingEmbedder(model_id="other")
    signal(other, LexicalNLI()).score_batch(docs)
    assert other.texts


def test_injection_windows_persist_and_other_models_miss(tmp_path: Path) -> None:
    docs = retrieved(DOCS)
    path = tmp_path / SCREEN_CACHE_FILE
    model = KeywordInjectionModel()
    first = InjectionSignal(model=model)
    persist_caches([first], path)
    scored = first.score_batch(docs)
    assert model.calls and scored[1].score > scored[0].score
    fresh = KeywordInjectionModel()
    again = InjectionSignal(model=fresh)
    persist_caches([again], path)
    assert [r.score for r in again.score_batch(docs)] == [r.score for r in scored] and fresh.calls == []
    renamed = KeywordInjectionModel(model_id="another-injection-model")
    third = InjectionSignal(model=renamed)
    persist_caches([third], path)
    third.score_batch(docs)
    assert renamed.calls  # keyed by the model: another model computes its own


def test_a_value_damaged_on_disk_is_computed_again_never_read(tmp_path: Path) -> None:
    docs = retrieved(DOCS)
    path = tmp_path / SCREEN_CACHE_FILE
    first = InjectionSignal(model=KeywordInjectionModel())
    persist_caches([first], path)
    scored = first.score_batch(docs)
    assert scored[1].score > 0.5
    with sqlite3.connect(path) as db:
        db.execute(f"DELETE FROM {RESULTS_TABLE}")  # the kept results gone: the window probabilities are read
        for key, blob in db.execute("SELECT key, probs FROM injection_windows").fetchall():
            damaged = bytearray(blob)
            damaged[-1] ^= 0x3F  # bits of the last probability's exponent flipped: 0.9 reads as about 1e-38
            db.execute("UPDATE injection_windows SET probs = ? WHERE key = ?", (bytes(damaged), key))
    db.close()
    fresh = KeywordInjectionModel()
    again = InjectionSignal(model=fresh)
    persist_caches([again], path)
    # the damaged probabilities were read as they were: the injection scored 0 and was not flagged
    assert [r.score for r in again.score_batch(docs)] == [r.score for r in scored] and fresh.calls


def test_signals_without_a_model_cache_keep_only_their_results(tmp_path: Path) -> None:
    intra = IntraConsistencySignal(nli=LexicalNLI())  # its NLI pairs persist through the engine
    assert persist_caches([intra], tmp_path / SCREEN_CACHE_FILE) == ["intra_consistency"]
    assert intra.disk is None and intra.results_disk is not None
    conflicts = ClaimConflictSignal(nli=LexicalNLI(), embedder=HashingEmbedder())  # reads the question
    persist_caches([conflicts], tmp_path / SCREEN_CACHE_FILE)
    assert conflicts.results_disk is None


def test_gate_over_a_store_keeps_screening_results_in_it(tmp_path: Path) -> None:
    from ragtrust.ingest.store import Store
    from ragtrust.pipeline import TrustGate

    embedder = HashingEmbedder()
    store = Store.open(tmp_path / "s", embedder, create=True)
    store.add([Document(id=f"d{i}", text=t) for i, t in enumerate(DOCS)])
    gate = TrustGate.from_settings(store=store, nli=NLIEngine(LexicalNLI()), embedder=embedder)
    gate.screen(retrieved(DOCS), query="Which flags do session cookies need?")
    assert (tmp_path / "s" / SCREEN_CACHE_FILE).is_file()
    names = [s.name for s in gate.screener.signals if s.disk is not None]  # type: ignore[union-attr]
    assert "injection" in names and "claim_conflict" in names
    kept = {s.name for s in gate.screener.signals if s.results_disk is not None}  # type: ignore[union-attr]
    assert kept == {"injection", "linguistic", "structural", "intra_consistency"} & set(gate.screener.signal_names)
    assert {"injection", "intra_consistency"} <= kept


def test_gate_over_a_read_only_store_reads_but_never_writes_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtrust.ingest.store import Store
    from ragtrust.pipeline import TrustGate

    root = tmp_path / "s"
    Store.open(root, HashingEmbedder(), create=True).add([Document(id="d0", text=DOCS[0])])
    real_access = os.access

    def access(path: object, mode: int, **kw: object) -> bool:
        inside = str(path).startswith(str(root))
        return False if inside and mode & os.W_OK else real_access(path, mode, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    store = Store.open(root, HashingEmbedder())
    assert store.read_only
    gate = TrustGate.from_settings(store=store, nli=NLIEngine(LexicalNLI()), embedder=HashingEmbedder())
    gate.screen(retrieved(DOCS), query="Which flags do session cookies need?")
    assert not (root / SCREEN_CACHE_FILE).exists()
