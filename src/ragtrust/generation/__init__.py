"""Answer generation from verified passages, and its post-processing (SPEC sections 6.4-6.5).

Importing this package registers the built-in generators ``extractive`` (default, no LLM)
and ``openai`` (any OpenAI-compatible chat-completions endpoint).
"""

from __future__ import annotations

from ragtrust.generation.base import GeneratedAnswer, Generator
from ragtrust.generation.extractive import ExtractiveGenerator
from ragtrust.generation.openai import ChatClient, ChatReply, ContextLengthError, OpenAICompatibleGenerator
from ragtrust.generation.postprocess import evidence_answers_question, postprocess

__all__ = [
    "ChatClient",
    "ChatReply",
    "ContextLengthError",
    "ExtractiveGenerator",
    "GeneratedAnswer",
    "Generator",
    "OpenAICompatibleGenerator",
    "evidence_answers_question",
    "postprocess",
]
