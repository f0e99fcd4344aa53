from __future__ import annotations

import sys
import types

import pytest

from ragtrust import registry


@pytest.fixture
def signal_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the signal registry loadable even before the provenance module lands."""
    try:
        import ragtrust.screening.provenance  # noqa: F401
    except ModuleNotFoundError:
        monkeypatch.setitem(sys.modules, "ragtrust.screening.provenance", types.ModuleType("provenance"))
    registry._loaded.discard("signal")
