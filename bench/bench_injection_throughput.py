"""Where the injection signal's time goes: model tokens per second, and the work around the model.

Usage (numbers go to docs/benchmarks.md, "Injection classifier", with the load noted):
    python bench/bench_injection_throughput.py --data ../shared/data/owasp-cheatsheets

* the shipped int8 model through the session ``OnnxInjection`` uses (same threads and
  options), fed random token ids at a few batch shapes: tokens per second (best of
  ``--reps``), so the cost of a window is read off its length;
* ``--fp32 FILE``: an fp32 export of the same network timed the same way, for the int8 ratio;
* on the first ``--limit`` real 512-token OWASP chunks: windows and word-pieces per chunk,
  milliseconds per chunk spent normalising and cutting windows (no model), and the model time
  per chunk those word-pieces imply at the measured rate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np


def _rate(session: Any, names: set[str], batch: int, length: int, reps: int) -> float:
    """Tokens per second of ``session`` on random ids of shape (batch, length), best of ``reps``."""
    rng = np.random.default_rng(0)
    feeds = {
        "input_ids": rng.integers(1000, 20000, (batch, length), dtype=np.int64),
        "attention_mask": np.ones((batch, length), dtype=np.int64),
        "token_type_ids": np.zeros((batch, length), dtype=np.int64),
    }
    feeds = {k: v for k, v in feeds.items() if k in names}
    session.run(None, feeds)
    best = min(_timed(session, feeds) for _ in range(reps))
    return batch * length / best


def _timed(session: Any, feeds: dict[str, Any]) -> float:
    start = time.perf_counter()
    session.run(None, feeds)
    return time.perf_counter() - start


def main() -> None:
    """Print one JSON object (see module docstring)."""
    from ragtrust.documents import RetrievedDoc
    from ragtrust.ingest.chunker import chunk_documents
    from ragtrust.ingest.loaders import load_paths
    from ragtrust.models.embedder import SLOW_FUSIONS, _session
    from ragtrust.models.injection import OnnxInjection
    from ragtrust.models.windows import sentence_windows
    from ragtrust.screening.injection import InjectionSignal, normalize_for_model

    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="the OWASP cheat-sheet folder")
    ap.add_argument("--limit", type=int, default=120)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--fp32", type=Path, default=None, help="an fp32 ONNX export of the same network")
    a = ap.parse_args()
    model = OnnxInjection(threads=a.threads)
    model.warm_up()
    shapes = [(32, 128), (32, 64), (8, 128), (1, 512)]
    sessions = {"int8": model._session}
    if a.fp32:
        sessions["fp32"] = _session(a.fp32, a.threads, SLOW_FUSIONS)
    result: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}",
        "load_average_at_start": os.getloadavg(),
        "threads": a.threads,
        "tokens_per_s": {
            name: {f"{b}x{n}": round(_rate(s, {i.name for i in s.get_inputs()}, b, n, a.reps)) for b, n in shapes}
            for name, s in sessions.items()
        },
    }
    files = sorted(p for p in Path(a.data).glob("*.md") if p.name != "LICENSE.md")
    chunks = chunk_documents(load_paths(files).documents)
    step = max(1, len(chunks) // a.limit)
    docs = [RetrievedDoc(document=d, rank=1) for d in chunks[::step][: a.limit]]
    max_words = InjectionSignal().max_words
    start = time.perf_counter()
    windows: list[list[str]] = []
    for doc in docs:
        text, _ = normalize_for_model(doc.document.text)
        windows.append([text[s:e] for s, e in sentence_windows(text, max_words)])
    prep_ms = 1000 * (time.perf_counter() - start) / len(docs)
    pieces = [sum(len(e.ids) for e in model._tokenizer.encode_batch(ws)) for ws in windows]
    rate = statistics.median(result["tokens_per_s"]["int8"].values())
    result["owasp_chunks"] = {
        "chunks": len(docs),
        "windows_per_chunk": round(statistics.mean(len(w) for w in windows), 2),
        "word_pieces_per_chunk": round(statistics.mean(pieces), 1),
        "window_prep_ms_per_chunk": round(prep_ms, 2),
        "model_ms_per_chunk_at_median_rate": round(1000 * statistics.mean(pieces) / rate, 1),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
