"""Fixtures shared by the adapter tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ragtrust.pipeline import TrustGate


@pytest.fixture
def crashed_stage1(monkeypatch: pytest.MonkeyPatch) -> Callable[[TrustGate], TrustGate]:
    """Make every Stage 1 signal of a gate raise, as a crashed model would; returns the gate."""

    def boom(*args: object, **kwargs: object) -> object:
        raise RuntimeError("injection model crashed")

    def crash(gate: TrustGate) -> TrustGate:
        gate.warm_up()
        for signal in gate.screener.signals:
            monkeypatch.setattr(signal, "score_batch", boom)
        return gate

    return crash
