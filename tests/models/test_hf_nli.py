"""Real loading code for Hugging Face NLI checkpoints, proven on a tiny local model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragtrust.errors import MissingDependencyError, ModelError
from ragtrust.models.nli import NLIEngine, OnnxNLI, TransformersNLI, label_permutation

SCRAMBLED = {0: "CONTRADICTION", 1: "entailment", 2: "Neutral"}

PAIRS = [
    ("The cat sat on the mat.", "A cat is on a mat."),
    ("Paris is the capital of France.", "Berlin is the capital of France."),
    ("Use parameterised queries to stop SQL injection.", "Concatenate user input into SQL."),
]


def test_label_permutation_maps_by_name() -> None:
    assert label_permutation({0: "contradiction", 1: "neutral", 2: "entailment"}) == [2, 1, 0]
    assert label_permutation({"0": "ENTAILMENT", "1": "NEUTRAL", "2": "CONTRADICTION"}) == [0, 1, 2]
    assert label_permutation(SCRAMBLED) == [1, 2, 0]
    with pytest.raises(ModelError):
        label_permutation({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})


def test_transformers_nli_reorders_logits_by_label_name(tiny_nli_dir: Path) -> None:
    import torch
    import transformers

    nli = TransformersNLI(model=str(tiny_nli_dir))
    probs = nli.predict(PAIRS)
    assert probs.shape == (3, 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    # Recompute by hand: raw logits are in checkpoint order (contradiction, entailment, neutral).
    tok = transformers.AutoTokenizer.from_pretrained(tiny_nli_dir)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_nli_dir).eval()
    enc = tok([p for p, _ in PAIRS], [h for _, h in PAIRS], padding=True, return_tensors="pt")
    with torch.inference_mode():
        raw = torch.softmax(model(**enc).logits, dim=-1).numpy()
    np.testing.assert_allclose(probs[:, 0], raw[:, 1], atol=1e-5)  # entailment
    np.testing.assert_allclose(probs[:, 1], raw[:, 2], atol=1e-5)  # neutral
    np.testing.assert_allclose(probs[:, 2], raw[:, 0], atol=1e-5)  # contradiction


def test_transformers_nli_missing_model_is_a_model_error(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    with pytest.raises(ModelError, match=r"cannot load NLI model '.*nope': no such folder$"):
        TransformersNLI(model=str(tmp_path / "nope")).predict(PAIRS)
    with pytest.raises(ModelError, match=r"cannot load NLI model '.*': .*\. Offline machines need"):
        TransformersNLI(model=str(tmp_path)).predict(PAIRS)  # a folder without a model: transformers says why


def test_onnx_export_matches_torch_and_checks_sha(tiny_nli_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from ragtrust.models.export import package_model

    manifest = package_model(tiny_nli_dir, tmp_path / "fp32", quantize=False, max_length=128, model_id="tiny")
    onnx_probs = OnnxNLI(manifest_path=str(manifest)).predict(PAIRS)
    torch_probs = TransformersNLI(model=str(tiny_nli_dir)).predict(PAIRS)
    np.testing.assert_allclose(onnx_probs, torch_probs, atol=1e-4)
    # A hypothesis longer than the window is truncated, never an error.
    long_pair = [("A short premise.", "word " * 600)]
    assert OnnxNLI(manifest_path=str(manifest)).predict(long_pair).shape == (1, 3)
    assert TransformersNLI(model=str(tiny_nli_dir), max_length=128).predict(long_pair).shape == (1, 3)

    # attention fused; residual+LayerNorm and bias+GELU deliberately not (slow CPU kernels)
    import onnx

    ops = {n.op_type for n in onnx.load(str(manifest.parent / "nli-fp32.onnx")).graph.node}
    assert "Attention" in ops and not ops & {"SkipLayerNormalization", "BiasGelu"}

    int8_manifest = package_model(tiny_nli_dir, tmp_path / "int8", quantize=True, max_length=128, model_id="tiny")
    int8 = OnnxNLI(manifest_path=str(int8_manifest)).predict(PAIRS)
    assert int8.shape == (3, 3)
    np.testing.assert_allclose(int8.sum(axis=1), 1.0, atol=1e-5)

    # A tampered file fails the checksum.
    data = json.loads(manifest.read_text())
    data["sha256"] = "0" * 64
    manifest.write_text(json.dumps(data))
    with pytest.raises(ModelError, match="sha256"):
        OnnxNLI(manifest_path=str(manifest)).predict(PAIRS)


def test_engine_windows_long_premises_and_reports_the_window(tiny_nli_dir: Path) -> None:
    engine = NLIEngine(TransformersNLI(model=str(tiny_nli_dir)), max_premise_tokens=40)
    premise = " ".join(f"Sentence number {i} talks about topic {i} in some detail here." for i in range(20))
    (pred,) = engine.predict_windows([(premise, "Topic 7 is discussed.")])
    assert len(pred.windows) > 2
    assert pred.windows[0][0] == 0 and pred.windows[-1][1] == len(premise)
    assert 0 <= pred.best < len(pred.windows)
    assert pred.row[0] == pred.probs[:, 0].max()


def test_missing_transformers_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def fake_import(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("transformers"):
            raise ImportError("no transformers")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(MissingDependencyError, match=r"ragtrust\[train\]"):
        TransformersNLI(model="facebook/bart-large-mnli").warm_up()


def test_default_nli_loads_an_exported_onnx_folder(tiny_nli_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from ragtrust.config import load_settings
    from ragtrust.models.export import package_model
    from ragtrust.models.nli import default_nli

    manifest = package_model(tiny_nli_dir, tmp_path / "onnx", quantize=False, max_length=128, model_id="tiny")
    for name in (str(manifest.parent), str(manifest)):
        engine = default_nli(load_settings(env={}, overrides={"models": {"nli": name}}))
        assert isinstance(engine.model, OnnxNLI)
        assert engine.predict(PAIRS).shape == (3, 3)
        assert engine.model.model_id == "tiny" and engine.model.fingerprint.startswith("tiny@")


def test_persisted_cache_is_keyed_by_the_model_file(tiny_nli_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from ragtrust.models.export import package_model

    cache = str(tmp_path / "nli-cache.sqlite")
    fp32 = package_model(tiny_nli_dir, tmp_path / "a", quantize=False, max_length=128, model_id="same-id")
    int8 = package_model(tiny_nli_dir, tmp_path / "b", quantize=True, max_length=128, model_id="same-id")
    first = NLIEngine(OnnxNLI(manifest_path=str(fp32)), cache_path=cache)
    first.predict(PAIRS)
    again = NLIEngine(OnnxNLI(manifest_path=str(fp32)), cache_path=cache)
    again.predict(PAIRS)
    assert again.cache_hits == len(PAIRS)  # same file: served from the persisted cache
    other = NLIEngine(OnnxNLI(manifest_path=str(int8)), cache_path=cache)
    other.predict(PAIRS)
    assert other.cache_hits == 0  # same model id, another file: never the first one's results


def test_embedder_export_keeps_the_vectors_of_the_float_model(tiny_nli_dir: Path, tmp_path: Path) -> None:
    """package_embedder: fused encoder with int8 weights, vectors close to torch mean pooling."""
    pytest.importorskip("onnx")
    from ragtrust.models.embedder import OnnxEmbedder, TransformersEmbedder
    from ragtrust.models.export import package_embedder

    manifest_path = package_embedder(tiny_nli_dir, tmp_path / "emb", model_id="tiny-encoder")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["dim"] == 32 and sorted(p.name for p in manifest_path.parent.iterdir()) == [
        "embedder-int8w.onnx",
        "embedder_manifest.json",
    ]
    onnx_file = manifest_path.parent / manifest["onnx_file"]
    import onnx

    graph = onnx.load(str(onnx_file)).graph
    assert {"Attention", "DequantizeLinear"} <= {n.op_type for n in graph.node}
    assert any(init.data_type == onnx.TensorProto.INT8 for init in graph.initializer)
    embedder = OnnxEmbedder(model_path=str(onnx_file), dim=32, max_windows=1, threads=1)
    texts = ["How should passwords be stored?", "Use parameterised queries against SQL injection."]
    reference = TransformersEmbedder(model=str(tiny_nli_dir)).embed(texts)
    assert ((embedder.embed(texts) * reference).sum(axis=1) > 0.99).all()
