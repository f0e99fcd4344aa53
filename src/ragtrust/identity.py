"""What names a computation's inputs: stable hashes of payloads, of ragtrust's code and of loaded models.

Two kinds of kept results rely on these: a store's last scan (:mod:`ragtrust.scan.state`)
and the screening signals' per-document results (:func:`ragtrust.screening.base.score_documents`).
A kept result is reused only under the same key, and the key names everything the result
was computed from, so a new model, calibration, setting or version of ragtrust is a miss,
never a stale answer.

Example:
    >>> digest({"a": 1}) == digest({"a": 1}), digest({"a": 1}) == digest({"a": 2})
    (True, False)
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Rule:
    ...     threshold: float = 0.5
    >>> model_identity(Rule(0.7))["field.threshold"]
    0.7
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import re
import sys
import unicodedata
from importlib import metadata
from pathlib import Path
from typing import Any


def digest(payload: Any) -> str:
    """A SHA-256 of ``payload`` as canonical JSON (sorted keys; what JSON cannot hold by ``repr``)."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@functools.cache
def source_digest() -> str:
    """A hash of the code a scan row depends on: the ``ragtrust`` package's source and model manifests.

    With the Python version, its Unicode tables and the versions of the libraries that read
    text and run the models. An upgrade, or an edit of a development checkout, makes every
    kept result miss. An install without sources hashes the compiled files instead. Computed
    once per process: the code that runs is the code that was loaded.
    """
    root = Path(__file__).resolve().parent
    files = sorted(root.rglob("*.py")) or sorted(root.rglob("*.pyc"))
    h = hashlib.sha256()
    for path in [*files, *sorted(root.glob("models/assets/*.json"))]:
        h.update(str(path.relative_to(root)).encode())
        h.update(b"\x00")
        h.update(path.read_bytes())
        h.update(b"\x00")
    h.update(digest({"python": sys.version, "unicode": unicodedata.unidata_version, "packages": _versions()}).encode())
    return h.hexdigest()


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in _LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


#: libraries whose version can change a row (text handling, models, the neighbour search)
_LIBRARIES = ("numpy", "onnxruntime", "tokenizers", "faiss-cpu", "torch", "transformers", "markdown-it-py", "regex")
#: attributes that name a model or its calibration (values), and that hold its files (paths)
_NAMES = ("model_id", "model_name", "fingerprint", "calibration", "threshold", "temperature", "dim", "max_length")
_CALLS = ("signal_calibration", "resolved_threshold")
_PATHS = ("manifest_path", "model", "model_name", "model_path", "path")
_INNER = ("model", "nli", "embedder", "injection")
#: a model file larger than this is named by its size and modification time, not its bytes
_HASH_LIMIT = 1 << 20


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _stable(value: Any) -> bool:
    """Whether ``value``'s repr names it across processes: data, not objects named by their address."""
    if isinstance(value, list | tuple):
        return all(_stable(v) for v in value)
    text = repr(value)
    return (dataclasses.is_dataclass(value) or isinstance(value, re.Pattern)) and " at 0x" not in text


def _files(path: Path) -> list[Any]:
    """A local model file or folder, named by its files: small ones by content, large ones by size and time."""
    found = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    out: list[Any] = []
    for file in found[:1000]:
        stat = file.stat()
        named = _content(str(file), stat.st_size, stat.st_mtime_ns) if stat.st_size <= _HASH_LIMIT else stat.st_mtime_ns
        out.append((str(file.relative_to(path)) if file != path else file.name, stat.st_size, named))
    return out


@functools.lru_cache(maxsize=4096)
def _content(path: str, size: int, mtime_ns: int) -> str:
    """The SHA-256 of a small file, read again only when its size or modification time changes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _code(obj: Any) -> str | None:
    """The hash of the module that defines ``obj``'s class, when it lies outside ragtrust (a plugin)."""
    try:
        source = inspect.getsourcefile(type(obj))
    except (TypeError, OSError):
        return None
    if not source or Path(source).resolve().is_relative_to(Path(__file__).resolve().parent):
        return None
    try:
        return hashlib.sha256(Path(source).read_bytes()).hexdigest()
    except OSError:
        return None


def model_identity(model: Any, depth: int = 0) -> dict[str, Any]:
    """What names a model or signal object, loaded: class, ids, fingerprint, calibration, thresholds and files.

    Simple dataclass parameters (numbers, strings, flags) are included, and tables of data
    (dataclasses, regular expressions) by their ``repr``; fields left out of equality
    (``compare=False``: counters, caches) are not. A model read from a
    local file or folder is named by its files (small files by content); a class defined
    outside ragtrust (a plugin) by its module's source; the models inside (``model``,
    ``nli``, ``embedder``) in turn.
    """
    if model is None or depth > 3:
        return {}
    out: dict[str, Any] = {"type": f"{type(model).__module__}.{type(model).__qualname__}", "code": _code(model)}
    if dataclasses.is_dataclass(model):
        for f in dataclasses.fields(model):
            value = getattr(model, f.name, None)
            if not f.init or not f.compare or f.name.startswith("_"):
                continue
            if _plain(value):
                out[f"field.{f.name}"] = value
            elif f.name not in _INNER and _stable(value):  # e.g. a table of patterns: named by its repr
                out[f"field.{f.name}"] = digest(repr(value))
    for attr in _NAMES:
        value = getattr(model, attr, None)
        if _plain(value) and value is not None:
            out[attr] = value
    for attr in _CALLS:
        method = getattr(model, attr, None)
        if callable(method):
            out[attr] = method()
    for attr in _PATHS:
        value = getattr(model, attr, None)
        if isinstance(value, str | Path) and str(value) and Path(value).exists():
            out[f"files.{attr}"] = _files(Path(value))
    for attr in _INNER:
        inner = getattr(model, attr, None)
        if inner is not None and not isinstance(inner, str | Path) and inner is not model:
            out[f"inner.{attr}"] = model_identity(inner, depth + 1)
    return out


__all__ = ["digest", "model_identity", "source_digest"]
