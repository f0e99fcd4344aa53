"""Average the weights of two exported int8 classifiers (a uniform "model soup").

Usage:
    python scripts/injection_soup.py A B --out DIR [--weight 0.5] [--prefix injection|nli]

``A`` and ``B`` are exported folders (``{prefix}-int8.onnx`` + ``{prefix}_manifest.json`` +
tokenizer, as ``ragtrust injection export`` / ``ragtrust nli export`` write them, or
``builtin`` for the shipped model; ``--prefix`` picks the injection classifier, the default,
or the NLI cross-encoder). Both must come from the same architecture and export
(the same initializer names and shapes), i.e. two fine-tunes of the same base.

Two fine-tunes of one pre-trained model usually sit in one basin, so their weight average
is a model of its own (Wortsman et al. 2022, "Model soups"), with the inference cost of one.
The fp32 weights of the shipped model were not kept, so the average is taken in the int8
files: every quantised weight is dequantised (``(q - zero_point) * scale``), the two are
averaged as ``(1 - weight) * A + weight * B``, and the result is quantised again the way
ONNX Runtime's dynamic quantiser stored it: int8 weights per output channel and symmetric,
uint8 embedding tables per tensor and asymmetric. Float initializers (biases, LayerNorm) are
averaged as they are. The graph is A's.

The manifest gets the weighted mean temperature of the two (ranking, and so every ROC-AUC and
threshold figure, does not depend on it) and no calibration: run ``ragtrust injection
calibrate --model DIR --write-manifest`` (or ``ragtrust nli calibrate``) next. ``--check``
prints, for weight 0 and 1, the largest difference of the rebuilt weights from A's and B's
(requantisation error).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.models.export import write_manifest

ASSETS = Path(__file__).resolve().parents[1] / "src" / "ragtrust" / "models" / "assets"
QUANTIZED, SCALE, ZERO = "_quantized", "_scale", "_zero_point"


def folder(spec: str, prefix: str = "injection") -> Path:
    """An exported folder (``builtin`` = the shipped assets) holding ``{prefix}_manifest.json``."""
    path = ASSETS if spec == "builtin" else Path(spec)
    if not (path / f"{prefix}_manifest.json").is_file():
        raise SystemExit(f"{spec}: no {prefix}_manifest.json there")
    return path


def load(path: Path, prefix: str = "injection") -> tuple[Any, dict[str, npt.NDArray[Any]], dict[str, Any]]:
    """The ONNX model, its initializers by name, and its manifest."""
    import onnx
    from onnx import numpy_helper

    manifest = json.loads((path / f"{prefix}_manifest.json").read_text(encoding="utf-8"))
    model = onnx.load(str(path / manifest["onnx_file"]))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    return model, inits, manifest


def dequantize(inits: dict[str, npt.NDArray[Any]], base: str) -> npt.NDArray[np.float64]:
    """The weight behind ``base + _quantized`` in float64 (per tensor, or per channel along the last axis).

    ``scripts/injection_from_onnx.py`` does the same in float32; float64 here keeps the average
    of the two models exact before it is quantised again.
    """
    q, zero = inits[base + QUANTIZED].astype(np.float64), inits[base + ZERO].astype(np.float64)
    return (q - zero) * inits[base + SCALE].astype(np.float64)


def quantize(w: npt.NDArray[np.float64], like: npt.NDArray[Any], scale_shape: tuple[int, ...]) -> dict[str, Any]:
    """Quantise ``w`` in the storage type of ``like`` (int8 symmetric per channel, or uint8 asymmetric per tensor)."""
    if like.dtype == np.int8:
        if scale_shape not in {(), (w.shape[-1],)}:
            raise SystemExit(f"unexpected int8 scale shape {scale_shape} for weight {w.shape}")
        absmax = np.abs(w).max(axis=tuple(range(w.ndim - 1))) if scale_shape else np.abs(w).max()
        scale = np.where(absmax > 0, absmax / 127.0, 1.0)
        q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        return {QUANTIZED: q, SCALE: scale.astype(np.float32), ZERO: np.zeros(scale_shape, np.int8)}
    if like.dtype == np.uint8 and scale_shape == ():
        lo, hi = min(float(w.min()), 0.0), max(float(w.max()), 0.0)
        scale = (hi - lo) / 255.0 or 1.0
        zero = int(np.clip(np.rint(-lo / scale), 0, 255))
        q = np.clip(np.rint(w / scale) + zero, 0, 255).astype(np.uint8)
        return {QUANTIZED: q, SCALE: np.array(scale, np.float32), ZERO: np.array(zero, np.uint8)}
    raise SystemExit(f"unsupported quantised weight: {like.dtype}, scale shape {scale_shape}")


def soup(a: dict[str, npt.NDArray[Any]], b: dict[str, npt.NDArray[Any]], weight: float) -> dict[str, npt.NDArray[Any]]:
    """The averaged initializers, by name."""
    if set(a) != set(b) or any(a[k].shape != b[k].shape or a[k].dtype != b[k].dtype for k in a):
        raise SystemExit("the two models differ in their initializers: not two exports of one architecture")
    out: dict[str, npt.NDArray[Any]] = {}
    bases = [k[: -len(QUANTIZED)] for k in a if k.endswith(QUANTIZED)]
    for base in bases:
        w = (1 - weight) * dequantize(a, base) + weight * dequantize(b, base)
        for suffix, value in quantize(w, a[base + QUANTIZED], a[base + SCALE].shape).items():
            out[base + suffix] = value
    for name, value in a.items():
        if name in out:
            continue
        if np.issubdtype(value.dtype, np.floating):
            out[name] = ((1 - weight) * value.astype(np.float64) + weight * b[name].astype(np.float64)).astype(
                value.dtype
            )
        elif np.array_equal(value, b[name]):
            out[name] = value
        else:
            raise SystemExit(f"{name}: a non-float initializer that differs between the models")
    return out


def largest_error(rebuilt: dict[str, npt.NDArray[Any]], reference: dict[str, npt.NDArray[Any]]) -> float:
    """The largest absolute difference of the dequantised weights, relative to each tensor's range."""
    worst = 0.0
    for name in reference:
        if name.endswith(QUANTIZED):
            base = name[: -len(QUANTIZED)]
            x, y = dequantize(rebuilt, base), dequantize(reference, base)
            worst = max(worst, float(np.abs(x - y).max() / max(np.abs(y).max(), 1e-12)))
    return worst


def vocabulary(tokenizer_file: Path) -> dict[str, Any]:
    """A tokenizer file without its padding and truncation settings (the runtime sets those)."""
    config = json.loads(tokenizer_file.read_text(encoding="utf-8"))
    return {k: v for k, v in config.items() if k not in {"padding", "truncation"}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", help="exported folder, or 'builtin'")
    ap.add_argument("b", help="exported folder, or 'builtin'")
    ap.add_argument("--prefix", choices=("injection", "nli"), default="injection", help="which model's files")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--weight", type=float, default=0.5, help="weight of B (A gets 1 - weight)")
    ap.add_argument("--check", action="store_true", help="report the requantisation error at weights 0 and 1")
    args = ap.parse_args()
    if not 0.0 <= args.weight <= 1.0:
        raise SystemExit("--weight must be within [0, 1]")
    from onnx import numpy_helper

    prefix = args.prefix
    pa, pb = folder(args.a, prefix), folder(args.b, prefix)
    model, ia, ma = load(pa, prefix)
    _, ib, mb = load(pb, prefix)
    if ma["id2label"] != mb["id2label"]:
        raise SystemExit(f"the two models' labels differ: {ma['id2label']} / {mb['id2label']}")
    if args.check:
        for w, ref in ((0.0, ia), (1.0, ib)):
            print(f"weight {w}: largest relative weight error {largest_error(soup(ia, ib, w), ref):.5f}")
    if vocabulary(pa / ma["tokenizer_file"]) != vocabulary(pb / mb["tokenizer_file"]):
        raise SystemExit("the two models use different tokenizers")
    if int(ma["max_length"]) != int(mb["max_length"]):
        raise SystemExit(f"the two models read different lengths: {ma['max_length']} / {mb['max_length']}")
    mixed = soup(ia, ib, args.weight)
    for tensor in model.graph.initializer:
        tensor.CopyFrom(numpy_helper.from_array(mixed[tensor.name], tensor.name))
    args.out.mkdir(parents=True, exist_ok=True)
    onnx_file = args.out / f"{prefix}-int8.onnx"
    import onnx

    onnx.save(model, str(onnx_file))
    tokenizer = args.out / f"{prefix}_tokenizer.json"
    shutil.copyfile(pa / ma["tokenizer_file"], tokenizer)
    ingredients = [
        {"sha256": m["sha256"], "weight": round(w, 6)} for m, w in ((ma, 1 - args.weight), (mb, args.weight))
    ]
    path = write_manifest(
        onnx_file,
        tokenizer,
        id2label={int(k): v for k, v in ma["id2label"].items()},
        temperature=(1 - args.weight) * float(ma["temperature"]) + args.weight * float(mb["temperature"]),
        max_length=int(ma["max_length"]),
        model_id=ma["model_id"],
        extra={"soup": ingredients},
        name=f"{prefix}_manifest.json",
    )
    print(f"wrote {onnx_file} and {path}")


if __name__ == "__main__":
    main()
