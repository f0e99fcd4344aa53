"""Natural language inference: the shipped ONNX model, Hugging Face models, and the engine.

* :class:`OnnxNLI` — ragtrust's own cross-encoder (all-MiniLM-L6-v2 fine-tuned on public NLI
  data, int8 ONNX, see ``assets/NLI_MODEL_CARD.md``), run by ONNX Runtime without torch.
  Its sha256 is checked on load; logits are temperature-scaled (calibrated on validation).
* :class:`TransformersNLI` — any HF sequence-classification NLI checkpoint (id or local
  path: ``facebook/bart-large-mnli``, DeBERTa NLI models...). The label order is read from
  the checkpoint's ``id2label`` and mapped **by name**, never by position.
* :class:`NLIEngine` (in :mod:`ragtrust.models.nli_engine`, exported here too) — what the
  pipeline talks to: splits premises longer than the model's window into overlapping
  sentence-bounded windows (the best window wins and is reported), deduplicates and caches
  pair results by content hash (LRU, optionally persisted in SQLite), and sends everything a
  query needs in as few batched calls as possible. :func:`default_nli` builds the one the
  settings name.

Every array has the columns (entailment, neutral, contradiction).

Example:
    >>> from ragtrust.testing import LexicalNLI
    >>> engine = NLIEngine(LexicalNLI())
    >>> engine.predict([("The cat sat on the mat.", "The cat sat on the mat.")]).shape
    (1, 3)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ragtrust import registry
from ragtrust.errors import ModelError
from ragtrust.models.base import NLI_LABELS, NLIModel, ReloadsAfterPickle
from ragtrust.models.embedder import (
    ASSETS,
    SLOW_FUSIONS,
    SideBySide,
    _session,
    load_hf_classifier,
    load_tokenizer,
    onnx_logits,
    open_manifest_model,
    read_model_manifest,
    softmax,
    verified_model_files,  # noqa: F401 - the old import path
)
from ragtrust.models.nli_engine import NLIEngine, WindowedPrediction
from ragtrust.registry import register

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


_softmax = softmax  # the old name


def read_manifest(path: Path = MANIFEST_FILE) -> dict[str, Any]:
    """The shipped model's manifest (file names, sha256, temperature, window, metrics)."""
    return read_model_manifest(path, "NLI")


@register("nli", "builtin")
@dataclass
class OnnxNLI(SideBySide, ReloadsAfterPickle):
    """ragtrust's shipped int8 ONNX NLI cross-encoder (or any ONNX export with a manifest).

    Args:
        manifest_path: manifest JSON naming the ONNX file, tokenizer, sha256, temperature,
            label order and window; default: the shipped model.
        threads: CPU threads: workers scoring pairs side by side, or intra-op threads of
            batched calls.
        batch_size: pairs per inference call (pairs are length-sorted first). The int8 model
            quantises activations per call, so in a batch a pair's probabilities move with the
            pairs beside it (9 of 234 OWASP-shaped pairs change label between batch 32 and 1).
            1 scores one pair per call, side by side on single-threaded workers: 2.3x faster
            on such pairs, but with the signal ramps refitted it raised clean false positives
            in the paper suite, so it is not the default (docs/benchmarks.md, "The NLI model
            one pair per call").
        concurrent: with one pair per call, score ``threads`` pairs at once
            (:class:`~ragtrust.models.embedder.SideBySide`); ``False``: one call at a time.
        verify_checksum: check the ONNX file's sha256 against the manifest on load.
    """

    manifest_path: str | None = None
    threads: int = 2
    batch_size: int = 32
    concurrent: bool = True
    verify_checksum: bool = True
    model_id: str = "ragtrust/nli-minilm-l6-int8"
    max_length: int = 256
    #: model id plus the ONNX file's sha256 prefix (set on load): keys the pair cache, so a
    #: retrained or replaced model never reads another model's cached results
    fingerprint: str = field(default="", init=False)
    _session: Any = field(default=None, init=False, repr=False)
    _tokenizer: Any = field(default=None, init=False, repr=False)
    _perm: list[int] = field(default_factory=lambda: [0, 1, 2], init=False, repr=False)
    _pool: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)
    _transient: ClassVar[dict[str, Callable[[], Any]]] = {
        "_session": lambda: None,
        "_tokenizer": lambda: None,
        "_pool": lambda: None,
    }
    _temperature: float = field(default=1.0, init=False, repr=False)
    _calibration: tuple[tuple[str, int], dict[str, Any] | None] | None = field(default=None, init=False, repr=False)

    def warm_up(self) -> None:
        """Read the manifest, verify the checksum and open the ONNX session (idempotent)."""
        if self._session is not None:
            return
        found = open_manifest_model(
            self.manifest_path, MANIFEST_FILE, "NLI", self.verify_checksum, self.model_id, self.max_length
        )
        self.model_id, self.fingerprint, self.max_length = found.model_id, found.fingerprint, found.max_length
        self._perm = label_permutation({int(k): v for k, v in found.manifest["id2label"].items()})
        self._temperature = found.temperature
        tok = load_tokenizer(found.tokenizer_file, self.max_length)
        tok.enable_truncation(max_length=self.max_length, strategy="longest_first")
        self._tokenizer = tok
        self._session = _session(found.model_file, self._session_threads, SLOW_FUSIONS, int8_arithmetic=True)
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
        if self._workers > 1 and len(encodings) > 1:
            logits = self._side_by_side(self._session, self._inputs, encodings, "NLI")
            return softmax(logits[:, self._perm].astype(np.float32) / self._temperature)
        for idx, logits in onnx_logits(self._session, self._inputs, encodings, self.batch_size, "NLI"):
            out[idx] = softmax(logits[:, self._perm].astype(np.float32) / self._temperature)
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
        self._tok, model = load_hf_classifier(self.model, f"TransformersNLI({self.model!r})", "NLI")
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
                out[idx] = softmax(logits[:, self._perm])
        return out


def nli_spec(settings: Any = None) -> dict[str, Any]:
    """The registry spec of the NLI model ``settings.models.nli`` names.

    'builtin' is the shipped int8 model; a folder holding ``nli_manifest.json`` (or the
    manifest itself) is an ONNX model exported by ``ragtrust nli export`` (``builtin`` with
    its ``manifest_path``); a ``{type, params}`` spec is taken as it is; anything else is a
    Hugging Face model id or checkpoint folder, served by :class:`TransformersNLI`.

    Example:
        >>> nli_spec()
        {'type': 'builtin', 'params': {'threads': 2, 'batch_size': 32}}
        >>> nli_spec_of("facebook/bart-large-mnli")
        {'type': 'transformers', 'params': {'model': 'facebook/bart-large-mnli'}}
    """
    name = "builtin" if settings is None else settings.models.nli
    threads = 2 if settings is None else settings.models.threads
    batch = 32 if settings is None else settings.models.nli_batch_size
    return nli_spec_of(name, threads=threads, batch_size=batch)


def nli_spec_of(name: str | Mapping[str, Any], *, threads: int = 2, batch_size: int = 32) -> dict[str, Any]:
    """:func:`nli_spec` of a ``models.nli`` value."""
    if not isinstance(name, str):
        return registry.canonical_spec(name, "nli")
    onnx = {"threads": threads, "batch_size": batch_size}
    if name == "builtin":
        return {"type": "builtin", "params": onnx}
    if name.endswith(".json") or (Path(name).expanduser() / MANIFEST_FILE.name).is_file():
        # an exported ONNX model (``ragtrust nli export``): its folder or its manifest
        manifest = Path(name).expanduser()
        manifest = manifest if manifest.suffix == ".json" else manifest / MANIFEST_FILE.name
        return {"type": "builtin", "params": {"manifest_path": str(manifest), **onnx}}
    return {"type": "transformers", "params": {"model": name}}


def default_nli(settings: Any = None, *, cache_path: str | None = None) -> NLIEngine:
    """The NLI engine over the model ``settings.models.nli`` names (:func:`nli_spec`), built by the registry."""
    cache_size = 50_000 if settings is None else settings.models.nli_cache_size
    model: NLIModel = registry.build("nli", nli_spec(settings))
    return NLIEngine(model, cache_size=cache_size, cache_path=cache_path)


__all__ = [
    "NLIEngine",
    "OnnxNLI",
    "TransformersNLI",
    "WindowedPrediction",
    "default_nli",
    "label_permutation",
    "nli_spec",
    "nli_spec_of",
    "read_manifest",
]
