"""``--help`` shows plain metavars and choices; usage errors are one line (issue 21)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from ragtrust.cli.main import app

runner = CliRunner()

CORE_COMMANDS = (["ask"], ["screen"], ["verify"], ["ingest"], ["scan"], ["eval", "run"], ["attack"])


def _help(command: list[str]) -> str:
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout


def _row(text: str, option: str) -> str:
    """The help row of ``option`` (the line that starts with it, box drawing removed)."""
    for line in text.splitlines():
        cells = line.strip("│ ").split()
        if cells and cells[0] == option:
            return " ".join(cells)
    raise AssertionError(f"{option} not in the help:\n{text}")


@pytest.mark.parametrize("command", CORE_COMMANDS, ids=" ".join)
def test_help_has_no_python_type_metavars(command: list[str]) -> None:
    text = _help(command)
    assert not re.search(r"<(bool|str|int|float|path|list\[[^]]*\]|int range)>", text), text
    assert "<bool>" not in text and "list[" not in text


@pytest.mark.parametrize(
    ("command", "flag"),
    [(["ask"], "--json"), (["ask"], "--spans"), (["ask"], "--help"), (["eval", "run"], "--no-attack-success")],
)
def test_flags_show_no_metavar(command: list[str], flag: str) -> None:
    row = _row(_help(command), flag)
    assert row.split()[1][0].isupper(), row  # the help text follows the flag directly


@pytest.mark.parametrize(
    ("command", "option", "choices"),
    [
        (["ask"], "--policy", "[drop-suspicious|flag|block]"),
        (["eval", "run"], "--generator", "[extractive|openai]"),
        (["eval", "run"], "--families", "[held_out|development|all]"),
        (["ingest"], "--tier", "[vetted|unvetted]"),
        (["scan"], "--engine", "[local|ray]"),
        (["attack"], "--families", "[held_out|development|all]"),
    ],
)
def test_options_with_fixed_values_list_them(command: list[str], option: str, choices: str) -> None:
    assert choices in _row(_help(command), option)


@pytest.mark.parametrize(
    ("command", "option", "label"),
    [(["ask"], "--store", "PATH"), (["ask"], "--top-k", "INTEGER"), (["eval", "run"], "--k", "INTEGER")],
)
def test_value_options_show_a_click_style_metavar(command: list[str], option: str, label: str) -> None:
    assert label in _row(_help(command), option).split()[1:3]


def test_a_fixed_value_outside_the_choices_is_a_usage_error() -> None:
    result = runner.invoke(app, ["eval", "run", "--out", "x", "--generator", "gpt"])
    assert result.exit_code == 2
    assert "'gpt' is not one of 'extractive', 'openai'" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ask", "--bogus"], "error: No such option: --bogus (see 'ragtrust ask --help')"),
        (["ask"], "error: Missing argument 'question' (see 'ragtrust ask --help')"),
        (["screen"], "error: Missing option '--docs' / '-d' (see 'ragtrust screen --help')"),
        (["eval", "run", "--out", "x", "--n", "0"], "(see 'ragtrust eval run --help')"),
        (["nope"], "error: No such command 'nope' (see 'ragtrust --help')"),
    ],
)
def test_usage_errors_are_one_line_on_stderr_with_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and message in lines[0]
    assert not set("╭╮╰╯│") & set(result.stderr)


def test_no_arguments_still_print_the_help() -> None:
    for args in ([], ["eval"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2
        assert "Usage: ragtrust" in result.stdout and result.stderr.strip() == ""


def test_help_and_version_still_exit_0() -> None:
    assert runner.invoke(app, ["--help"]).exit_code == 0
    assert runner.invoke(app, ["--version"]).exit_code == 0


def _help_texts(command, path: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    """(command path, text) of every command's help and every option's help, subcommands included."""
    yield path, command.help or ""
    for param in command.params:
        yield (*path, param.name or ""), getattr(param, "help", None) or ""
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _help_texts(sub, (*path, name))


def test_help_texts_lose_no_bracketed_words_to_rich_markup() -> None:
    """``ragtrust[train]`` or ``{question, gold: [file names]}`` in a help text must print as written.

    typer renders help with rich markup, which takes ``[train]`` for a style tag and drops it.
    """
    from rich.markup import render
    from typer.main import get_command

    lost = [
        (" ".join(path), text)
        for path, text in _help_texts(get_command(app))
        if render(text).plain != text.replace("\\[", "[")
    ]
    assert not lost, lost


def test_help_texts_read_as_plain_prose() -> None:
    """No reST markup (````--full````), no line break inside a paragraph: Typer's rich help prints both as written."""
    from typer.main import get_command

    marked = [(" ".join(path), text) for path, text in _help_texts(get_command(app)) if "``" in text]
    assert not marked, marked
    text = _help(["scan"])
    assert "only the others are scanned (--full scans them all)." in text, text
    assert "witnesses and configuration have not changed" in text, text  # one line at 200 columns
