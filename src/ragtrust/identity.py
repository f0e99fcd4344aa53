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


def source_digest() -> str:
    """A hash of the code a kept result depends on: the ``ragtrust`` package's source and model manifests.

    With the Python version, its Unicode tables and the versions of the libraries that read
    text and run the models. An upgrade, or an edit of a development checkout, makes every
    kept result miss. An install without sources hashes the compiled files instead. The code
    is read once per process (the code that runs is the code that was loaded); the model
    manifests on every call, since a calibration rewrites them under a running server.
    """
    root = Path(__file__).resolve().parent
    manifests = [(str(path.relative_to(root)), *_files(path)) for path in sorted(root.glob("models/assets/*.json"))]
    return digest({"code": _code_digest(), "manifests": manifests})


@functools.cache
def _code_digest() -> str:
    root = Path(__file__).resolve().parent
    files = sorted(root.rglob("*.py")) or sorted(root.rglob("*.pyc"))
    h = hashlib.sha256()
    for path in files:
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


#: the key under which :func:`model_identity` lists the parameters it could not name
UNNAMED = "unnamed"


def complete(identity: Any) -> bool:
    """Whether :func:`model_identity` named every parameter (no :data:`UNNAMED` anywhere inside)."""
    if isinstance(identity, dict):
        return UNNAMED not in identity and all(complete(v) for v in identity.values())
    return True


def _scalar(value: Any) -> Any:
    """A numpy scalar as the Python number it holds, a path as its text (other values unchanged)."""
    if isinstance(value, Path):
        return str(value)
    item = getattr(value, "item", None)
    return item() if type(value).__module__ == "numpy" and callable(item) and getattr(value, "ndim", 1) == 0 else value


def _named(value: Any) -> bool:
    """Whether ``value`` is a model-like object that names itself (a model id or fingerprint)."""
    return any(isinstance(getattr(value, attr, None), str) for attr in ("model_id", "fingerprint", "model_name"))


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


def _parameters(model: Any, depth: int) -> dict[str, Any]:
    """A model's dataclass parameters by name, and :data:`UNNAMED` for those that cannot be named."""
    out: dict[str, Any] = {}
    unnamed: list[str] = []
    if dataclasses.is_dataclass(model):
        for f in dataclasses.fields(model):
            value = _scalar(getattr(model, f.name, None))
            if not f.init or not f.compare or f.name.startswith("_") or f.name in _INNER:
                continue  # the models inside are named by model_identity
            if _plain(value):
                out[f"field.{f.name}"] = value
            elif _stable(value):  # e.g. a table of patterns: named by its repr
                out[f"field.{f.name}"] = digest(repr(value))
            elif _named(value):  # another model, under another name
                out[f"inner.{f.name}"] = model_identity(value, depth + 1)
            else:
                unnamed.append(f.name)
    elif depth and not _named(model):
        unnamed.append("(the object itself)")
    if unnamed:
        out[UNNAMED] = unnamed
    return out


def model_identity(model: Any, depth: int = 0) -> dict[str, Any]:
    """What names a model or signal object, loaded: class, ids, fingerprint, calibration, thresholds and files.

    Simple dataclass parameters (numbers, strings, flags) are included, and tables of data
    (dataclasses, regular expressions) by their ``repr``; fields left out of equality
    (``compare=False``: counters, caches) are not; another model in a field by its own
    identity. A parameter it cannot name (an object that names neither itself nor its data)
    is listed under :data:`UNNAMED`, so a caller can refuse to reuse anything
    (:func:`complete`). A model read from a
    local file or folder is named by its files (small files by content); a class defined
    outside ragtrust (a plugin) by its module's source; the models inside (``model``,
    ``nli``, ``embedder``) in turn.
    """
    if model is None or depth > 3:
        return {}
    out: dict[str, Any] = {"type": f"{type(model).__module__}.{type(model).__qualname__}", "code": _code(model)}
    out.update(_parameters(model, depth))
    for attr in _NAMES:
        value = _scalar(getattr(model, attr, None))
        if _plain(value) and value is not None:
            out[attr] = value
    for attr in _CALLS:
        value = getattr(model, attr, None)  # a method, or a property (a calibration read from a file)
        if callable(value):
            value = value()
        if value is not None:
            out[attr] = value
    for attr in _PATHS:
        value = getattr(model, attr, None)
        if isinstance(value, str | Path) and str(value) and Path(value).exists():
            out[f"files.{attr}"] = _files(Path(value))
    for attr in _INNER:
        inner = getattr(model, attr, None)
        if inner is not None and not isinstance(inner, str | Path) and inner is not model:
            out[f"inner.{attr}"] = model_identity(inner, depth + 1)
    return out


__all__ = ["UNNAMED", "complete", "digest", "model_identity", "source_digest"]
