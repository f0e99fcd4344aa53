"""Export a Hugging Face NLI checkpoint to ONNX, quantise it to int8, write its manifest.

Needs the ``[train]`` extra (torch, transformers, onnx). The manifest is what
:class:`~ragtrust.models.nli.OnnxNLI` reads: file names, sha256, label order, temperature
and window length.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ragtrust.errors import MissingDependencyError, ModelError
from ragtrust.io import atomic_write_text
from ragtrust.models.embedder import sha256_file


def export_onnx(hf_dir: str | Path, out_file: str | Path, *, opset: int = 17) -> Path:
    """Export a sequence-classification checkpoint to an fp32 ONNX file (dynamic axes)."""
    try:
        import torch
        from transformers import AutoModelForSequenceClassification
    except ImportError as exc:
        raise MissingDependencyError("ONNX export", 'pip install "ragtrust[train]"') from exc
    # Eager attention exports the plain MatMul/Softmax pattern that ONNX Runtime's
    # transformer optimizer fuses into one Attention op (the SDPA export is not fused).
    model = AutoModelForSequenceClassification.from_pretrained(str(hf_dir), attn_implementation="eager").eval()
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
            output_names=["logits"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "logits": {0: "batch"}},
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

    model = optimizer.optimize_model(
        str(onnx_file), model_type="bert", num_heads=num_heads, hidden_size=hidden_size, opt_level=1
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


def write_manifest(
    onnx_file: Path,
    tokenizer_file: Path,
    *,
    id2label: dict[int, str],
    temperature: float,
    max_length: int,
    model_id: str,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write ``nli_manifest.json`` beside the ONNX file."""
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
    path = onnx_file.parent / "nli_manifest.json"
    atomic_write_text(path, json.dumps(manifest, indent=2) + "\n")
    return path


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
) -> Path:
    """Export + fuse + (optionally) quantise + manifest: a directory :class:`OnnxNLI` can load."""
    hf = Path(hf_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = json.loads((hf / "config.json").read_text())
    id2label = {int(k): v for k, v in config["id2label"].items()}
    fp32 = export_onnx(hf, out / "nli-fp32.onnx")
    if optimize:
        fused = optimize_bert(
            fp32,
            out / "nli-fp32-fused.onnx",
            num_heads=config["num_attention_heads"],
            hidden_size=config["hidden_size"],
        )
        fused.replace(fp32)
    final = out / "nli-int8.onnx" if quantize else fp32
    if quantize:
        quantize_int8(fp32, final)
        fp32.unlink()
    tokenizer = hf / "tokenizer.json"
    if not tokenizer.exists():
        raise ModelError(f"{hf} has no tokenizer.json (a fast tokenizer is required)")
    shutil.copyfile(tokenizer, out / "nli_tokenizer.json")
    return write_manifest(
        final,
        out / "nli_tokenizer.json",
        id2label=id2label,
        temperature=temperature,
        max_length=max_length,
        model_id=model_id,
        extra=extra,
    )


__all__ = ["export_onnx", "optimize_bert", "package_model", "quantize_int8", "write_manifest"]
