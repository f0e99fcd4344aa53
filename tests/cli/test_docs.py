"""``ragtrust docs``: the store's documents with tier, versions, vetting status and source; ids never cut."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragtrust.cli import store as store_cli
from ragtrust.cli.main import app
from ragtrust.testing import HashingEmbedder, LexicalNLI

runner = CliRunner()
LONG = "owasp-cheatsheets/Password_Storage_Cheat_Sheet_With_A_Name_Longer_Than_Any_Column.md"


@pytest.fixture(autouse=True)
def fake_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_cli, "_embedder", lambda settings: HashingEmbedder())
    monkeypatch.setattr(store_cli, "_nli", lambda settings: LexicalNLI())
    monkeypatch.delenv("RAGTRUST_STORE", raising=False)


def ok(*args: str, columns: int = 200) -> Any:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """Four documents: one vetted then edited, one quarantined, one never tiered, one deleted."""
    corpus, root = tmp_path / "owasp-cheatsheets", tmp_path / "store"
    corpus.mkdir()
    long_file = corpus / Path(LONG).name
    long_file.write_text("# Passwords\n\nHash passwords with Argon2id.\n", encoding="utf-8")
    (corpus / "keys.md").write_text("# Keys\n\nRSA keys must be at least 2048 bits long.\n", encoding="utf-8")
    (corpus / "tls.md").write_text("# TLS\n\nUse TLS 1.2 or later.\n", encoding="utf-8")
    (corpus / "old.md").write_text("# Old\n\nAn outdated page.\n", encoding="utf-8")
    ok("ingest", str(corpus), "--store", str(root))
    ok("vet", LONG, "--store", str(root))
    ok("quarantine", "owasp-cheatsheets/keys.md", "--store", str(root))
    ok("delete", "owasp-cheatsheets/old.md", "--store", str(root))
    (corpus / "old.md").unlink()
    long_file.write_text("# Passwords\n\nHash passwords with MD5.\n", encoding="utf-8")  # edited after vetting
    ok("ingest", str(corpus), "--store", str(root))
    return root


def test_json_lists_every_live_document_with_its_status(store: Path) -> None:
    rows = json.loads(ok("docs", "--store", str(store), "--json").stdout)
    by_id = {r["id"]: r for r in rows}
    ids = {LONG.split("/")[0] + "/" + name for name in (Path(LONG).name, "keys.md", "tls.md")}
    assert set(by_id) == ids, by_id.keys()
    assert (by_id[LONG]["tier"], by_id[LONG]["versions"], by_id[LONG]["changed_since_vetted"]) == ("vetted", 2, True)
    keys = by_id["owasp-cheatsheets/keys.md"]
    assert (keys["tier"], keys["versions"], keys["changed_since_vetted"], keys["deleted"]) == (
        "quarantined",
        1,
        False,
        None,
    )
    assert by_id["owasp-cheatsheets/tls.md"]["tier"] in (None, "unvetted")
    assert all(r["source"] for r in rows)


def test_deleted_documents_only_with_the_flag(store: Path) -> None:
    rows = json.loads(ok("docs", "--store", str(store), "--json", "--deleted").stdout)
    [old] = [r for r in rows if r["id"] == "owasp-cheatsheets/old.md"]
    assert old["deleted"]
    human = ok("docs", "--store", str(store), "--deleted").stdout
    assert "owasp-cheatsheets/old.md" in human


@pytest.mark.parametrize(("tier", "expected"), [("quarantined", ["keys.md"]), ("VETTED", [Path(LONG).name])])
def test_tier_filter(store: Path, tier: str, expected: list[str]) -> None:
    rows = json.loads(ok("docs", "--store", str(store), "--tier", tier, "--json").stdout)
    assert [r["id"].split("/")[-1] for r in rows] == expected


def test_a_narrow_terminal_folds_the_id_and_never_cuts_it(store: Path) -> None:
    out = ok("docs", "--store", str(store), columns=70).stdout
    assert "…" not in out
    first_cells = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert LONG in "".join(first_cells)  # the id column's lines, joined, hold the whole id
    assert "3 document(s)" in out


def test_the_changed_note_is_printed_only_under_a_changed_row(store: Path) -> None:
    note = "changed: the content changed since it was vetted"
    assert note in ok("docs", "--store", str(store)).stdout  # the vetted page edited since
    assert note not in ok("docs", "--store", str(store), "--tier", "quarantined").stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tier", "trusted"], "unknown tier 'trusted'; expected one of vetted, unvetted, quarantined, none"),
        ([], "no store given"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(store: Path, args: list[str], message: str) -> None:
    where = ["--store", str(store)] if args else []
    result = runner.invoke(app, ["docs", *where, *args])
    assert result.exit_code == 2, result.output
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert message in line


def test_a_folder_that_is_not_a_store_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["docs", "--store", str(tmp_path)])
    assert result.exit_code == 2
    assert len([x for x in result.stderr.splitlines() if x.strip()]) == 1
