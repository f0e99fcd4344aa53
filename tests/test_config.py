"""Settings that were removed are handled on purpose, not by accident."""

from __future__ import annotations

import pytest

from ragtrust.config import load_settings
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
