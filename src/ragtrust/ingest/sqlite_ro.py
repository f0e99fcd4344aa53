"""Opening a SQLite database for reading only, in a folder that may not be writable.

A store without write access (``chmod -R a-w``, a read-only mount) still answers queries;
its provenance ledger is read through SQLite's ``mode=ro`` (issue 19 item 8).

Example:
    >>> import sqlite3, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "db.sqlite"
    >>> sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    >>> conn = connect_read_only(path)
    >>> try:
    ...     conn.execute("INSERT INTO t VALUES (1)")
    ... except sqlite3.OperationalError as exc:
    ...     print(exc)
    attempt to write a readonly database
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ragtrust.errors import StoreReadOnlyError


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that only reads ``path`` (SQLite's ``mode=ro``), for a store without write access.

    A WAL database in a folder where its ``-shm`` file cannot be created opens only as
    ``immutable``; that is safe only when no ``-wal`` file holds changes not yet in the main
    file (they would be missed: a quarantine could be lost), so such a ledger is refused.
    """
    uri = path.resolve().as_uri()

    def connect(query: str) -> sqlite3.Connection:
        return sqlite3.connect(f"{uri}?{query}", uri=True, timeout=30.0, isolation_level=None, check_same_thread=False)

    conn = connect("mode=ro")
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise StoreReadOnlyError(
            path.parent.name,
            f"{wal.name} holds ledger changes not yet merged into {path.name}; open the store once with write "
            "access to merge them",
        )
    return connect("mode=ro&immutable=1")


__all__ = ["connect_read_only"]
