"""The components a gate builds from its settings when none was passed, and their model ids.

The extractor and the answer writer come through the registry's door, like a plugin's:
``evidence.extractor`` and ``generator.type`` (with the ``[generator]`` endpoint's fields)
become ``{type, params}`` specs (:func:`extractor_spec`, :func:`generator_spec`) that
:func:`ragtrust.registry.build` constructs, with the embedder and, for an LLM extractor, the
endpoint's chat client as shared objects. Every verdict records the models and prompt
versions behind it (:func:`model_ids`).

Example:
    >>> from ragtrust.config import load_settings
    >>> generator_spec(load_settings(env={}))
    {'type': 'extractive', 'params': {'max_sentences': 4}}
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ragtrust import registry
from ragtrust.config import Settings
from ragtrust.models.base import Embedder


def extractor_spec(settings: Settings) -> dict[str, Any]:
    """The registry spec of the extractor ``evidence.extractor`` names (``extractive`` or ``llm``)."""
    s = settings
    if s.evidence.extractor == "llm":
        from ragtrust.prompts import EXTRACTION_SCHEMA

        schema = {"type": "json_schema", "json_schema": {"name": "collected_passages", "schema": EXTRACTION_SCHEMA}}
        return {
            "type": "llm",
            "params": {
                "max_passages": s.evidence.max_passages,
                "context_tokens": s.generator.context_tokens,
                "reply_tokens": s.generator.max_tokens,
                "response_format": schema if s.evidence.json_schema else None,
            },
        }
    return {"type": "extractive", "params": {"max_passages": s.evidence.max_passages}}


def generator_spec(settings: Settings, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The registry spec of the answer writer ``generator.type`` names (``extractive`` or ``openai``).

    For ``openai`` the API key is read from ``env[generator.api_key_env]`` (``None`` reads
    ``os.environ``), as :meth:`~ragtrust.generation.openai.ChatClient.from_config` does.
    """
    s = settings
    if s.generator.type == "openai":
        return {
            "type": "openai",
            "params": {
                **_endpoint(settings, env),
                "max_sentences": s.evidence.max_answer_sentences,
                "context_tokens": s.generator.context_tokens,
            },
        }
    return {"type": "extractive", "params": {"max_sentences": s.evidence.max_answer_sentences}}


def default_extractor(settings: Settings, embedder: Embedder) -> Any:
    """The evidence extractor of :func:`extractor_spec`, built by the registry."""
    spec = extractor_spec(settings)
    shared: dict[str, Any] = {"embedder": embedder}
    if spec["type"] == "llm":
        # the LLM extractor asks the [generator] endpoint's model
        from ragtrust.generation.openai import ChatClient

        shared["client"] = ChatClient.from_config(settings.generator)
    return registry.build("extractor", spec, **shared)


def default_generator(settings: Settings, embedder: Embedder) -> Any:
    """The answer writer of :func:`generator_spec`, built by the registry."""
    return registry.build("generator", generator_spec(settings), embedder=embedder)


def _endpoint(settings: Settings, env: Mapping[str, str] | None) -> dict[str, Any]:
    g = settings.generator
    env = os.environ if env is None else env
    return {
        "base_url": g.base_url,
        "model": g.model,
        "api_key": env.get(g.api_key_env) or None,
        "timeout_s": g.timeout_s,
        "max_retries": g.max_retries,
        "temperature": g.temperature,
        "max_tokens": g.max_tokens,
    }


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


__all__ = ["default_extractor", "default_generator", "extractor_spec", "generator_spec", "model_ids"]
