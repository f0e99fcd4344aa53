"""The contradiction ramp of the NLI signals and where its ends come from at run time.

The intra-document, cross-document and claim-conflict signals turn an NLI contradiction
probability ``c`` into a score with the ramp ``clip((c - low) / (high - low))``
(:func:`contradiction_ramp`). Where ``low`` belongs depends on the model: a small NLI model
reads many honest pairs of sentences from one document as contradictions, so a fixed
``low = 0.4`` raises clean documents. ``low`` is therefore **calibrated per model** offline,
on clean development text, at a false-alarm budget (the procedure:
:mod:`ragtrust.eval.calibration`, ``ragtrust nli calibrate``).

The shipped model carries its calibration in its manifest (``signal_calibration``, keyed to
the ONNX file's sha256). :func:`resolve_ramp` picks the ramp a signal uses: its own
configured ``low`` / ``high`` first, then the model's calibration, then :data:`DEFAULT_RAMP`
(a model without a calibration, such as a Hugging Face checkpoint).

Example:
    >>> resolve_ramp(object(), "intra_consistency", None, None)
    (0.4, 0.9, 'default')
    >>> class Calibrated:
    ...     signal_calibration = {"intra_consistency": {"low": 0.8, "high": 0.9}}
    >>> resolve_ramp(Calibrated(), "intra_consistency", None, None)
    (0.8, 0.9, 'calibrated')
    >>> resolve_ramp(Calibrated(), "intra_consistency", 0.5, None)
    (0.5, 0.9, 'configured')
    >>> contradiction_ramp(0.65, 0.4, 0.9)
    0.5
"""

from __future__ import annotations

from collections.abc import Mapping

from ragtrust.errors import InputError, ModelError

#: the ramp of a model without a calibration: below 0.4 the model claims no contradiction,
#: at 0.9 it is near-certain (the reference ignored ``c <= 0.5``)
DEFAULT_RAMP: tuple[float, float] = (0.4, 0.9)


def contradiction_ramp(c: float, low: float, high: float) -> float:
    """Map a contradiction probability to a score: 0 below ``low``, 1 above ``high``, linear between."""
    if c <= low:
        return 0.0
    if c >= high:
        return 1.0
    return (c - low) / (high - low)


def _calibrated(entry: object, signal: str) -> tuple[float, float] | None:
    if entry is None:
        return None
    try:
        if not isinstance(entry, Mapping):
            raise TypeError(f"expected a mapping, got {type(entry).__name__}")
        lo, hi = float(entry["low"]), float(entry["high"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(
            f"{signal}: the NLI model's signal calibration is malformed ({entry!r}); "
            "rerun `ragtrust nli calibrate --write-manifest` or set low/high in screening.signals"
        ) from exc
    return lo, hi


def resolve_ramp(nli: object, signal: str, low: float | None, high: float | None) -> tuple[float, float, str]:
    """``(low, high, source)``: explicit values win, then the model's calibration, then the default.

    Raises:
        InputError: the resulting ramp is not ``0 <= low < high <= 1``.
        ModelError: the model's calibration entry for ``signal`` is malformed (the signal
            fails, so the verdict fails closed).
    """
    calibration = getattr(nli, "signal_calibration", None)
    entry = _calibrated(calibration.get(signal) if isinstance(calibration, Mapping) else None, signal)
    if low is not None or high is not None:
        base = entry or DEFAULT_RAMP
        lo = base[0] if low is None else low
        hi = base[1] if high is None else high
        source = "configured"
    elif entry:
        (lo, hi), source = entry, "calibrated"
    else:
        (lo, hi), source = DEFAULT_RAMP, "default"
    if not 0.0 <= lo < hi <= 1.0:
        raise InputError(f"{signal}: the contradiction ramp needs 0 <= low < high <= 1, got low={lo}, high={hi}")
    return lo, hi, source


def calibrated_direction(nli: object) -> str | None:
    """The intra signal's direction rule from the model's calibration (``None`` without one)."""
    calibration = getattr(nli, "signal_calibration", None)
    entry = calibration.get("intra_consistency") if isinstance(calibration, Mapping) else None
    direction = entry.get("direction") if isinstance(entry, Mapping) else None
    return str(direction) if direction else None


__all__ = ["DEFAULT_RAMP", "calibrated_direction", "contradiction_ramp", "resolve_ramp"]
