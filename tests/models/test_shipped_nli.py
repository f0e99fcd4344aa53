"""The shipped NLI model: loads offline, checksum verified, and gets the sanity cases right."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ragtrust.models.embedder as embedder_module
from ragtrust.models.embedder import saturates_without_vnni
from ragtrust.models.nli import MANIFEST_FILE, OnnxNLI, default_nli
from ragtrust.models.nli_eval import SANITY_CASES

pytestmark = pytest.mark.model

CASES = list(SANITY_CASES)
LABELS = ("entailment", "neutral", "contradiction")


@pytest.fixture(scope="module")
def model() -> OnnxNLI:
    m = OnnxNLI()
    m.warm_up()
    return m


def test_manifest_and_checksum(model: OnnxNLI) -> None:
    manifest = json.loads(MANIFEST_FILE.read_text())
    assert manifest["id2label"] == {"0": "entailment", "1": "neutral", "2": "contradiction"}
    assert (MANIFEST_FILE.parent / manifest["onnx_file"]).stat().st_size <= 30_000_000
    assert model.model_id == manifest["model_id"]


@pytest.mark.parametrize(("premise", "hypothesis", "label"), CASES)
def test_sanity_cases(model: OnnxNLI, premise: str, hypothesis: str, label: str) -> None:
    probs = model.predict([(premise, hypothesis)])[0]
    np.testing.assert_allclose(probs.sum(), 1.0, atol=1e-5)
    assert LABELS[int(probs.argmax())] == label, dict(zip(LABELS, probs.round(3).tolist(), strict=True))


def test_default_engine_uses_shipped_model() -> None:
    engine = default_nli()
    assert isinstance(engine.model, OnnxNLI)
    assert engine.predict([("The cat sat on the mat.", "A cat is on a mat.")]).shape == (1, 3)


def test_shipped_model_carries_its_signal_calibration(model: OnnxNLI) -> None:
    # ragtrust nli calibrate --write-manifest: keyed to this ONNX file, so a re-released
    # model without a fresh calibration fails here instead of using stale thresholds
    manifest = json.loads(MANIFEST_FILE.read_text())
    assert manifest["signal_calibration"]["nli_sha256"] == manifest["sha256"]
    calibration = model.signal_calibration
    assert calibration is not None
    for name in ("intra_consistency", "cross_consistency"):
        assert 0.4 <= calibration[name]["low"] < calibration[name]["high"] <= 1.0
    assert calibration["intra_consistency"]["direction"] in ("forward", "sentences", "both")
    assert default_nli().signal_calibration == calibration


def test_a_pair_scores_the_same_whatever_is_scored_beside_it() -> None:
    """One pair per call (``batch_size=1``): the int8 model's per-call activation scale no longer couples pairs."""
    import pickle

    pair = ("Honey keeps for years in a sealed jar.", "Honey spoils within a week.")
    neighbours = [
        ("A queen bee lives two to five years.", "A queen bee lives three weeks."),
        ("Use parameterised queries. " * 20, "String concatenation is safe."),
        ("The bridge opened in 1937.", "The bridge opened in 1937."),
    ]
    model = OnnxNLI(batch_size=1)
    assert model._workers == 2 and OnnxNLI()._workers == 1
    alone = model.predict([pair])[0]
    for k in range(1, len(neighbours) + 1):
        assert np.array_equal(model.predict([pair, *neighbours[:k]])[0], alone)
    one_by_one = OnnxNLI(batch_size=1, concurrent=False).predict([pair, *neighbours])
    assert np.array_equal(model.predict([pair, *neighbours]), one_by_one)
    copy = pickle.loads(pickle.dumps(model))  # the worker pool does not travel
    assert copy._pool is None and np.array_equal(copy.predict([pair])[0], alone)


@pytest.mark.parametrize(
    ("flags", "saturates"),
    [
        ("flags : fpu sse4_2 avx avx2 fma", True),  # AVX2 only (an AMD EPYC of this CI, many laptops)
        ("flags : avx2 avx512f avx512bw", True),  # AVX-512 without VNNI (Skylake-X)
        ("flags : avx2 avx512f avx512_vnni", False),
        ("flags : avx2 avx_vnni", False),  # AVX-VNNI (Alder Lake and later)
        ("flags : avx2 amx_int8 amx_tile", False),
    ],
)
def test_cpus_without_vnni_need_the_exact_int8_kernels(flags: str, saturates: bool) -> None:
    assert saturates_without_vnni(flags) is saturates


@pytest.mark.parametrize("saturates", [True, False])
def test_the_exact_int8_kernels_are_used_where_the_fast_ones_saturate(
    monkeypatch: pytest.MonkeyPatch, saturates: bool
) -> None:
    monkeypatch.setattr(embedder_module, "int8_saturates", lambda: saturates)
    model = OnnxNLI()
    model.warm_up()
    options = model._session.get_session_options()
    if saturates:
        assert options.get_session_config_entry("session.x64quantprecision") == "1"
        # results of the exact kernels never share a cache with the fast kernels' results
        assert model.fingerprint.endswith("+exact-int8")
    else:
        with pytest.raises(RuntimeError):
            options.get_session_config_entry("session.x64quantprecision")
        assert "+" not in model.fingerprint
