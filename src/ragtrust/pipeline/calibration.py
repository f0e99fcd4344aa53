"""The calibration a gate loads: the tau written by ``ragtrust eval calibrate``, applied to settings."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragtrust.config import Settings
from ragtrust.errors import ConfigError


def load_calibration(path: str | Path) -> dict[str, Any]:
    """Read a calibration file written by ``ragtrust eval calibrate`` (needs ``tau``)."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"calibration file {file} does not exist") from exc
    except ValueError as exc:
        raise ConfigError(f"calibration file {file} is not JSON: {exc}") from exc
    tau = data.get("tau") if isinstance(data, dict) else None
    if not isinstance(tau, (int, float)) or not 0.0 <= float(tau) <= 1.0:
        raise ConfigError(f"calibration file {file} must hold a 'tau' in [0, 1]")
    return dict(data)


def apply_calibration(settings: Settings, calibration: Mapping[str, Any]) -> Settings:
    """Settings whose tau is the calibrated one (level cut points widened to admit it)."""
    tau = float(calibration["tau"])
    trust = settings.trust
    return settings.with_overrides(
        {"trust": {"tau": tau, "level_low": min(trust.level_low, tau), "level_high": max(trust.level_high, tau)}}
    )


__all__ = ["apply_calibration", "load_calibration"]
