"""The dataset folder (issue 21): ``--data-dir``, else ``RAGTRUST_DATA_DIR``, else
``../shared/data`` relative to the working directory; never a path of this machine found
beside the source checkout, and a missing folder is one line naming both settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtrust.cli.main import app
from ragtrust.errors import InputError
from ragtrust.eval.datasets import data_folder, load_benchmark, resolve_data_dir

runner = CliRunner()


def test_the_default_is_relative_to_the_working_directory() -> None:
    folder = resolve_data_dir(None, env={})
    assert not folder.is_absolute()
    assert folder.as_posix() == "../shared/data"


def test_no_silent_fallback_beside_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ../shared/data from here
    with pytest.raises(InputError) as err:
        data_folder(None, env={})
    message = str(err.value)
    assert message.startswith("dataset folder ../shared/data not found")
    assert "--data-dir" in message and "RAGTRUST_DATA_DIR" in message and "\n" not in message


@pytest.mark.parametrize("dataset", ["truthfulqa", "fever"])
def test_a_missing_data_dir_names_both_settings(tmp_path: Path, dataset: str) -> None:
    with pytest.raises(InputError, match=r"dataset folder .*missing not found: pass --data-dir or set RAGTRUST_DATA"):
        load_benchmark(dataset, tmp_path / "missing")


def test_env_is_read_when_no_flag(tmp_path: Path) -> None:
    assert data_folder(None, env={"RAGTRUST_DATA_DIR": str(tmp_path)}) == tmp_path
    with pytest.raises(InputError, match="nowhere not found"):
        data_folder(None, env={"RAGTRUST_DATA_DIR": str(tmp_path / "nowhere")})


def test_cli_prints_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGTRUST_DATA_DIR", raising=False)
    result = runner.invoke(app, ["attack", "--dataset", "truthfulqa", "--out", str(tmp_path / "out")])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "dataset folder ../shared/data not found" in lines[0] and "RAGTRUST_DATA_DIR" in lines[0]
