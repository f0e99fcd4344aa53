"""The verdict log: ``ragtrust ask`` appends, ``ragtrust log list / show / export`` read it back."""

from __future__ import annotations

import csv
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import ragtrust.models.embedder as embedder_module
import ragtrust.models.nli as nli_module
from ragtrust.cli.main import app
from ragtrust.config import load_settings
from ragtrust.data.kb import load_knowledge_base, load_rules
from ragtrust.ingest.store import Store
from ragtrust.models.nli import NLIEngine
from ragtrust.testing import HashingEmbedder, LexicalNLI
from ragtrust.verdict_log import (
    LOG_FILE,
    VerdictLog,
    append_verdict,
    default_log_path,
    export_log,
    open_verdict_log,
    parse_since,
)

runner = CliRunner()


@pytest.fixture(autouse=True)
def fake_models(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The deterministic fakes instead of the shipped models; no RAGTRUST_* variable leaks in."""
    monkeypatch.setattr(nli_module, "default_nli", lambda settings=None, *, cache_path=None: NLIEngine(LexicalNLI()))
    monkeypatch.setattr(embedder_module, "default_embedder", lambda settings=None: HashingEmbedder())
    for name in list(os.environ):
        if name.startswith("RAGTRUST_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # never the user's own data dir
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def kb_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kb") / "store"
    store = Store.open(root, HashingEmbedder(), create=True)
    store.add(load_knowledge_base(), tier="vetted", source="ragtrust-kb")
    store.close()
    return root


@pytest.fixture
def store(kb_store: Path, tmp_path: Path) -> Path:
    """A private copy of the store (each test starts without a log)."""
    import shutil

    return Path(shutil.copytree(kb_store, tmp_path / "store"))


def verdict(level: str = "HIGH", score: float = 0.9, query: str = "q", trusted: bool = True) -> dict[str, Any]:
    return {
        "query": query,
        "answer": f"answer to {query}",
        "trust_score": score,
        "trust_level": level,
        "trusted": trusted,
        "decision_reasons": [] if trusted else [f"T = {score} < tau 0.5"],
        "models": {"nli": "fake-nli"},
        "timings_s": {"total": 0.25},
    }


def filled(path: Path) -> VerdictLog:
    log = VerdictLog(path)
    log.append(verdict("HIGH", 0.9, "how to hash passwords"), operation="ask", source="cli")
    log.append(verdict("LOW", 0.4, "screen these", trusted=False), operation="screen", principal="ops")
    log.append(verdict("VERY LOW", 0.1, "verify this", trusted=False), operation="verify")
    return log


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


# --------------------------------------------------------------------------- ask appends


def test_ask_appends_its_verdict_beside_the_store_and_log_reads_it_back(store: Path) -> None:
    question = next(r.question for r in load_rules() if r.id == "kb-01")
    asked = invoke("ask", question, "--store", str(store), "--json")
    assert asked.exit_code in (0, 3), asked.output
    shown = json.loads(asked.stdout)
    assert (store / LOG_FILE).is_file()

    listed = invoke("log", "list", "--store", str(store), "--json")
    assert listed.exit_code == 0, listed.output
    [entry] = json.loads(listed.stdout)
    assert (entry["operation"], entry["source"], entry["principal"]) == ("ask", "cli", None)
    assert (entry["query"], entry["answer"]) == (question, shown["answer"])
    assert (entry["level"], entry["trust_score"]) == (shown["trust_level"], shown["trust_score"])
    assert entry["decision"] == ("trusted" if shown["trusted"] else "flagged")
    assert entry["reasons"] == shown["decision_reasons"] and entry["models"] == shown["models"]
    assert entry["at"].endswith("+00:00") and set(entry["timings_s"]) == set(shown["timings_s"])

    full = invoke("log", "show", str(entry["id"]), "--store", str(store), "--json")
    assert full.exit_code == 0, full.output
    assert json.loads(full.stdout)["verdict"] == shown

    human = invoke("log", "show", str(entry["id"]), "--store", str(store))
    assert human.exit_code == 0, human.output
    assert f"Verdict {entry['id']}" in human.stdout and shown["trust_level"] in human.stdout


def test_log_enabled_false_writes_nothing(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRUST_LOG__ENABLED", "0")
    asked = invoke("ask", "How do I store passwords?", "--store", str(store), "--json")
    assert asked.exit_code in (0, 3), asked.output
    assert not (store / LOG_FILE).exists()
    assert not (Path(os.environ["XDG_DATA_HOME"]) / "ragtrust").exists()


def test_log_path_setting_moves_the_log(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "logs" / "mine.sqlite"
    monkeypatch.setenv("RAGTRUST_LOG__PATH", str(target))
    asked = invoke("ask", "How do I store passwords?", "--store", str(store))
    assert asked.exit_code in (0, 3), asked.output
    assert target.is_file() and not (store / LOG_FILE).exists()
    assert len(VerdictLog(target, read_only=True)) == 1
    listed = invoke("log", "list", "--json")  # the setting names the log to read too
    assert [e["operation"] for e in json.loads(listed.stdout)] == ["ask"]


def test_without_a_store_the_log_is_in_the_user_data_dir(tmp_path: Path) -> None:
    settings = load_settings(env={})
    assert default_log_path(settings, None, env={"XDG_DATA_HOME": "/x"}) == Path("/x/ragtrust/verdicts.sqlite")
    assert default_log_path(settings, None, env={"HOME": "/h"}) == Path.home() / ".local/share/ragtrust/verdicts.sqlite"
    append_verdict(settings, None, verdict(), operation="verify", source="cli")
    xdg = tmp_path / "xdg" / "ragtrust" / LOG_FILE
    assert xdg.is_file()
    listed = invoke("log", "list", "--json")
    assert [e["operation"] for e in json.loads(listed.stdout)] == ["verify"]


# --------------------------------------------------------------------------- never fails a verdict


def test_a_read_only_store_folder_means_no_log_and_one_warning(
    store: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_access = os.access

    def access(path: Any, mode: int) -> bool:  # the store folder reads as not writable (as root chmod would not)
        return real_access(path, mode) and not (Path(path) == store and mode == os.W_OK)

    monkeypatch.setattr(os, "access", access)
    with caplog.at_level(logging.WARNING, logger="ragtrust.verdict_log"):
        assert open_verdict_log(load_settings(env={}), store) is None
        asked = invoke("ask", "How do I store passwords?", "--store", str(store), "--json")
    assert asked.exit_code in (0, 3), asked.output
    assert json.loads(asked.stdout)["answer"]
    assert not (store / LOG_FILE).exists()
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and all("not writable" in w and "verdicts are not logged" in w for w in warnings)


def test_a_failing_write_is_one_warning_never_an_exception(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    log = VerdictLog(blocker / "verdicts.sqlite")  # its folder can never be created
    with caplog.at_level(logging.WARNING, logger="ragtrust.verdict_log"):
        assert log.append(verdict(), operation="ask") is None
        assert log.append(verdict(), operation="ask") is None
    assert len(caplog.records) == 1 and "a verdict was not logged" in caplog.records[0].getMessage()
    with caplog.at_level(logging.WARNING, logger="ragtrust.verdict_log"):
        assert open_verdict_log(load_settings(env={}), blocker) is None
    assert len(caplog.records) == 2


def test_the_log_is_bounded_oldest_rows_pruned(tmp_path: Path) -> None:
    log = VerdictLog(tmp_path / LOG_FILE, max_rows=3)
    ids = [log.append(verdict(query=f"q{i}"), operation="ask") for i in range(5)]
    assert ids == [1, 2, 3, 4, 5] and len(log) == 3
    assert [e.query for e in log.entries()] == ["q4", "q3", "q2"]
    assert log.get(1) is None and log.get(5) is not None


def test_appends_from_many_threads_all_land(tmp_path: Path) -> None:
    log = VerdictLog(tmp_path / LOG_FILE)

    def work(n: int) -> None:
        for i in range(20):
            assert log.append(verdict(query=f"{n}-{i}"), operation="ask") is not None

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(log) == 80 and len({e.query for e in log.entries(limit=100)}) == 80


# --------------------------------------------------------------------------- list / show / export


def test_list_filters_by_level_operation_since_and_limit(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    filled(path).close()
    base = ("log", "list", "--log", str(path), "--json")

    def ops(*extra: str) -> list[str]:
        result = invoke(*base, *extra)
        assert result.exit_code == 0, result.output
        return [e["operation"] for e in json.loads(result.stdout)]

    assert ops() == ["verify", "screen", "ask"]
    assert ops("--level", "very-low") == ["verify"]
    assert ops("--level", "LOW") == ["screen"]
    assert ops("--operation", "screen") == ["screen"]
    assert ops("--limit", "2") == ["verify", "screen"]
    assert ops("--since", "1h") == ["verify", "screen", "ask"]
    assert ops("--since", "2999-01-01") == []
    human = invoke("log", "list", "--log", str(path))
    assert human.exit_code == 0 and "how to hash passwords" in human.stdout and "VERY LOW" in human.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("list", "--since", "99999999999d"), "reaches before the year 1"),
        (("show", "99999999999999999999999"), "is not a log entry id"),
        (("show", "0"), "is not a log entry id"),
    ],
)
def test_numbers_out_of_range_are_one_clear_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    path = tmp_path / "v.sqlite"
    filled(path).close()
    result = invoke("log", *args, "--log", str(path))
    assert result.exit_code == 2, result.output
    assert message in result.output and "internal error" not in result.output


def test_the_api_principal_is_kept(tmp_path: Path) -> None:
    log = filled(tmp_path / "v.sqlite")
    assert [(e.operation, e.principal, e.source) for e in log.entries()] == [
        ("verify", None, "api"),
        ("screen", "ops", "api"),
        ("ask", None, "cli"),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["list", "--level", "bogus"], "unknown trust level 'bogus'"),
        (["list", "--operation", "delete"], "unknown operation 'delete'"),
        (["list", "--since", "yesterday"], "--since 'yesterday' is neither an age"),
        (["show", "99"], "no entry 99 in the verdict log"),
        (["export", "--out", ".", "--format", "jsonl"], "is a folder"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    path = tmp_path / "v.sqlite"
    filled(path).close()
    result = invoke("log", *args, "--log", str(path))
    assert result.exit_code == 2, result.output
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert message in line


def test_no_log_and_a_file_that_is_not_a_log_are_one_line(tmp_path: Path) -> None:
    missing = invoke("log", "list", "--log", str(tmp_path / "none.sqlite"))
    assert missing.exit_code == 2 and "no verdict log at" in missing.stderr
    junk = tmp_path / "junk.sqlite"
    junk.write_text("hello", encoding="utf-8")
    bad = invoke("log", "list", "--log", str(junk))
    assert bad.exit_code == 2 and "is not a ragtrust verdict log" in bad.stderr
    assert len([x for x in bad.stderr.splitlines() if x.strip()]) == 1


def damage(path: Path, sql: str) -> None:
    """Write damage into a log as a flipped byte would: a row SQLite or ragtrust can no longer read back."""
    import sqlite3

    conn = sqlite3.connect(path)
    with conn:
        conn.execute(sql)
    conn.close()


@pytest.mark.parametrize(
    ("sql", "commands", "message"),
    [
        # a text column that is no longer UTF-8 (SQLite fails to decode it): the whole log is named
        (
            "UPDATE verdicts SET at = CAST(x'32303236ff' AS TEXT) WHERE id = 2",
            [["list"], ["show", "2"], ["export", "--out", "out.jsonl"], ["export", "--out", "out.csv", "-f", "csv"]],
            "the verdict log {log} is damaged (Could not decode to UTF-8 column 'at'",
        ),
        # a verdict blob that no longer decompresses: the entry is named
        (
            "UPDATE verdicts SET verdict = x'789c00ff00ff' WHERE id = 2",
            [["show", "2"], ["export", "--out", "out.jsonl"]],
            "entry 2 of the verdict log {log} is damaged (",
        ),
    ],
)
def test_a_damaged_log_is_one_line_and_exit_2_not_an_internal_error(
    tmp_path: Path, sql: str, commands: list[list[str]], message: str
) -> None:
    path = tmp_path / "v.sqlite"
    filled(path).close()
    damage(path, sql)
    for command in commands:
        result = invoke("log", *command, "--log", str(path))
        assert result.exit_code == 2, (command, result.output)
        [line] = [x for x in result.stderr.splitlines() if x.strip()]
        assert message.format(log=path) in line and "move the file aside" in line, line
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "out.csv").exists()
    with VerdictLog(path, read_only=True) as log:  # the rows that read back still do
        assert log.get(1) is not None and log.get(1).query == "how to hash passwords"  # type: ignore[union-attr]


def test_export_jsonl_csv_and_parquet(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    filled(path).close()
    for fmt in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"out.{fmt}"
        result = invoke("log", "export", "--log", str(path), "--format", fmt, "--out", str(out))
        assert result.exit_code == 0, result.output
        assert "wrote 3 verdict(s)" in result.stdout
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["operation"] for r in rows] == ["ask", "screen", "verify"]  # oldest first
    assert rows[1]["verdict"]["decision_reasons"] == ["T = 0.4 < tau 0.5"] and rows[1]["principal"] == "ops"
    with (tmp_path / "out.csv").open(encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [r["level"] for r in table] == ["HIGH", "LOW", "VERY LOW"]
    assert json.loads(table[0]["verdict"])["query"] == "how to hash passwords"
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.read_parquet(tmp_path / "out.parquet")
    assert list(frame["operation"]) == ["ask", "screen", "verify"]
    assert list(frame["trusted"]) == [True, False, False] and frame["trust_score"].dtype.kind == "f"


def test_export_filters_and_an_unknown_format(tmp_path: Path) -> None:
    log = filled(tmp_path / "v.sqlite")
    assert export_log(log, tmp_path / "low.jsonl", level="low") == 1
    assert export_log(log, tmp_path / "since.jsonl", since=parse_since("2999-01-01")) == 0
    from ragtrust.errors import InputError

    with pytest.raises(InputError, match="unknown export format 'xml'"):
        export_log(log, tmp_path / "x.xml", "xml")
    result = invoke("log", "export", "--log", str(tmp_path / "v.sqlite"), "--format", "xml", "--out", "x")
    assert result.exit_code == 2


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_export_onto_the_log_it_reads_is_refused_and_the_log_kept(tmp_path: Path, fmt: str) -> None:
    store = tmp_path / "kb"
    filled(store / LOG_FILE).close()
    (tmp_path / "link.sqlite").symlink_to(store / LOG_FILE)
    before = (store / LOG_FILE).read_bytes()
    for source, out in (
        (["--store", str(store)], store / LOG_FILE),  # the log beside the store
        (["--log", str(store / LOG_FILE)], store / ".." / "kb" / LOG_FILE),
        (["--log", str(tmp_path / "link.sqlite")], store / LOG_FILE),
        (["--log", str(store / LOG_FILE)], store / f"{LOG_FILE}-wal"),
    ):
        result = invoke("log", "export", *source, "--format", fmt, "--out", str(out))
        assert result.exit_code == 2, result.output
        [line] = [x for x in result.stderr.splitlines() if x.strip()]
        assert f"--out {out} is the verdict log being exported" in line and "name another file" in line
    assert (store / LOG_FILE).read_bytes() == before
    with VerdictLog(store / LOG_FILE, read_only=True) as log:
        assert len(log) == 3


def test_a_failed_export_leaves_the_earlier_file_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = filled(tmp_path / "v.sqlite")
    out = tmp_path / "out.jsonl"
    out.write_text("the earlier export\n", encoding="utf-8")
    real = VerdictLog.iter_entries

    def fails_midway(self: VerdictLog, **filters: Any) -> Any:
        yield next(iter(real(self, **filters)))
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(VerdictLog, "iter_entries", fails_midway)
    with pytest.raises(OSError, match="disk full"):
        export_log(log, out)
    assert out.read_text(encoding="utf-8") == "the earlier export\n"
    assert not list(tmp_path.glob(".out.jsonl.*"))  # no temporary file left behind
