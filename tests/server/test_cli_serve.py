"""``ragtrust serve``: loopback rule, API keys from the environment, store checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from ragtrust.cli import serve as serve_cli


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    serve_cli.register(app)

    @app.command("noop")
    def noop() -> None:  # a second command keeps `serve` a named subcommand
        """Nothing."""

    return app


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def fake_create_app(settings: Any, **kwargs: Any) -> str:
        seen.append({"create_app": kwargs, "tau": settings.trust.tau})
        return "APP"

    def fake_run(app: Any, **kwargs: Any) -> None:
        seen.append({"run": (app, kwargs)})

    import uvicorn

    import ragtrust.server.app as server_app

    monkeypatch.setattr(server_app, "create_app", fake_create_app)
    monkeypatch.setattr(uvicorn, "run", fake_run)
    monkeypatch.delenv("RAGTRUST_API_KEYS", raising=False)
    monkeypatch.delenv("RAGTRUST_STORE", raising=False)
    return seen


def test_serve_starts_uvicorn_with_the_app(cli: typer.Typer, calls: list[dict[str, Any]], tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--port", "8123", "--workers", "3"])
    assert result.exit_code == 0, result.output
    created = calls[0]["create_app"]
    assert created["store_path"] == tmp_path and created["workers"] == 3 and created["api_keys"] == []
    assert calls[1]["run"] == ("APP", {"host": "127.0.0.1", "port": 8123, "log_level": "info"})
    assert created["max_queue"] is None and "3 workers per lane, 12 may wait" in result.output


def test_serve_passes_the_queue_bound(
    cli: typer.Typer, calls: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--max-queue", "5"])
    assert result.exit_code == 0, result.output
    assert calls[0]["create_app"]["max_queue"] == 5 and "5 may wait" in result.output
    # without --workers: one per two cores (each call's models already use two threads)
    assert calls[0]["create_app"]["workers"] == 4 and "4 workers per lane" in result.output
    negative = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--max-queue", "-1"])
    assert negative.exit_code == 2


def test_serve_refuses_remote_bind_without_keys(
    cli: typer.Typer, calls: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--host", "0.0.0.0"])
    assert refused.exit_code == 2
    assert "refusing" in refused.output and "RAGTRUST_API_KEYS" in refused.output
    assert calls == []
    allowed = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--host", "0.0.0.0", "--allow-remote"])
    assert allowed.exit_code == 0, allowed.output
    monkeypatch.setenv("RAGTRUST_API_KEYS", "alpha, beta,")
    keyed = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--host", "0.0.0.0"])
    assert keyed.exit_code == 0, keyed.output
    assert [k.secret for k in calls[-2]["create_app"]["api_keys"]] == ["alpha", "beta"]


def test_serve_needs_an_existing_store(cli: typer.Typer, calls: list[dict[str, Any]], tmp_path: Path) -> None:
    missing = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    none = CliRunner().invoke(cli, ["serve"])
    assert none.exit_code == 2 and "--store" in none.output
    assert calls == []


def test_serve_reads_config_file(cli: typer.Typer, calls: list[dict[str, Any]], tmp_path: Path) -> None:
    config = tmp_path / "ragtrust.toml"
    config.write_text("[trust]\ntau = 0.6\n")
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert calls[0]["tau"] == 0.6


def test_api_keys_from_env() -> None:
    assert [k.secret for k in serve_cli.api_keys_from_env({"RAGTRUST_API_KEYS": " a ,b,, "})] == ["a", "b"]
    assert serve_cli.api_keys_from_env({}) == []


def test_serve_on_a_port_in_use_exits_2_with_one_line(
    cli: typer.Typer, calls: list[dict[str, Any]], tmp_path: Path
) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--port", str(port)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [f"error: port {port} on 127.0.0.1 is already in use: stop the other server or pass --port N"]
    assert calls == []  # refused before the app (and its models) is built


def test_a_uvicorn_startup_failure_exits_2_not_3(
    cli: typer.Typer, calls: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    def fail_to_start(app: Any, **kwargs: Any) -> None:
        raise SystemExit(3)  # what uvicorn.run does when the bind fails after the probe

    monkeypatch.setattr(uvicorn, "run", fail_to_start)
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--port", "0"])
    assert result.exit_code == 2, result.output
    assert "could not start on 127.0.0.1:0" in result.output


def test_serve_on_loopback_answers_only_loopback_hosts_unless_told(
    cli: typer.Typer, calls: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--port", "0"])
    assert default.exit_code == 0, default.output
    assert calls[-2]["create_app"]["allowed_hosts"] == ["127.0.0.1", "localhost", "[::1]"]
    named = [
        "serve",
        "--store",
        str(tmp_path),
        "--port",
        "0",
        "--allowed-host",
        "kb.lan",
        "--allowed-host",
        "localhost",
    ]
    assert CliRunner().invoke(cli, named).exit_code == 0
    assert calls[-2]["create_app"]["allowed_hosts"] == ["kb.lan", "localhost"]
    assert (
        CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--port", "0", "--allowed-host", "*"]).exit_code
        == 0
    )
    assert calls[-2]["create_app"]["allowed_hosts"] == ["*"]
    monkeypatch.setenv("RAGTRUST_API_KEYS", "ops=k:read+write+vet")
    remote = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--host", "0.0.0.0", "--port", "0"])
    assert remote.exit_code == 0, remote.output
    assert "API keys ops (read+write+vet)" in remote.output and "k:read" not in remote.output
    assert calls[-2]["create_app"]["allowed_hosts"] is None  # a remote bind names its hosts itself
    assert [(k.name, sorted(k.scopes)) for k in calls[-2]["create_app"]["api_keys"]] == [
        ("ops", ["read", "vet", "write"])
    ]


@pytest.mark.parametrize(
    ("keys", "message"),
    [("k:admin", "unknown scope 'admin'"), ("a,a", "the same key is given twice"), ("ops=", "is empty")],
)
def test_serve_with_a_bad_key_list_exits_2_with_one_line(
    cli: typer.Typer,
    calls: list[dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    keys: str,
    message: str,
) -> None:
    monkeypatch.setenv("RAGTRUST_API_KEYS", keys)
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--port", "0"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: RAGTRUST_API_KEYS entry") and message in lines[0]
    assert calls == []
