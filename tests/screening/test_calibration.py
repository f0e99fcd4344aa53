"""Per-model contradiction ramps: resolution order, the calibration procedure, direction rules."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from ragtrust.documents import Document
from ragtrust.errors import ConfigError, InputError, ModelError
from ragtrust.eval.calibration import (
    calibrate_cross,
    calibrate_intra,
    calibrate_model,
    dev_corpus,
    neighbour_sets,
    threshold_for,
    write_to_manifest,
)
from ragtrust.models.nli import MANIFEST_FILE, OnnxNLI
from ragtrust.screening.cross import CrossConsistencySignal
from ragtrust.screening.intra import IntraConsistencySignal
from ragtrust.screening.ramp import DEFAULT_RAMP, resolve_ramp
from ragtrust.testing import HashingEmbedder, LexicalNLI, retrieved
from ragtrust.text import assertions

DOC = (
    "Store passwords with a slow salted hash such as Argon2id. "
    "A salt is a random value generated for every password and kept beside the hash. "
    "Hashing every password without a random salt kept beside the hash is weakness CWE-759."
)


@dataclass
class OneWayNLI:
    """Calls a pair a contradiction only when the premise mentions 'salt' and the hypothesis 'without'."""

    contradiction: float = 0.85
    signal_calibration: dict[str, Any] | None = None
    model_id: str = "one-way"
    pairs: list[tuple[str, str]] = field(default_factory=list)

    def predict(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        self.pairs.extend(pairs)
        out = np.tile(np.array([0.1, 0.8, 0.1], dtype=np.float32), (len(pairs), 1))
        for i, (p, h) in enumerate(pairs):
            if "without" in h and "without" not in p:
                c = self.contradiction
                out[i] = [0.05, 0.95 - c, c]
        return out


def test_resolve_ramp_order() -> None:
    calibrated = OneWayNLI(signal_calibration={"intra_consistency": {"low": 0.8, "high": 0.9}})
    assert resolve_ramp(OneWayNLI(), "intra_consistency", None, None) == (*DEFAULT_RAMP, "default")
    assert resolve_ramp(calibrated, "intra_consistency", None, None) == (0.8, 0.9, "calibrated")
    assert resolve_ramp(calibrated, "cross_consistency", None, None) == (*DEFAULT_RAMP, "default")
    assert resolve_ramp(calibrated, "intra_consistency", 0.6, None) == (0.6, 0.9, "configured")
    assert resolve_ramp(OneWayNLI(), "intra_consistency", None, 0.95) == (0.4, 0.95, "configured")
    with pytest.raises(InputError, match="low < high"):
        resolve_ramp(calibrated, "intra_consistency", 0.95, None)


def test_threshold_for_is_the_clean_quantile() -> None:
    clean = [i / 100 for i in range(101)]
    assert threshold_for(clean, 0.05) == (0.95, 0.975)
    assert threshold_for([0.999] * 5, 0.05)[0] == 0.98  # capped: the ramp keeps a width
    with pytest.raises(InputError):
        threshold_for([], 0.05)
    with pytest.raises(InputError):
        threshold_for(clean, 0.0)


def test_intra_both_directions_catch_a_one_sided_contradiction() -> None:
    # the fake sees the contradiction only premise -> hypothesis with 'without' on the tail side
    # (forward); reversed text puts 'without' first, so only 'both' reads the reverse pairs too
    doc = retrieved([DOC])
    forward = IntraConsistencySignal(nli=OneWayNLI(), direction="forward", check_tail=True).score_batch(doc)[0]
    assert forward.score > 0.8
    reversed_doc = retrieved(
        [
            "Hashing passwords without any salt is weakness CWE-759 in the catalogue. "
            "Store passwords with a slow salted hash such as Argon2id. "
            "A salt is a random value generated for every password and kept beside the hash."
        ]
    )
    fwd = IntraConsistencySignal(nli=OneWayNLI(), direction="forward").score_batch(reversed_doc)[0]
    both = IntraConsistencySignal(nli=OneWayNLI(), direction="both").score_batch(reversed_doc)[0]
    assert fwd.score == 0.0
    assert both.score > 0.8 and both.details["direction"] == "both"


def test_intra_sentences_reverses_only_sentence_pairs() -> None:
    signal = IntraConsistencySignal(nli=OneWayNLI(), direction="sentences")
    checks = signal._checks(0, assertions(DOC))
    kinds = [c.kind for c in checks]
    assert {"halves", "tail", "tail_sentence"} <= set(kinds)
    result = signal.score_batch(retrieved([DOC]))[0]
    assert result.details["direction"] == "sentences"
    pairs = signal.nli.pairs  # type: ignore[attr-defined]
    assert len(pairs) == len(checks) + kinds.count("tail_sentence")
    tail = assertions(DOC)[-1].text
    assert [p for p, _ in pairs[len(checks) :]] == [tail] * kinds.count("tail_sentence")
    every = IntraConsistencySignal(nli=OneWayNLI(), direction="both")
    every.score_batch(retrieved([DOC]))
    assert len(every.nli.pairs) == 2 * len(checks)  # type: ignore[attr-defined]


def test_intra_uses_the_model_calibration() -> None:
    doc = retrieved([DOC])
    plain = IntraConsistencySignal(nli=OneWayNLI(contradiction=0.7)).score_batch(doc)[0]
    assert plain.score == pytest.approx((0.7 - 0.4) / 0.5, abs=1e-6)
    assert plain.details["ramp_source"] == "default"
    model = OneWayNLI(
        contradiction=0.7,
        signal_calibration={"intra_consistency": {"low": 0.75, "high": 0.875, "direction": "forward"}},
    )
    calibrated = IntraConsistencySignal(nli=model).score_batch(doc)[0]
    assert calibrated.score == 0.0 and not calibrated.reasons
    assert calibrated.details["ramp"] == [0.75, 0.875]
    assert calibrated.details["direction"] == "forward"
    assert all("without" not in p for p, _ in model.pairs)  # forward only: no reversed pairs sent
    configured = IntraConsistencySignal(nli=model, low=0.5).score_batch(doc)[0]
    assert configured.score > 0 and configured.details["ramp_source"] == "configured"


def test_intra_rejects_an_unknown_direction() -> None:
    with pytest.raises(ConfigError, match="direction"):
        IntraConsistencySignal(nli=OneWayNLI(), direction="sideways").score_batch(retrieved([DOC]))  # type: ignore[arg-type]


def test_cross_uses_the_model_calibration() -> None:
    texts = ["MD5 is broken for password storage.", "MD5 is not broken for password storage."]

    class Calibrated(LexicalNLI):
        signal_calibration = {"cross_consistency": {"low": 0.9, "high": 0.95}}

    plain = CrossConsistencySignal(nli=LexicalNLI()).score_batch(retrieved(texts))
    assert max(r.score for r in plain) > 0
    strict = CrossConsistencySignal(nli=Calibrated()).score_batch(retrieved(texts))
    assert all(r.score == 0 for r in strict)
    assert strict[0].details["ramp_source"] == "calibrated"
    assert strict[0].details["consistency"] == 1.0


def _corpus_docs() -> list[Document]:
    topics = ["passwords", "sessions", "cookies", "tokens", "queries", "uploads", "headers", "secrets"]
    return [
        Document(
            id=f"d{i}",
            text=(
                f"How should {t} be handled? Keep {t} under strict control in every service. "
                f"Review {t} handling during every release cycle. Log changes to {t} for audits."
            ),
        )
        for i, t in enumerate(topics)
    ]


def test_calibration_on_fakes_reports_thresholds_and_rates() -> None:
    corpus = dev_corpus(_corpus_docs(), n=8, seed=0)
    assert len(corpus.clean) == 8 and corpus.poisoned_index
    for i in corpus.poisoned_index:
        assert corpus.poisoned[i].text != corpus.clean[i].text
    sets = neighbour_sets(HashingEmbedder(dim=64), corpus.clean, k=3)
    assert all(len(m) == 3 and m[0] == i and i not in m[1:] for i, m in enumerate(sets))
    intra = calibrate_intra(LexicalNLI(), corpus, sets, fpr=0.25)
    assert intra["direction"] in ("forward", "sentences", "both")
    assert set(intra["directions"]) == {"forward", "sentences", "both"}
    assert 0 <= intra["low"] < intra["high"] <= 1
    for rule in intra["directions"].values():
        assert {"clean_above_low", "poisoned_above_low", "n_clean", "clean_above_default_low"} <= set(rule)
        assert rule["clean_sets_above_low"] <= 0.25
    cross = calibrate_cross(LexicalNLI(), corpus, sets, fpr=0.25)
    assert cross["n_clean_sets"] > 0 and 0 <= cross["low"] < cross["high"] <= 1
    assert cross["clean_sets_above_low"] <= 0.25
    assert {"anchor_clean_above_low", "anchor_poisoned_above_low"} <= set(cross)


def test_manifest_calibration_is_keyed_to_the_model_file(tmp_path: Path) -> None:
    manifest = json.loads(MANIFEST_FILE.read_text(encoding="utf-8"))
    signals = {"intra_consistency": {"low": 0.7, "high": 0.85}}
    manifest["signal_calibration"] = {"nli_sha256": manifest["sha256"], "signals": signals}
    path = tmp_path / "nli_manifest.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    model = OnnxNLI(manifest_path=str(path))
    assert model.signal_calibration == signals
    manifest["signal_calibration"]["nli_sha256"] = "0" * 64  # calibrated for another file: stale
    path.write_text(json.dumps(manifest), encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    # read once per manifest version: the rewritten manifest is noticed by the same instance
    assert model.signal_calibration is None
    assert OnnxNLI(manifest_path=str(path)).signal_calibration is None


def test_calibrate_model_report_goes_into_a_manifest(tmp_path: Path) -> None:
    data = tmp_path / "dev"
    data.mkdir()
    for doc in _corpus_docs():
        (data / f"{doc.id}.md").write_text(doc.text, encoding="utf-8")
    report = calibrate_model(LexicalNLI(), HashingEmbedder(dim=64), data, benchmarks=(), n=8, fpr=0.25, k=3)
    assert report["corpus"]["sampled"] == 8 and report["fpr_level"] == "retrieved set of 3 documents"
    assert set(report["signals"]) == {"intra_consistency", "cross_consistency", "witness"}
    # the scan's witness is not a screening.signals entry: it reads the manifest only
    assert report["suggested_spec"] == [
        {"type": name, **v} for name, v in report["signals"].items() if name != "witness"
    ]
    assert report["witness"]["n_clean"] > 0
    manifest = tmp_path / "nli_manifest.json"
    manifest.write_text(MANIFEST_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    write_to_manifest(manifest, report, "report.json")
    stored = json.loads(manifest.read_text(encoding="utf-8"))["signal_calibration"]
    assert stored["nli_sha256"] == json.loads(MANIFEST_FILE.read_text())["sha256"] and stored["report"] == "report.json"
    shipped = json.loads(MANIFEST_FILE.read_text())["signal_calibration"]["signals"]
    assert "claim_conflict" in shipped  # fitted by another command: kept, not dropped
    assert OnnxNLI(manifest_path=str(manifest)).signal_calibration == {**shipped, **report["signals"]}
    other = json.loads(manifest.read_text(encoding="utf-8"))
    other["sha256"] = "0" * 64  # another model file: the old entries are not carried over
    manifest.write_text(json.dumps(other), encoding="utf-8")
    write_to_manifest(manifest, report, "report.json")
    assert json.loads(manifest.read_text())["signal_calibration"]["signals"] == report["signals"]


def test_a_calibration_suggested_spec_pastes_into_screening_signals(tmp_path: Path) -> None:
    """The report's ``suggested_spec``, pasted as it is into ``screening.signals``, builds those signals."""
    from ragtrust.config import load_settings
    from ragtrust.screening.aggregate import build_screener

    data = tmp_path / "dev"
    data.mkdir()
    for doc in _corpus_docs():
        (data / f"{doc.id}.md").write_text(doc.text, encoding="utf-8")
    report = calibrate_model(LexicalNLI(), HashingEmbedder(dim=64), data, benchmarks=(), n=8, fpr=0.25, k=3)
    pasted = json.loads(json.dumps(report["suggested_spec"]))  # as a user copies it from the report
    settings = load_settings(env={}, overrides={"screening": {"signals": ["injection", *pasted]}})
    assert load_settings(env={}, overrides=settings.to_dict()) == settings  # the config round-trips
    screener = build_screener(settings, nli=LexicalNLI(), embedder=HashingEmbedder(dim=64))
    by_name = {s.name: s for s in screener.signals}
    assert list(by_name) == ["injection", "intra_consistency", "cross_consistency"]
    intra, cross = by_name["intra_consistency"], by_name["cross_consistency"]
    assert isinstance(intra, IntraConsistencySignal) and isinstance(cross, CrossConsistencySignal)
    expected = report["signals"]
    assert (intra.low, intra.high, intra.direction) == (
        expected["intra_consistency"]["low"],
        expected["intra_consistency"]["high"],
        expected["intra_consistency"]["direction"],
    )
    assert (cross.low, cross.high) == (expected["cross_consistency"]["low"], expected["cross_consistency"]["high"])


@pytest.mark.parametrize("entry", [{"low": 0.8}, {"low": "high", "high": 0.9}, [0.8, 0.9]])
def test_a_malformed_calibration_fails_the_signal_with_a_clear_error(entry: object) -> None:
    model = OneWayNLI(signal_calibration={"intra_consistency": entry})  # type: ignore[dict-item]
    with pytest.raises(ModelError, match="calibration is malformed"):
        IntraConsistencySignal(nli=model).score_batch(retrieved([DOC]))


def test_a_malformed_calibration_fails_the_screen_closed() -> None:
    from ragtrust.screening.aggregate import Screener

    model = OneWayNLI(signal_calibration={"intra_consistency": {"low": None, "high": 0.9}})
    report = Screener([IntraConsistencySignal(nli=model)]).screen(retrieved([DOC, DOC + " More."]))
    assert report.errors and "calibration is malformed" in " ".join(map(str, report.errors))
