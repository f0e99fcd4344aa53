"""Configuration: every constant of SPEC.md lives here, once.

Precedence (later wins): built-in defaults < ``ragtrust.toml`` < ``RAGTRUST_*`` environment
variables < explicit overrides (CLI flags), read by pydantic-settings' sources. Unknown keys
are an error everywhere, unknown ``RAGTRUST_*`` variables too.

Environment variables name a section and a key with a double underscore, e.g.
``RAGTRUST_TRUST__TAU=0.45`` or ``RAGTRUST_RETRIEVAL__TOP_K=3``; top-level keys have no
section (``RAGTRUST_SEED=7``); a list is JSON or a comma list
(``RAGTRUST_SCREENING__SIGNALS=injection,linguistic``), a table JSON. Variables that are not
configuration (:data:`NON_CONFIG_ENV`: ``RAGTRUST_DATA_DIR``, ``RAGTRUST_API_KEYS``,
``RAGTRUST_LLM_API_KEY``, ``RAGTRUST_STORE``, ``RAGTRUST_DEBUG``, ...) are read by the CLI
and the server only.

Example:
    >>> s = load_settings(env={}, overrides={"trust": {"tau": 0.45}})
    >>> (s.trust.alpha, s.trust.tau, s.evidence.ngram_n)
    (0.4, 0.45, 5)
"""

from __future__ import annotations

import os
import tomllib
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from ragtrust.errors import ConfigError
from ragtrust.registry import canonical_spec, registered

#: the prefix of ragtrust's environment variables
ENV_PREFIX = "RAGTRUST_"
#: environment variables with the RAGTRUST_ prefix that are read at the edges, not config
NON_CONFIG_ENV = frozenset({"DATA_DIR", "API_KEYS", "LLM_API_KEY", "STORE", "HOST", "PORT", "CONFIG", "DEBUG"})
#: short environment variables for a config key (``RAGTRUST_OTEL=1`` turns telemetry on)
ENV_ALIASES = {"OTEL": "TELEMETRY__ENABLED"}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


#: a component named in configuration (see :mod:`ragtrust.registry`): a registered name or
#: ``{"type": name, "params": {...}}``; the flat ``{"type": name, **params}`` that a
#: calibration report suggests is accepted and stored in the canonical form
ComponentSpec = str | dict[str, Any]


def _canonical(value: Any) -> Any:
    return canonical_spec(value) if isinstance(value, Mapping) else value


class TrustConfig(_Section):
    """Trust Index (SPEC section 5)."""

    alpha: float = Field(0.40, ge=0, le=1, description="weight of factuality F")
    beta: float = Field(0.35, ge=0, le=1, description="weight of consistency C")
    gamma: float = Field(0.25, ge=0, le=1, description="weight of (1 - P)")
    dampener_threshold: float = Field(0.70, ge=0, lt=1, description="P above which T is damped")
    dampener_max_drop: float = Field(0.40, ge=0, le=1, description="1 - d(1.0); d(1.0) = 0.6")
    tau: float = Field(0.5, ge=0, le=1, description="binary decision threshold (trusted iff T >= tau)")
    low_retrieval_threshold: float = Field(0.30, ge=0, le=1, description="cosine s_max below which T is reduced")
    low_retrieval_floor: float = Field(0.5, ge=0, le=1, description="T multiplier when s_max = 0")
    level_high: float = Field(0.8, ge=0, le=1, description="HIGH iff T >= level_high")
    level_low: float = Field(0.3, ge=0, le=1, description="LOW iff level_low <= T < tau; VERY LOW below")
    #: an answer sentence with neither a verified verbatim span nor NLI entailment (issue 16).
    #: Not part of T: F is computed over every sentence the writer wrote, whatever this says.
    unsupported: Literal["refuse", "drop"] = Field(
        "refuse",
        description="an unsupported answer sentence: 'refuse' = the answer is not trusted (fail closed); "
        "'drop' = the sentence is removed from the answer and the rest is decided on",
    )
    #: a store that vets its documents (the provenance ledger's tiers): an answer sentence
    #: that rests only on documents that were never vetted, while vetted ones were retrieved.
    unvetted: Literal["refuse", "warn"] = Field(
        "refuse",
        description="an answer sentence resting only on never-vetted documents while vetted ones were retrieved: "
        "'refuse' = the answer is not trusted; 'warn' = a warning only",
    )

    @model_validator(mode="after")
    def _check(self) -> TrustConfig:
        total = self.alpha + self.beta + self.gamma
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"alpha + beta + gamma must be 1.0, got {total:.4f}")
        if not self.level_low <= self.tau <= self.level_high:
            raise ValueError("levels must satisfy level_low <= tau <= level_high")
        return self


class ScreeningConfig(_Section):
    """Stage 1 (SPEC section 3) and the pre-generation gate."""

    #: the pre-generation gate. ``drop-suspicious`` (default) withholds documents above
    #: ``drop_threshold`` from the generator; ``flag`` keeps them (the verdict is then never
    #: trusted); ``block`` gives no answer when any is retrieved. A quarantined document is
    #: withheld under every policy.
    policy: Literal["flag", "drop-suspicious", "block"] = "drop-suspicious"
    suspicious_threshold: float = Field(0.7, ge=0, le=1, description="P_i above which a document is suspicious")
    high_risk_threshold: float = Field(0.8, ge=0, le=1)
    drop_threshold: float = Field(0.7, ge=0, le=1, description="drop-suspicious drops P_i above this")
    witnesses: int = Field(
        5,
        ge=0,
        le=50,
        description="documents of the store nearest to the retrieved ones, read as witnesses by claim_conflict",
    )
    #: ``cross_consistency`` and ``semantic_outlier`` are registered but not run by default:
    #: measured on held-out attacks they add nothing (per-document ROC-AUC 0.50 / 0.49,
    #: docs/results/fusion_report.json) and ``claim_conflict`` compares the documents instead
    #: (issue 15, docs/results/conflicts.md); the outlier also pushed clean off-topic
    #: neighbours above a poisoned document.
    signals: tuple[ComponentSpec, ...] = (
        "injection",
        "claim_conflict",
        "linguistic",
        "structural",
        "intra_consistency",
        "provenance",
    )

    @model_validator(mode="before")
    @classmethod
    def _removed_fail_closed(cls, data: Any) -> Any:
        # ``fail_closed`` was a setting that did nothing: ragtrust always fails closed (a
        # failing signal, model or verifier is recorded and the verdict is never trusted).
        # Configurations that still say ``true`` (and the settings recorded in old run
        # manifests) load with a warning; ``false`` asked for a fail-open mode that never
        # existed and is refused.
        if not isinstance(data, Mapping) or "fail_closed" not in data:
            return data
        data = dict(data)
        if data.pop("fail_closed") is not True:
            raise ValueError(
                "fail_closed was removed: ragtrust always fails closed (an internal failure is recorded and the "
                "verdict is never trusted); remove screening.fail_closed from the configuration"
            )
        warnings.warn(
            "screening.fail_closed is deprecated and ignored: ragtrust always fails closed; "
            "remove it from the configuration",
            FutureWarning,
            stacklevel=2,
        )
        return data

    @field_validator("signals", mode="before")
    @classmethod
    def _signal_specs(cls, value: Any) -> Any:
        # no signal is no screening: every document would read P = 0 and a planted injection
        # pass as trusted, so an empty list (``[]``, an empty variable) is refused, not obeyed
        if (isinstance(value, (list, tuple)) and not value) or (isinstance(value, str) and not value.strip()):
            raise PydanticCustomError(
                "empty_signals",
                "the list is empty, but screening always runs before generation; name at least one of {names}",
                {"names": ", ".join(registered("signal"))},
            )
        if isinstance(value, (list, tuple)):
            return tuple(_canonical(v) for v in value)
        return value


class RelevanceConfig(_Section):
    """Relevance, the RAG triad's two question checks (see :mod:`ragtrust.verification.relevance`).

    *Context relevance* is the best cosine between the question and a sentence of the
    evidence passages, a sentence read in its topic context (its document's title, question
    or heading); *answer relevance* the cosine between the question and the answer
    (the normalised mean of its sentences' vectors). Both use the pipeline's embedder, so the
    thresholds belong to one embedder: the defaults were fitted for the shipped
    all-MiniLM-L6-v2 by ``ragtrust eval relevance`` over two corpora (the OWASP cheat sheets
    with the 36 OWASP questions, the knowledge base with user-phrased questions, each against
    the project's off-topic questions; ``docs/results/relevance.md``). Fitted on the decision,
    they are a backstop: most off-topic answers already fail on the "does not explicitly
    state" preface, and a cosine cut strict enough to catch the rest rejected natural
    on-topic questions of the other corpus. Refit them for another embedder. A verdict
    below either threshold is not trusted ("no relevant evidence" / "the answer does not
    address the question") and reads at most LOW.
    """

    enabled: bool = Field(True, description="check context and answer relevance (False: never computed)")
    context_threshold: float = Field(
        0.167, ge=0, le=1, description="cosine question-evidence sentence below which there is no relevant evidence"
    )
    answer_threshold: float = Field(
        0.0, ge=0, le=1, description="cosine question-answer below which the answer does not address the question"
    )
    #: an answer that says the documents do not explicitly answer the question (the extractive
    #: writer's preface, or an LLM writing "The documentation does not explicitly state") is
    #: not trusted: its sentences are the closest evidence, not an answer.
    not_stated_fails: bool = Field(True, description="an answer prefaced 'does not explicitly state' is not trusted")
    #: a question that names something (Netflix, MongoDB, AES-128) none of whose names occurs in
    #: the documents its evidence came from is answered from evidence about something else: not
    #: trusted.
    names_required: bool = Field(
        True, description="a question whose names (capitalised words, acronyms) no evidence document mentions fails"
    )
    #: a question word that no chunk of the store contains ("violin" against the OWASP cheat
    #: sheets): the store is not about it. Applies to stores of at least
    #: ``unknown_terms_min_vocabulary`` distinct content terms; a small store lacks many words
    #: its users ask with.
    unknown_terms_fail: bool = Field(
        True, description="a question whose topic word no document of the store contains fails (stores only)"
    )
    unknown_terms_min_vocabulary: int = Field(
        5000, ge=0, description="distinct content terms a store needs before its missing words count"
    )


class EvidenceConfig(_Section):
    """EvidenT alignment (SPEC section 6.3)."""

    ngram_n: int = Field(5, ge=1, le=20)
    overlap_threshold: float = Field(0.7, gt=0, le=1)
    max_passages: int = Field(8, ge=1)
    max_answer_sentences: int = Field(4, ge=1)
    extractor: Literal["extractive", "llm"] = Field(
        "extractive",
        description="'extractive' (verbatim sentences, no LLM) or 'llm' (EvidenT's JSON extraction by the "
        "[generator] endpoint's model; its passages are aligned before use)",
    )
    json_schema: bool = Field(
        True, description="send the extraction JSON schema as response_format (constrained decoding) to the LLM"
    )
    terms: Mapping[str, str] = Field(default_factory=dict, description="term normalisation map")


class ChunkConfig(_Section):
    """Chunking (SPEC section 8: 512-token chunks, overlap 50)."""

    chunk_tokens: int = Field(512, ge=16)
    overlap_tokens: int = Field(50, ge=0)

    @model_validator(mode="after")
    def _check(self) -> ChunkConfig:
        if self.overlap_tokens >= self.chunk_tokens:
            raise ValueError("overlap_tokens must be smaller than chunk_tokens")
        return self


class IngestConfig(_Section):
    """Bounds on what ingestion reads (issue 19 item 5).

    Each violation skips that file, record, folder or document with a one-line reason naming
    the setting; the rest of the batch is still ingested.
    """

    max_file_bytes: int = Field(20_000_000, ge=1, description="largest file read (bytes); larger files are skipped")
    max_line_bytes: int = Field(
        2_000_000, ge=1, description="largest JSONL line or CSV record (bytes, UTF-8); larger records are skipped"
    )
    max_depth: int = Field(32, ge=0, description="deepest folder walked below a given folder; deeper ones are skipped")
    max_chunks_per_document: int = Field(
        2_000, ge=1, description="most chunks one document may become; a longer document is skipped"
    )


class RetrievalConfig(_Section):
    """Retrieval (SPEC section 8: cosine top-K, K = 5)."""

    top_k: int = Field(5, ge=1, le=100)
    mode: Literal["dense", "bm25", "hybrid"] = "dense"
    rrf_k: int = Field(60, ge=1)


class ModelsConfig(_Section):
    """Model choices: ``builtin`` means the models shipped with or installed for ragtrust."""

    nli: ComponentSpec = Field(
        "builtin",
        description="'builtin' (shipped int8 ONNX), an exported ONNX folder, an HF model id / local path, "
        "or a registry spec {type, params}",
    )
    embedder: ComponentSpec = Field(
        "builtin", description="'builtin' (packaged MiniLM int8 ONNX), an HF model id / path, or a registry spec"
    )
    threads: int = Field(2, ge=1)
    nli_batch_size: int = Field(
        32,
        ge=1,
        description="pairs per call of the ONNX NLI model; 1 = one pair per call, side by side on `threads` workers",
    )
    nli_cache_size: int = Field(50_000, ge=0)

    @field_validator("nli", "embedder", mode="before")
    @classmethod
    def _model_specs(cls, value: Any) -> Any:
        return _canonical(value)


class GeneratorConfig(_Section):
    """Answer generator: extractive (default, no LLM) or an OpenAI-compatible endpoint."""

    type: Literal["extractive", "openai"] = "extractive"
    base_url: str = "http://127.0.0.1:11434/v1"
    model: str = "llama3.2"
    api_key_env: str = "RAGTRUST_LLM_API_KEY"
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(2, ge=0)
    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(512, ge=1)
    max_concurrency: int = Field(2, ge=1, description="requests in flight to the LLM at once (per backend)")
    breaker_failures: int = Field(
        5, ge=1, description="consecutive timeouts / refused connections / 5xx that open the circuit breaker"
    )
    breaker_cooldown_s: float = Field(
        30.0, gt=0, description="seconds an open breaker fails LLM calls at once before one trial call"
    )
    context_tokens: int = Field(
        0,
        ge=0,
        description="the model's context window in tokens (a llama.cpp server's n_ctx); prompts are fitted "
        "into it with a warning; 0 = unknown (a prompt the server rejects as too long is retried shorter)",
    )


class TelemetryConfig(_Section):
    """OpenTelemetry spans per operation and stage (see :mod:`ragtrust.pipeline.telemetry`).

    Off by default; ``RAGTRUST_OTEL=1`` is a short form of ``RAGTRUST_TELEMETRY__ENABLED=1``.
    Needs ``pip install 'ragtrust[otel]'``; the application's OpenTelemetry SDK decides where
    the spans go.
    """

    enabled: bool = Field(False, description="emit OpenTelemetry spans (needs the otel extra)")
    capture_content: bool = Field(False, description="record the query and answer texts on the spans")


class LogConfig(_Section):
    """The verdict log: every ``ragtrust ask`` and API verdict appended to a local SQLite file.

    See :mod:`ragtrust.verdict_log`. The file is ``path`` when given, else
    ``<store>/verdicts.sqlite`` beside the store, else ``$XDG_DATA_HOME/ragtrust/verdicts.sqlite``.
    Writing it never fails a verdict: a problem is one warning and the verdict goes unlogged.
    """

    enabled: bool = Field(True, description="append verdicts to the log (RAGTRUST_LOG__ENABLED=0 turns it off)")
    path: str | None = Field(None, description="the log file (default: beside the store, else the user data dir)")
    max_rows: int = Field(100_000, ge=1, description="rows kept; the oldest are pruned past it")


class EvalConfig(_Section):
    """Benchmark protocol (SPEC sections 7-8)."""

    attack_rate: float = Field(0.30, gt=0, lt=1)
    n_queries: int = Field(50, ge=1)
    bootstrap: int = Field(20_000, ge=100)
    calibration_percentile: float = Field(10.0, gt=0, lt=100)


class Settings(BaseSettings):
    """All of ragtrust's configuration.

    ``Settings()`` is the built-in defaults (and the sections given as arguments): it reads
    no file and no environment, so library code may build one anywhere. :func:`load_settings`
    reads ``ragtrust.toml`` and the ``RAGTRUST_*`` variables, at the edges.
    """

    model_config = SettingsConfigDict(
        extra="forbid",
        frozen=True,
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        # keys in a file or in overrides are exact (``SEED = 7`` is an unknown key); the
        # environment source matches variable names in any case
        case_sensitive=True,
    )

    seed: int = 42
    trust: TrustConfig = TrustConfig()
    screening: ScreeningConfig = ScreeningConfig()
    evidence: EvidenceConfig = EvidenceConfig()
    relevance: RelevanceConfig = RelevanceConfig()
    chunking: ChunkConfig = ChunkConfig()
    ingest: IngestConfig = IngestConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    models: ModelsConfig = ModelsConfig()
    generator: GeneratorConfig = GeneratorConfig()
    eval: EvalConfig = EvalConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    log: LogConfig = LogConfig()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the arguments: the file and the environment are :func:`load_settings`'s."""
        return (init_settings,)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form that :func:`load_settings` accepts back as overrides."""
        data: dict[str, Any] = self.model_dump(mode="json")
        return data

    def with_overrides(self, overrides: Mapping[str, Any]) -> Settings:
        """A copy with nested overrides applied and validated."""
        return _validate(_merge(self.to_dict(), overrides))


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors())


def _validate(data: Mapping[str, Any]) -> Settings:
    try:
        return Settings.model_validate(dict(data))
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {_problems(exc)}") from exc


def _is_sequence(field: FieldInfo | None) -> bool:
    origin = get_origin(field.annotation) if field is not None else None
    return isinstance(origin, type) and issubclass(origin, Sequence) and not issubclass(origin, str)


class _EnvironmentSource(EnvSettingsSource):
    """The ``RAGTRUST_*`` variables of a given mapping, every one of them checked.

    pydantic-settings reads the variables that match a field and ignores the rest; here a
    ``RAGTRUST_`` name must be configuration (or one of :data:`NON_CONFIG_ENV`), so a typo is
    an error rather than a setting silently left at its default. Names match in any case;
    :data:`ENV_ALIASES` are short forms (the full name wins when both are set); a list takes
    JSON or a comma list.
    """

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ  # read by _load_env_vars, which the base __init__ calls
        super().__init__(settings_cls, case_sensitive=False)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        aliased: dict[str, str | None] = {}
        named: dict[str, str | None] = {}
        for name, value in self._environ.items():
            if not name.upper().startswith(ENV_PREFIX):
                continue
            key = name[len(ENV_PREFIX) :].upper()
            if key in NON_CONFIG_ENV:
                continue
            full = ENV_ALIASES.get(key, key)
            self._check(name, full.lower())
            (aliased if key in ENV_ALIASES else named)[f"{ENV_PREFIX}{full}".lower()] = value
        return aliased | named

    def _check(self, name: str, key: str) -> None:
        fields = self.settings_cls.model_fields
        section, nested, rest = key.partition("__")
        if section not in fields:
            raise ConfigError(
                f"unknown environment variable {name}: config variables look like "
                f"{ENV_PREFIX}<SECTION>__<KEY> (sections: {', '.join(sorted(fields))})"
            )
        if not nested:
            return
        model = fields[section].annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ConfigError(
                f"unknown environment variable {name}: {section} has no keys, set {ENV_PREFIX}{section.upper()}"
            )
        if (entry := rest.partition("__")[0]) not in model.model_fields:
            raise ConfigError(
                f"unknown environment variable {name}: section {section} has no key {entry!r} "
                f"(keys: {', '.join(sorted(model.model_fields))})"
            )

    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        """A list takes JSON (``["a", "b"]``) or a comma list (``a,b``); anything else, JSON."""
        if isinstance(value, str) and _is_sequence(field) and not value.lstrip().startswith("["):
            return [part.strip() for part in value.split(",") if part.strip()]
        return super().decode_complex_value(field_name, field, value)


def _toml_source(file: Path) -> TomlConfigSettingsSource:
    if not file.is_file():
        raise ConfigError(f"config file {file} {'is not a file' if file.exists() else 'does not exist'}")
    try:
        return TomlConfigSettingsSource(Settings, toml_file=file)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {file} is not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"config file {file} cannot be read: {exc.strerror or exc}") from exc


def load_settings(
    path: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build :class:`Settings` from defaults, a TOML file, the environment and overrides.

    The sources are pydantic-settings', highest first: the overrides, the environment, the
    file; each is merged key by key into the ones below it, over the defaults.

    Args:
        path: a ``ragtrust.toml``; when ``None``, ``./ragtrust.toml`` is used if present
            (or the file named by ``RAGTRUST_CONFIG``).
        env: the environment to read (``os.environ`` when ``None``).
        overrides: nested values that win over everything else (CLI flags).

    Raises:
        ConfigError: unknown keys or variables, wrong types or values, unreadable files.
    """
    env = os.environ if env is None else env
    if path is None:
        named = env.get("RAGTRUST_CONFIG")
        candidate = Path(named) if named else Path("ragtrust.toml")
        path = candidate if candidate.exists() or named else None
    sources: list[PydanticBaseSettingsSource] = [
        InitSettingsSource(Settings, dict(overrides or {})),
        _EnvironmentSource(Settings, env),
    ]
    if path is not None:
        sources.append(_toml_source(Path(path)))
    try:
        # handed in rather than built by settings_customise_sources: Settings() reads nothing,
        # and the environment read here is the mapping given
        return Settings(_build_sources=(tuple(sources), {}))
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {_problems(exc)}") from exc
    except SettingsError as exc:  # a variable's value is not valid JSON
        raise ConfigError(f"invalid configuration: {_bad_json(env) or f'{exc}: {exc.__cause__}'}") from exc


def _bad_json(env: Mapping[str, str]) -> str:
    """``RAGTRUST_X is not valid JSON (why)`` for each variable with a list or table value that does not parse."""
    import json

    bad = []
    for name, value in sorted(env.items()):
        if not name.upper().startswith("RAGTRUST_") or not value.lstrip().startswith(("[", "{")):
            continue
        try:
            json.loads(value)
        except ValueError as exc:
            bad.append(f"{name} is not valid JSON ({exc})")
    return "; ".join(bad)


__all__ = [
    "ChunkConfig",
    "EvalConfig",
    "EvidenceConfig",
    "GeneratorConfig",
    "IngestConfig",
    "LogConfig",
    "ModelsConfig",
    "RelevanceConfig",
    "RetrievalConfig",
    "ScreeningConfig",
    "Settings",
    "TelemetryConfig",
    "TrustConfig",
    "load_settings",
]
