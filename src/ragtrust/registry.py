"""One registry for every pluggable component; built-ins use the same door as plugins.

Components are named in configuration as ``{"type": "...", "params": {...}}`` (or by name
alone); the flat form ``{"type": "...", **params}`` that a calibration report suggests is
accepted too and means the same::

    >>> from ragtrust.registry import build, canonical_spec, registered
    >>> "extractive" in registered("generator")
    True
    >>> canonical_spec({"type": "intra_consistency", "low": 0.2, "high": 0.6})
    {'type': 'intra_consistency', 'params': {'low': 0.2, 'high': 0.6}}

Third-party packages register through the ``ragtrust.plugins`` entry-point group: each
entry point is a module that calls :func:`register` when imported.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any, TypeVar

from ragtrust.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

KINDS = ("signal", "retriever", "generator", "extractor", "nli", "embedder")
_REGISTRY: dict[str, dict[str, Callable[..., Any]]] = {kind: {} for kind in KINDS}
#: modules whose import registers the built-ins of each kind (imported lazily)
_BUILTIN_MODULES = {
    "signal": ("ragtrust.screening", "ragtrust.screening.provenance"),
    "retriever": ("ragtrust.retrieval",),
    "generator": ("ragtrust.generation",),
    "extractor": ("ragtrust.evidence",),
    "nli": ("ragtrust.models.nli",),
    "embedder": ("ragtrust.models.embedder",),
}
_loaded: set[str] = set()


def register(kind: str, name: str) -> Callable[[F], F]:
    """Class decorator registering a component factory under ``kind``/``name``."""
    if kind not in _REGISTRY:
        raise ConfigError(f"unknown component kind {kind!r}; expected one of {', '.join(KINDS)}")

    def deco(factory: F) -> F:
        _REGISTRY[kind][name] = factory
        return factory

    return deco


def _load(kind: str) -> None:
    if kind in _loaded:
        return
    _loaded.add(kind)
    for module in _BUILTIN_MODULES.get(kind, ()):
        importlib.import_module(module)
    for ep in entry_points(group="ragtrust.plugins"):
        ep.load()


def registered(kind: str) -> list[str]:
    """Sorted names registered for ``kind``."""
    if kind not in _REGISTRY:
        raise ConfigError(f"unknown component kind {kind!r}; expected one of {', '.join(KINDS)}")
    _load(kind)
    return sorted(_REGISTRY[kind])


def canonical_spec(spec: str | Mapping[str, Any], kind: str = "component") -> dict[str, Any]:
    """``{"type": name, "params": {...}}`` of a name, a canonical spec or a flat one.

    A flat spec (``{"type": name, **params}``, as a calibration's ``suggested_spec`` writes
    it) has no ``params`` key; a canonical one has nothing besides ``type`` and ``params``.

    Raises:
        ConfigError: no ``type`` string, or ``params`` beside other keys.
    """
    if isinstance(spec, str):
        return {"type": spec, "params": {}}
    if not isinstance(spec, Mapping) or not isinstance(spec.get("type"), str):
        raise ConfigError(f"{kind} spec must be a name or {{'type': name, 'params': {{...}}}}, got {spec!r}")
    if "params" in spec:
        unknown = set(spec) - {"type", "params"}
        params = spec.get("params") or {}
        if unknown or not isinstance(params, Mapping):
            raise ConfigError(f"{kind} spec must be {{'type': ..., 'params': {{...}}}}, got {dict(spec)!r}")
        return {"type": spec["type"], "params": dict(params)}
    return {"type": spec["type"], "params": {k: v for k, v in spec.items() if k != "type"}}


def build(kind: str, spec: str | Mapping[str, Any], **context: Any) -> Any:
    """Construct a component from ``"name"``, ``{"type": name, "params": {...}}`` or the flat form.

    ``context`` carries shared objects (models, a chat client) that a factory may accept as
    keywords; a parameter of the spec wins over a shared object of the same name.
    """
    names = registered(kind)
    canonical = canonical_spec(spec, kind)
    name, params = str(canonical["type"]), canonical["params"]
    if name not in _REGISTRY[kind]:
        raise ConfigError(f"unknown {kind} {name!r}; valid: {', '.join(names)}")
    factory = _REGISTRY[kind][name]
    accepted = inspect.signature(factory).parameters
    shared = {k: v for k, v in context.items() if k in accepted and k not in params}
    try:
        return factory(**params, **shared)
    except TypeError as exc:
        raise ConfigError(f"bad parameters for {kind} {name!r}: {exc}") from exc


def warm_up(*parts: object) -> None:
    """Call ``warm_up()`` on every part that has one (a model, a retriever, a signal); skip the rest.

    Constructing a component is cheap and warming it is explicit (STYLE.md, principle 2); a
    component made of others warms them with this, whichever of them can be warmed.

    Example:
        >>> class Model:
        ...     warm = False
        ...     def warm_up(self) -> None:
        ...         self.warm = True
        >>> model = Model()
        >>> warm_up(model, None, "a part without warm_up")
        >>> model.warm
        True
    """
    for part in parts:
        warm = getattr(part, "warm_up", None)
        if callable(warm):
            warm()


__all__ = ["KINDS", "build", "canonical_spec", "register", "registered", "warm_up"]
