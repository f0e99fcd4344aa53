"""Evidence grounding (SPEC section 6, EvidenT): extraction, n-gram alignment, citations.

Importing this package registers the built-in extractors (``extractive``, ``llm``).

Example:
    >>> from ragtrust.testing import retrieved
    >>> docs = retrieved(["Store passwords with a slow salted hash such as Argon2id. Rotate keys yearly."])
    >>> passages = ExtractiveExtractor().extract("How should passwords be stored?", docs)
    >>> [p.status for p in NGramAligner().align(passages, docs).passages]
    ['kept']
"""

from __future__ import annotations

from ragtrust.evidence.align import TRUNCATION_JOINER, AlignmentResult, NGramAligner, resolve_source
from ragtrust.evidence.citations import CitationGuard, GroundedAnswer, render_answer
from ragtrust.evidence.extract import (
    ChatModel,
    ExtractionError,
    ExtractiveExtractor,
    LLMExtractor,
    parse_collected_passages,
    passages_from_json,
    read_passages_json,
    relevance_scores,
)

__all__ = [
    "TRUNCATION_JOINER",
    "AlignmentResult",
    "ChatModel",
    "CitationGuard",
    "ExtractionError",
    "ExtractiveExtractor",
    "GroundedAnswer",
    "LLMExtractor",
    "NGramAligner",
    "parse_collected_passages",
    "passages_from_json",
    "read_passages_json",
    "relevance_scores",
    "render_answer",
    "resolve_source",
]
