"""Export Hugging Face checkpoints to ONNX, quantise them, write their manifests.

Needs the ``[train]`` extra (torch, transformers, onnx). Two products:

* the NLI cross-encoder (:func:`package_model`): fused, dynamic int8; its manifest is what
  :class:`~ragtrust.models.nli.OnnxNLI` reads (file names, sha256, labels, temperature);
* the sentence embedder (:func:`package_embedder`): fused, int8 *weights* with float
  compute (:func:`weight_only_int8`), read by :class:`~ragtrust.models.embedder.OnnxEmbedder`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ragtrust.errors import MissingDependencyError, ModelError
from ragtrust.io import atomic_write_text
from ragtrust.models.embedder import sha256_file


def export_onnx(hf_dir: str | Path, out_file: str | Path, *, opset: int = 17, encoder_only: bool = False) -> Path:
    """Export a checkpoint to an fp32 ONNX file (dynamic batch and sequence axes).

    Args:
        hf_dir: the Hugging Face model folder.
        out_file: the ONNX file to write.
        opset: ONNX opset version.
        encoder_only: export the bare encoder (output ``last_hidden_state``, for embedders)
            instead of the sequence-classification model (output ``logits``).
    """
    try:
        import torch
        from transformers import AutoModel, AutoModelForSequenceClassification
    except ImportError as exc:
        raise MissingDependencyError("ONNX export", 'pip install "ragtrust[train]"') from exc
    # Eager attention exports the plain MatMul/Softmax pattern that ONNX Runtime's
    # transformer optimizer fuses into one Attention op (the SDPA export is not fused).
    loader = AutoModel if encoder_only else AutoModelForSequenceClassification
    model = loader.from_pretrained(str(hf_dir), attn_implementation="eager").eval()
    output = "last_hidden_state" if encoder_only else "logits"
    output_axes = {0: "batch", 1: "sequence"} if encoder_only else {0: "batch"}
    model.config.return_dict = False
    out = Path(out_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    ids = torch.ones((2, 16), dtype=torch.long)
    args = (ids, torch.ones_like(ids), torch.zeros_like(ids))
    axes = {0: "batch", 1: "sequence"}

    class _Wrapper(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)[0]

    try:
        torch.onnx.export(
            _Wrapper(model),
            args,
            str(out),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=[output],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, output: output_axes},
            opset_version=opset,
            dynamo=False,
        )
    except Exception as exc:
        raise ModelError(f"ONNX export of {hf_dir} failed: {exc}") from exc
    return out


def optimize_bert(onnx_file: str | Path, out_file: str | Path, *, num_heads: int, hidden_size: int) -> Path:
    """Fuse attention, LayerNorm and GELU with ONNX Runtime's transformer optimizer.

    Raises:
        ModelError: nothing was fused (the graph is not a BERT-style encoder).
    """
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    # Attention is fused; residual+LayerNorm and bias+GELU are not: ONNX Runtime's CPU
    # SkipLayerNormalization and BiasGelu kernels are slower than the plain Add,
    # LayerNormalization and Gelu they replace (1.24x end to end at 128 tokens, batch 32;
    # docs/benchmarks.md). OnnxNLI also keeps the session from re-fusing them at load.
    options = FusionOptions("bert")
    options.enable_skip_layer_norm = False
    options.enable_bias_skip_layer_norm = False
    options.enable_bias_gelu = False
    model = optimizer.optimize_model(
        str(onnx_file),
        model_type="bert",
        num_heads=num_heads,
        hidden_size=hidden_size,
        opt_level=1,
        optimization_options=options,
    )
    fused = model.get_fused_operator_statistics()
    if not fused.get("Attention"):
        raise ModelError(f"the optimizer fused no attention in {onnx_file}: {fused}")
    out = Path(out_file)
    model.save_model_to_file(str(out))
    return out


def quantize_int8(fp32_file: str | Path, int8_file: str | Path) -> Path:
    """Dynamic int8 quantisation (per-channel weights) with ONNX Runtime."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = Path(int8_file)
    quantize_dynamic(
        str(fp32_file),
        str(out),
        per_channel=True,
        weight_type=QuantType.QInt8,
        # fused ops (com.microsoft domain) defeat shape inference; their tensors are float
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    return out


def _export_fused(
    hf: Path, out: Path, name: str, *, encoder_only: bool = False, optimize: bool = True
) -> tuple[dict[str, Any], Path]:
    """Export ``hf`` to ``out/name`` (fp32) and fuse it in place; returns (HF config, file)."""
    out.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = json.loads((hf / "config.json").read_text())
    fp32 = export_onnx(hf, out / name, encoder_only=encoder_only)
    if optimize:
        fused = optimize_bert(
            fp32,
            out / f"fused-{name}",
            num_heads=config["num_attention_heads"],
            hidden_size=config["hidden_size"],
        )
        fused.replace(fp32)
    return config, fp32


def weight_only_int8(fp32_file: str | Path, out_file: str | Path, *, min_elements: int = 16_384) -> Path:
    """Store every large 2-D weight as symmetric int8 with one scale per output channel.

    Each weight becomes an int8 initializer + scale + ``DequantizeLinear``, so the file is a
    quarter of the fp32 size while the arithmetic stays float: the vectors stay within about
    1e-3 cosine of the fp32 model, which dynamic (activation) int8 quantisation does not
    achieve for mean-pooled embeddings (docs/benchmarks.md). MatMul / Attention weights
    ``[K, N]`` get a scale per column, embedding tables ``[V, D]`` a scale per row.
    """
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError as exc:
        raise MissingDependencyError("ONNX quantisation", 'pip install "ragtrust[train]"') from exc
    import numpy as np

    model = onnx.load(str(fp32_file))
    graph = model.graph
    consumers: dict[str, set[str]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, set()).add(node.op_type)
    dequantize = []
    for init in list(graph.initializer):
        weight = numpy_helper.to_array(init)
        if weight.dtype != np.float32 or weight.ndim != 2 or weight.size < min_elements:
            continue
        axis = 0 if consumers.get(init.name, set()) <= {"Gather", "EmbedLayerNormalization"} else 1
        amax = np.abs(weight).max(axis=1 - axis, keepdims=True)
        scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
        quantized = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
        graph.initializer.remove(init)
        graph.initializer.extend(
            [
                numpy_helper.from_array(quantized, f"{init.name}_int8"),
                numpy_helper.from_array(scale.reshape(-1), f"{init.name}_scale"),
            ]
        )
        dequantize.append(
            helper.make_node(
                "DequantizeLinear",
                [f"{init.name}_int8", f"{init.name}_scale"],
                [init.name],
                axis=axis,
                name=f"{init.name}_dequantize",
            )
        )
    if not dequantize:
        raise ModelError(f"{fp32_file}: no float weight of at least {min_elements} elements to quantise")
    nodes = dequantize + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    out = Path(out_file)
    onnx.save(model, str(out))
    return out


def package_embedder(
    hf_dir: str | Path,
    out_dir: str | Path,
    *,
    model_id: str = "sentence-transformers/all-MiniLM-L6-v2",
    max_length: int = 256,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Export + fuse + int8 weights + ``embedder_manifest.json``: what :class:`OnnxEmbedder` loads."""
    out = Path(out_dir)
    config, fused = _export_fused(Path(hf_dir), out, "embedder-fp32.onnx", encoder_only=True)
    final = weight_only_int8(fused, out / "embedder-int8w.onnx")
    fused.unlink()
    manifest = {
        "model_id": model_id,
        "onnx_file": final.name,
        "sha256": sha256_file(final),
        "size_bytes": final.stat().st_size,
        "dim": config["hidden_size"],
        "max_length": max_length,
        "pooling": "mean",
        **(extra or {}),
    }
    path = out / "embedder_manifest.json"
    atomic_write_text(path, json.dumps(manifest, indent=2) + "\n")
    return path


def write_manifest(
    onnx_file: Path,
    tokenizer_file: Path,
    *,
    id2label: dict[int, str],
    temperature: float,
    max_length: int,
    model_id: str,
    extra: dict[str, Any] | None = None,
    name: str = "nli_manifest.json",
) -> Path:
    """Write the manifest (``nli_manifest.json`` by default) beside the ONNX file."""
    manifest = {
        "model_id": model_id,
        "onnx_file": onnx_file.name,
        "tokenizer_file": tokenizer_file.name,
        "sha256": sha256_file(onnx_file),
        "size_bytes": onnx_file.stat().st_size,
        "id2label": {str(k): v for k, v in id2label.items()},
        "temperature": temperature,
        "max_length": max_length,
        **(extra or {}),
    }
    path = onnx_file.parent / name
    atomic_write_text(path, json.dumps(manifest, indent=2) + "\n")
    return path


def run_temperature(hf_dir: str | Path) -> float:
    """The temperature a training run fitted (``train_report.json`` beside ``hf_dir``; 1.0 without one).

    Raises:
        ModelError: the report exists but cannot be read or has no numeric temperature.
    """
    report = Path(hf_dir).parent / "train_report.json"
    if not report.exists():
        return 1.0
    try:
        return float(json.loads(report.read_text(encoding="utf-8"))["temperature"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"{report}: no readable temperature ({exc!r}); pass --temperature") from exc


def package_model(
    hf_dir: str | Path,
    out_dir: str | Path,
    *,
    temperature: float = 1.0,
    max_length: int = 256,
    model_id: str = "ragtrust/nli-minilm-l6-int8",
    quantize: bool = True,
    optimize: bool = True,
    extra: dict[str, Any] | None = None,
    prefix: str = "nli",
) -> Path:
    """Export + fuse + (optionally) quantise + manifest: a directory :class:`OnnxNLI` can load.

    ``prefix`` names the files (``{prefix}-int8.onnx``, ``{prefix}_tokenizer.json``,
    ``{prefix}_manifest.json``): ``injection`` packages the injection classifier, which
    :class:`~ragtrust.models.injection.OnnxInjection` loads.
    """
    hf = Path(hf_dir)
    out = Path(out_dir)
    config, fp32 = _export_fused(hf, out, f"{prefix}-fp32.onnx", optimize=optimize)
    id2label = {int(k): v for k, v in config["id2label"].items()}
    final = out / f"{prefix}-int8.onnx" if quantize else fp32
    if quantize:
        quantize_int8(fp32, final)
        fp32.unlink()
    tokenizer = hf / "tokenizer.json"
    if not tokenizer.exists():
        raise ModelError(f"{hf} has no tokenizer.json (a fast tokenizer is required)")
    shutil.copyfile(tokenizer, out / f"{prefix}_tokenizer.json")
    return write_manifest(
        final,
        out / f"{prefix}_tokenizer.json",
        id2label=id2label,
        temperature=temperature,
        max_length=max_length,
        model_id=model_id,
        extra=extra,
        name=f"{prefix}_manifest.json",
    )


__all__ = [
    "export_onnx",
    "run_temperature",
    "optimize_bert",
    "package_embedder",
    "package_model",
    "quantize_int8",
    "weight_only_int8",
    "write_manifest",
]
