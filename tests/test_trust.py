from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragtrust.config import TrustConfig
from ragtrust.errors import InputError
from ragtrust.trust import compute_trust, dampener, retrieval_modifier, trust_level, trust_warnings

CONFIG = TrustConfig()
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def test_worked_example() -> None:
    assert round(dampener(0.9), 4) == 0.7333
    assert round(0.59 * dampener(0.9), 4) == 0.4327


def test_dampener_golden_and_continuity() -> None:
    assert dampener(0.0) == 1.0 and dampener(0.7) == 1.0
    assert dampener(1.0) == pytest.approx(0.6)
    assert dampener(0.7 + 1e-9) == pytest.approx(1.0, abs=1e-7)
    assert dampener(0.85) == pytest.approx(0.8)


@given(unit, unit)
def test_dampener_monotone(a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    assert 0.6 - 1e-12 <= dampener(hi) <= dampener(lo) <= 1.0


def test_retrieval_modifier() -> None:
    assert retrieval_modifier(None) == 1.0
    assert retrieval_modifier(0.0) == 0.5
    assert retrieval_modifier(0.15) == pytest.approx(0.75)
    assert retrieval_modifier(0.3) == 1.0 and retrieval_modifier(0.9) == 1.0
    assert retrieval_modifier(0.3 - 1e-9) == pytest.approx(1.0, abs=1e-7)
    assert retrieval_modifier(-0.2) == 0.5


@pytest.mark.parametrize(
    ("t", "level"),
    [
        (1.0, "HIGH"),
        (0.8, "HIGH"),
        (0.7999, "MEDIUM"),
        (0.5, "MEDIUM"),
        (0.4999, "LOW"),
        (0.3, "LOW"),
        (0.2999, "VERY LOW"),
        (0.0, "VERY LOW"),
    ],
)
def test_levels_cut_points(t: float, level: str) -> None:
    assert trust_level(t, CONFIG) == level


@given(unit, unit, unit, st.one_of(st.none(), unit), st.booleans())
def test_trust_in_unit_interval_and_levels_agree_with_decision(
    f: float, c: float, p: float, s: float | None, failed: bool
) -> None:
    r = compute_trust(f, c, p, s, CONFIG, failed=failed)
    assert 0.0 <= r.trust_score <= 1.0
    assert r.trusted == (r.trust_score >= CONFIG.tau and not failed)
    # levels agree with the decision: trusted <=> HIGH/MEDIUM; a failed verdict never reads above LOW
    if r.trusted:
        assert r.level in ("HIGH", "MEDIUM")
    else:
        assert r.level in ("LOW", "VERY LOW")


def test_compute_trust_golden() -> None:
    r = compute_trust(1.0, 0.8, 0.9, None, CONFIG)
    assert r.trust_raw == pytest.approx(0.4 + 0.28 + 0.025)
    assert r.trust_score == pytest.approx(0.705 * (1 - 0.4 * 0.2 / 0.3))
    assert r.level == "MEDIUM" and r.trusted
    low = compute_trust(1.0, 1.0, 0.0, 0.0, CONFIG)
    assert low.retrieval_modifier == 0.5 and low.trust_score == pytest.approx(0.5)


def test_failed_is_never_trusted() -> None:
    r = compute_trust(1.0, 1.0, 0.0, 0.9, CONFIG, failed=True)
    assert r.trust_score == 1.0 and not r.trusted
    warnings = trust_warnings(r, factuality=1.0, consistency=1.0, poison=0.0, max_similarity=0.9, config=CONFIG)
    assert any("internal error" in w for w in warnings)


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan])
def test_bad_components(bad: float) -> None:
    with pytest.raises(InputError):
        compute_trust(bad, 0.5, 0.5, None, CONFIG)


def test_warnings_plain_language() -> None:
    r = compute_trust(0.5, 0.6, 0.9, 0.2, CONFIG)
    ws = trust_warnings(
        r, factuality=0.5, consistency=0.6, poison=0.9, max_similarity=0.2, config=CONFIG, factuality_inconclusive=True
    )
    assert ws[0].startswith("Flagged: trust score")
    assert any("poison probability (0.90)" in w for w in ws)
    assert any("inconclusive" in w for w in ws)
    ok = compute_trust(0.95, 1.0, 0.0, 0.8, CONFIG)
    assert trust_warnings(ok, factuality=0.95, consistency=1.0, poison=0.0, max_similarity=0.8, config=CONFIG) == ()
