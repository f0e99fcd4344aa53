"""Injection signal cost per 512-token OWASP chunk, beside the regex signal, and the model size.

Usage (numbers go to docs/benchmarks.md with the machine and load noted):
    python bench/bench_injection.py --data ../shared/data/owasp-cheatsheets --limit 120

The chunks are the real OWASP cheat sheets chunked as ``ragtrust ingest`` does (512 tokens,
overlap 50). Each pass uses a fresh signal (empty window cache), documents in batches of
``--batch`` (a retrieved set is 5; a scan sends more). The regex signal is timed on the same
chunks in the same run, so the ratio holds on a noisy host even when the seconds do not.
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
    for batch in a.batch:
        model_ms, single_ms, regex_ms = [], [], []
        for _ in range(a.passes):
            signal = InjectionSignal(model=warm.model, cache_size=0)
            model_ms.append(1000 * timed(signal, docs, batch) / len(docs))
            signal = InjectionSignal(model=warm.model, cache_size=0, window_overlap=False)
            single_ms.append(1000 * timed(signal, docs, batch) / len(docs))
            regex_ms.append(1000 * timed(LinguisticSignal(), docs, batch) / len(docs))
        result[f"batch_{batch}"] = {
            "injection_ms_per_chunk": round(statistics.median(model_ms), 2),
            "injection_ms_per_chunk_without_overlap": round(statistics.median(single_ms), 2),
            "regex_ms_per_chunk": round(statistics.median(regex_ms), 2),
            "ratio_injection_to_regex": round(statistics.median(model_ms) / statistics.median(regex_ms), 2),
        }
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
