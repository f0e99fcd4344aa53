"""A spinner on the slow CLI steps (issue 21): ``ask``, ``ingest``, ``scan``, ``screen`` and
``verify`` show a rich status on stderr when stderr is a terminal, never with ``--json`` and
never when stderr is piped (no spinner characters reach a pipe or a file)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

import ragtrust.cli.common as common
from ragtrust.cli.main import app
from ragtrust.documents import Document
from ragtrust.ingest.store import Store
from ragtrust.testing import HashingEmbedder

runner = CliRunner()
#: rich's spinners draw with Braille patterns (``dots``) and line-erase escapes
SPINNER = re.compile(r"[\u2800-\u28ff]|\x1b\[2K")
TEXTS = {
    "pw": "Store passwords with Argon2id, bcrypt or scrypt and a unique salt per password.",
    "sql": "Use parameterised queries so user input never becomes SQL code.",
}


class SpyConsole(Console):
    """A forced-terminal console that records every status it is asked to show."""

    def __init__(self) -> None:
        super().__init__(file=io.StringIO(), force_terminal=True, width=100)
        self.statuses: list[str] = []

    def status(self, status: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self.statuses.append(str(status))
        return super().status(status, *args, **kwargs)


@pytest.fixture(autouse=True)
def fakes(cli_fakes: None, tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in TEXTS.items():
        (folder / f"{name}.md").write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
    rows = [json.dumps({"id": k, "text": v, "similarity": 0.7}) for k, v in TEXTS.items()]
    (tmp_path / "docs.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    kb = Store.open(tmp_path / "kb", HashingEmbedder(), create=True)
    kb.add([Document(id=k, text=v) for k, v in TEXTS.items()])
    kb.close()


COMMANDS = {
    "ask": ["ask", "How should passwords be stored?", "--store", "kb"],
    "screen": ["screen", "--docs", "docs.jsonl", "--query", "passwords"],
    "verify": ["verify", "--answer", "Use bcrypt for passwords.", "--docs", "docs.jsonl"],
    "ingest": ["ingest", "corpus", "--store", "new-store"],
    "scan": ["scan", "corpus"],
}


def _streams(result: Any) -> str:
    return (result.stdout or "") + (getattr(result, "stderr", "") or "")


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("as_json", [False, True])
def test_piped_output_has_no_spinner(command: str, as_json: bool) -> None:
    result = runner.invoke(app, COMMANDS[command] + (["--json"] if as_json else []))
    assert result.exit_code in (0, 3), _streams(result)
    assert not SPINNER.search(_streams(result)), _streams(result)
    if as_json:
        json.loads(result.stdout)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_terminal_gets_the_spinner(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = SpyConsole()
    monkeypatch.setattr(common, "err_console", spy)
    result = runner.invoke(app, COMMANDS[command])
    assert result.exit_code in (0, 3), _streams(result)
    assert spy.statuses, f"{command} asked for no spinner on a terminal"
    assert SPINNER.search(spy.file.getvalue())  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_json_on_a_terminal_gets_no_spinner(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = SpyConsole()
    monkeypatch.setattr(common, "err_console", spy)
    result = runner.invoke(app, [*COMMANDS[command], "--json"])
    assert result.exit_code in (0, 3), _streams(result)
    assert spy.statuses == []
    assert spy.file.getvalue() == ""  # type: ignore[attr-defined]
    json.loads(result.stdout)


def test_the_helper_branches_on_is_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    piped = Console(file=io.StringIO(), width=100)
    monkeypatch.setattr(common, "err_console", piped)
    with common.spinner("working"):
        pass
    assert piped.file.getvalue() == ""  # type: ignore[attr-defined]
    terminal = SpyConsole()
    monkeypatch.setattr(common, "err_console", terminal)
    with common.spinner("working"):
        pass
    assert terminal.statuses == ["working"]
    with common.spinner("quiet", enabled=False):
        pass
    assert terminal.statuses == ["working"]
