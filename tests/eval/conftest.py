"""The benchmark harness tests' gate: the real ``TrustGate`` over the shipped fakes (no models).

:func:`ragtrust.eval.runner.trustgate_factory` builds it, as for a real run; the fixture
only records what each gate was built from, so that a test can check which corpus and
settings a run handed to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from ragtrust.config import Settings
from ragtrust.documents import Document
from ragtrust.eval.runner import Gate, trustgate_factory
from ragtrust.models.base import Embedder, NLIModel


@dataclass(frozen=True)
class BuiltGate:
    """A gate the runner asked for, with the corpus and settings it was built from."""

    documents: Sequence[Document]
    settings: Settings
    gate: Gate


@pytest.fixture
def fake_gate_factory() -> Any:
    gates: list[BuiltGate] = []

    def factory(
        documents: Sequence[Document], settings: Settings, nli: NLIModel | None, embedder: Embedder | None
    ) -> Gate:
        gate = trustgate_factory(documents, settings, nli, embedder)
        gates.append(BuiltGate(list(documents), settings, gate))
        return gate

    factory.gates = gates  # type: ignore[attr-defined]
    return factory
