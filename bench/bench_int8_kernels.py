"""The shipped int8 models with ONNX Runtime's fast and exact int8 kernels, side by side.

Usage (numbers go to docs/benchmarks.md, "int8 arithmetic on CPUs without VNNI", with the machine noted):
    python bench/bench_int8_kernels.py [--data ../shared/data] [--pairs 400] [--chunks 60] [--rounds 3]

Loads the NLI and injection models twice in one process: once with the fast kernels, once
with ``session.x64quantprecision`` (what ragtrust uses where :func:`int8_saturates` holds).
Prints how far the NLI probabilities move on the first ``--pairs`` SNLI test pairs (mean and
largest absolute difference, predicted labels changed, accuracy of each), and the time of each
model on those pairs and on ``--chunks`` OWASP evaluation chunks, alternated ``--rounds``
times (median; the ratio is the figure, the host's speed drifts). On a CPU with VNNI the two
kernels give the same outputs.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import ragtrust.models.embedder as embedder_module
from ragtrust.models.injection import OnnxInjection
from ragtrust.models.nli import OnnxNLI
from ragtrust.training.injection_data import owasp_chunks

LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}


def _models(exact: bool) -> tuple[OnnxNLI, OnnxInjection]:
    """Both models, their sessions opened with (``exact``) or without the exact int8 kernels."""
    saved = embedder_module.int8_saturates
    embedder_module.int8_saturates = lambda: exact  # type: ignore[assignment]
    try:
        nli, injection = OnnxNLI(), OnnxInjection()
        nli.warm_up()
        injection.warm_up()
    finally:
        embedder_module.int8_saturates = saved  # type: ignore[assignment]
    return nli, injection


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--chunks", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    snli = args.data / "nli" / "test" / "snli_test.jsonl"
    with snli.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line, _ in zip(handle, range(args.pairs), strict=False)]
    pairs = [(r["premise"], r["hypothesis"]) for r in rows]
    gold = np.array([LABELS[r["label"]] for r in rows])
    chunks = [d.text for d in owasp_chunks(args.data, "eval")[: args.chunks]]
    models = {exact: _models(exact) for exact in (False, True)}
    probs = {exact: models[exact][0].predict(pairs) for exact in models}
    times: dict[tuple[bool, str], list[float]] = {(e, k): [] for e in models for k in ("nli", "injection")}
    for _ in range(args.rounds):
        for exact, (nli, injection) in models.items():
            start = time.perf_counter()
            nli.predict(pairs)
            times[exact, "nli"].append(time.perf_counter() - start)
            start = time.perf_counter()
            injection.predict(chunks)
            times[exact, "injection"].append(time.perf_counter() - start)
    fast, exact_probs = probs[False], probs[True]
    diff = np.abs(fast - exact_probs)
    print(f"host: {platform.processor() or platform.machine()}, int8_saturates() = {embedder_module.int8_saturates()}")
    print(
        f"NLI on {len(pairs)} SNLI test pairs: mean |diff| {diff.mean():.4f}, largest {diff.max():.4f}, "
        f"labels changed {int((fast.argmax(1) != exact_probs.argmax(1)).sum())}; accuracy fast "
        f"{float(np.mean(fast.argmax(1) == gold)):.4f}, exact {float(np.mean(exact_probs.argmax(1) == gold)):.4f}"
    )
    for kind, what in (("nli", f"{len(pairs)} NLI pairs"), ("injection", f"{len(chunks)} OWASP chunks")):
        a, b = statistics.median(times[False, kind]), statistics.median(times[True, kind])
        print(f"{kind} ({what}): fast {a:.2f} s, exact {b:.2f} s, ratio {b / a:.2f}")


if __name__ == "__main__":
    main()
