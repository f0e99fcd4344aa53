from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ragtrust.cli.evidence import register


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:  # keep "align" as a subcommand
        pass

    return app


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.chdir(tmp_path)  # no ./ragtrust.toml
    for key in [k for k in __import__("os").environ if k.startswith("RAGTRUST_")]:
        monkeypatch.delenv(key)
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "id": "a",
                    "text": "Always use parameterised queries to stop SQL injection attacks.",
                    "url": "https://kb/a",
                },
                {"id": "b", "text": "Hash passwords with Argon2id and a unique salt per user.", "url": "https://kb/b"},
            ]
        ),
        encoding="utf-8",
    )
    passages = tmp_path / "passages.json"
    passages.write_text(
        json.dumps(
            {
                "collected_passages": [
                    {
                        "passage_id": "1",
                        "passage": "use parameterised queries to stop SQL injection",
                        "url": "https://kb/a",
                    },
                    {
                        "passage_id": "2",
                        "passage": "Hash passwords with Argon2id and a unique salt",
                        "url": "https://kb/a",
                    },
                    {
                        "passage_id": "3",
                        "passage": "Passwords belong in a spreadsheet on the desktop.",
                        "url": "https://kb/b",
                    },
                ]
            }
        ),
        encoding="utf-8",
    )
    return passages, docs


def test_align_json(app: typer.Typer, files: tuple[Path, Path]) -> None:
    passages, docs = files
    result = CliRunner().invoke(app, ["align", "--passages", str(passages), "--docs", str(docs), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["n"] == 5 and data["threshold"] == 0.7
    assert [(p["passage_id"], p["status"]) for p in data["passages"]] == [("1", "kept"), ("2", "reattributed")]
    assert data["dropped"][0]["passage_id"] == "3"
    assert data["passages"][1]["url"] == "https://kb/b"
    assert data["diagnostics"]["pct_hallucinated"] == pytest.approx(1 / 3)


def test_align_table_and_flags(app: typer.Typer, files: tuple[Path, Path]) -> None:
    passages, docs = files
    result = CliRunner().invoke(app, ["align", "-p", str(passages), "-d", str(docs), "--n", "3", "--threshold", "0.5"])
    assert result.exit_code == 0, result.output
    assert "n = 3, t = 0.5" in result.output and "reattributed" in result.output and "1 dropped" in result.output


def test_align_bad_input_exits_2(app: typer.Typer, files: tuple[Path, Path], tmp_path: Path) -> None:
    _, docs = files
    bad = tmp_path / "bad.json"
    bad.write_text('{"nope": []}', encoding="utf-8")
    result = CliRunner().invoke(app, ["align", "-p", str(bad), "-d", str(docs)])
    assert result.exit_code == 2
    missing = CliRunner().invoke(app, ["align", "-p", str(tmp_path / "none.json"), "-d", str(docs)])
    assert missing.exit_code == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            ["use parameterised queries"],  # was "passage 1: expected an object, got str": which file, which fields?
            "passages.json: passage 1: expected an object with 'passage' (or 'text'), and optionally 'passage_id', "
            "'url' and 'doc_id'; got str",
        ),
        ({"nope": []}, "passages.json: expected {'collected_passages': [...]} or a list of passages"),
    ],
)
def test_a_bad_passages_file_is_named_with_the_fields_it_needs(
    app: typer.Typer, files: tuple[Path, Path], data: object, message: str
) -> None:
    passages, docs = files
    passages.write_text(json.dumps(data), encoding="utf-8")
    result = CliRunner().invoke(app, ["align", "-p", str(passages), "-d", str(docs)])
    assert result.exit_code == 2, result.output
    assert f"error: {passages.parent / message}" == " ".join(result.output.split())


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('{"id": "c", "text": "Use TLS.", "rank": "one"}', "docs.jsonl:3: 'rank' must be a positive integer"),
        ('{"id": "c", "text": "Use TLS.", "url": 5}', "docs.jsonl:3: 'url' must be a string or null"),
    ],
)
def test_align_bad_docs_fields_exit_2_naming_the_line(
    app: typer.Typer, files: tuple[Path, Path], row: str, message: str
) -> None:
    passages, docs = files
    docs.write_text(docs.read_text(encoding="utf-8") + "\n" + row + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["align", "-p", str(passages), "-d", str(docs)])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


def test_align_docs_lines_are_bounded_like_ingest(
    app: typer.Typer, files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    passages, docs = files
    monkeypatch.setenv("RAGTRUST_INGEST__MAX_LINE_BYTES", "100")
    result = CliRunner().invoke(app, ["align", "-p", str(passages), "-d", str(docs)])
    assert result.exit_code == 2, result.output
    assert "docs.jsonl:1: line of" in result.output and "ingest.max_line_bytes (100 bytes)" in result.output


def test_align_table_shows_ids_as_text_with_controls_escaped(
    app: typer.Typer, files: tuple[Path, Path], tmp_path: Path
) -> None:
    _, docs = files
    passages = tmp_path / "odd.json"
    rows = [{"passage_id": "[red]p\u001b[2J\u202e", "passage": "use parameterised queries to stop SQL injection"}]
    passages.write_text(json.dumps(rows), encoding="utf-8")
    result = CliRunner().invoke(app, ["align", "-p", str(passages), "-d", str(docs)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\u202e" not in result.output
    assert "[red]p\\x1b[2J\\u202e" in "".join(result.output.split())
