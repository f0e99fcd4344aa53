"""The verdict log's SQLite file: :class:`VerdictLog`, where it lives, and the filters of ``ragtrust log``.

See :mod:`ragtrust.verdict_log` for what is logged and where.

Example:
    >>> import tempfile, pathlib
    >>> log = VerdictLog(pathlib.Path(tempfile.mkdtemp()) / "verdicts.sqlite")
    >>> row = log.append({"query": "q", "answer": "a", "trust_score": 0.8, "trust_level": "HIGH",
    ...                   "trusted": True}, operation="ask", source="cli")
    >>> [(e.id, e.operation, e.level, e.decision) for e in log.entries()]
    [(1, 'ask', 'HIGH', 'trusted')]
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import threading
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ragtrust.config import Settings
from ragtrust.documents import Verdict
from ragtrust.errors import InputError
from ragtrust.io import nearest_existing_folder

logger = logging.getLogger("ragtrust.verdict_log")

#: the file name of the log beside a store and in the user data dir
LOG_FILE = "verdicts.sqlite"
LEVELS = ("HIGH", "MEDIUM", "LOW", "VERY LOW")
OPERATIONS = ("ask", "screen", "verify")
#: how long an append waits for another writer's lock before giving up (a verdict never waits longer)
BUSY_TIMEOUT_S = 1.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    operation TEXT NOT NULL,
    source TEXT NOT NULL,
    principal TEXT,
    query TEXT NOT NULL,
    answer TEXT NOT NULL,
    trust_score REAL NOT NULL,
    level TEXT NOT NULL,
    trusted INTEGER NOT NULL,
    reasons TEXT NOT NULL,
    models TEXT NOT NULL,
    timings TEXT NOT NULL,
    verdict BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS verdicts_at ON verdicts (at);
"""
_COLUMNS = "id, at, operation, source, principal, query, answer, trust_score, level, trusted, reasons, models, timings"


def utc_now() -> str:
    """The current UTC time as ISO-8601 with milliseconds (the log's time format)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class LogEntry:
    """One logged verdict (``verdict`` is the full verdict JSON, loaded by :meth:`VerdictLog.get` only)."""

    id: int
    at: str
    operation: str
    source: str
    principal: str | None
    query: str
    answer: str
    trust_score: float
    level: str
    trusted: bool
    reasons: tuple[str, ...] = ()
    models: Mapping[str, str] = field(default_factory=dict)
    timings_s: Mapping[str, float] = field(default_factory=dict)
    verdict: Mapping[str, Any] | None = None

    @property
    def decision(self) -> str:
        """``trusted`` or ``flagged``."""
        return "trusted" if self.trusted else "flagged"

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (``verdict`` left out when not loaded)."""
        data = asdict(self)
        data["reasons"] = list(self.reasons)
        data["models"], data["timings_s"] = dict(self.models), dict(self.timings_s)
        data["decision"] = self.decision
        if self.verdict is None:
            del data["verdict"]
        return data


def default_log_path(
    settings: Settings, store_dir: str | Path | None = None, env: Mapping[str, str] | None = None
) -> Path | None:
    """Where the verdict log lives, or ``None`` when ``[log] enabled = false``.

    Example:
        >>> from ragtrust.config import load_settings
        >>> str(default_log_path(load_settings(env={}), "kb-store"))
        'kb-store/verdicts.sqlite'
        >>> str(default_log_path(load_settings(env={}), None, env={"XDG_DATA_HOME": "/data"}))
        '/data/ragtrust/verdicts.sqlite'
    """
    if not settings.log.enabled:
        return None
    if settings.log.path:
        return Path(settings.log.path).expanduser()
    if store_dir is not None:
        return Path(store_dir) / LOG_FILE
    env = os.environ if env is None else env
    data_home = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "ragtrust" / LOG_FILE


def _check_writable(path: Path) -> None:
    """Raise ``PermissionError`` when ``path`` (or the folder it would be created in) cannot be written.

    SQLite's WAL mode writes ``-wal`` / ``-shm`` files beside the log, so its folder must be
    writable too; a folder still to be created needs its nearest existing parent writable.
    """
    if path.exists() and not os.access(path, os.W_OK):
        raise PermissionError(f"{path} is not writable")
    folder = nearest_existing_folder(path)
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a folder")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"the folder {folder} is not writable")


def open_verdict_log(
    settings: Settings, store_dir: str | Path | None = None, *, env: Mapping[str, str] | None = None
) -> VerdictLog | None:
    """The log to append verdicts to, or ``None`` (disabled, or its folder cannot be written: one warning).

    Never raises: a log is a record of verdicts, never a reason to refuse one.
    """
    path = default_log_path(settings, store_dir, env)
    if path is None:
        return None
    try:
        _check_writable(path)
        return VerdictLog(path, max_rows=settings.log.max_rows)
    except (OSError, InputError) as exc:
        logger.warning(
            "verdicts are not logged: cannot open the verdict log %s (%s); set [log] path to another file, "
            "or [log] enabled = false",
            path,
            exc,
        )
        return None


def append_verdict(
    settings: Settings,
    store_dir: str | Path | None,
    verdict: Verdict | Mapping[str, Any],
    *,
    operation: str,
    source: str = "cli",
    principal: str | None = None,
) -> int | None:
    """Open the log ``settings`` name, append one verdict and close it (a CLI's one write); never raises."""
    log = open_verdict_log(settings, store_dir)
    if log is None:
        return None
    try:
        return log.append(verdict, operation=operation, source=source, principal=principal)
    finally:
        log.close()


class VerdictLog:
    """An append-only SQLite log of verdicts, bounded to ``max_rows`` (see the module docstring).

    Args:
        path: the SQLite file (created with its folder unless ``read_only``).
        max_rows: rows kept; each append prunes the oldest past it.
        read_only: open an existing log for reading only (``ragtrust log``); appends are refused.

    Raises:
        InputError: ``read_only`` and there is no log at ``path``, or the file is not a verdict log.

    Thread-safe: one connection behind a lock; other processes coordinate through SQLite (WAL).
    """

    def __init__(self, path: str | Path, *, max_rows: int = 100_000, read_only: bool = False) -> None:
        self.path = Path(path)
        self.max_rows = max_rows
        self.read_only = read_only
        self._lock = threading.Lock()
        self._last_warning = ""
        self._conn: sqlite3.Connection | None = None  # opened on first use: constructing does no I/O
        if read_only and not self.path.is_file():
            raise InputError(f"no verdict log at {self.path}: verdicts are logged by `ragtrust ask` and the API")

    def _db(self) -> sqlite3.Connection:
        """The connection, opened (and the schema created) on first use; call it holding the lock."""
        if self._conn is not None:
            return self._conn
        if self.read_only:
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        try:
            if not self.read_only:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.executescript(_SCHEMA)
            conn.execute("SELECT id, verdict FROM verdicts LIMIT 0")
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a damaged schema can fail to decode
            conn.close()
            raise InputError(f"{self.path} is not a ragtrust verdict log ({exc})") from None
        self._conn = conn
        return conn

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> VerdictLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------
    def append(
        self,
        verdict: Verdict | Mapping[str, Any],
        *,
        operation: str,
        source: str = "api",
        principal: str | None = None,
    ) -> int | None:
        """Append one verdict; its row id, or ``None`` when it could not be written (a warning, never raised)."""
        try:
            data = verdict.to_dict() if isinstance(verdict, Verdict) else dict(verdict)
            blob = zlib.compress(json.dumps(data, ensure_ascii=False, default=str).encode("utf-8"))
            row = (
                utc_now(),
                operation,
                source,
                principal,
                str(data.get("query") or ""),
                str(data.get("answer") or ""),
                float(data.get("trust_score") or 0.0),
                str(data.get("trust_level") or ""),
                int(bool(data.get("trusted"))),
                json.dumps(list(data.get("decision_reasons") or ()), ensure_ascii=False),
                json.dumps(dict(data.get("models") or {}), ensure_ascii=False),
                json.dumps(dict(data.get("timings_s") or {})),
                blob,
            )
            with self._lock:
                cur = self._db().execute(
                    "INSERT INTO verdicts (at, operation, source, principal, query, answer, trust_score, level, "
                    "trusted, reasons, models, timings, verdict) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
                new_id = int(cur.lastrowid or 0)
                self._db().execute("DELETE FROM verdicts WHERE id <= ?", (new_id - self.max_rows,))
            return new_id
        except Exception as exc:  # a log write never fails a verdict
            message = f"{type(exc).__name__}: {exc}"
            if message != self._last_warning:  # one warning per distinct problem, not one per request
                self._last_warning = message
                logger.warning("a verdict was not logged to %s (%s)", self.path, message)
            return None

    # -- reading -------------------------------------------------------------------------
    def _where(self, level: str | None, operation: str | None, since: str | None) -> tuple[str, list[Any]]:
        clauses, args = [], []
        if level is not None:
            clauses.append("level = ?")
            args.append(parse_level(level))
        if operation is not None:
            clauses.append("operation = ?")
            args.append(parse_operation(operation))
        if since is not None:
            clauses.append("at >= ?")
            args.append(since)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args

    def entries(
        self, *, level: str | None = None, operation: str | None = None, since: str | None = None, limit: int = 50
    ) -> list[LogEntry]:
        """The most recent entries, newest first (``since``: an ISO time, see :func:`parse_since`)."""
        if limit < 1:
            raise InputError(f"limit must be at least 1, got {limit}")
        where, args = self._where(level, operation, since)
        rows = self._rows(f"SELECT {_COLUMNS} FROM verdicts{where} ORDER BY id DESC LIMIT ?", (*args, limit))
        return [self._entry(r) for r in rows]

    def iter_entries(
        self, *, level: str | None = None, operation: str | None = None, since: str | None = None
    ) -> Iterator[LogEntry]:
        """Every matching entry with its verdict, oldest first (for export)."""
        where, args = self._where(level, operation, since)
        last = 0
        while True:  # in pages, so the lock is never held for the whole export
            clause = f"{where} AND id > ?" if where else " WHERE id > ?"
            rows = self._rows(f"SELECT {_COLUMNS}, verdict FROM verdicts{clause} ORDER BY id LIMIT 500", (*args, last))
            if not rows:
                return
            for r in rows:
                yield self._entry(r[:-1], r[-1])
            last = rows[-1][0]

    def get(self, entry_id: int) -> LogEntry | None:
        """One entry with its full verdict, or ``None`` when there is no such id (or it was pruned).

        Ids start at 1 and are SQLite INTEGERs; any other number (``0``, a negative one, or
        one past 2**63 - 1, which SQLite cannot bind) names no entry.
        """
        if isinstance(entry_id, bool) or not isinstance(entry_id, int) or not 1 <= entry_id <= _MAX_ROWID:
            return None
        rows = self._rows(f"SELECT {_COLUMNS}, verdict FROM verdicts WHERE id = ?", (entry_id,))
        return self._entry(rows[0][:-1], rows[0][-1]) if rows else None

    def __len__(self) -> int:
        return int(self._rows("SELECT count(*) FROM verdicts", ())[0][0])

    def _rows(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Run one read; a file SQLite cannot read (damaged pages, a text column that is not UTF-8) is an InputError."""
        try:
            with self._lock:
                return list(self._db().execute(sql, tuple(args)).fetchall())
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise InputError(self._damaged(exc)) from exc

    def _entry(self, row: tuple[Any, ...], blob: bytes | None = None) -> LogEntry:
        """Parse one row; a row whose fields no longer parse is an InputError naming its id."""
        try:
            return _entry(row, blob)
        except (ValueError, TypeError, KeyError, zlib.error) as exc:
            raise InputError(self._damaged(exc, row[0])) from exc

    def _damaged(self, exc: BaseException, entry_id: Any = None) -> str:
        """The one line for a log (or one of its entries) that cannot be read back."""
        what = f"the verdict log {self.path}"
        if entry_id is not None:
            what = f"entry {entry_id} of {what}"
        return f"{what} is damaged ({exc}): move the file aside, the next verdict starts a new log"


#: largest SQLite INTEGER (a signed 64-bit value); a bigger Python int raises OverflowError on bind
_MAX_ROWID = 2**63 - 1


def _entry(row: tuple[Any, ...], blob: bytes | None = None) -> LogEntry:
    verdict = json.loads(zlib.decompress(blob).decode("utf-8")) if blob is not None else None
    return LogEntry(
        id=row[0],
        at=row[1],
        operation=row[2],
        source=row[3],
        principal=row[4],
        query=row[5],
        answer=row[6],
        trust_score=float(row[7]),
        level=row[8],
        trusted=bool(row[9]),
        reasons=tuple(json.loads(row[10])),
        models=json.loads(row[11]),
        timings_s=json.loads(row[12]),
        verdict=verdict,
    )


def parse_level(text: str) -> str:
    """A trust level from ``high`` / ``very-low`` / ``VERY LOW`` ...

    Example:
        >>> parse_level("very-low"), parse_level("High")
        ('VERY LOW', 'HIGH')
    """
    level = re.sub(r"[\s_-]+", " ", text.strip()).upper()
    if level not in LEVELS:
        raise InputError(f"unknown trust level {text!r}; expected one of high, medium, low, very-low")
    return level


def parse_operation(text: str) -> str:
    """An operation name (``ask`` / ``screen`` / ``verify``)."""
    operation = text.strip().lower()
    if operation not in OPERATIONS:
        raise InputError(f"unknown operation {text!r}; expected one of {', '.join(OPERATIONS)}")
    return operation


_AGO = re.compile(r"^(\d+)\s*([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str, now: datetime | None = None) -> str:
    """The log's time string for ``--since``: an age (``30m``, ``12h``, ``7d``) or an ISO date / time.

    A time without a zone is UTC.

    Example:
        >>> now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
        >>> parse_since("2h", now), parse_since("2026-11-30", now)
        ('2026-12-01T10:00:00.000+00:00', '2026-11-30T00:00:00.000+00:00')
    """
    value = text.strip()
    ago = _AGO.match(value.lower())
    if ago:
        try:
            at = (now or datetime.now(UTC)) - timedelta(seconds=int(ago.group(1)) * _UNIT_S[ago.group(2)])
        except OverflowError:
            raise InputError(f"--since {text!r} reaches before the year 1: give a smaller age or a date") from None
    else:
        try:
            at = datetime.fromisoformat(value)
        except ValueError:
            raise InputError(
                f"--since {text!r} is neither an age (30m, 12h, 7d) nor an ISO date or time (2026-11-30T09:00)"
            ) from None
        at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return at.isoformat(timespec="milliseconds")


__all__ = [
    "LEVELS",
    "LOG_FILE",
    "OPERATIONS",
    "LogEntry",
    "VerdictLog",
    "append_verdict",
    "default_log_path",
    "open_verdict_log",
    "parse_level",
    "parse_operation",
    "parse_since",
    "utc_now",
]
