from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragtrust.documents import Document
from ragtrust.errors import ConfigError, InputError
from ragtrust.ingest import store as store_module
from ragtrust.ingest.store import Store
from ragtrust.testing import HashingEmbedder

DOCS = [
    Document(id="sql", text="Use parameterised queries so user input never becomes SQL code.", source="sql.md"),
    Document(id="pwd", text="Hash passwords with argon2id or bcrypt, never with MD5 or SHA-1.", source="pwd.md"),
    Document(id="tls", text="Configure TLS 1.2 or 1.3 only and disable legacy cipher suites.", source="tls.md"),
    Document(id="csrf", text="Protect state-changing requests with anti-CSRF tokens.", source="csrf.md"),
]


def _open(path: Path, **kw) -> Store:
    return Store.open(path, HashingEmbedder(), **kw)


def test_missing_store_and_embedder_mismatch(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist or is empty: run `ragtrust ingest PATHS --store"):
        _open(tmp_path / "none")
    st = _open(tmp_path / "s", create=True)
    st.add(DOCS)
    with pytest.raises(ConfigError, match="built with embedder 'hashing-embedder'"):
        Store.open(tmp_path / "s", HashingEmbedder(dim=64, model_id="other"))


def test_incremental_add_update_delete(tmp_path: Path) -> None:
    st = _open(tmp_path / "s", create=True)
    first = st.add(DOCS, tier="vetted")
    assert (first.added, first.updated, first.unchanged, first.chunks) == (4, 0, 0, 4)
    vectors_before = st.vectors().copy()
    again = st.add(DOCS)
    assert (again.added, again.updated, again.unchanged, again.chunks) == (0, 0, 4, 0)
    assert again.generation == first.generation  # nothing to write: no new generation
    edited = Document(id="pwd", text="Hash passwords with MD5 for speed.", source="pwd.md")
    new = Document(id="ssrf", text="Validate outbound URLs against an allow-list to stop SSRF.", source="ssrf.md")
    upd = st.add([edited, new])
    assert (upd.added, upd.updated, upd.unchanged, upd.chunks) == (1, 1, 0, 2)
    reopened = _open(tmp_path / "s")
    assert len(reopened) == 5
    assert reopened.get("pwd#0").text == edited.text and reopened.get("pwd").text == edited.text
    # unchanged documents were not re-embedded: their vectors are identical
    for doc_id in ("sql", "tls", "csrf"):
        row_before = [d.id for d in DOCS].index(doc_id)
        row_now = [d.id for d in reopened.documents()].index(f"{doc_id}#0")
        assert np.array_equal(vectors_before[row_before], reopened.vectors()[row_now])
    assert reopened.delete(["tls"]) == 1
    assert sorted(d.id for d in reopened.documents()) == ["csrf#0", "pwd#0", "sql#0", "ssrf#0"]
    with pytest.raises(InputError, match="not in store"):
        reopened.delete(["nope"])
    with pytest.raises(InputError, match="not in store"):
        reopened.get("tls#0")
    assert reopened.ledger.get("tls") is None and reopened.ledger.get("pwd").versions == 2


def test_a_new_url_or_metadata_over_the_same_text_is_an_update(tmp_path: Path) -> None:
    st = _open(tmp_path / "s", create=True)
    st.add(DOCS, tier="vetted")
    moved = Document(id="sql", text=DOCS[0].text, source="sql.md", url="https://kb.example/sql", metadata={"t": ["a"]})
    report = st.add([moved, DOCS[1]])
    # was "unchanged": the old URL (the citation target) and metadata stayed, silently
    assert (report.added, report.updated, report.unchanged, report.updated_ids) == (0, 1, 1, ("sql",))
    reopened = _open(tmp_path / "s")
    for doc_id in ("sql", "sql#0"):
        assert (reopened.get(doc_id).url, reopened.get(doc_id).metadata["t"]) == ("https://kb.example/sql", ["a"])
    again = reopened.add([moved])  # the same url and metadata (a list read back from JSON) are unchanged
    assert (again.updated, again.unchanged) == (0, 1)
    record = reopened.ledger.get("sql")
    assert record is not None and (record.tier, record.versions, record.changed_since_vetted) == ("vetted", 1, False)


def test_retrieval_modes_find_paraphrases(tmp_path: Path) -> None:
    st = _open(tmp_path / "s", create=True)
    st.add(DOCS)
    queries = {
        "which queries keep user input from turning into SQL": "sql#0",
        "how should I hash user passwords": "pwd#0",
        "what TLS cipher suites to disable": "tls#0",
        "tokens against CSRF for state changing requests": "csrf#0",
    }
    for mode in ("dense", "bm25", "hybrid"):
        retriever = st.retriever(mode, top_k=3)
        for query, expected in queries.items():
            hits = retriever.retrieve(query)
            assert expected in [h.id for h in hits[:3]], (mode, query)
            assert all(0.0 <= (h.score or 0.0) <= 1.0 for h in hits)
            assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    with pytest.raises(ConfigError, match="unknown retrieval mode"):
        st.retriever("sparse")


def test_failed_ingest_leaves_previous_store_usable(tmp_path: Path, monkeypatch) -> None:
    st = _open(tmp_path / "s", create=True)
    st.add(DOCS, tier="vetted")
    generation = st.generation

    def boom(*args, **kwargs):
        raise RuntimeError("disk full (simulated)")

    # fail after the new segment was written, just before the manifest/pointer swap
    monkeypatch.setattr(Store, "_publish", boom)
    poisoned = Document(id="pwd", text="Hash passwords with MD5, it is fine.", source="pwd.md")
    with pytest.raises(RuntimeError, match="disk full"):
        st.add([poisoned, Document(id="new", text="brand new doc", source="n.md")])
    monkeypatch.undo()
    again = _open(tmp_path / "s")
    assert again.generation == generation and len(again) == 4
    assert again.get("pwd#0").text == DOCS[1].text
    assert again.retriever().retrieve("hash passwords argon2", top_k=1)[0].id == "pwd#0"
    assert not again.ledger.get("pwd").changed_since_vetted  # ledger untouched too
    assert again.ledger.get("new") is None
    # the next write cleans the orphaned segment up and works
    report = again.add([poisoned])
    assert report.updated == 1
    manifest = json.loads((tmp_path / "s" / "generations" / f"{again.generation}.json").read_text())
    live = {p.name for p in (tmp_path / "s" / "segments").iterdir()}
    assert set(manifest["segments"]) <= live


def test_failure_while_embedding_and_readers_keep_their_snapshot(tmp_path: Path, monkeypatch) -> None:
    st = _open(tmp_path / "s", create=True)
    st.add(DOCS)
    reader = _open(tmp_path / "s")
    before = [d.id for d in reader.documents()]
    calls = {"n": 0}
    real = store_module.Store._embed

    def flaky(self, chunks, progress):
        calls["n"] += 1
        raise KeyboardInterrupt  # even an interrupt mid-ingest leaves the store as it was

    monkeypatch.setattr(store_module.Store, "_embed", flaky)
    with pytest.raises(KeyboardInterrupt):
        st.add([Document(id="x", text="new text")])
    monkeypatch.setattr(store_module.Store, "_embed", real)
    assert calls["n"] == 1
    st.add([Document(id="x", text="new text")])
    assert [d.id for d in reader.documents()] == before  # a reader sees one whole generation
    assert reader.refresh() and "x#0" in [d.id for d in reader.documents()]


def test_compaction_after_many_deletes(tmp_path: Path) -> None:
    st = _open(tmp_path / "s", create=True)
    docs = [Document(id=f"d{i}", text=f"document number {i} about topic {i % 3}") for i in range(12)]
    st.add(docs)
    st.delete([f"d{i}" for i in range(6)])
    assert len(st) == 6
    manifest = json.loads((tmp_path / "s" / "generations" / f"{st.generation}.json").read_text())
    assert len(manifest["segments"]) == 1 and manifest["deleted"] == []  # live rows compacted
    assert sorted(d.id for d in _open(tmp_path / "s").documents()) == sorted(f"d{i}#0" for i in range(6, 12))


def test_bad_batches(tmp_path: Path) -> None:
    st = _open(tmp_path / "s", create=True)
    with pytest.raises(InputError, match="duplicate document ids"):
        st.add([DOCS[0], DOCS[0]])
    with pytest.raises(InputError, match="looks like a chunk id"):
        st.add([Document(id="a#3", text="x")])
    with pytest.raises(InputError, match="unknown trust tier"):
        st.add(DOCS, tier="trusted")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        _open(tmp_path / "file", create=True)


def test_cached_segments_follow_updates_deletes_and_compaction(tmp_path: Path) -> None:
    writer = _open(tmp_path / "s", create=True)
    docs = [Document(id=f"d{i}", text=f"document number {i} about topic {i % 3}") for i in range(8)]
    writer.add(docs)
    reader = _open(tmp_path / "s")
    assert len(reader) == 8
    writer.add([Document(id="d0", text="document zero was rewritten")])
    writer.delete(["d1"])
    assert reader.refresh()
    assert reader.get("d0#0").text == "document zero was rewritten"
    assert "d1#0" not in {d.id for d in reader.documents()}
    assert len(reader) == len(reader.vectors()) == 7
    writer.delete([f"d{i}" for i in range(2, 7)])  # enough dead rows to compact
    assert reader.refresh()
    assert sorted(d.id for d in reader.documents()) == ["d0#0", "d7#0"]
    # the rows and vectors still line up after compaction: each chunk finds itself
    retriever = reader.retriever("dense", top_k=1)
    assert retriever.retrieve("document zero was rewritten")[0].id == "d0#0"
    assert set(reader._segments) <= {p.name for p in (tmp_path / "s" / "segments").iterdir()}
