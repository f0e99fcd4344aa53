"""What a run that produces numbers records next to them (STYLE.md section 4).

The command that started it, the UTC time, the versions of the packages it ran on and the
platform, each piece on its own: every report lays its keys out its own way (and keeps that
order), so there is no one block to share.

Example:
    >>> cli_command(["ragtrust", "eval", "run", "--out", "a b"])
    "ragtrust eval run --out 'a b'"
    >>> list(versions("python", "no-such-package-xyz"))
    ['python', 'no-such-package-xyz']
    >>> versions("no-such-package-xyz", missing=None)
    {}
"""

from __future__ import annotations

import platform
import shlex
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata

#: the version recorded for a distribution that is not installed
NOT_INSTALLED = "not installed"


def cli_command(argv: Sequence[str] | None = None) -> str:
    """The ``ragtrust ...`` command line of this process (``argv``: default ``sys.argv``), shell-quoted."""
    args = sys.argv if argv is None else argv
    return "ragtrust " + " ".join(shlex.quote(a) for a in args[1:])


def utc_stamp() -> str:
    """The time now, UTC, as ``2026-01-31T12:00:00Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_iso() -> str:
    """The time now, UTC, as ``2026-01-31T12:00:00+00:00`` (ISO 8601 to the second)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def package_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or ``None``."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions(*names: str, missing: str | None = NOT_INSTALLED) -> dict[str, str]:
    """Versions by name, in the order given.

    ``python`` is the interpreter's version and ``platform`` the machine's description
    (``platform.platform()``); any other name is an installed distribution, recorded as
    ``missing`` when absent, or left out when ``missing`` is ``None``.
    """
    out: dict[str, str] = {}
    for name in names:
        if name == "python":
            out[name] = platform.python_version()
        elif name == "platform":
            out[name] = platform.platform()
        else:
            found = package_version(name)
            if found is not None:
                out[name] = found
            elif missing is not None:
                out[name] = missing
    return out


__all__ = [
    "NOT_INSTALLED",
    "cli_command",
    "package_version",
    "utc_iso",
    "utc_stamp",
    "versions",
]
