"""Prompt-injection classifiers: the shipped ONNX model and Hugging Face models.

A classifier answers one question per text: *does this text try to instruct the model or
agent that reads it?* ``predict(texts)`` returns one probability per text.

* :class:`OnnxInjection` — ragtrust's own classifier (all-MiniLM-L6-v2 fine-tuned by
  ``ragtrust injection train``, int8 ONNX, see ``assets/INJECTION_MODEL_CARD.md``), run by
  ONNX Runtime without torch. Its sha256 is checked on load, its logits are
  temperature-scaled, and its manifest carries the threshold calibrated to a false-positive
  budget on clean development documents (``ragtrust injection calibrate``).
* :class:`TransformersInjection` — any Hugging Face sequence classifier by id or local
  path (a DeBERTa prompt-injection model a user has, for example). The positive class is
  found **by label name** (``injection``, ``jailbreak``, ``malicious``, ``unsafe``...).

Example:
    >>> injection_label_index({0: "SAFE", 1: "INJECTION"})
    1
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragtrust.errors import ModelError
from ragtrust.models.base import ReloadsAfterPickle
from ragtrust.models.embedder import (
    ASSETS,
    SLOW_FUSIONS,
    SideBySide,
    _pad,  # noqa: F401 - the old import path
    _session,
    load_hf_classifier,
    load_tokenizer,
    onnx_logits,
    open_manifest_model,
    read_model_manifest,
    softmax,
    verified_model_files,  # noqa: F401 - the old import path
)

MANIFEST_FILE = ASSETS / "injection_manifest.json"
#: label-name fragments of the positive ("tries to instruct the reader") class
_POSITIVE = ("inject", "jailbreak", "malicious", "unsafe", "attack", "prompt_attack", "harmful")
_NEGATIVE = ("benign", "safe", "legit", "clean", "normal")
#: visible characters over which the share of letters a model cannot read is measured (about
#: eight English words): enough that a foreign name or word in English text stays readable
UNKNOWN_STRETCH = 40


@runtime_checkable
class InjectionModel(Protocol):
    """A binary injection classifier: ``predict`` gives P(injection) per text."""

    @property
    def model_id(self) -> str:
        """A stable identifier (recorded in results and cache keys)."""
        ...

    def predict(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Probability that each text is an injection, shape ``(n,)``."""
        ...


def letter_script(ch: str) -> str:
    """The script of a letter by its Unicode name (``LATIN``, ``CYRILLIC``, ``ARABIC``...).

    A letter whose compatibility form starts with an ASCII letter (``ª``, ``ﬁ``, fullwidth
    Latin) is ``LATIN``; a character without a name is ``UNKNOWN``.

    Example:
        >>> [letter_script(c) for c in "aéдא한ﬁ"]
        ['LATIN', 'LATIN', 'CYRILLIC', 'HEBREW', 'HANGUL', 'LATIN']
    """
    if ch.isascii():
        return "LATIN"
    folded = unicodedata.normalize("NFKD", ch)
    if folded[:1].isascii() and folded[:1].isalpha():
        return "LATIN"
    return unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]


def _unknown(
    text: str,
    ids: Sequence[int],
    offsets: Sequence[tuple[int, int]],
    unk: int | None,
    scripts: frozenset[str] | None = None,
) -> float:
    """The share of ``text``'s visible characters that are letters the model cannot read, where it is highest.

    Those are the non-ASCII letters inside ``unk`` pieces (an over-long ASCII run, base64, is
    one unknown piece too, but not a script the model cannot read) and, when ``scripts`` names
    the scripts the model was trained and evaluated on, letters of any other script. The share
    is that of the stretch of :data:`UNKNOWN_STRETCH` visible characters that holds the most of
    them (of the whole text when it is shorter): over a whole window, one sentence in another
    script among 80 words of English was too small a share to count, and went unscreened.
    """
    if unk is None and scripts is None:
        return 0.0

    def lost(i: int, c: str) -> bool:
        if not c.isalpha() or c.isascii():
            return False
        return i == unk or (scripts is not None and letter_script(c) not in scripts)

    flags = [lost(i, c) for i, (a, b) in zip(ids, offsets, strict=True) if b > a for c in text[a:b] if not c.isspace()]
    if not flags:
        return 0.0
    if len(flags) <= UNKNOWN_STRETCH:
        return sum(flags) / len(flags)
    most = gone = sum(flags[:UNKNOWN_STRETCH])
    for k in range(UNKNOWN_STRETCH, len(flags)):
        gone += flags[k] - flags[k - UNKNOWN_STRETCH]
        most = max(most, gone)
    return most / UNKNOWN_STRETCH


def model_scripts(value: object, where: str) -> frozenset[str] | None:
    """A manifest's or caller's ``scripts`` (``None``: every script the vocabulary spells counts as read).

    Raises:
        ModelError: not a list of script names.
    """
    if value is None:
        return None
    names = value if isinstance(value, list | tuple) else None
    if names is None or not all(isinstance(v, str) and v for v in names):
        raise ModelError(f"{where}: 'scripts' must be a list of Unicode script names such as ['LATIN'], got {value!r}")
    return frozenset(v.upper() for v in names)


def injection_label_index(id2label: dict[int, str] | dict[str, str]) -> int:
    """Column of the positive class, matched by label name.

    Raises:
        ModelError: the labels name no injection class (and are not a plain two-label head).
    """
    names = {int(k): str(v).strip().lower() for k, v in id2label.items()}
    positive = [i for i, n in names.items() if any(p in n for p in _POSITIVE) and not n.startswith("non")]
    if len(positive) == 1:
        return positive[0]
    negative = [i for i, n in names.items() if any(p in n for p in _NEGATIVE)]
    if len(names) == 2 and len(negative) == 1:
        return next(i for i in names if i != negative[0])
    if len(names) == 2 and set(names.values()) == {"label_0", "label_1"}:
        return 1
    raise ModelError(f"model labels {dict(id2label)} name no injection class; expected e.g. SAFE / INJECTION")


def read_manifest(path: Path = MANIFEST_FILE) -> dict[str, Any]:
    """An injection model's manifest (files, sha256, temperature, labels, calibration)."""
    return read_model_manifest(path, "injection")


_softmax = softmax  # the old name


@dataclass
class OnnxInjection(SideBySide, ReloadsAfterPickle):
    """ragtrust's shipped int8 ONNX injection classifier (or any export with a manifest).

    Args:
        manifest_path: manifest JSON; default: the shipped model.
        threads: ONNX Runtime intra-op threads.
        batch_size: texts per inference call (length-sorted first). 1 by default: the int8
            model quantises activations per call, so in a batch a text's probability moves with
            the texts scored beside it (by up to 0.2-0.6 measured), and a document's screening
            could change with the documents retrieved with it. One text per call costs +2.5%
            per query and +13% in a scan (docs/benchmarks.md, "One window per inference call").
        concurrent: with one text per call and ``threads`` > 1, run the session on one intra-op
            thread and score ``threads`` texts at once from worker threads: a call on one short
            window splits badly across threads, so this halves the signal's model time on 2
            cores with the same outputs to the bit (docs/benchmarks.md, "Injection windows
            scored side by side"). ``False``: one call at a time on ``threads`` intra-op threads.
        verify_checksum: check the ONNX file's sha256 against the manifest on load.
    """

    manifest_path: str | None = None
    threads: int = 2
    batch_size: int = 1
    concurrent: bool = True
    verify_checksum: bool = True
    model_id: str = "ragtrust/injection-minilm-l6-int8"
    max_length: int = 128
    fingerprint: str = field(default="", init=False)
    calibration: dict[str, Any] | None = field(default=None, init=False)
    _session: Any = field(default=None, init=False, repr=False)
    _tokenizer: Any = field(default=None, init=False, repr=False)
    _positive: int = field(default=1, init=False, repr=False)
    _temperature: float = field(default=1.0, init=False, repr=False)
    _unk: int | None = field(default=None, init=False, repr=False)
    _scripts: frozenset[str] | None = field(default=None, init=False, repr=False)
    _pool: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)
    _transient: ClassVar[dict[str, Callable[[], Any]]] = {
        "_session": lambda: None,
        "_tokenizer": lambda: None,
        "_pool": lambda: None,
    }

    def warm_up(self) -> None:
        """Read the manifest, verify the checksum and open the ONNX session (idempotent)."""
        if self._session is not None:
            return
        found = open_manifest_model(
            self.manifest_path, MANIFEST_FILE, "injection", self.verify_checksum, self.model_id, self.max_length
        )
        try:
            positive = injection_label_index({int(k): v for k, v in found.manifest["id2label"].items()})
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelError(f"{found.manifest_file}: malformed injection manifest ({exc!r})") from exc
        self.model_id, self.fingerprint, self.max_length = found.model_id, found.fingerprint, found.max_length
        self._positive = positive
        self._temperature = found.temperature
        self._scripts = model_scripts(found.manifest.get("scripts"), str(found.manifest_file))
        calibration = found.manifest.get("calibration")
        self.calibration = (
            calibration if isinstance(calibration, dict) and calibration.get("sha256") == found.sha else None
        )
        tok = load_tokenizer(found.tokenizer_file, self.max_length)
        tok.enable_truncation(max_length=self.max_length)
        try:
            session = _session(found.model_file, self._session_threads, SLOW_FUSIONS, int8_arithmetic=True)
        except Exception as exc:
            raise ModelError(f"{found.model_file}: ONNX Runtime cannot load the injection model ({exc})") from exc
        self._tokenizer = tok
        self._unk = tok.token_to_id("[UNK]")
        self._session = session
        self._inputs = {i.name for i in session.get_inputs()}

    def unknown_share(self, texts: Sequence[str]) -> list[float]:
        """Per text, the share of its visible characters the model cannot read.

        Letters the vocabulary lacks (read as ``[UNK]``) and, when the manifest names the
        ``scripts`` the model was trained and evaluated on (the shipped model: ``LATIN``),
        letters of other scripts, which the vocabulary spells letter by letter. Characters, not
        pieces: a word the vocabulary does not know is one ``[UNK]`` however long. Only the first
        ``max_length`` pieces are read, as by :meth:`predict`.
        """
        self.warm_up()
        encodings = self._tokenizer.encode_batch(list(texts))
        return [_unknown(t, e.ids, e.offsets, self._unk, self._scripts) for t, e in zip(texts, encodings, strict=True)]

    def read_extent(self, texts: Sequence[str]) -> list[int]:
        """Per text, how many of its characters :meth:`predict` reads: all, unless its pieces pass ``max_length``.

        A text cut at ``max_length`` pieces is read up to the end of its last piece inside the limit.
        """
        self.warm_up()
        return read_extents(self._tokenizer, texts)

    def predict(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Temperature-scaled P(injection) per text."""
        self.warm_up()
        out = np.zeros(len(texts), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        if self._workers > 1 and len(encodings) > 1:
            logits = self._side_by_side(self._session, self._inputs, encodings, "injection")
            out[:] = softmax(logits.astype(np.float32) / self._temperature)[:, self._positive]
            return out
        for idx, logits in onnx_logits(self._session, self._inputs, encodings, self.batch_size, "injection"):
            out[idx] = softmax(logits.astype(np.float32) / self._temperature)[:, self._positive]
        return out


def read_extents(tokenizer: Any, texts: Sequence[str]) -> list[int]:
    """Per text, how many characters a ``tokenizers.Tokenizer`` truncating at its limit reads.

    All of a text that fits; of a longer one, up to the end of its last piece inside the limit.
    """
    encodings = tokenizer.encode_batch(list(texts))
    return [
        max(end for _, end in e.offsets) if e.overflowing else len(t) for t, e in zip(texts, encodings, strict=True)
    ]


@dataclass
class TransformersInjection(ReloadsAfterPickle):
    """Any Hugging Face sequence classifier for injections, by id or local path ([train] extra).

    Args:
        model: hub id or local folder (offline machines need a local path or a cached model).
        device: torch device.
        batch_size: texts per forward pass.
        max_length: token limit per text.
        scripts: Unicode scripts the model reads (e.g. ``("LATIN",)``); letters of others count
            as unreadable. ``None`` (default): only letters the tokenizer cannot spell do.
    """

    model: str
    device: str = "cpu"
    batch_size: int = 16
    max_length: int = 512
    model_id: str = ""
    scripts: tuple[str, ...] | None = None
    calibration: dict[str, Any] | None = field(default=None, init=False)
    _model: Any = field(default=None, init=False, repr=False)
    _tok: Any = field(default=None, init=False, repr=False)
    _positive: int = field(default=1, init=False, repr=False)
    _transient: ClassVar[dict[str, Callable[[], Any]]] = {"_model": lambda: None, "_tok": lambda: None}

    def __post_init__(self) -> None:
        """The model name is the id."""
        self.model_id = self.model_id or self.model

    @property
    def fingerprint(self) -> str:
        """Cache key prefix (the model id)."""
        return self.model_id

    def warm_up(self) -> None:
        """Load the checkpoint and find its injection label by name."""
        if self._model is not None:
            return
        tok, model = load_hf_classifier(self.model, f"TransformersInjection({self.model!r})", "injection")
        self._positive = injection_label_index(model.config.id2label)
        self._tok = tok
        self._model = model.to(self.device).eval()

    def unknown_share(self, texts: Sequence[str]) -> list[float]:
        """Per text, the share of its visible characters the model cannot read.

        Letters the tokenizer reads as its unknown token and, with ``scripts``, letters of other scripts.
        """
        self.warm_up()
        scripts = model_scripts(self.scripts, f"TransformersInjection({self.model!r})")
        out = []
        for text in texts:
            enc = self._tok(text, truncation=True, max_length=self.max_length, return_offsets_mapping=True)
            out.append(_unknown(text, enc["input_ids"], enc["offset_mapping"], self._tok.unk_token_id, scripts))
        return out

    def read_extent(self, texts: Sequence[str]) -> list[int]:
        """Per text, how many of its characters :meth:`predict` reads: all, unless its tokens pass ``max_length``."""
        self.warm_up()
        keep = self.max_length - self._tok.num_special_tokens_to_add()
        out = []
        for text in texts:
            offsets = self._tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
            out.append(len(text) if len(offsets) <= keep else int(offsets[keep - 1][1]))
        return out

    def predict(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """P(injection) per text."""
        import torch

        self.warm_up()
        out = np.zeros(len(texts), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                try:
                    enc = self._tok(
                        [texts[i] for i in idx],
                        truncation=True,
                        max_length=self.max_length,
                        padding=True,
                        return_tensors="pt",
                    ).to(self.device)
                    logits = self._model(**enc).logits.float().cpu().numpy()
                except Exception as exc:
                    raise ModelError(f"injection inference failed for {self.model_id}: {exc}") from exc
                out[idx] = softmax(logits)[:, self._positive]
        return out


def load_injection_model(name: str = "builtin", *, threads: int = 2) -> InjectionModel:
    """``builtin`` (the shipped model), an exported folder / manifest, or a Hugging Face id / path."""
    if name == "builtin":
        return OnnxInjection(threads=threads)
    path = Path(name).expanduser()
    if path.suffix == ".json":
        return OnnxInjection(manifest_path=str(path), threads=threads)
    if (path / MANIFEST_FILE.name).is_file():
        return OnnxInjection(manifest_path=str(path / MANIFEST_FILE.name), threads=threads)
    return TransformersInjection(model=name)


__all__ = [
    "MANIFEST_FILE",
    "InjectionModel",
    "OnnxInjection",
    "TransformersInjection",
    "injection_label_index",
    "load_injection_model",
    "read_extents",
    "read_manifest",
]
