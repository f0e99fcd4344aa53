"""Natural language inference: the shipped ONNX model, Hugging Face models, and the engine.

* :class:`OnnxNLI` — ragtrust's own cross-encoder (all-MiniLM-L6-v2 fine-tuned on public NLI
  data, int8 ONNX, see ``assets/NLI_MODEL_CARD.md``), run by ONNX Runtime without torch.
  Its sha256 is checked on load; logits are temperature-scaled (calibrated on validation).
* :class:`TransformersNLI` — any HF sequence-classification NLI checkpoint (id or local
  path: ``facebook/bart-large-mnli``, DeBERTa NLI models...). The label order is read from
  the checkpoint's ``id2label`` and mapped **by name**, never by position.
* :class:`NLIEngine` — what the pipeline talks to: splits premises longer than the model's
  window into overlapping sentence-bounded windows (the best window wins and is reported),
  deduplicates and caches pair results by content hash (LRU, optionally persisted in
  SQLite), and sends everything a query needs in as few batched calls as possible.

Every array has the columns (entailment, neutral, contradiction).

Example:
    >>> from ragtrust.testing import LexicalNLI
    >>> engine = NLIEngine(LexicalNLI())
    >>> engine.predict([("The cat sat on the mat.", "The cat sat on the mat.")]).shape
    (1, 3)
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from ragtrust.errors import InputError, MissingDependencyError, ModelError
from ragtrust.models.base import NLI_LABELS, NLIModel, ReloadsAfterPickle
from ragtrust.models.embedder import (
    ASSETS,
    SLOW_FUSIONS,
    _session,
    load_tokenizer,
    read_model_manifest,
    verified_model_files,
)
from ragtrust.registry import register
from ragtrust.text import split_sentences

MANIFEST_FILE = ASSETS / "nli_manifest.json"


def label_permutation(id2label: dict[int, str] | dict[str, str]) -> list[int]:
    """Column indices that reorder a model's logits to (entailment, neutral, contradiction).

    Labels are matched by name (case-insensitive prefixes ``entail``, ``neutral``,
    ``contradict``), so bart-large-mnli (contradiction, neutral, entailment) and DeBERTa
    orders both map correctly.

    Example:
        >>> label_permutation({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"})
        [2, 1, 0]
    """
    by_name: dict[str, int] = {}
    for raw_index, raw_name in id2label.items():
        name = str(raw_name).strip().lower()
        for wanted in NLI_LABELS:
            if name.startswith(wanted[:7]):
                by_name[wanted] = int(raw_index)
    missing = [w for w in NLI_LABELS if w not in by_name]
    if missing or len(id2label) != 3:
        raise ModelError(
            f"model labels {dict(id2label)} do not name entailment/neutral/contradiction "
            f"(missing: {missing}); only 3-way NLI checkpoints are supported"
        )
    return [by_name[w] for w in NLI_LABELS]


def _softmax(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    result: npt.NDArray[np.float32] = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    return result


def read_manifest(path: Path = MANIFEST_FILE) -> dict[str, Any]:
    """The shipped model's manifest (file names, sha256, temperature, window, metrics)."""
    return read_model_manifest(path, "NLI")


@register("nli", "builtin")
@dataclass
class OnnxNLI(ReloadsAfterPickle):
    """ragtrust's shipped int8 ONNX NLI cross-encoder (or any ONNX export with a manifest).

    Args:
        manifest_path: manifest JSON naming the ONNX file, tokenizer, sha256, temperature,
            label order and window; default: the shipped model.
        threads: ONNX Runtime intra-op threads.
        batch_size: pairs per inference call (pairs are length-sorted first).
        verify_checksum: check the ONNX file's sha256 against the manifest on load.
    """

    manifest_path: str | None = None
    threads: int = 2
    batch_size: int = 32
    verify_checksum: bool = True
    model_id: str = "ragtrust/nli-minilm-l6-int8"
    max_length: int = 256
    #: model id plus the ONNX file's sha256 prefix (set on load): keys the pair cache, so a
    #: retrained or replaced model never reads another model's cached results
    fingerprint: str = field(default="", init=False)
    _session: Any = field(default=None, init=False, repr=False)
    _tokenizer: Any = field(default=None, init=False, repr=False)
    _perm: list[int] = field(default_factory=lambda: [0, 1, 2], init=False, repr=False)
    _transient: ClassVar[dict[str, Callable[[], Any]]] = {"_session": lambda: None, "_tokenizer": lambda: None}
    _temperature: float = field(default=1.0, init=False, repr=False)
    _calibration: tuple[tuple[str, int], dict[str, Any] | None] | None = field(default=None, init=False, repr=False)

    def warm_up(self) -> None:
        """Read the manifest, verify the checksum and open the ONNX session (idempotent)."""
        if self._session is not None:
            return
        manifest_file = Path(self.manifest_path) if self.manifest_path else MANIFEST_FILE
        manifest = read_manifest(manifest_file)
        model_file, sha, tokenizer_file = verified_model_files(manifest_file, manifest, "NLI", self.verify_checksum)
        self.model_id = manifest.get("model_id", self.model_id)
        self.fingerprint = f"{self.model_id}@{sha[:16]}"
        self.max_length = int(manifest.get("max_length", self.max_length))
        self._perm = label_permutation({int(k): v for k, v in manifest["id2label"].items()})
        self._temperature = float(manifest.get("temperature", 1.0))
        tok = load_tokenizer(tokenizer_file, self.max_length)
        tok.enable_truncation(max_length=self.max_length, strategy="longest_first")
        self._tokenizer = tok
        self._session = _session(model_file, self.threads, SLOW_FUSIONS)
        self._inputs = {i.name for i in self._session.get_inputs()}

    @property
    def signal_calibration(self) -> dict[str, Any] | None:
        """Per-signal contradiction ramps calibrated for this model (manifest ``signal_calibration``).

        ``None`` when the manifest has none, or when it was calibrated for another ONNX file
        (its ``nli_sha256`` differs from the manifest's ``sha256``): a re-released model
        must be recalibrated (``ragtrust nli calibrate``), not use stale thresholds.
        """
        path = Path(self.manifest_path) if self.manifest_path else MANIFEST_FILE
        # read once per manifest version: the signals ask on every query
        stamp = (str(path), path.stat().st_mtime_ns if path.exists() else -1)
        if self._calibration is not None and self._calibration[0] == stamp:
            return self._calibration[1]
        manifest = read_manifest(path)
        calibration = manifest.get("signal_calibration")
        signals = None
        if isinstance(calibration, dict) and calibration.get("nli_sha256") == manifest.get("sha256"):
            found = calibration.get("signals")
            signals = found if isinstance(found, dict) else None
        self._calibration = (stamp, dict(signals) if signals is not None else None)
        return self._calibration[1]

    def count_tokens(self, text: str) -> int:
        """Word-piece tokens of ``text`` (without special tokens)."""
        self.warm_up()
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def predict(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        """Calibrated (entailment, neutral, contradiction) probabilities."""
        self.warm_up()
        out = np.zeros((len(pairs), 3), dtype=np.float32)
        if not pairs:
            return out
        encodings = self._tokenizer.encode_batch([(p, h) for p, h in pairs])
        order = sorted(range(len(pairs)), key=lambda i: len(encodings[i].ids))
        from ragtrust.models.embedder import _pad

        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            feeds = {k: v for k, v in _pad([encodings[i] for i in idx]).items() if k in self._inputs}
            try:
                (logits,) = self._session.run(None, feeds)
            except Exception as exc:
                raise ModelError(f"NLI inference failed: {exc}") from exc
            out[idx] = _softmax(logits[:, self._perm].astype(np.float32) / self._temperature)
        return out


@register("nli", "transformers")
@dataclass
class TransformersNLI(ReloadsAfterPickle):
    """Any Hugging Face NLI checkpoint by id or local path (needs the ``[train]`` extra).

    Args:
        model: hub id (``facebook/bart-large-mnli``) or a local directory.
        device: torch device (``cpu``, ``cuda``).
        batch_size: pairs per forward pass.
        max_length: token limit per pair (the premise is truncated first).
    """

    model: str
    device: str = "cpu"
    batch_size: int = 16
    max_length: int = 512
    model_id: str = ""
    _model: Any = field(default=None, init=False, repr=False)
    _tok: Any = field(default=None, init=False, repr=False)
    _transient: ClassVar[dict[str, Callable[[], Any]]] = {"_model": lambda: None, "_tok": lambda: None}
    _perm: list[int] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        """The model name is the id."""
        self.model_id = self.model_id or self.model

    def warm_up(self) -> None:
        """Import torch/transformers, load the checkpoint and map its labels by name."""
        if self._model is not None:
            return
        try:
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as exc:
            raise MissingDependencyError(f"TransformersNLI({self.model!r})", 'pip install "ragtrust[train]"') from exc
        try:
            self._tok = AutoTokenizer.from_pretrained(self.model)
            model = AutoModelForSequenceClassification.from_pretrained(self.model)
        except Exception as exc:
            raise ModelError(
                f"cannot load NLI model {self.model!r}: {exc}. Offline machines need a local path "
                "or a model already in the Hugging Face cache"
            ) from exc
        self._perm = label_permutation(model.config.id2label)
        self._model = model.to(self.device).eval()

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the model's tokenizer."""
        self.warm_up()
        return len(self._tok(text, add_special_tokens=False)["input_ids"])

    def predict(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        """(entailment, neutral, contradiction) probabilities, reordered by label name."""
        import torch

        self.warm_up()
        out = np.zeros((len(pairs), 3), dtype=np.float32)
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                try:
                    enc = self._tok(
                        [pairs[i][0] for i in idx],
                        [pairs[i][1] for i in idx],
                        truncation="longest_first",
                        max_length=self.max_length,
                        padding=True,
                        return_tensors="pt",
                    ).to(self.device)
                    logits = self._model(**enc).logits.float().cpu().numpy()
                except Exception as exc:
                    raise ModelError(f"NLI inference failed for {self.model_id}: {exc}") from exc
                out[idx] = _softmax(logits[:, self._perm])
        return out


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
    """LRU of pair results keyed by content hash, optionally persisted in SQLite."""

    def __init__(self, size: int, path: Path | None, model_id: str) -> None:
        self.size = size
        self.model_id = model_id
        self._items: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS nli (key TEXT PRIMARY KEY, probs BLOB NOT NULL)")
            self._db.commit()

    def key(self, premise: str, hypothesis: str) -> str:
        data = f"{self.model_id}\x1f{premise}\x1f{hypothesis}".encode()
        return hashlib.sha256(data).hexdigest()

    def get(self, key: str) -> npt.NDArray[np.float32] | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            if self._db is not None:
                row = self._db.execute("SELECT probs FROM nli WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    value = np.frombuffer(row[0], dtype=np.float32).copy()
                    self._put(key, value)
                    return value
        return None

    def _put(self, key: str, value: npt.NDArray[np.float32]) -> None:
        if self.size <= 0:
            return
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def put_many(self, items: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> None:
        with self._lock:
            for key, value in items:
                self._put(key, value)
            if self._db is not None and items:
                self._db.executemany(
                    "INSERT OR REPLACE INTO nli (key, probs) VALUES (?, ?)",
                    [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items],
                )
                self._db.commit()

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
        cache_size: pair results kept in memory (0 disables the cache).
        cache_path: SQLite file to persist the cache (e.g. inside a store).
        reduce: which window wins: the most entailing one (default, SPEC section 4) or the
            most contradicting one.
    """

    model: NLIModel
    max_premise_tokens: int | None = None
    window_overlap_sentences: int = 1
    cache_size: int = 50_000
    cache_path: str | None = None
    reduce: Literal["entailment", "contradiction"] = "entailment"
    calls: int = field(default=0, init=False)
    pairs_scored: int = field(default=0, init=False)
    cache_hits: int = field(default=0, init=False)
    _cache: _PairCache | None = field(default=None, init=False, repr=False)
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
        warm = getattr(self.model, "warm_up", None)
        if callable(warm):
            warm()

    def _cache_obj(self) -> _PairCache:
        if self._cache is None:
            self.warm_up()  # the fingerprint is known once the model is loaded
            path = Path(self.cache_path) if self.cache_path else None
            key = str(getattr(self.model, "fingerprint", "") or self.model_id)
            self._cache = _PairCache(self.cache_size, path, key)
        return self._cache

    def _count(self) -> Callable[[str], int]:
        counter = getattr(self.model, "count_tokens", None)
        if callable(counter):
            return counter  # type: ignore[no-any-return]
        return lambda text: int(len(text.split()) * 1.3) + 1

    def _windows(self, premise: str, hypothesis_tokens: int) -> list[tuple[int, int]]:
        count = self._count()
        limit = self.max_premise_tokens
        if limit is None:
            limit = int(getattr(self.model, "max_length", 512)) - hypothesis_tokens - 4
        limit = max(32, limit)
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
            keys = list(todo)
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


def default_nli(settings: Any = None, *, cache_path: str | None = None) -> NLIEngine:
    """The NLI engine named by ``settings.models.nli``.

    'builtin' is the shipped int8 model; a folder holding ``nli_manifest.json`` (or the
    manifest itself) is an ONNX model exported by ``ragtrust nli export``; anything else is
    a Hugging Face model id or checkpoint folder, served by :class:`TransformersNLI`.
    """
    name = "builtin" if settings is None else settings.models.nli
    threads = 2 if settings is None else settings.models.threads
    batch = 32 if settings is None else settings.models.nli_batch_size
    cache_size = 50_000 if settings is None else settings.models.nli_cache_size
    model: NLIModel
    if name == "builtin":
        model = OnnxNLI(threads=threads, batch_size=batch)
    elif name.endswith(".json") or (Path(name).expanduser() / MANIFEST_FILE.name).is_file():
        # an exported ONNX model (``ragtrust nli export``): its folder or its manifest
        manifest = Path(name).expanduser()
        manifest = manifest if manifest.suffix == ".json" else manifest / MANIFEST_FILE.name
        model = OnnxNLI(manifest_path=str(manifest), threads=threads, batch_size=batch)
    else:
        model = TransformersNLI(model=name)
    return NLIEngine(model, cache_size=cache_size, cache_path=cache_path)


__all__ = [
    "NLIEngine",
    "OnnxNLI",
    "TransformersNLI",
    "WindowedPrediction",
    "default_nli",
    "label_permutation",
    "read_manifest",
]
