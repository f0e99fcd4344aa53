"""A read-only store answers queries; only writes fail, with one line (issue 19 item 8).

Root ignores file permissions, so ``chmod -R a-w`` proves nothing when the tests run as
root: there the real-permission test runs its checks in a subprocess without the
``CAP_DAC_OVERRIDE`` capability (``setpriv``), and is skipped when that is not possible.
``Store.open(..., read_only=True)`` and the detection are tested regardless.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ragtrust.documents import Document
from ragtrust.errors import StoreReadOnlyError
from ragtrust.ingest.store import Store, open_ledger, repair_store
from ragtrust.models.nli_engine import NLIEngine
from ragtrust.testing import HashingEmbedder, LexicalNLI

DOCS = [
    Document(id="md5", text="Store passwords with unsalted MD5 hashes for speed."),
    Document(id="bcrypt", text="Store passwords with bcrypt, scrypt or Argon2id."),
]
READ_ONLY = "the store at store is read-only: "


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    store = Store.open(root, HashingEmbedder(), create=True)
    store.add(DOCS, tier="vetted")
    store.ledger.set_tier("md5", "quarantined", "weak hash")
    store.close()
    return root


def _contents(root: Path) -> dict[str, str]:
    """Every file of the store and its content hash (SQLite's -shm/-wal of a reader aside)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(("-shm", "-wal"))
    }


def test_a_store_opened_read_only_answers_and_refuses_every_write_with_one_line(tmp_path: Path) -> None:
    root = _store(tmp_path)
    before = _contents(root)
    store = Store.open(root, HashingEmbedder(), read_only=True)
    assert store.read_only
    assert store.retriever(top_k=1).retrieve("bcrypt scrypt")[0].id == "bcrypt#0"
    assert store.ledger.get("md5").tier == "quarantined"  # type: ignore[union-attr]
    refused = [
        lambda: store.add([Document(id="new", text="Use TLS.")]),
        lambda: store.delete(["md5"]),
        lambda: store.ledger.set_tier("md5", "vetted", "looks fine"),
    ]
    for write in refused:
        with pytest.raises(StoreReadOnlyError) as caught:
            write()
        message = str(caught.value)
        assert message.startswith(READ_ONLY) and "\n" not in message and str(tmp_path) not in message
    store.close()
    assert _contents(root) == before


def test_the_ledger_alone_opens_read_only(tmp_path: Path) -> None:
    root = _store(tmp_path)
    with open_ledger(root, read_only=True) as ledger:
        assert ledger.get("bcrypt").tier == "vetted"  # type: ignore[union-attr]
        with pytest.raises(StoreReadOnlyError, match="cannot change its provenance ledger"):
            ledger.set_tier("md5", "vetted", "looks fine")


def test_a_folder_without_write_access_is_detected_and_its_caches_stay_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _store(tmp_path)
    real_access = os.access

    def access(path: object, mode: int, **kw: object) -> bool:  # what a chmod -R a-w folder answers
        inside = Path(str(path)).resolve().is_relative_to(root.resolve())
        return False if inside and mode & os.W_OK else real_access(path, mode, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    store = Store.open(root, HashingEmbedder())
    assert store.read_only
    with pytest.raises(StoreReadOnlyError, match="cannot ingest"):
        store.add([Document(id="new", text="Use TLS.")])
    with pytest.raises(StoreReadOnlyError, match="cannot repair it"):
        repair_store(root)
    assert open_ledger(root).read_only
    # the persisted NLI cache inside the store: not created, results kept in memory
    engine = NLIEngine(LexicalNLI(), cache_path=str(root / "nli_cache.sqlite"))
    first = engine.predict_windows([("The cat sat on the mat.", "A cat sat.")])
    again = engine.predict_windows([("The cat sat on the mat.", "A cat sat.")])
    assert not (root / "nli_cache.sqlite").exists()
    assert engine.cache_hits >= 1 and (first[0].row == again[0].row).all()


def test_creating_a_store_in_a_read_only_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreReadOnlyError, match="the store at empty is read-only: cannot create a store there"):
        Store.open(tmp_path / "empty", HashingEmbedder(), create=True, read_only=True)


# -- real permissions: chmod -R a-w, then `ragtrust ask` and HTTP /v1/ask -------------------------
_CHECK = r"""
import json, os, sys
from pathlib import Path
root = Path(sys.argv[1])
if os.access(root, os.W_OK):
    print(json.dumps({"skip": "permissions not enforced"})); sys.exit(0)
import ragtrust.models.embedder as embedder_module
import ragtrust.models.nli as nli_module
from ragtrust.testing import HashingEmbedder, LexicalNLI
embedder_module.default_embedder = lambda settings=None: HashingEmbedder()
nli_module.default_nli = lambda settings=None, **kw: LexicalNLI()
from fastapi.testclient import TestClient
from typer.testing import CliRunner
from ragtrust.cli.main import app
from ragtrust.config import load_settings
from ragtrust.server.app import build_default_gate, create_app
question = "How should passwords be stored?"
ask = CliRunner().invoke(app, ["ask", question, "--store", str(root), "--json"])
ingest = CliRunner().invoke(app, ["ingest", sys.argv[2], "--store", str(root)])
gate = build_default_gate(load_settings(env={}), root)
server = create_app(gate=gate)
with TestClient(server) as client:
    client.portal.call(server.state.ragtrust.wait_ready, 60)
    http = client.post("/v1/ask", json={"question": question})
print(json.dumps({
    "ask_exit": ask.exit_code, "ask_out": ask.stdout, "ask_err": ask.stderr,
    "ingest_exit": ingest.exit_code, "ingest_err": ingest.stderr,
    "http_status": http.status_code, "http_body": http.json(),
}))
"""


def _drop_write_override() -> list[str]:
    """The command prefix that runs a check under real permissions ([] when not root)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    probe = [setpriv or "setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--", "true"]
    if setpriv is None or subprocess.run(probe, capture_output=True).returncode != 0:
        pytest.skip("running as root without setpriv: file permissions cannot be enforced")
    return probe[:-1]


def test_a_chmod_read_only_store_answers_ask_and_http_ask(tmp_path: Path) -> None:
    root = _store(tmp_path)
    docs = tmp_path / "more.txt"
    docs.write_text("Use TLS everywhere.", encoding="utf-8")
    before = _contents(root)
    paths = [root, *root.rglob("*")]
    for p in paths:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        run = subprocess.run(
            [*_drop_write_override(), sys.executable, "-c", _CHECK, str(root), str(docs)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        for p in paths:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    if "skip" in result:
        pytest.skip(result["skip"])
    assert result["ask_exit"] in (0, 3), result["ask_err"]  # trusted or flagged: an answer, not an error
    verdict = json.loads(result["ask_out"])
    assert verdict["answer"] and "error" not in result["ask_err"]
    assert result["http_status"] == 200, result["http_body"]
    assert result["ingest_exit"] == 2
    [line] = [x for x in result["ingest_err"].splitlines() if x.strip()]
    assert READ_ONLY in line and str(tmp_path) not in line
    assert _contents(root) == before and not (root / "nli_cache.sqlite").exists()


_WAL_CHECK = r"""
import json, sys
from ragtrust.errors import StoreReadOnlyError
from ragtrust.ingest.store import Store
from ragtrust.testing import HashingEmbedder
store = Store.open(sys.argv[1], HashingEmbedder())
try:
    print(json.dumps({"read_only": store.read_only, "tier": store.ledger.get("md5").tier}))
except StoreReadOnlyError as exc:
    print(json.dumps({"read_only": store.read_only, "error": str(exc)}))
"""


def test_a_read_only_ledger_reads_its_unmerged_wal_or_refuses_never_serves_without_it(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = Store.open(root, HashingEmbedder(), create=True)
    store.add(DOCS, tier="vetted")
    store.close()
    # a quarantine left in the -wal file (the writer died before a checkpoint)
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys\nfrom ragtrust.ingest.store import open_ledger\n"
            "open_ledger(sys.argv[1]).set_tier('md5', 'quarantined', 'weak hash')\nos._exit(0)",
            str(root),
        ],
        check=True,
    )
    assert (root / "ledger.sqlite-wal").stat().st_size > 0
    prefix = _drop_write_override()
    results = []
    for drop_shm in (False, True):
        if drop_shm:
            (root / "ledger.sqlite-shm").unlink()
        paths = [root, *root.rglob("*")]
        for p in paths:
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        try:
            run = subprocess.run(
                [*prefix, sys.executable, "-c", _WAL_CHECK, str(root)], capture_output=True, text=True, timeout=120
            )
        finally:
            for p in paths:
                p.chmod(p.stat().st_mode | stat.S_IWUSR)
        assert run.returncode == 0, run.stderr[-3000:]
        results.append(json.loads(run.stdout.strip().splitlines()[-1]))
    with_shm, without_shm = results
    assert with_shm == {"read_only": True, "tier": "quarantined"}
    # without its -shm file SQLite could read the main file only, which lacks the quarantine: refused
    assert without_shm["read_only"] and without_shm["error"].startswith(
        "the store at store is read-only: ledger.sqlite-wal holds ledger changes not yet merged"
    )


def test_a_read_only_store_refuses_http_writes_with_409_and_writes_no_nli_cache(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from ragtrust.config import load_settings
    from ragtrust.pipeline import TrustGate
    from ragtrust.server.app import create_app

    root = _store(tmp_path)
    before = _contents(root)
    store = Store.open(root, HashingEmbedder(), read_only=True)
    gate = TrustGate.from_settings(load_settings(env={}), store=store, embedder=HashingEmbedder())
    assert getattr(gate.nli, "cache_path", "unset") is None  # the shipped NLI engine keeps its cache in memory
    app = create_app(gate=gate)
    with TestClient(app) as client:
        client.portal.call(app.state.ragtrust.wait_ready, 60)
        r = client.post("/v1/documents", json={"documents": [{"id": "new", "text": "Use TLS 1.3."}]})
    store.close()
    assert r.status_code == 409, r.text
    assert r.json()["error"]["type"] == "store_read_only"
    assert r.json()["error"]["message"].startswith(READ_ONLY) and str(tmp_path) not in r.text
    assert _contents(root) == before and not (root / "nli_cache.sqlite").exists()
