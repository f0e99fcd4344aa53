"""Calibrate the intra- and cross-document signals' contradiction ramps for an NLI model.

Usage:
    python scripts/calibrate_signals.py --data ../shared/data/owasp-cheatsheets \
        [--benchmarks truthfulqa fever] [--bench-data ../shared/data] [--bench-calib 200] \
        [--nli builtin|ONNX_DIR|HF_ID] [--n 240] [--seed 0] [--fpr 0.05] \
        [--out docs/results/signal_calibration.json] [--write-manifest]

The development corpus is a seeded sample of chunks of the OWASP cheat sheets plus the
documents of each benchmark's **calibration split** (``load_benchmark(name, n=50,
n_calib=--bench-calib, seed=42)``: the items after the 50 evaluation queries in the
benchmark's seeded order, so never an evaluated query's document); see
:mod:`ragtrust.screening.calibration` for the procedure. The report
(thresholds, rates, AUC, model id and sha256, versions, seed) goes to ``--out``.
``--write-manifest`` stores the thresholds in the ONNX model's manifest (the shipped one by
default), keyed to the ONNX file's sha256, so the signals use them by default. For a model
without a manifest (a Hugging Face checkpoint) the report's ``suggested_spec`` gives the
signal settings to put in ``screening.signals``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import onnxruntime

from ragtrust import __version__
from ragtrust.config import Settings
from ragtrust.eval.datasets import load_benchmark
from ragtrust.ingest.chunker import chunk_documents
from ragtrust.ingest.loaders import load_paths
from ragtrust.io import atomic_write_text
from ragtrust.models.embedder import default_embedder
from ragtrust.models.nli import MANIFEST_FILE, OnnxNLI, default_nli, read_manifest
from ragtrust.screening.calibration import calibrate_cross, calibrate_intra, dev_corpus, neighbour_sets


def command_line(args: argparse.Namespace) -> str:
    """The command that reproduces this run (lists space-separated, unset options left out)."""
    parts = ["python scripts/calibrate_signals.py"]
    for key, value in vars(args).items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            parts.append(flag)
        elif isinstance(value, list):
            parts.append(" ".join([flag, *map(str, value)]))
        else:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="development corpus (OWASP cheat sheets)")
    parser.add_argument(
        "--benchmarks",
        nargs="*",
        default=["truthfulqa", "fever"],
        help="benchmarks whose calibration split joins the development corpus",
    )
    parser.add_argument("--bench-data", type=Path, default=None, help="benchmark data dir (default: resolved)")
    parser.add_argument("--bench-calib", type=int, default=200, help="calibration-split documents per benchmark")
    parser.add_argument("--nli", default="builtin")
    parser.add_argument("--n", type=int, default=240, help="development chunks")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fpr", type=float, default=0.05, help="false-alarm budget on clean text")
    parser.add_argument("--k", type=int, default=5, help="retrieved-set size for the cross signal")
    parser.add_argument("--out", type=Path, default=Path("docs/results/signal_calibration.json"))
    parser.add_argument("--write-manifest", action="store_true")
    args = parser.parse_args()

    settings = Settings().with_overrides({"models": {"nli": args.nli}})
    nli, embedder = default_nli(settings), default_embedder(settings)
    started = time.perf_counter()
    documents = load_paths([args.data]).documents
    chunks = chunk_documents(documents, tokenizer=getattr(embedder, "tokenizer", None))
    pool = random.Random(args.seed).sample(chunks, min(args.n, len(chunks)))
    sources = {"owasp_chunks": len(pool)}
    for name in args.benchmarks:
        bench = load_benchmark(name, args.bench_data, n=50, n_calib=args.bench_calib, seed=42)
        calib = [bench.documents[q.doc_index] for q in bench.calib_queries]
        pool += calib
        sources[f"{bench.name}_calibration_split"] = len(calib)
    corpus = dev_corpus(pool, n=len(pool), seed=args.seed)
    sets = neighbour_sets(embedder, corpus.clean, k=args.k)
    intra = calibrate_intra(nli, corpus, sets, fpr=args.fpr)
    cross = calibrate_cross(nli, corpus, sets, fpr=args.fpr)
    model = nli.model
    manifest_file = None
    sha = None
    if isinstance(model, OnnxNLI):
        manifest_file = Path(model.manifest_path) if model.manifest_path else MANIFEST_FILE
        sha = read_manifest(manifest_file)["sha256"]
    signals = {
        "intra_consistency": {"low": intra["low"], "high": intra["high"], "direction": intra["direction"]},
        "cross_consistency": {"low": cross["low"], "high": cross["high"]},
    }
    report = {
        "command": command_line(args),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "elapsed_s": round(time.perf_counter() - started, 1),
        "nli_model_id": nli.model_id,
        "nli_sha256": sha,
        "embedder": embedder.model_id,
        "corpus": {"path": str(args.data), "chunks": len(chunks), "sampled": len(corpus.clean), "sources": sources,
                   "poisoned": len(corpus.poisoned_index), "attack_families": "development/contradiction"},
        "seed": args.seed,
        "fpr": args.fpr,
        "fpr_level": "retrieved set of k documents",
        "signals": signals,
        "intra_consistency": intra,
        "cross_consistency": cross,
        "suggested_spec": [
            {"type": "intra_consistency", **signals["intra_consistency"]},
            {"type": "cross_consistency", **signals["cross_consistency"]},
        ],
        "versions": {"ragtrust": __version__, "onnxruntime": onnxruntime.__version__, "numpy": np.__version__,
                     "python": platform.python_version()},
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(report, indent=2) + "\n")
    print(json.dumps({"signals": signals, "intra": intra, "cross": cross}, indent=2))
    if args.write_manifest:
        if manifest_file is None:
            raise SystemExit("--write-manifest needs an ONNX model with a manifest; use suggested_spec instead")
        manifest = read_manifest(manifest_file)
        manifest["signal_calibration"] = {
            "nli_sha256": sha,
            "signals": signals,
            "fpr": args.fpr,
            "seed": args.seed,
            "report": str(args.out),
        }
        atomic_write_text(manifest_file, json.dumps(manifest, indent=2) + "\n")
        print(f"wrote the calibration into {manifest_file}")


if __name__ == "__main__":
    main()
