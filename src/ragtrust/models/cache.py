"""One bounded, thread-safe LRU for every in-memory model cache (embeddings, NLI pairs, windows, claims).

A long-running server sees an unbounded stream of texts, so each cache is bounded twice:
by entries (``max_items``, the ``cache_size`` settings) and by the bytes its keys and values
take (``max_bytes``), whichever binds first; the least recently used entries go. With the
defaults the four model caches together stay under about 90 MiB, and the screening signals'
kept per-document results under 16 MiB, so the server's resident memory is flat under load
(``bench/load.py`` measures it).

Example:
    >>> import numpy as np
    >>> cache = ByteLRU(max_items=10, max_bytes=4_000)
    >>> cache.put("a", np.zeros(384, dtype=np.float32))  # 1,536 bytes of data
    >>> cache.put("b", np.zeros(384, dtype=np.float32))
    >>> cache.put("c", np.zeros(384, dtype=np.float32))  # over 4,000 bytes: "a" goes
    >>> cache.get("a") is None, len(cache)
    (True, 2)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

V = TypeVar("V")

#: the default byte budgets of the model caches
MiB = 1024 * 1024


def sizeof(key: Hashable, value: Any) -> int:
    """Approximate bytes held by one entry: the key, the value and the dict slot."""
    size = sys.getsizeof(key) + 64
    if isinstance(value, np.ndarray):
        return size + value.nbytes + 112
    return size + sys.getsizeof(value)


class ByteLRU(Generic[V]):
    """A least-recently-used map bounded by entries and by bytes (thread-safe, picklable empty).

    Args:
        max_items: entries kept; 0 disables the cache.
        max_bytes: bytes kept (:func:`sizeof`); 0 disables the cache.
    """

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self.max_items = max(0, int(max_items))
        self.max_bytes = max(0, int(max_bytes))
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, int]:
        """Pickle the limits only (a copy starts empty: Ray / multiprocessing)."""
        return {"max_items": self.max_items, "max_bytes": self.max_bytes}

    def __setstate__(self, state: dict[str, int]) -> None:
        """Restore an empty cache with the same limits."""
        self.__init__(state["max_items"], state["max_bytes"])  # type: ignore[misc]

    def __len__(self) -> int:
        """Entries held."""
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        """Whether ``key`` is held (does not refresh it)."""
        return key in self._items

    @property
    def nbytes(self) -> int:
        """Bytes held, as :func:`sizeof` counts them."""
        return self._bytes

    @property
    def enabled(self) -> bool:
        """Whether anything is kept."""
        return self.max_items > 0 and self.max_bytes > 0

    def limit(self, max_items: int, max_bytes: int) -> None:
        """Change the limits (a setting changed at run time); the next put applies them."""
        self.max_items, self.max_bytes = max(0, int(max_items)), max(0, int(max_bytes))

    def get(self, key: Hashable) -> V | None:
        """The value for ``key`` (now most recently used), or ``None``."""
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            self._items.move_to_end(key)
            return entry[0]

    def get_many(self, keys: Sequence[Hashable]) -> list[V | None]:
        """:meth:`get` for each key, under one lock."""
        with self._lock:
            out: list[V | None] = []
            for key in keys:
                entry = self._items.get(key)
                if entry is not None:
                    self._items.move_to_end(key)
                out.append(None if entry is None else entry[0])
            return out

    def put(self, key: Hashable, value: V) -> None:
        """Keep ``value`` for ``key``, then drop the least recently used entries over the limits."""
        self.put_many([(key, value)])

    def put_many(self, items: Iterable[tuple[Hashable, V]]) -> None:
        """:meth:`put` for each pair, under one lock."""
        if not self.enabled:
            self.clear()
            return
        with self._lock:
            for key, value in items:
                old = self._items.pop(key, None)
                if old is not None:
                    self._bytes -= old[1]
                size = sizeof(key, value)
                self._items[key] = (value, size)
                self._bytes += size
            while self._items and (len(self._items) > self.max_items or self._bytes > self.max_bytes):
                _, (_, size) = self._items.popitem(last=False)
                self._bytes -= size

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._items.clear()
            self._bytes = 0


#: bytes of the checksum (BLAKE2b) stored before every persisted value
CHECKSUM_BYTES = 8


def seal(value: bytes) -> bytes:
    """A value as a persisted cache stores it: its checksum, then its bytes.

    A value whose bytes changed on disk (a flipped bit in an injection probability, a score
    in a kept result) no longer matches its checksum and reads as a miss, so it is computed
    again instead of being trusted; SQLite itself checks no value's bytes.

    Example:
        >>> unseal(seal(b"0.93")), unseal(seal(b"0.93")[:-1] + b"1")
        (b'0.93', None)
    """
    return hashlib.blake2b(value, digest_size=CHECKSUM_BYTES).digest() + value


def unseal(stored: bytes) -> bytes | None:
    """The value :func:`seal` stored, or ``None`` when its checksum does not match (damaged, or never sealed)."""
    head, value = stored[:CHECKSUM_BYTES], stored[CHECKSUM_BYTES:]
    if len(head) < CHECKSUM_BYTES or hashlib.blake2b(value, digest_size=CHECKSUM_BYTES).digest() != head:
        return None
    return value


def open_cache_db(path: Path, table: str, read_only: bool = False) -> tuple[sqlite3.Connection | None, bool]:
    """A persisted cache table and whether it may be written: ``(None, False)`` when it cannot be opened.

    A cache in a folder this process cannot write (a read-only store, issue 19 item 8), or
    one opened ``read_only``, is read when it exists and never written; the results of this
    process stay in memory. ``table`` has the columns ``key`` (text) and ``probs`` (bytes).
    """
    if not re.fullmatch(r"[a-z_]+", table):
        raise ValueError(f"cache table name must be lowercase letters, got {table!r}")
    folder_ok = not path.parent.exists() or os.access(path.parent, os.W_OK)
    writable = not read_only and folder_ok and (not path.exists() or os.access(path, os.W_OK))
    try:
        if writable:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, probs BLOB NOT NULL)")
            db.commit()
            return db, True
        if path.exists():
            uri = path.resolve().as_uri()
            # a WAL file whose -shm cannot be created opens only as immutable (a cache may miss)
            for query in ("mode=ro", "mode=ro&immutable=1"):
                db = sqlite3.connect(f"{uri}?{query}", uri=True, check_same_thread=False)
                try:
                    db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchall()
                    return db, False
                except sqlite3.Error:
                    db.close()
    except (sqlite3.Error, OSError):
        pass
    return None, False


class BlobCache:
    """Bytes by key in one SQLite table: the persisted half of a cache.

    Best effort, like every cache here: a file that cannot be opened, read or written turns
    the cache into a no-op (misses, nothing kept), never failing a query. Picklable (a copy
    reopens the file; Ray and multiprocessing workers). Callers put everything a value was
    computed from (the model's fingerprint, the parameters) in their keys, so two models
    never share an entry.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "cache.sqlite"
        >>> BlobCache(path, "results").put_many([("a", b"kept")])
        >>> BlobCache(path, "results").get_many(["a", "b"])
        [b'kept', None]
    """

    def __init__(self, path: Path, table: str, read_only: bool = False) -> None:
        self.path, self.table, self.read_only = Path(path), table, read_only
        self._lock = threading.Lock()
        self._db, self.persists = open_cache_db(self.path, table, read_only)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the location only: a copy opens its own connection."""
        return {"path": str(self.path), "table": self.table, "read_only": self.read_only}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Reopen the file in the copy."""
        self.__init__(Path(state["path"]), state["table"], bool(state["read_only"]))  # type: ignore[misc]

    def get_blobs(self, keys: Sequence[str]) -> list[bytes | None]:
        """The stored bytes per key, or ``None``."""
        found: dict[str, bytes] = {}
        with self._lock:
            if self._db is not None and keys:
                try:
                    unique = list(dict.fromkeys(keys))
                    for start in range(0, len(unique), 500):
                        part = unique[start : start + 500]
                        marks = ",".join("?" * len(part))
                        rows = self._db.execute(
                            f"SELECT key, probs FROM {self.table} WHERE key IN ({marks})", part
                        ).fetchall()
                        for k, v in rows:
                            value = unseal(bytes(v))
                            if value is not None:  # a damaged value is a miss, never read
                                found[k] = value
                except sqlite3.Error:
                    found = {}
        return [found.get(k) for k in keys]

    def put_blobs(self, items: Iterable[tuple[str, bytes]]) -> None:
        """Store the bytes (with their checksum); a failing write turns persistence off for this process."""
        rows = [(k, seal(v)) for k, v in items]
        with self._lock:
            if self._db is None or not self.persists or not rows:
                return
            try:
                self._db.executemany(f"INSERT OR REPLACE INTO {self.table} (key, probs) VALUES (?, ?)", rows)
                self._db.commit()
            except sqlite3.Error:  # e.g. the folder became read-only: keep answering from memory
                self.persists = False
                with contextlib.suppress(sqlite3.Error):
                    self._db.rollback()

    def replace_all(self, items: Iterable[tuple[str, bytes]], keep: Iterable[str] = ()) -> bool:
        """Store ``items`` and forget every other key but ``keep``, in one transaction; whether it was written."""
        rows = [(k, seal(v)) for k, v in items]
        stay = {k for k, _ in rows} | set(keep)
        with self._lock:
            if self._db is None or not self.persists:
                return False
            try:
                present = [k for (k,) in self._db.execute(f"SELECT key FROM {self.table}").fetchall()]
                gone = [(k,) for k in present if k not in stay]
                self._db.executemany(f"DELETE FROM {self.table} WHERE key = ?", gone)
                self._db.executemany(f"INSERT OR REPLACE INTO {self.table} (key, probs) VALUES (?, ?)", rows)
                self._db.commit()
            except sqlite3.Error:
                self.persists = False
                with contextlib.suppress(sqlite3.Error):
                    self._db.rollback()
                return False
        return True

    def get_many(self, keys: Sequence[str]) -> list[Any]:
        """:meth:`get_blobs` (subclasses decode)."""
        return self.get_blobs(keys)

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        """:meth:`put_blobs` (subclasses encode)."""
        self.put_blobs(items)

    def close(self) -> None:
        """Close the connection (later calls miss and keep nothing)."""
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()
            self._db, self.persists = None, False


class DiskCache(BlobCache):
    """float32 arrays by key: the persisted half of a model cache (a :class:`BlobCache` of arrays).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "cache.sqlite"
        >>> DiskCache(path, "claims").put_many([("a", np.ones(3, dtype=np.float32))])
        >>> [None if v is None else v.tolist() for v in DiskCache(path, "claims").get_many(["a", "b"])]
        [[1.0, 1.0, 1.0], None]
    """

    def get_many(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        """The stored array per key, or ``None``."""
        return [None if b is None else np.frombuffer(b, dtype=np.float32).copy() for b in self.get_blobs(keys)]

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        """Store the arrays (float32); a failing write turns persistence off for this process."""
        self.put_blobs((k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items)


__all__ = ["CHECKSUM_BYTES", "BlobCache", "ByteLRU", "DiskCache", "MiB", "open_cache_db", "seal", "sizeof", "unseal"]
