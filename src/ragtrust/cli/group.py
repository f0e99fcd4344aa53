"""The root command's click group: plain metavars in ``--help`` and one-line usage errors.

Typer's defaults show ``<bool>`` after flags, ``<str>`` / ``<list[Path]>`` after options and
draw usage errors in a multi-line box. :class:`RagtrustGroup` (``typer.Typer(cls=...)``)
rewrites the help types of every parameter in the command tree once, when the tree is
built, joins the lines of each paragraph of a command's help (Typer's rich help printed a
docstring's line breaks as written, mid-sentence), and prints usage errors as
``error: <message> (see ragtrust CMD --help)``, exit 2.

Example:
    >>> import typer
    >>> from typer.testing import CliRunner
    >>> demo = typer.Typer(cls=RagtrustGroup)
    >>> @demo.command()
    ... def hello(loud: bool = typer.Option(False, "--loud")) -> None:
    ...     '''Say hello.'''
    >>> @demo.command()
    ... def bye() -> None:
    ...     '''Say bye.'''
    >>> result = CliRunner().invoke(demo, ["hello", "--quiet"])
    >>> result.exit_code, result.stderr.strip()
    (2, "error: No such option: --quiet (see 'root hello --help')")
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, get_args

from typer import _click
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperArgument, TyperGroup, TyperOption
from typer.exceptions import Abort

#: help label of a parameter's value, by its (element) type; click's names
_TYPE_NAMES: dict[Any, str] = {str: "TEXT", int: "INTEGER", float: "FLOAT", bool: "BOOLEAN", Path: "PATH"}


def type_label(param: TyperOption | TyperArgument) -> str | None:
    """The help label of ``param``'s value: ``None`` for flags, ``[a|b]`` for choices, else ``TEXT``, ``PATH``...

    Example:
        >>> import typer
        >>> from typer.main import get_command
        >>> one = typer.Typer(add_completion=False)
        >>> @one.command()
        ... def cmd(n: int = typer.Option(1, "--n"), v: bool = typer.Option(False, "--v")) -> None: ...
        >>> [type_label(p) for p in get_command(one).params]
        ['INTEGER', None]
    """
    if isinstance(param, TyperOption) and (param.is_flag or param.count):
        return None
    desc = param.type_descriptor
    if desc.choices is not None:
        return "[" + "|".join(str(getattr(c, "value", c)) for c in desc.choices) + "]"
    if desc.is_path:
        return {"file": "FILE", "dir": "DIR"}.get(desc.path_type, "PATH")
    annotation = desc.annotation
    if desc.is_list and get_args(annotation):
        annotation = get_args(annotation)[0]
    return _TYPE_NAMES.get(annotation, getattr(annotation, "__name__", str(annotation)).upper())


class _Option(TyperOption):
    """A :class:`TyperOption` whose help shows :func:`type_label`."""

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        """The value label in ``--help`` (nothing for flags)."""
        return self.metavar if self.metavar is not None else type_label(self)


class _Argument(TyperArgument):
    """A :class:`TyperArgument` whose help shows :func:`type_label`."""

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        """The value label in ``--help``."""
        return self.metavar if self.metavar is not None else type_label(self)


def prose(help_text: str) -> str:
    r"""A command's help with each paragraph on one line, as click would wrap it; after ``\f``, as written.

    A paragraph that starts with ``\b`` (click's "do not rewrap" mark) keeps its lines.

    Example:
        >>> prose("Scan a corpus.\n\n    A store keeps its last\n    scan.\n")
        'Scan a corpus.\n\nA store keeps its last scan.'
    """
    text, cut, rest = help_text.partition("\f")
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs) + cut + rest


def _commands(command: _click.Command) -> Iterator[_click.Command]:
    """``command`` and every command under it."""
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from _commands(sub)


def _walk(command: _click.Command, parent: _click.Context | None = None) -> Iterator[_click.Parameter]:
    """Every parameter of the tree under ``command``, each command's ``--help`` included."""
    ctx = _click.Context(command, info_name=command.name, parent=parent, **command.context_settings)
    yield from command.params
    help_option = command.get_help_option(ctx)  # made on first use and cached on the command
    if help_option is not None:
        yield help_option
    for sub in getattr(command, "commands", {}).values():
        yield from _walk(sub, ctx)


class RagtrustGroup(TyperGroup):
    """Typer's group with click-style metavars and one-line usage errors (see the module docstring)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for param in _walk(self):  # the whole tree is built before the root group
            # Typer has no hook for parameter classes; the subclasses override one method only
            if type(param) is TyperOption:
                param.__class__ = _Option
            elif type(param) is TyperArgument:
                param.__class__ = _Argument
        for command in _commands(self):
            if command.help:
                command.help = prose(command.help)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the CLI; in standalone mode, usage errors are one line on stderr and exit 2."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except NoArgsIsHelpError as exc:  # `ragtrust` or `ragtrust eval` alone: the help, exit 2
            if exc.format_message():  # rich help is printed while the error is made; plain help is its message
                exc.show()
            sys.exit(exc.exit_code)
        except UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else (prog_name or "ragtrust")
            _one_line(f"{exc.format_message().rstrip('.')} (see '{where} --help')")
            sys.exit(exc.exit_code)
        except ClickException as exc:
            _one_line(exc.format_message())
            sys.exit(exc.exit_code)
        except Abort:
            _one_line("aborted")
            sys.exit(1)
        # without standalone mode, an Exit comes back as its code; a command returns None
        sys.exit(code if isinstance(code, int) and not isinstance(code, bool) else 0)


def _one_line(message: str) -> None:
    from rich.text import Text

    from ragtrust.cli.common import err_console

    # a Text, not markup: messages quote user input and choices such as "[flag|block]"
    err_console.print(Text.assemble(("error:", "bold red"), " ", " ".join(message.split())), soft_wrap=True)


__all__ = ["RagtrustGroup", "prose", "type_label"]
