"""The NLI engine: windowing, caching and batching around any NLI model.

:class:`NLIEngine` is what the pipeline talks to: it splits premises longer than the
model's window into overlapping sentence-bounded windows (the best window wins and is
reported), deduplicates and caches pair results by content hash (LRU, optionally persisted
in SQLite), and sends everything a query needs in as few batched calls as possible. The
models it wraps are in :mod:`ragtrust.models.nli` (which still exports the engine).

Every array has the columns (entailment, neutral, contradiction).

Example:
    >>> from ragtrust.testing import LexicalNLI
    >>> engine = NLIEngine(LexicalNLI(), max_premise_tokens=32)
    >>> [w.windows for w in engine.predict_windows([("The cat sat on the mat.", "A cat sat.")])]
    [((0, 23),)]
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from ragtrust.errors import InputError, ModelError
from ragtrust.models.base import NLIModel, ReloadsAfterPickle
from ragtrust.models.cache import ByteLRU, DiskCache, MiB
from ragtrust.registry import warm_up
from ragtrust.text import split_sentences

#: the file, inside a store, of the persisted NLI pair cache
NLI_CACHE_FILE = "nli_cache.sqlite"


@dataclass(frozen=True)
class WindowedPrediction:
    """All windows' probabilities for one pair; ``best`` is the chosen window's index."""

    probs: npt.NDArray[np.float32]  # (windows, 3)
    windows: tuple[tuple[int, int], ...]  # character offsets of each window in the premise
    best: int

    @property
    def row(self) -> npt.NDArray[np.float32]:
        """Probabilities of the chosen window."""
        row: npt.NDArray[np.float32] = self.probs[self.best]
        return row


class _PairCache:
    """LRU of pair results keyed by content hash, optionally persisted in SQLite.

    The persisted file (:class:`~ragtrust.models.cache.DiskCache`, table ``nli``) is best
    effort: one that cannot be written (a read-only store) or opened leaves the cache in
    memory, never failing a query.
    """

    def __init__(
        self, size: int, path: Path | None, model_id: str, max_bytes: int = 16 * MiB, read_only: bool = False
    ) -> None:
        self.size = size
        self.model_id = model_id
        self._items: ByteLRU[npt.NDArray[np.float32]] = ByteLRU(size, max_bytes)
        self._disk = DiskCache(path, "nli", read_only) if path is not None else None

    @property
    def persists(self) -> bool:
        """Whether results are written to the file (False: none, read-only or failed once)."""
        return self._disk is not None and self._disk.persists

    def key(self, premise: str, hypothesis: str) -> str:
        data = f"{self.model_id}\x1f{premise}\x1f{hypothesis}".encode()
        return hashlib.sha256(data).hexdigest()

    def get(self, key: str) -> npt.NDArray[np.float32] | None:
        hit = self._items.get(key)
        if hit is not None or self._disk is None:
            return hit
        (value,) = self._disk.get_many([key])
        if value is not None:
            self._items.put(key, value)
        return value

    def put_many(self, items: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> None:
        self._items.put_many(items)
        if self._disk is not None:
            self._disk.put_many(items)

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class NLIEngine(ReloadsAfterPickle):
    """Windowing, caching and batching around any :class:`NLIModel`.

    Args:
        model: the underlying NLI model.
        max_premise_tokens: window size for premises; ``None`` reads the model's
            ``max_length`` and keeps room for the hypothesis.
        window_overlap_sentences: sentences shared by consecutive windows.
        cache_size / cache_bytes: pair results kept in memory, bounded by entries and by bytes
            (:class:`~ragtrust.models.cache.ByteLRU`; 0 disables the cache).
        cache_path: SQLite file to persist the cache (e.g. inside a store).
        cache_read_only: read ``cache_path`` without writing it (a read-only store).
        reduce: which window wins: the most entailing one (default, SPEC section 4) or the
            most contradicting one.
    """

    model: NLIModel
    max_premise_tokens: int | None = None
    window_overlap_sentences: int = 1
    # where and how much is cached never changes a result: not part of the engine's identity
    cache_size: int = field(default=50_000, compare=False)
    cache_bytes: int = field(default=16 * MiB, compare=False)
    cache_path: str | None = field(default=None, compare=False)
    cache_read_only: bool = field(default=False, compare=False)
    reduce: Literal["entailment", "contradiction"] = "entailment"
    calls: int = field(default=0, init=False)
    pairs_scored: int = field(default=0, init=False)
    cache_hits: int = field(default=0, init=False)
    _cache: _PairCache | None = field(default=None, init=False, repr=False)
    #: premise windows by (premise hash, token limit): a premise met again (a warm query, the
    #: same document against several hypotheses) is not tokenised sentence by sentence
    #: again; off with the pair cache (``cache_size`` 0)
    _window_cache: ByteLRU[tuple[tuple[int, int], ...]] = field(
        default_factory=lambda: ByteLRU(4096, 4 * MiB), init=False, repr=False
    )
    # the cache holds a lock and maybe a SQLite connection: a pickled copy opens its own
    _transient: ClassVar[dict[str, Callable[[], Any]]] = {"_cache": lambda: None}

    @property
    def model_id(self) -> str:
        """The wrapped model's id."""
        return str(getattr(self.model, "model_id", type(self.model).__name__))

    @property
    def signal_calibration(self) -> dict[str, Any] | None:
        """The wrapped model's calibrated signal thresholds, if it has any."""
        calibration = getattr(self.model, "signal_calibration", None)
        return calibration if isinstance(calibration, dict) else None

    def warm_up(self) -> None:
        """Warm the wrapped model."""
        warm_up(self.model)

    def _cache_obj(self) -> _PairCache:
        if self._cache is None:
            self.warm_up()  # the fingerprint is known once the model is loaded
            path = Path(self.cache_path) if self.cache_path else None
            key = str(getattr(self.model, "fingerprint", "") or self.model_id)
            self._cache = _PairCache(self.cache_size, path, key, self.cache_bytes, self.cache_read_only)
        return self._cache

    def _count(self) -> Callable[[str], int]:
        counter = getattr(self.model, "count_tokens", None)
        if callable(counter):
            return counter  # type: ignore[no-any-return]
        return lambda text: int(len(text.split()) * 1.3) + 1

    def _windows(self, premise: str, hypothesis_tokens: int, max_tokens: int | None = None) -> list[tuple[int, int]]:
        limit = self.max_premise_tokens
        if limit is None:
            limit = int(getattr(self.model, "max_length", 512)) - hypothesis_tokens - 4
        if max_tokens is not None:
            limit = min(limit, max_tokens)
        limit = max(32, limit)
        if self.cache_size <= 0:
            return self._cut(premise, limit)
        key = (hashlib.sha256(premise.encode()).hexdigest(), limit)
        cached = self._window_cache.get(key)
        if cached is not None:
            return list(cached)
        windows = self._cut(premise, limit)
        self._window_cache.put(key, tuple(windows))
        return windows

    def _cut(self, premise: str, limit: int) -> list[tuple[int, int]]:
        """Sentence-bounded windows of at most ``limit`` tokens (one sentence may exceed it)."""
        count = self._count()
        if count(premise) <= limit:
            return [(0, len(premise))]
        sentences = split_sentences(premise) or []
        if not sentences:
            return [(0, len(premise))]
        sizes = [count(s.text) for s in sentences]
        windows: list[tuple[int, int]] = []
        i = 0
        while i < len(sentences):
            j, used = i, 0
            while j < len(sentences) and (used + sizes[j] <= limit or j == i):
                used += sizes[j]
                j += 1
            windows.append((sentences[i].start, sentences[j - 1].end))
            if j >= len(sentences):
                break
            i = max(i + 1, j - self.window_overlap_sentences)
        return windows

    def premise_windows(self, premise: str, hypothesis: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        """Character spans of the windows :meth:`predict` scores ``premise`` in against ``hypothesis``.

        One span ``(0, len(premise))`` when the pair fits the model; else sentence-bounded
        windows that each fit it with ``hypothesis`` (a caller that sends the windows
        itself gets each one scored as it is, not windowed again). ``max_tokens`` caps a
        window below that (at least 32 tokens; one sentence may exceed it): shorter pairs,
        each cheaper to score.
        """
        if not premise:
            return [(0, 0)]
        if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 1):
            raise InputError(f"max_tokens must be a positive integer or None, got {max_tokens!r}")
        return self._windows(premise, self._count()(hypothesis), max_tokens)

    def predict_windows(self, pairs: Sequence[tuple[str, str]]) -> list[WindowedPrediction]:
        """Window every premise, score all (window, hypothesis) pairs in one batched call."""
        for premise, hypothesis in pairs:
            if not isinstance(premise, str) or not isinstance(hypothesis, str):
                raise InputError("NLI pairs must be (premise, hypothesis) strings")
        cache = self._cache_obj()
        count = self._count()
        plans: list[tuple[list[tuple[int, int]], list[str]]] = []
        todo: dict[str, tuple[str, str]] = {}
        for premise, hypothesis in pairs:
            windows = self._windows(premise, count(hypothesis)) if premise else [(0, 0)]
            keys = []
            for start, end in windows:
                text = premise[start:end]
                key = cache.key(text, hypothesis)
                keys.append(key)
                if key not in todo and cache.get(key) is None:
                    todo[key] = (text, hypothesis)
            plans.append((windows, keys))
        total_keys = sum(len(k) for _, k in plans)
        self.cache_hits += total_keys - len(todo)
        if todo:
            # by content hash, not by arrival: the int8 model's output moves a little with the
            # pairs batched beside it, so the batches must depend on which pairs are asked,
            # not on the order a caller happened to build them in (set order varies per process)
            keys = sorted(todo)
            probs = self.model.predict([todo[k] for k in keys])
            probs = np.asarray(probs, dtype=np.float32)
            if probs.shape != (len(keys), 3):
                raise ModelError(f"NLI model returned shape {probs.shape}, expected ({len(keys)}, 3)")
            self.calls += 1
            self.pairs_scored += len(keys)
            fresh = {k: probs[i] for i, k in enumerate(keys)}
            cache.put_many(list(fresh.items()))
        else:
            fresh = {}
        results: list[WindowedPrediction] = []
        column = 0 if self.reduce == "entailment" else 2
        for windows, keys in plans:
            rows = []
            for key in keys:
                value = fresh.get(key)
                if value is None:
                    value = cache.get(key)
                if value is None:  # cache disabled and not freshly computed: cannot happen
                    raise ModelError("internal error: NLI result missing from the batch")
                rows.append(value)
            matrix = np.vstack(rows).astype(np.float32)
            results.append(WindowedPrediction(matrix, tuple(windows), int(matrix[:, column].argmax())))
        return results

    def predict(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        """One row per pair: the winning window's probabilities."""
        if not pairs:
            return np.zeros((0, 3), dtype=np.float32)
        return np.vstack([w.row for w in self.predict_windows(pairs)])


__all__ = ["NLI_CACHE_FILE", "NLIEngine", "WindowedPrediction"]
