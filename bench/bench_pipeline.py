"""Per-query cost of the trust layer: Stage 1 + Stage 2 (excluding generation) and full ask().

Usage:
    python bench/bench_pipeline.py [--n 40] [--top-k 5] [--threads 2] [--fake] [--out result.json]

Runs the 40 questions of the bundled secure-coding knowledge base (each once per pass)
through :class:`ragtrust.pipeline.TrustGate` over an in-memory dense index of the 40 rules,
with the packaged MiniLM int8 ONNX embedder and the shipped NLI model
(``ragtrust.models.nli.default_nli``). When the shipped NLI model is missing the bench
falls back to ``NLIEngine(LexicalNLI())`` and says so in ``nli_fallback``: its Stage 2
numbers then do not measure a neural NLI model. ``--fake`` uses the fakes for both models
(a smoke test of the bench itself).

Two passes:

* ``cold`` — the NLI pair cache and the gate's embedding cache are disabled, and the index
  is built by a separate embedder instance (as when a store's vectors are read from disk):
  every query pays for every NLI pair and document embedding (documents never seen before);
* ``warm`` — the default caches (a long-running server, ``TrustGate.from_documents``):
  documents embedded at indexing or screened for an earlier query are not re-computed.

Per query it records the stage timings the Verdict carries. ``stage12_s`` = screen +
verify + trust (SPEC section 2's Stage 1 + Stage 2, excluding retrieval, extraction,
generation and post-processing); ``generation_s`` = extract + align + generate +
postprocess; ``ask_s`` = wall time of ``ask()``. Also ``screen_only_s``: the stand-alone
pre-generation gate (``TrustGate.screen`` on the retrieved documents, ``ragtrust screen``).
Prints one JSON object (median / p90 / mean per quantity, models, versions, machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.config import Settings, load_settings
from ragtrust.data.kb import load_knowledge_base, load_rules
from ragtrust.errors import MissingDependencyError, ModelError
from ragtrust.pipeline import TrustGate
from ragtrust.record import versions

GENERATION_STAGES = ("extract", "align", "generate", "postprocess")


def _models(settings: Settings, fake: bool, cache: bool) -> tuple[Any, Any, str | None]:
    """Embedder, NLI engine and the reason for an NLI fallback (``None`` when none).

    Without ``cache`` the embedder's and the NLI engine's caches are disabled.
    """
    from ragtrust.models.nli import NLIEngine
    from ragtrust.testing import HashingEmbedder, LexicalNLI

    cache_size = settings.models.nli_cache_size if cache else 0
    if fake:
        return HashingEmbedder(dim=384), NLIEngine(LexicalNLI(), cache_size=cache_size), "--fake"
    from ragtrust.models.embedder import default_embedder
    from ragtrust.models.nli import default_nli

    embedder = default_embedder(settings)
    if not cache and hasattr(embedder, "cache_size"):
        embedder.cache_size = 0
    embedder.warm_up()
    nli = default_nli(settings)
    nli.cache_size = cache_size
    try:
        nli.warm_up()
    except (ModelError, MissingDependencyError) as exc:
        return embedder, NLIEngine(LexicalNLI(), cache_size=cache_size), f"shipped NLI model unavailable: {exc}"
    return embedder, nli, None


def _summary(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {
        "median": round(float(np.median(arr)), 5),
        "p90": round(float(np.percentile(arr, 90)), 5),
        "mean": round(float(arr.mean()), 5),
        "min": round(float(arr.min()), 5),
        "max": round(float(arr.max()), 5),
    }


def run_pass(settings: Settings, questions: list[str], *, fake: bool, cache: bool) -> dict[str, Any]:
    """One pass over ``questions`` with a fresh gate; returns the timing summary."""
    from ragtrust.retrieval.dense import DenseIndex, DenseRetriever

    embedder, nli, fallback = _models(settings, fake, cache)
    started = time.perf_counter()
    if cache:
        gate = TrustGate.from_documents(load_knowledge_base(), settings, nli=nli, embedder=embedder)
    else:
        # a separate (caching) embedder builds the index, so the gate's embedder starts cold
        indexer, _, _ = _models(settings, fake, cache=True)
        index = DenseIndex.from_documents(load_knowledge_base(), indexer)
        retriever = DenseRetriever(index=index, default_top_k=settings.retrieval.top_k)
        gate = TrustGate.from_settings(settings, retriever=retriever, nli=nli, embedder=embedder)
    gate.warm_up()
    setup_s = time.perf_counter() - started
    rows: dict[str, list[float]] = {
        k: [] for k in ("retrieve_s", "screen_s", "verify_s", "stage12_s", "generation_s", "ask_s", "screen_only_s")
    }
    pairs: list[int] = []
    trusted = 0
    errors: list[str] = []
    for question in questions:
        before = getattr(nli, "pairs_scored", 0)
        t0 = time.perf_counter()
        verdict = gate.ask(question)
        ask_s = time.perf_counter() - t0
        pairs.append(getattr(nli, "pairs_scored", 0) - before)
        timings = verdict.timings_s
        rows["ask_s"].append(ask_s)
        rows["retrieve_s"].append(timings.get("retrieve", 0.0))
        rows["screen_s"].append(timings.get("screen", 0.0))
        rows["verify_s"].append(timings.get("verify", 0.0))
        rows["stage12_s"].append(timings.get("screen", 0.0) + timings.get("verify", 0.0) + timings.get("trust", 0.0))
        rows["generation_s"].append(sum(timings.get(s, 0.0) for s in GENERATION_STAGES))
        trusted += verdict.trusted
        errors.extend(verdict.errors)
        # the stand-alone pre-generation gate on the same retrieved set; cold pass: no cache,
        # warm pass: the documents were just screened, so this shows the cache at work
        docs, _ = gate.retrieve(question)
        t1 = time.perf_counter()
        gate.screen(docs, question)
        rows["screen_only_s"].append(time.perf_counter() - t1)
    return {
        "nli_cache": cache,
        "setup_and_warm_up_s": round(setup_s, 3),
        "nli_fallback": fallback,
        "models": dict(verdict.models),
        "nli_pairs_per_query": {"median": statistics.median(pairs), "max": max(pairs)},
        "trusted": trusted,
        "errors": sorted(set(errors)),
        **{k: _summary(v) for k, v in rows.items()},
    }


def _machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus_usable": usable,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
    }


def _versions() -> dict[str, str]:
    return versions("ragtrust", "onnxruntime", "tokenizers", "numpy", "faiss-cpu")


def main(argv: list[str] | None = None) -> int:
    """Run the bench and print its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=40, help="queries per pass (the KB has 40 questions)")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="ONNX Runtime threads per model")
    parser.add_argument("--passes", nargs="+", choices=("cold", "warm"), default=["cold", "warm"])
    parser.add_argument("--fake", action="store_true", help="HashingEmbedder + LexicalNLI (smoke test)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if not 1 <= args.n <= 40:
        parser.error("--n must be between 1 and 40")
    settings = load_settings(
        env={}, overrides={"retrieval": {"top_k": args.top_k}, "models": {"threads": args.threads}}
    )
    questions = [rule.question for rule in load_rules()][: args.n]
    machine = _machine()
    started = time.perf_counter()
    passes = {name: run_pass(settings, questions, fake=args.fake, cache=name == "warm") for name in args.passes}
    first = next(iter(passes.values()))
    result = {
        "bench": "pipeline",
        "corpus": "ragtrust secure-coding knowledge base (40 rules, in-memory dense index)",
        "n_queries": len(questions),
        "top_k": args.top_k,
        "models": first["models"],
        "nli_fallback": first["nli_fallback"],
        "definitions": {
            "stage12_s": "screen + verify + trust (Stage 1 + Stage 2, excluding generation)",
            "generation_s": "extract + align + generate + postprocess",
            "ask_s": "wall time of TrustGate.ask (retrieval to Verdict)",
            "screen_only_s": "TrustGate.screen on the retrieved set (pre-generation gate alone)",
        },
        "passes": passes,
        "settings": {
            "retrieval": settings.retrieval.model_dump(mode="json"),
            "models": settings.models.model_dump(mode="json"),
            "screening_signals": list(settings.screening.signals),
            "generator": settings.generator.type,
            "seed": settings.seed,
        },
        "machine": machine,
        "versions": _versions(),
        "total_s": round(time.perf_counter() - started, 1),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
