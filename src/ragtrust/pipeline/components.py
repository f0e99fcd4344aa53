"""The components a gate builds from its settings when none was passed, and their model ids.

The extractor and the answer writer are chosen by ``evidence.extractor`` and
``generator.type``; every verdict records the models and prompt versions behind it
(:func:`model_ids`).
"""

from __future__ import annotations

from typing import Any

from ragtrust.config import Settings
from ragtrust.models.base import Embedder


def default_extractor(settings: Settings, embedder: Embedder) -> Any:
    """The evidence extractor ``evidence.extractor`` names: ``extractive`` or ``llm``."""
    from ragtrust.registry import build

    s = settings
    if s.evidence.extractor == "llm":
        from ragtrust.evidence.extract import LLMExtractor
        from ragtrust.generation.openai import ChatClient
        from ragtrust.prompts import EXTRACTION_SCHEMA

        schema = {
            "type": "json_schema",
            "json_schema": {"name": "collected_passages", "schema": EXTRACTION_SCHEMA},
        }
        return LLMExtractor(
            ChatClient.from_config(s.generator),
            max_passages=s.evidence.max_passages,
            context_tokens=s.generator.context_tokens,
            reply_tokens=s.generator.max_tokens,
            response_format=schema if s.evidence.json_schema else None,
        )
    return build(
        "extractor",
        {"type": "extractive", "params": {"max_passages": s.evidence.max_passages}},
        embedder=embedder,
    )


def default_generator(settings: Settings, embedder: Embedder) -> Any:
    """The answer writer ``generator.type`` names: ``extractive`` or ``openai``."""
    from ragtrust.registry import build

    s = settings
    if s.generator.type == "openai":
        from ragtrust.generation.openai import OpenAICompatibleGenerator

        return OpenAICompatibleGenerator.from_config(s.generator, max_sentences=s.evidence.max_answer_sentences)
    return build(
        "generator",
        {"type": "extractive", "params": {"max_sentences": s.evidence.max_answer_sentences}},
        embedder=embedder,
    )


def model_ids(*, nli: Any, embedder: Any, generator: Any, extractor: Any) -> dict[str, str]:
    """The models and prompt versions behind a verdict (recorded in every result)."""
    models = {
        "nli": str(getattr(nli, "model_id", type(nli).__name__)),
        "embedder": str(getattr(embedder, "model_id", type(embedder).__name__)),
        "generator": str(getattr(generator, "name", type(generator).__name__)),
    }
    for role, component in (("generator", generator), ("extractor", extractor)):
        model = getattr(component, "model", None) or getattr(getattr(component, "client", None), "model", None)
        if isinstance(model, str) and model:
            models[f"{role}_model"] = model
        version = getattr(component, "prompt_version", None)
        if isinstance(version, str):
            models[f"{role}_prompt"] = version
    return models


__all__ = ["default_extractor", "default_generator", "model_ids"]
