"""Write the LLM-written poison family's cache (issue 17) with the packaged local LLM.

The threats suite's targets: TruthfulQA, 100 evaluation queries, seed 42, the default
calibration split; ``--copies`` passages per target, PoisonedRAG's prompt at 60 words,
temperature 0.8, the server on one CPU thread. Resumes from the cache when interrupted::

    nohup .venv/bin/python scripts/llm_poison_cache.py --copies 5 > runs/threats-llm-cache.log 2>&1 &
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ragtrust.eval.datasets import load_benchmark
from ragtrust.eval.llm_attacks import PoisonPassage, truthfulqa_targets, write_with_local_llm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None, help="only the first LIMIT targets")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--words", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=Path("runs/threats-llm-cache.jsonl"))
    args = parser.parse_args()

    bench = load_benchmark("truthfulqa", args.data, n=args.n, seed=args.seed)
    targets = truthfulqa_targets(bench, n=args.limit)
    started = time.monotonic()
    count = {"new": 0, "cached": 0, "failed": 0}

    def progress(p: PoisonPassage, cached: bool) -> None:
        count["cached" if cached else "new"] += 1
        count["failed"] += not p.ok
        if not cached:
            print(
                f"{p.target_id} copy {p.copy} seed {p.seed} {p.elapsed_s:.2f}s ok={p.ok} "
                f"mentions={p.mentions_answer} {p.error or p.passage[:90]!r}",
                flush=True,
            )

    passages, info = write_with_local_llm(
        targets,
        args.copies,
        args.cache,
        threads=args.threads,
        temperature=args.temperature,
        words=args.words,
        log_path=args.cache.with_suffix(".server.log"),
        progress=progress,
    )
    summary = {
        "cache": str(args.cache),
        "targets": len(targets),
        "copies": args.copies,
        "passages": len(passages),
        "ok": sum(p.ok for p in passages),
        "failed": sum(not p.ok for p in passages),
        "mentions_answer": sum(p.mentions_answer for p in passages),
        "mean_elapsed_s": round(sum(p.elapsed_s for p in passages) / max(1, len(passages)), 3),
        "mean_attempts": round(sum(p.attempts for p in passages) / max(1, len(passages)), 3),
        "wall_s": round(time.monotonic() - started, 1),
        "this_run": count,
        "model": info,
    }
    print(json.dumps(summary, indent=2), flush=True)


if __name__ == "__main__":
    main()
