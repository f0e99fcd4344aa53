"""The local LLM's process management and CLI, without starting a model (the real server runs
in tests/integration/test_local_llm.py)."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtrust.cli.main import app
from ragtrust.config import load_settings
from ragtrust.errors import BackendError, ConfigError
from ragtrust.generation.local import LocalLLM, runtime_missing, sha256_of


def test_command_serves_on_loopback_with_the_window_and_alias(tmp_path: Path) -> None:
    llm = LocalLLM(tmp_path / "m.gguf", port=8123, context_tokens=2048, threads=3)
    cmd = llm.command()
    assert cmd[:3] == [sys.executable, "-m", "llama_cpp.server"]
    pairs = dict(zip(cmd[3::2], cmd[4::2], strict=True))
    assert pairs["--host"] == "127.0.0.1" and pairs["--port"] == "8123"
    assert pairs["--n_ctx"] == "2048" and pairs["--n_threads"] == "3" and pairs["--model_alias"] == "smollm2"


def test_settings_point_the_generator_at_the_server_unchanged(tmp_path: Path) -> None:
    llm = LocalLLM(tmp_path / "m.gguf", port=8124, context_tokens=1024)
    settings = load_settings(env={}, overrides=llm.settings())
    assert settings.generator.type == "openai"
    assert settings.generator.base_url == "http://127.0.0.1:8124/v1"
    assert settings.generator.model == "smollm2" and settings.generator.context_tokens == 1024


def test_describe_records_the_model_file_and_its_sha256(tmp_path: Path) -> None:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF not really a model")
    info = LocalLLM(model).describe()
    assert info["file"] == "tiny.gguf" and info["sha256"] == sha256_of(model) and len(str(info["sha256"])) == 64


def test_start_fails_clearly_without_a_model_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model file not found"):
        LocalLLM(tmp_path / "missing.gguf").start()


def test_a_server_that_exits_while_starting_is_a_clear_error(tmp_path: Path) -> None:
    if runtime_missing() is not None and "llama-cpp-python is not installed" in str(runtime_missing()):
        pytest.skip(f"needs llama-cpp-python: {runtime_missing()}")
    model = tmp_path / "broken.gguf"
    model.write_bytes(b"this is not a GGUF file")
    llm = LocalLLM(model, port=8125, log_path=tmp_path / "server.log", startup_timeout_s=60)
    with pytest.raises(BackendError, match="exited with status"):
        llm.start()
    assert (tmp_path / "server.log").exists()


def test_llm_info_reports_runtime_and_model() -> None:
    result = CliRunner().invoke(app, ["llm", "info", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {"runtime", "model", "sha256"}
    assert data["runtime"] == "ready" or "make llm-runtime" in data["runtime"]


def test_llm_serve_with_a_missing_model_is_a_one_line_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["llm", "serve", "--model", str(tmp_path / "nope.gguf")])
    assert result.exit_code == 2
    assert "model file not found" in result.output


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG) is Linux-only")
def test_the_server_process_dies_with_a_killed_parent(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import time

    parent = (
        "import subprocess, sys\n"
        "from ragtrust.generation.local import _die_with_parent\n"
        "child = subprocess.Popen(['sleep', '60'], preexec_fn=_die_with_parent)\n"
        "print(child.pid, flush=True)\n"
        "child.wait()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)  # no finally, no __exit__: only the kernel can stop the child
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail(f"the child {child} outlived its killed parent")


def test_a_port_another_server_listens_on_is_a_clear_error_before_starting(tmp_path: Path) -> None:
    # the server exited with "status 3" and no reason (its output is discarded), or the
    # readiness check was answered by the other server
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        llm = LocalLLM(model, port=port)
        with pytest.raises(ConfigError, match=rf"cannot serve on 127.0.0.1:{port}: .*pick another with --port"):
            llm.start()
    assert llm._process is None  # nothing was started
