"""NLI throughput: pairs/s at 128 and 256 tokens, batch 1 and 32, int8 vs fp32 ONNX, ONNX vs torch.

Usage (numbers go to docs/benchmarks.md with the machine noted):
    python bench/bench_nli.py --hf-dir runs/nli/final --fp32-manifest /tmp/nli-fp32/nli_manifest.json

Pairs are synthetic sentences padded to the target length with real words, so the
tokenizer produces sequences of (about) the stated length. Peak RSS is reported per run.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import time

import numpy as np

from ragtrust.models.nli import OnnxNLI, TransformersNLI

WORDS = "the password must be hashed with a slow adaptive algorithm such as argon2id before storage".split()


def make_pairs(tokens: int, n: int) -> list[tuple[str, str]]:
    """Pairs whose premise+hypothesis tokenise to about ``tokens`` word pieces."""
    premise_words = max(4, int(tokens * 0.75) - 12)
    premise = " ".join(WORDS[i % len(WORDS)] for i in range(premise_words))
    return [(premise + f" item {i}.", "Passwords are hashed with argon2id.") for i in range(n)]


def rate(model: object, pairs: list[tuple[str, str]], batch: int, repeats: int = 1) -> float:
    """Pairs per second over ``repeats`` passes (after one warm-up batch)."""
    model.batch_size = batch  # type: ignore[attr-defined]
    model.predict(pairs[:batch])  # type: ignore[attr-defined]
    start = time.perf_counter()
    for _ in range(repeats):
        model.predict(pairs)  # type: ignore[attr-defined]
    return len(pairs) * repeats / (time.perf_counter() - start)


def main() -> None:
    """Run the grid and print one JSON object."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--hf-dir", help="trained HF checkpoint for the torch rows")
    ap.add_argument("--fp32-manifest", help="fp32 ONNX export manifest for the fp32 rows")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument(
        "--real",
        help="also time the first --n pairs of this NLI JSONL (their natural lengths, batch 32, length-sorted)",
    )
    args = ap.parse_args()
    real: list[tuple[str, str]] = []
    if args.real:
        with open(args.real, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                real.append((row["premise"], row["hypothesis"]))
                if len(real) >= args.n:
                    break
    results: dict[str, object] = {
        "machine": f"{platform.processor() or platform.machine()}, {args.threads} threads",
        "real_pairs": f"first {len(real)} pairs of {args.real}" if real else None,
    }
    models: dict[str, object] = {"onnx-int8": OnnxNLI(threads=args.threads)}
    if args.fp32_manifest:
        models["onnx-fp32"] = OnnxNLI(manifest_path=args.fp32_manifest, threads=args.threads)
    if args.hf_dir:
        import torch

        torch.set_num_threads(args.threads)
        models["torch-fp32"] = TransformersNLI(model=args.hf_dir)
    for name, model in models.items():
        model.warm_up()  # type: ignore[attr-defined]
        for tokens in (128, 256):
            for batch in (1, 32):
                n = 64 if batch == 1 else args.n
                pairs = make_pairs(tokens, n)
                results[f"{name} len{tokens} batch{batch} pairs/s"] = round(rate(model, pairs, batch), 1)
        if real:
            results[f"{name} real pairs batch32 pairs/s"] = round(rate(model, real, 32), 1)
        results[f"{name} peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    probe = make_pairs(128, 4)
    results["int8 agrees with first other model"] = (
        bool(
            np.array_equal(
                models["onnx-int8"].predict(probe).argmax(1), list(models.values())[-1].predict(probe).argmax(1)
            )
        )  # type: ignore[attr-defined]
        if len(models) > 1
        else None
    )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
