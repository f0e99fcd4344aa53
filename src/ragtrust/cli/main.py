"""The ``ragtrust`` command: one Typer app; each command group lives in its own module.

Every module listed in ``COMMAND_MODULES`` exposes ``register(app)``; no logic lives only
in the CLI (commands parse, call one library function, render).
"""

from __future__ import annotations

import importlib

import typer

from ragtrust.cli.group import RagtrustGroup

COMMAND_MODULES = (
    "ragtrust.cli.core",  # ask, screen, verify, demo
    "ragtrust.cli.nli",  # nli (predict, eval, train, export, calibrate)
    "ragtrust.cli.injection",  # injection (predict, train, export, calibrate, eval)
    "ragtrust.cli.evidence",  # align
    "ragtrust.cli.store",  # ingest, scan, vet, quarantine, delete, ledger, store check / repair
    "ragtrust.cli.evaluation",  # attack, eval run / report / calibrate
    "ragtrust.cli.evidence_report",  # eval evidence (OWASP evidence report)
    "ragtrust.cli.relevance",  # eval relevance (fit the relevance thresholds)
    "ragtrust.cli.fusion",  # eval fusion (learned signal fusion, evaluation only)
    "ragtrust.cli.conflicts",  # eval conflicts (claim conflicts with and without a witness)
    "ragtrust.cli.serve",  # serve
    "ragtrust.cli.llm",  # llm serve / info (a local OpenAI-compatible model)
    "ragtrust.cli.docs",  # docs (the store's documents: ids, tiers, status)
    "ragtrust.cli.log",  # log list / show / export (the verdict log)
)

app = typer.Typer(
    name="ragtrust",
    cls=RagtrustGroup,  # plain metavars in --help, one-line usage errors
    help="A trust layer for RAG: screen retrieved documents, ground answers, verify, measure.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def package_version() -> str:
    """The installed distribution's version (the source tree's ``__version__`` when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ragtrust")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        from ragtrust import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"ragtrust {package_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", "-V", callback=_print_version, is_eager=True, help="Print the ragtrust version and exit."
    ),
) -> None:
    """A trust layer for RAG: screen retrieved documents, ground answers, verify, measure."""


for _module in COMMAND_MODULES:
    importlib.import_module(_module).register(app)


def main() -> None:
    """Console-script entry point."""
    app()


__all__ = ["app", "main", "package_version"]
