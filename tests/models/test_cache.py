"""The model caches are bounded by entries and by bytes (issue 19: server memory flat under load)."""

from __future__ import annotations

import pickle
import threading

import numpy as np

from ragtrust.models.cache import ByteLRU, sizeof


def vec() -> np.ndarray:
    return np.zeros(384, dtype=np.float32)


def test_the_byte_bound_drops_the_least_recently_used() -> None:
    one = sizeof("k0", vec())
    cache: ByteLRU[np.ndarray] = ByteLRU(max_items=1_000, max_bytes=3 * one)
    for i in range(3):
        cache.put(f"k{i}", vec())
    assert cache.get("k0") is not None  # k0 is now the most recent
    cache.put("k3", vec())
    assert len(cache) == 3 and cache.nbytes <= 3 * one
    assert cache.get("k1") is None and cache.get("k0") is not None


def test_the_entry_bound_and_replacing_a_key() -> None:
    cache: ByteLRU[float] = ByteLRU(max_items=2, max_bytes=10**9)
    cache.put_many([("a", 1.0), ("b", 2.0), ("a", 3.0), ("c", 4.0)])
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (3.0, None, 4.0)
    assert cache.nbytes == sizeof("a", 3.0) + sizeof("c", 4.0)


def test_a_limit_of_zero_disables_and_empties_the_cache() -> None:
    cache: ByteLRU[float] = ByteLRU(max_items=10, max_bytes=10**6)
    cache.put("a", 1.0)
    cache.limit(0, 10**6)
    cache.put("b", 2.0)
    assert len(cache) == 0 and cache.nbytes == 0


def test_a_pickled_cache_keeps_its_limits_and_starts_empty() -> None:
    cache: ByteLRU[float] = ByteLRU(max_items=5, max_bytes=1_000)
    cache.put("a", 1.0)
    copy = pickle.loads(pickle.dumps(cache))
    assert (copy.max_items, copy.max_bytes, len(copy)) == (5, 1_000, 0)


def test_concurrent_puts_keep_the_accounting_exact() -> None:
    cache: ByteLRU[np.ndarray] = ByteLRU(max_items=50, max_bytes=10**9)

    def fill(offset: int) -> None:
        for i in range(500):
            cache.put(f"{offset}-{i % 80}", vec())

    threads = [threading.Thread(target=fill, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 50
    assert cache.nbytes == sum(sizeof(k, vec()) for k in list(cache._items))
