"""Models: embedder, NLI and LLM clients. Loaded lazily; nothing heavy on import."""

from __future__ import annotations

from ragtrust.models.base import NLI_LABELS, Embedder, NLIModel

__all__ = ["NLI_LABELS", "Embedder", "NLIModel"]
