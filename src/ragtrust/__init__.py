"""ragtrust: a trust layer for retrieval-augmented generation.

Screen retrieved documents for poisoning, ground answers in verified verbatim spans,
verify them with NLI, and fuse everything into a Trust Index and a verdict.

Example:
    >>> import ragtrust
    >>> ragtrust.Document(id="kb-1", text="Use parameterised queries.").cite
    'kb-1'

Importing ragtrust loads no model runtime (torch, onnxruntime, faiss): heavy objects are
resolved lazily on first attribute access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragtrust.config import Settings, load_settings
from ragtrust.documents import (
    AnswerSentence,
    Document,
    DocumentScreening,
    Passage,
    Query,
    RetrievedDoc,
    SignalResult,
    Span,
    Verdict,
)
from ragtrust.errors import (
    BackendError,
    ConfigError,
    InputError,
    MissingDependencyError,
    ModelError,
    RagTrustError,
    StoreDamagedError,
)

__version__ = "0.1.0"

_LAZY = {
    "TrustGate": "ragtrust.pipeline",
    "Store": "ragtrust.ingest.store",
    "NLIEngine": "ragtrust.models.nli",
    "OnnxNLI": "ragtrust.models.nli",
    "TransformersNLI": "ragtrust.models.nli",
    "OnnxEmbedder": "ragtrust.models.embedder",
    "compute_trust": "ragtrust.trust",
}

if TYPE_CHECKING:  # pragma: no cover
    from ragtrust.ingest.store import Store
    from ragtrust.models.embedder import OnnxEmbedder
    from ragtrust.models.nli import NLIEngine, OnnxNLI, TransformersNLI
    from ragtrust.pipeline import TrustGate
    from ragtrust.trust import compute_trust


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragtrust' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "AnswerSentence",
    "BackendError",
    "ConfigError",
    "Document",
    "DocumentScreening",
    "InputError",
    "MissingDependencyError",
    "ModelError",
    "NLIEngine",
    "OnnxEmbedder",
    "OnnxNLI",
    "Passage",
    "Query",
    "RagTrustError",
    "RetrievedDoc",
    "Settings",
    "SignalResult",
    "Span",
    "Store",
    "StoreDamagedError",
    "TransformersNLI",
    "TrustGate",
    "Verdict",
    "compute_trust",
    "load_settings",
]
