"""What names a kept result's inputs (ragtrust.identity): every parameter is named, or nothing is reused."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ragtrust.documents import SignalResult
from ragtrust.identity import UNNAMED, complete, model_identity
from ragtrust.scan.state import config_key
from ragtrust.screening.base import SCREEN_CACHE_FILE, Signal, persist_caches, results_identity, score_documents
from ragtrust.screening.conflicts import ClaimConflictSignal
from ragtrust.screening.intra import IntraConsistencySignal
from ragtrust.screening.linguistic import LinguisticSignal
from ragtrust.screening.provenance import ProvenanceSignal
from ragtrust.testing import HashingEmbedder, LexicalNLI, retrieved


class Classifier:
    """A plugin's model: not a dataclass, named by its model id."""

    def __init__(self, model_id: str, flag: float) -> None:
        self.model_id, self.flag = model_id, flag


class Anonymous:
    """An object that names neither itself nor its data."""

    def __init__(self, flag: float) -> None:
        self.flag = flag


@dataclass
class FlagSignal(Signal):
    classifier: Any = None
    calls: list[int] = field(default_factory=list, compare=False)
    name: ClassVar[str] = "flag"
    results_cacheable: ClassVar[bool] = True

    def score_batch(self, docs, query=None):  # type: ignore[no-untyped-def]
        self.calls.append(len(docs))
        return [SignalResult(name=self.name, score=self.classifier.flag) for _ in docs]


def test_a_model_in_a_field_of_any_name_is_named_by_its_identity(tmp_path: Path) -> None:
    docs = retrieved(["Rotate the session identifier after login."])
    old, new = FlagSignal(Classifier("flag-v1", 0.0)), FlagSignal(Classifier("flag-v2", 0.9))
    assert results_identity(old) != results_identity(new)
    persist_caches([old, new], tmp_path / SCREEN_CACHE_FILE)
    assert score_documents(old, docs)[0].score == 0.0
    assert score_documents(new, docs)[0].score == 0.9


def test_an_object_that_cannot_be_named_keeps_nothing(tmp_path: Path) -> None:
    docs = retrieved(["Rotate the session identifier after login."])
    signal = FlagSignal(Anonymous(0.2))
    assert model_identity(signal)[UNNAMED] == ["classifier"] and results_identity(signal) is None
    persist_caches([signal], tmp_path / SCREEN_CACHE_FILE)
    score_documents(signal, docs)
    score_documents(signal, docs)
    assert signal.calls == [1, 1]  # scored every time: its result is never reused
    # and a scan over such a signal reuses no row: every configuration key is new
    assert config_key(None, {"signal.flag": signal}) != config_key(None, {"signal.flag": signal})


def test_numpy_scalars_are_named_by_their_values() -> None:
    weak = LinguisticSignal(discussion_damping=np.float32(0.0))  # type: ignore[arg-type]
    strong = LinguisticSignal(discussion_damping=np.float32(1.0))  # type: ignore[arg-type]
    assert results_identity(weak) != results_identity(strong)
    assert results_identity(LinguisticSignal(discussion_damping=np.float64(0.5))) == results_identity(  # type: ignore[arg-type]
        LinguisticSignal(discussion_damping=0.5)
    )


@dataclass
class RecalibratedNLI(LexicalNLI):
    """An NLI model whose calibration is a property read at every access (as OnnxNLI reads its manifest)."""

    model_id: str = "recalibrated-nli"
    ramp: list[float] = field(default_factory=lambda: [0.8, 0.9], compare=False)

    @property
    def signal_calibration(self) -> dict[str, Any]:
        return {"intra_consistency": {"low": self.ramp[0], "high": self.ramp[1]}}


def test_a_calibration_read_by_a_property_is_part_of_the_identity() -> None:
    nli = RecalibratedNLI()
    signal = IntraConsistencySignal(nli=nli)
    before = results_identity(signal)
    nli.ramp[:] = [0.01, 0.02]  # a calibration written to the manifest while the process runs
    assert results_identity(signal) != before
    assert model_identity(nli)["signal_calibration"] == {"intra_consistency": {"low": 0.01, "high": 0.02}}


def test_the_ledger_is_a_data_source_not_a_parameter(tmp_path: Path) -> None:
    from ragtrust.ingest.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.sqlite")
    conflicts = ClaimConflictSignal(nli=LexicalNLI(), embedder=HashingEmbedder(), ledger=ledger)
    for signal in (conflicts, ProvenanceSignal(ledger=ledger)):
        assert complete(model_identity(signal)), model_identity(signal)
