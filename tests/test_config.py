"""Loading configuration: removed settings, the sources, their precedence and their errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ragtrust.config import NON_CONFIG_ENV, Settings, load_settings
from ragtrust.errors import ConfigError


def test_fail_closed_true_is_accepted_with_a_deprecation_warning_and_dropped() -> None:
    # what every configuration and run manifest written before the removal says
    with pytest.warns(FutureWarning, match=r"screening.fail_closed is deprecated and ignored"):
        settings = load_settings(env={}, overrides={"screening": {"fail_closed": True}})
    assert "fail_closed" not in settings.to_dict()["screening"]
    assert settings == load_settings(env={})


def test_fail_closed_false_is_refused_it_never_existed() -> None:
    with pytest.raises(ConfigError, match="fail_closed was removed: ragtrust always fails closed"):
        load_settings(env={}, overrides={"screening": {"fail_closed": False}})


def test_fail_closed_in_a_toml_file_warns_too(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "ragtrust.toml"
    config.write_text("[screening]\nfail_closed = true\npolicy = 'flag'\n", encoding="utf-8")
    with pytest.warns(FutureWarning):
        settings = load_settings(config, env={})
    assert settings.screening.policy == "flag"


# ------------------------------------------------------------------ sources and precedence
# load_settings reads ragtrust.toml and RAGTRUST_* variables through pydantic-settings; these
# pin what users rely on, whatever does the parsing.


def _error(path: Path | None = None, **kwargs: Any) -> str:
    with pytest.raises(ConfigError) as info:
        load_settings(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message  # the CLI prints it as one line
    return message


def test_each_source_overrides_the_one_below_key_by_key(tmp_path: Path) -> None:
    config = tmp_path / "ragtrust.toml"
    config.write_text("seed = 7\n[retrieval]\ntop_k = 3\nmode = 'bm25'\nrrf_k = 10\n", encoding="utf-8")
    env = {"RAGTRUST_RETRIEVAL__TOP_K": "4", "RAGTRUST_RETRIEVAL__RRF_K": "20"}
    s = load_settings(config, env=env, overrides={"retrieval": {"rrf_k": 30}})
    # the file's mode, the environment's top_k, the override's rrf_k; the rest are defaults
    assert (s.seed, s.retrieval.mode, s.retrieval.top_k, s.retrieval.rrf_k) == (7, "bm25", 4, 30)
    assert s.trust == Settings().trust


def test_ragtrust_config_names_the_file_and_a_missing_one_is_an_error(tmp_path: Path) -> None:
    config = tmp_path / "elsewhere.toml"
    config.write_text("[trust]\ntau = 0.6\n", encoding="utf-8")
    assert load_settings(env={"RAGTRUST_CONFIG": str(config)}).trust.tau == 0.6
    assert "does not exist" in _error(env={"RAGTRUST_CONFIG": str(tmp_path / "nope.toml")})
    assert "does not exist" in _error(tmp_path / "nope.toml", env={})


def test_ragtrust_toml_in_the_working_folder_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ragtrust.toml").write_text("seed = 11\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert load_settings(env={}).seed == 11
    assert Settings().seed == 42  # Settings() reads no file


def test_settings_reads_nothing_and_load_settings_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRUST_SEED", "5")
    assert Settings().seed == 42  # library code builds Settings() anywhere: the edges read the environment
    assert load_settings().seed == 5
    assert load_settings(env={}).seed == 42


# spelled out, so that a name dropped from NON_CONFIG_ENV fails here; RAGTRUST_CONFIG: tested above
@pytest.mark.parametrize("name", ["DATA_DIR", "API_KEYS", "LLM_API_KEY", "STORE", "HOST", "PORT", "DEBUG"])
def test_variables_read_at_the_edges_are_not_configuration(name: str) -> None:
    # RAGTRUST_DEBUG (the CLI's tracebacks) used to be refused as an unknown variable
    assert name in NON_CONFIG_ENV
    assert load_settings(env={f"RAGTRUST_{name}": "x"}) == Settings()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("RAGTRUST_WHATEVER", "unknown environment variable RAGTRUST_WHATEVER: config variables look like"),
        ("RAGTRUST_TRUST__NOPE", "unknown environment variable RAGTRUST_TRUST__NOPE: section trust has no key 'nope'"),
        ("RAGTRUST_SEED__X", "unknown environment variable RAGTRUST_SEED__X: seed has no keys, set RAGTRUST_SEED"),
        ("ragtrust_whatever", "unknown environment variable ragtrust_whatever"),  # names match in any case
        ("RAGTRUST_", "unknown environment variable RAGTRUST_:"),
    ],
)
def test_an_unknown_variable_is_a_one_line_error(name: str, expected: str) -> None:
    assert _error(env={name: "1"}).startswith(expected)


def test_variable_names_match_in_any_case_but_file_keys_are_exact(tmp_path: Path) -> None:
    assert load_settings(env={"ragtrust_trust__tau": "0.45", "RAGTRUST_Retrieval__Top_K": "2"}).retrieval.top_k == 2
    config = tmp_path / "ragtrust.toml"
    config.write_text("SEED = 7\n", encoding="utf-8")
    assert "SEED: Extra inputs are not permitted" in _error(config, env={})
    assert "Trust: Extra inputs" in _error(env={}, overrides={"Trust": {"tau": 0.4}})


@pytest.mark.parametrize(
    "env",
    [
        {"RAGTRUST_OTEL": "1"},
        {"RAGTRUST_OTEL": "0", "RAGTRUST_TELEMETRY__ENABLED": "1"},
        {"RAGTRUST_TELEMETRY__ENABLED": "1", "RAGTRUST_OTEL": "0"},
    ],
)
def test_ragtrust_otel_is_short_for_telemetry_enabled_and_the_full_name_wins(env: dict[str, str]) -> None:
    assert load_settings(env=env).telemetry.enabled is True


@pytest.mark.parametrize("raw", ["injection,linguistic", " injection , linguistic ,", '["injection", "linguistic"]'])
def test_a_list_is_a_comma_list_or_json(raw: str) -> None:
    s = load_settings(env={"RAGTRUST_SCREENING__SIGNALS": raw})
    assert s.screening.signals == ("injection", "linguistic")


def test_component_specs_from_the_environment_are_stored_canonical() -> None:
    flat = '[{"type": "injection", "threshold": 0.5}, "linguistic"]'
    s = load_settings(env={"RAGTRUST_SCREENING__SIGNALS": flat, "RAGTRUST_MODELS__NLI": '{"type": "onnx"}'})
    assert s.screening.signals == ({"type": "injection", "params": {"threshold": 0.5}}, "linguistic")
    assert s.models.nli == {"type": "onnx", "params": {}}
    assert load_settings(env={"RAGTRUST_MODELS__NLI": "builtin"}).models.nli == "builtin"  # a name stays a name


def test_a_table_is_json_or_one_variable_per_key() -> None:
    env = {"RAGTRUST_EVIDENCE__TERMS": '{"xss": "cross-site scripting"}', "RAGTRUST_EVIDENCE__TERMS__CSRF": "forgery"}
    assert load_settings(env=env).evidence.terms == {"xss": "cross-site scripting", "csrf": "forgery"}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (  # the variable is named (it was 'error parsing value for field "screening" from source ...')
            {"RAGTRUST_SCREENING__SIGNALS": '["injection"'},
            "invalid configuration: RAGTRUST_SCREENING__SIGNALS is not valid JSON (Expecting ',' delimiter",
        ),
        ({"RAGTRUST_EVIDENCE__TERMS": "{oops"}, "invalid configuration: RAGTRUST_EVIDENCE__TERMS is not valid JSON"),
        (
            {"RAGTRUST_RETRIEVAL__TOP_K": "many"},
            "invalid configuration: retrieval.top_k: Input should be a valid integer",
        ),
        ({"RAGTRUST_SCREENING__SIGNALS": "injection,nope"}, None),  # names are checked when built, not here
    ],
)
def test_a_bad_value_is_a_one_line_error(env: dict[str, str], expected: str | None) -> None:
    if expected is None:
        assert load_settings(env=env).screening.signals == ("injection", "nope")
    else:
        assert _error(env=env).startswith(expected)


def test_a_config_path_that_is_a_folder_is_a_one_line_error(tmp_path: Path) -> None:
    assert _error(tmp_path, env={}) == f"config file {tmp_path} is not a file"


def test_sections_are_frozen() -> None:
    s = load_settings(env={})
    with pytest.raises(ValidationError, match="frozen"):
        s.trust.tau = 0.1  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        s.seed = 1  # type: ignore[misc]


@pytest.mark.parametrize("raw", ["[]", "", " ", ","])
def test_an_empty_signal_list_is_refused_not_screening_turned_off(raw: str, tmp_path: Path) -> None:
    # with no signal every document read P = 0 and a planted injection was screened and verified as trusted
    expected = (
        "invalid configuration: screening.signals: the list is empty, but screening always runs before generation; "
        "name at least one of claim_conflict, cross_consistency, injection, intra_consistency, linguistic, "
        "provenance, semantic_outlier, structural"
    )
    assert _error(env={"RAGTRUST_SCREENING__SIGNALS": raw}) == expected
    config = tmp_path / "ragtrust.toml"
    config.write_text("[screening]\nsignals = []\n", encoding="utf-8")
    assert _error(config, env={}) == expected
    with pytest.raises(ConfigError, match="screening.signals: the list is empty"):
        load_settings(env={}, overrides={"screening": {"signals": ()}})
