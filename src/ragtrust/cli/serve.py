"""``ragtrust serve``: run the HTTP service and web UI with uvicorn.

API keys come from ``RAGTRUST_API_KEYS`` (comma-separated ``[name=]key[:scope+scope]``, see
:mod:`ragtrust.server.auth`), read here at the edge. Without keys the server binds to
loopback only, unless ``--allow-remote`` says otherwise. Bound to loopback, it answers only
requests for ``127.0.0.1``, ``localhost`` or ``[::1]`` (any port; a DNS-rebinding page
sends its own name), unless ``--allowed-host`` names others (``*``: no check).
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import typer

from ragtrust.cli.common import EXIT_USAGE, ConfigOption, default_store, err_console, fail, handle_errors, settings_from
from ragtrust.server.auth import SCOPES, ApiKey, parse_api_keys


def api_keys_from_env(env: dict[str, str] | None = None) -> list[ApiKey]:
    """Keys from ``RAGTRUST_API_KEYS`` (comma-separated ``[name=]key[:scope+scope]``, blanks ignored).

    Raises:
        ConfigError: an unknown scope, an empty key, or a key given twice (one line).
    """
    return parse_api_keys((os.environ if env is None else env).get("RAGTRUST_API_KEYS", ""))


def allowed_hosts_for(host: str, allowed: list[str]) -> list[str] | None:
    """The Host allow-list to serve with (``None``: no check).

    That is ``allowed`` as given; else, bound to loopback, the loopback names and the bound
    address; else no check (a remote bind has API keys or ``--allow-remote``).

    Example:
        >>> allowed_hosts_for("127.0.0.1", [])
        ['127.0.0.1', 'localhost', '[::1]']
        >>> allowed_hosts_for("0.0.0.0", []) is None, allowed_hosts_for("::1", ["*"])
        (True, ['*'])
    """
    from ragtrust.server.app import is_loopback_host
    from ragtrust.server.middleware import LOOPBACK_HOSTS

    if allowed:
        return list(allowed)
    if not is_loopback_host(host):
        return None
    bound = f"[{host.strip('[]')}]" if ":" in host else host.lower()
    return list(dict.fromkeys([*LOOPBACK_HOSTS, bound]))


StoreOption = typer.Option(
    None, "--store", help="store folder to answer from (default: $RAGTRUST_STORE)", show_default=False
)
HostOption = typer.Option("127.0.0.1", "--host", help="address to bind")
PortOption = typer.Option(8000, "--port", min=0, max=65535, help="port to bind")
WorkersOption = typer.Option(
    None,
    "--workers",
    min=1,
    max=64,
    help="calls run at once per lane (default: one per two cores; each call's models use two threads)",
    show_default=False,
)
TimeoutOption = typer.Option(
    30.0, "--timeout", min=0.1, help="per-request budget in seconds (a deadline the pipeline checks between stages)"
)
MaxQueueOption = typer.Option(
    None,
    "--max-queue",
    min=0,
    help="requests allowed to wait per lane (default 4 x workers); past it, 503 with Retry-After at once",
    show_default=False,
)
MaxBodyOption = typer.Option(1_000_000, "--max-body-bytes", min=1, help="largest request body in bytes")
AllowRemoteOption = typer.Option(
    False, "--allow-remote", help="bind a non-loopback address without API keys (anyone can call it)"
)
LogLevelOption = typer.Option("info", "--log-level", help="uvicorn log level")
AllowedHostOption = typer.Option(
    [],
    "--allowed-host",
    help="answer only requests for this Host (repeatable; default on loopback: 127.0.0.1, localhost, [::1]; '*': any)",
    show_default=False,
)


def bind_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound (``None`` when it can), probed the way uvicorn binds.

    Example:
        >>> bind_problem("127.0.0.1", 0) is None
        True
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host.strip("[]"), port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return f"port {port} on {host} is already in use: stop the other server or pass --port N"
        return f"cannot bind {host}:{port}: {exc.strerror or exc}"
    return None


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the CLI."""

    @app.command("serve")
    @handle_errors
    def serve(
        store: Path | None = StoreOption,
        host: str = HostOption,
        port: int = PortOption,
        config: Path | None = ConfigOption,
        workers: int | None = WorkersOption,
        timeout_s: float = TimeoutOption,
        max_body_bytes: int = MaxBodyOption,
        allow_remote: bool = AllowRemoteOption,
        log_level: str = LogLevelOption,
        allowed_host: list[str] = AllowedHostOption,
        max_queue: int | None = MaxQueueOption,
    ) -> None:
        """Serve the JSON API (/v1/...) and the web UI (/) for a document store."""
        import uvicorn

        from ragtrust.server.admission import default_workers
        from ragtrust.server.app import create_app, is_loopback_host

        keys = api_keys_from_env()
        if not keys and not is_loopback_host(host) and not allow_remote:
            raise fail(
                f"refusing to bind {host} without API keys: set RAGTRUST_API_KEYS, bind 127.0.0.1, "
                "or pass --allow-remote",
                EXIT_USAGE,
            )
        store = store or default_store()
        if store is None:
            message = "no store: pass --store DIR (or set RAGTRUST_STORE); build one with `ragtrust ingest`"
            raise fail(message, EXIT_USAGE)
        if not store.is_dir():
            raise fail(f"store {store} does not exist; build it with `ragtrust ingest`", EXIT_USAGE)
        problem = bind_problem(host, port)
        if problem is not None:  # before the models load; uvicorn would exit 3, our "flagged"
            raise fail(problem, EXIT_USAGE)
        settings = settings_from(config)
        workers = default_workers() if workers is None else workers
        api = create_app(
            settings,
            store_path=store,
            api_keys=keys,
            allowed_hosts=allowed_hosts_for(host, allowed_host),
            max_body_bytes=max_body_bytes,
            request_timeout_s=timeout_s,
            workers=workers,
            max_queue=max_queue,
        )
        auth = "no API keys: anyone local may read and write, nobody vets"
        if keys:  # names and scopes, never the keys: the log says who may vet
            auth = "API keys " + ", ".join(f"{k.actor} ({'+'.join(s for s in SCOPES if s in k.scopes)})" for k in keys)
        err_console.print(f"ragtrust serving {store} on http://{host}:{port}/ ({auth})", highlight=False)
        log = getattr(getattr(api, "state", None), "verdict_log", None)
        where = f"verdicts logged to {log.path}" if log is not None else "verdict log off"
        queue = 4 * workers if max_queue is None else max_queue
        err_console.print(f"{workers} workers per lane, {queue} may wait; {where}", highlight=False)
        try:
            uvicorn.run(api, host=host, port=port, log_level=log_level)
        except SystemExit as exc:
            if exc.code == 3:  # uvicorn's startup failure (the port was taken after the probe)
                raise fail(f"the server could not start on {host}:{port} (see the log above)", EXIT_USAGE) from None
            raise


__all__ = ["allowed_hosts_for", "api_keys_from_env", "bind_problem", "register"]
