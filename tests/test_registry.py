"""The registry is the one door: models, writers, extractors and retrievers are built from specs.

Built-ins come in through it like plugins (STYLE.md principle 5); the configuration's
fields keep their meaning and become ``{type, params}`` specs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtrust import registry
from ragtrust.config import load_settings
from ragtrust.errors import ConfigError
from ragtrust.models.embedder import default_embedder, embedder_spec
from ragtrust.models.nli import MANIFEST_FILE, default_nli, nli_spec
from ragtrust.pipeline.components import default_extractor, default_generator, extractor_spec, generator_spec
from ragtrust.testing import HashingEmbedder, LexicalNLI


@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        ("dense", {"type": "dense", "params": {}}),
        ({"type": "dense", "params": {"default_top_k": 3}}, {"type": "dense", "params": {"default_top_k": 3}}),
        ({"type": "dense", "default_top_k": 3}, {"type": "dense", "params": {"default_top_k": 3}}),
        ({"type": "dense", "params": None}, {"type": "dense", "params": {}}),
    ],
)
def test_a_spec_is_a_name_a_canonical_spec_or_the_flat_form(spec: object, canonical: dict[str, object]) -> None:
    assert registry.canonical_spec(spec) == canonical  # type: ignore[arg-type]


@pytest.mark.parametrize("spec", [{"params": {}}, {"type": 3}, {"type": "x", "params": {}, "extra": 1}, ["x"]])
def test_a_malformed_spec_is_a_config_error(spec: object) -> None:
    with pytest.raises(ConfigError, match="spec must be"):
        registry.canonical_spec(spec)  # type: ignore[arg-type]


def test_models_nli_values_become_registry_specs(tmp_path: Path) -> None:
    settings = load_settings(env={}, overrides={"models": {"threads": 3, "nli_batch_size": 8}})
    assert nli_spec(settings) == {"type": "builtin", "params": {"threads": 3, "batch_size": 8}}
    exported = tmp_path / "export"
    exported.mkdir()
    (exported / MANIFEST_FILE.name).write_text("{}", encoding="utf-8")
    folder = settings.with_overrides({"models": {"nli": str(exported)}})
    assert nli_spec(folder)["params"]["manifest_path"] == str(exported / MANIFEST_FILE.name)
    hub = settings.with_overrides({"models": {"nli": "facebook/bart-large-mnli"}})
    assert nli_spec(hub) == {"type": "transformers", "params": {"model": "facebook/bart-large-mnli"}}
    assert embedder_spec(settings) == {"type": "builtin", "params": {"threads": 3}}


def test_a_plugin_model_is_chosen_by_a_spec_in_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._REGISTRY["nli"], "lexical", LexicalNLI)
    monkeypatch.setitem(registry._REGISTRY["embedder"], "hashing", HashingEmbedder)
    settings = load_settings(
        env={},
        overrides={"models": {"nli": {"type": "lexical"}, "embedder": {"type": "hashing", "params": {"dim": 32}}}},
    )
    assert load_settings(env={}, overrides=json.loads(json.dumps(settings.to_dict()))) == settings
    assert isinstance(default_nli(settings).model, LexicalNLI)
    embedder = default_embedder(settings)
    assert isinstance(embedder, HashingEmbedder) and embedder.dim == 32


def test_an_unknown_model_type_lists_the_valid_ones() -> None:
    settings = load_settings(env={}, overrides={"models": {"nli": {"type": "nope"}}})
    with pytest.raises(ConfigError, match="unknown nli 'nope'; valid: builtin"):
        default_nli(settings)


def test_the_openai_writer_through_the_registry_is_the_one_from_config() -> None:
    from ragtrust.generation.openai import OpenAICompatibleGenerator

    settings = load_settings(
        env={},
        overrides={"generator": {"type": "openai", "model": "m", "context_tokens": 2048, "api_key_env": "KEY"}},
    )
    spec = generator_spec(settings, env={"KEY": "secret"})
    assert spec["type"] == "openai" and spec["params"]["api_key"] == "secret"
    built = registry.build("generator", spec)
    expected = OpenAICompatibleGenerator.from_config(
        settings.generator, env={"KEY": "secret"}, max_sentences=settings.evidence.max_answer_sentences
    )
    assert repr(built) == repr(expected)
    assert type(default_generator(load_settings(env={}), HashingEmbedder())).__name__ == "ExtractiveGenerator"


def test_the_llm_extractor_through_the_registry_asks_the_generator_endpoint() -> None:
    from ragtrust.evidence.extract import ExtractiveExtractor, LLMExtractor
    from ragtrust.generation.openai import ChatClient

    settings = load_settings(
        env={}, overrides={"evidence": {"extractor": "llm"}, "generator": {"model": "m", "context_tokens": 1024}}
    )
    assert extractor_spec(settings)["type"] == "llm"
    extractor = default_extractor(settings, HashingEmbedder())
    assert isinstance(extractor, LLMExtractor) and isinstance(extractor.client, ChatClient)
    assert (extractor.client.model, extractor.context_tokens, extractor.reply_tokens) == ("m", 1024, 512)
    assert extractor.response_format is not None and extractor.response_format["type"] == "json_schema"
    plain = default_extractor(load_settings(env={}), HashingEmbedder())
    assert isinstance(plain, ExtractiveExtractor) and plain.max_passages == 8
