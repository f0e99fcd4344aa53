"""Ingestion and retrieval benchmark: throughput, index size, query latency.

Usage:
    python bench/bench_ingest.py --data ../shared/data/owasp-cheatsheets            # real embedder
    python bench/bench_ingest.py --synthetic 100000 --embedder hashing             # 100k-chunk corpus
    python bench/bench_ingest.py --bounds                                           # hostile inputs (issue 19)

Prints one JSON object (config, versions, numbers) so results carry their provenance.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ragtrust.documents import Document
from ragtrust.ingest.loaders import load_paths
from ragtrust.ingest.store import Store

QUERIES = [
    "How should passwords be stored?",
    "How do I prevent SQL injection?",
    "Which TLS versions should a server allow?",
    "How to protect against cross-site request forgery?",
    "What is server-side request forgery and how to stop it?",
    "How should JWT signatures be validated?",
    "How to store secrets and API keys?",
    "What should never be written to logs?",
]
WORDS = [
    "access",
    "control",
    "token",
    "session",
    "cookie",
    "password",
    "hash",
    "salt",
    "key",
    "rotate",
    "encrypt",
    "decrypt",
    "cipher",
    "tls",
    "certificate",
    "input",
    "validate",
    "encode",
    "output",
    "escape",
    "query",
    "parameter",
    "inject",
    "sanitize",
    "upload",
    "file",
    "path",
    "redirect",
    "origin",
    "header",
    "policy",
    "audit",
    "log",
    "monitor",
    "alert",
    "secret",
    "vault",
    "deploy",
    "container",
    "network",
    "firewall",
    "request",
    "response",
    "server",
    "client",
]


def _embedder(name: str):
    if name == "hashing":
        from ragtrust.testing import HashingEmbedder

        return HashingEmbedder(dim=384)
    from ragtrust.models.embedder import default_embedder

    emb = default_embedder(None)
    emb.warm_up()
    return emb


def _synthetic(n: int, seed: int = 42) -> list[Document]:
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "." for _ in range(4)
        ]
        docs.append(Document(id=f"syn-{i:06d}", text=" ".join(sentences), source="synthetic"))
    return docs


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _latency(store: Store, mode: str, repeats: int) -> dict[str, float]:
    retriever = store.retriever(mode, top_k=5)
    retriever.retrieve(QUERIES[0])  # build the index outside the timing
    times = []
    for _ in range(repeats):
        for q in QUERIES:
            t = time.perf_counter()
            retriever.retrieve(q)
            times.append(time.perf_counter() - t)
    times.sort()
    return {
        "p50_ms": round(1000 * statistics.median(times), 2),
        "p95_ms": round(1000 * times[int(0.95 * (len(times) - 1))], 2),
    }


def _nested(root: Path, depth: int) -> Path:
    folder = root
    for _ in range(depth):  # one mkdir at a time: os.makedirs recurses
        folder = folder / "d"
        folder.mkdir()
    return folder


def _bounds() -> dict[str, object]:
    """Load times of the inputs that were quadratic, cubic or fatal before the ingest bounds (issue 19 item 5).

    Before (measured on the commit before them): 64 KB of fenced headings 1.9 s and 256 KB
    25.9 s (quadratic); a 2 KB heading line of blanks 37.5 s (cubic); a 10 MB JSONL line 180 s
    and 945 MB RSS through ingest; a 1,200-deep folder RecursionError.
    """
    work = Path(tempfile.mkdtemp(prefix="ragtrust-bounds-"))
    inputs = {
        "fenced_headings_10mb.md": "```\n# in code\n```\n## Real\n" * 400_000,
        "blank_run_heading_10mb.md": "# T" + " \t" * 5_000_000 + "x\n",
        "one_10mb_line.jsonl": json.dumps({"id": "huge", "text": "Store passwords with bcrypt. " * 350_000})
        + "\n"
        + json.dumps({"id": "ok", "text": "Use TLS."})
        + "\n",
    }
    times: dict[str, object] = {}
    try:
        for name, text in inputs.items():
            (work / name).write_text(text, encoding="utf-8")
            t = time.perf_counter()
            loaded = load_paths([work / name])
            times[name] = {
                "load_s": round(time.perf_counter() - t, 3),
                "documents": len(loaded.documents),
                "skipped": [reason for _, reason in loaded.skipped],
            }
        deep = work / "deep"
        deep.mkdir()
        (_nested(deep, 1_200) / "bottom.txt").write_text("At the bottom.", encoding="utf-8")
        (deep / "top.txt").write_text("At the top.", encoding="utf-8")
        t = time.perf_counter()
        loaded = load_paths([deep])
        times["folder_1200_deep"] = {
            "load_s": round(time.perf_counter() - t, 3),
            "documents": len(loaded.documents),
            "skipped": [reason for _, reason in loaded.skipped],
        }
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=False)  # shutil.rmtree recurses 1,200 deep
    return {"bounds": times, "python": platform.python_version(), "machine": platform.machine()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--synthetic", type=int, default=0)
    parser.add_argument("--embedder", choices=["builtin", "hashing"], default="builtin")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--keep", type=Path, default=None, help="keep the store here")
    parser.add_argument("--bounds", action="store_true", help="time the hostile inputs of issue 19 item 5")
    args = parser.parse_args()
    if args.bounds:
        print(json.dumps(_bounds(), indent=2))
        return
    docs = load_paths([args.data]).documents if args.data else _synthetic(args.synthetic)
    emb = _embedder(args.embedder)
    root = args.keep or Path(tempfile.mkdtemp(prefix="ragtrust-bench-"))
    store = Store.open(root, emb, create=True)
    t = time.perf_counter()
    report = store.add(docs)
    ingest_s = time.perf_counter() - t
    print(f"ingested {report.total_chunks} chunks in {ingest_s:.1f} s", file=sys.stderr, flush=True)
    # incremental: edit one document and re-ingest everything, from a fresh process's view
    # (a new Store object parses the store once, as `ragtrust ingest` does)
    store.close()
    edited = Document(id=docs[0].id, text=docs[0].text + " Edited.", source=docs[0].source, url=docs[0].url)
    t = time.perf_counter()
    store = Store.open(root, emb)
    store.add([edited, *docs[1:]])
    incremental_s = time.perf_counter() - t
    result = {
        "corpus": str(args.data) if args.data else f"synthetic-{args.synthetic}",
        "embedder": emb.model_id,
        "documents": len(docs),
        "chunks": report.total_chunks,
        "ingest_s": round(ingest_s, 2),
        "chunks_per_s": round(report.total_chunks / ingest_s, 1),
        "reingest_one_changed_s": round(incremental_s, 2),
        "store_mb": round(_size(root) / 2**20, 1),
        "latency": {mode: _latency(store, mode, args.repeats) for mode in ("dense", "bm25", "hybrid")},
        "python": platform.python_version(),
        "machine": platform.machine(),
        "seed": 42,
    }
    print(json.dumps(result, indent=2))
    store.close()
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
