"""One bounded, thread-safe LRU for every in-memory model cache (embeddings, NLI pairs, windows, claims).

A long-running server sees an unbounded stream of texts, so each cache is bounded twice:
by entries (``max_items``, the ``cache_size`` settings) and by the bytes its keys and values
take (``max_bytes``), whichever binds first; the least recently used entries go. With the
defaults the four model caches together stay under about 90 MiB, so the server's resident
memory is flat under load (``bench/load.py`` measures it).

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

import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
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


__all__ = ["ByteLRU", "MiB", "sizeof"]
