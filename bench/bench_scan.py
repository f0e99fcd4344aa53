"""Scan throughput: local engine vs Ray Data, on the same corpus and models.

Usage:
    python bench/bench_scan.py --data ../shared/data/owasp-cheatsheets [--engines local ray] [--limit N]

Uses the shipped embedder and NLI model unless ``--fake`` (HashingEmbedder + LexicalNLI).
Prints one JSON object; checks that both engines flag the same documents.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from ragtrust.config import Settings
from ragtrust.ingest.chunker import chunk_documents
from ragtrust.ingest.loaders import load_paths
from ragtrust.scan import scan_corpus
from ragtrust.screening.aggregate import build_screener


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--engines", nargs="+", default=["local", "ray"])
    parser.add_argument("--limit", type=int, default=0, help="scan only the first N chunks")
    parser.add_argument("--witnesses", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--fake", action="store_true")
    args = parser.parse_args()
    settings = Settings()
    if args.fake:
        from ragtrust.testing import HashingEmbedder, LexicalNLI

        emb, nli = HashingEmbedder(dim=384), LexicalNLI()
    else:
        from ragtrust.models.embedder import default_embedder
        from ragtrust.models.nli import default_nli

        emb, nli = default_embedder(settings), default_nli(settings)
    docs = load_paths([args.data]).documents
    chunks = chunk_documents(docs, tokenizer=getattr(emb, "tokenizer", None))
    if args.limit:
        chunks = chunks[: args.limit]
    out: dict[str, object] = {"corpus": str(args.data), "chunks": len(chunks), "cpus": os.cpu_count()}
    flags: dict[str, list[str]] = {}
    if "ray" in args.engines:
        # start Ray before the clock: its start-up is paid once per process (or not at all
        # on a running cluster), not per scan
        from ragtrust.scan import ensure_ray

        t = time.perf_counter()
        ensure_ray()
        out["ray_init_s"] = round(time.perf_counter() - t, 1)
    for engine in args.engines:
        signals = build_screener(settings, nli=nli, embedder=emb, ledger=None).signals
        t = time.perf_counter()
        report = scan_corpus(
            chunks,
            signals=signals,
            embedder=emb,
            nli=nli,
            witnesses=args.witnesses,
            engine=engine,
            workers=args.workers,
        )
        seconds = time.perf_counter() - t
        flags[engine] = [r.id for r in report.suspicious()]
        out[engine] = {
            "seconds": round(seconds, 1),
            "docs_per_s": round(len(chunks) / seconds, 2),
            "suspicious": len(flags[engine]),
            "signals": report.signals,
        }
    if len(flags) == 2:
        out["same_flags"] = len(set(map(tuple, flags.values()))) == 1
    out["python"] = platform.python_version()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
