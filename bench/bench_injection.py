"""Injection signal cost per 512-token OWASP chunk, beside the regex signal, and the model size.

Usage (numbers go to docs/benchmarks.md with the machine and load noted):
    python bench/bench_injection.py --data ../shared/data/owasp-cheatsheets --limit 120

The chunks are the real OWASP cheat sheets chunked as ``ragtrust ingest`` does (512 tokens,
overlap 50). Each pass uses a fresh signal (empty window cache), documents in batches of
``--batch`` (a retrieved set is 5; a scan sends more). The regex signal is timed on the same
chunks in the same run, so the ratio holds on a noisy host even when the seconds do not.
``--model-batch A B`` times the classifier with each inference batch size (windows per ONNX
call), alternating them within every pass, and reports each under ``model_batch_<n>``;
``--max-words 40 24`` times the default model with those window sizes beside the shipped one
(reported under ``max_words_<n>`` with the ratio to the default).
``--concurrency on off`` compares, the same way, one-window calls scored side by side on
single-threaded workers (``on``, the default) or one after another on ``--threads`` intra-op
threads (``off``), reported under ``concurrent_on`` / ``concurrent_off``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import time
from pathlib import Path

from ragtrust.documents import RetrievedDoc
from ragtrust.ingest.chunker import chunk_documents
from ragtrust.ingest.loaders import load_paths
from ragtrust.models.injection import MANIFEST_FILE, OnnxInjection
from ragtrust.screening.injection import InjectionSignal
from ragtrust.screening.linguistic import LinguisticSignal


def timed(signal: object, docs: list[RetrievedDoc], batch: int) -> float:
    """Seconds to score ``docs`` in batches of ``batch``."""
    start = time.perf_counter()
    for i in range(0, len(docs), batch):
        signal.score_batch(docs[i : i + batch])  # type: ignore[attr-defined]
    return time.perf_counter() - start


def main() -> None:
    """Print one JSON object: ms per chunk (median of passes), windows per chunk, model size."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="the OWASP cheat-sheet folder")
    ap.add_argument("--limit", type=int, default=120, help="chunks (seeded: every k-th of the corpus)")
    ap.add_argument("--batch", type=int, nargs="+", default=[5, 32])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--model-batch", type=int, nargs="+", default=None, help="ONNX batch sizes to compare")
    ap.add_argument(
        "--max-words", type=int, nargs="+", default=None, help="window sizes (words) to time beside the default"
    )
    ap.add_argument("--concurrency", choices=["on", "off"], nargs="+", default=None, help="schedules to compare")
    a = ap.parse_args()
    files = sorted(p for p in Path(a.data).glob("*.md") if p.name != "LICENSE.md")
    chunks = chunk_documents(load_paths(files).documents)
    step = max(1, len(chunks) // a.limit)
    docs = [RetrievedDoc(document=d, rank=1) for d in chunks[::step][: a.limit]]
    warm = InjectionSignal(model=OnnxInjection(threads=a.threads))
    warm.score_batch(docs[:5])
    windows = [r.details.get("windows", 0) for r in warm.score_batch(docs)]
    result: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
        "load_average_at_start": os.getloadavg(),
        "chunks": len(docs),
        "windows_per_chunk": {"mean": statistics.mean(windows), "max": max(windows)},
        "model_file_mb": round((MANIFEST_FILE.parent / "injection-int8.onnx").stat().st_size / 2**20, 2),
        "threads": a.threads,
    }
    single = [
        r.details.get("windows", 0) for r in InjectionSignal(model=warm.model, window_overlap=False).score_batch(docs)
    ]
    result["windows_per_chunk_without_overlap"] = {"mean": statistics.mean(single), "max": max(single)}
    for words in a.max_words or ():
        sized = InjectionSignal(model=warm.model, max_words=words)
        counts = [r.details.get("windows", 0) for r in sized.score_batch(docs)]
        result[f"windows_per_chunk_max_words_{words}"] = {"mean": statistics.mean(counts), "max": max(counts)}
    models: dict[str, object] = {"default": warm.model}
    if a.model_batch:
        models = {f"model_batch_{n}": OnnxInjection(threads=a.threads, batch_size=n) for n in a.model_batch}
    if a.concurrency:
        models = {f"concurrent_{c}": OnnxInjection(threads=a.threads, concurrent=c == "on") for c in a.concurrency}
        probs = {
            name: [r.details.get("probability") for r in InjectionSignal(model=m, cache_size=0).score_batch(docs)]
            for name, m in models.items()
        }
        result["same_probabilities"] = len({json.dumps(p) for p in probs.values()}) == 1
    for model in models.values():
        InjectionSignal(model=model).score_batch(docs[:5])
    for batch in a.batch:
        model_ms: dict[str, list[float]] = {n: [] for n in models}
        single_ms: dict[str, list[float]] = {n: [] for n in models}
        words_ms: dict[int, list[float]] = {w: [] for w in a.max_words or ()}
        regex_ms = []
        for _ in range(a.passes):
            for n, model in models.items():
                signal = InjectionSignal(model=model, cache_size=0)
                model_ms[n].append(1000 * timed(signal, docs, batch) / len(docs))
                signal = InjectionSignal(model=model, cache_size=0, window_overlap=False)
                single_ms[n].append(1000 * timed(signal, docs, batch) / len(docs))
            for words in a.max_words or ():
                signal = InjectionSignal(model=warm.model, cache_size=0, max_words=words)
                words_ms[words].append(1000 * timed(signal, docs, batch) / len(docs))
            regex_ms.append(1000 * timed(LinguisticSignal(), docs, batch) / len(docs))
        regex = statistics.median(regex_ms)
        per_model = {
            n: {
                "injection_ms_per_chunk": round(statistics.median(model_ms[n]), 2),
                "injection_ms_per_chunk_without_overlap": round(statistics.median(single_ms[n]), 2),
                "ratio_injection_to_regex": round(statistics.median(model_ms[n]) / regex, 2),
            }
            for n in models
        }
        by_words = {
            f"max_words_{w}": {
                "injection_ms_per_chunk": round(statistics.median(ms), 2),
                "ratio_to_default": round(statistics.median(ms) / statistics.median(model_ms["default"]), 2)
                if "default" in model_ms
                else None,
            }
            for w, ms in words_ms.items()
        }
        result[f"batch_{batch}"] = {"regex_ms_per_chunk": round(regex, 2), **per_model, **by_words}
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
