"""What Stage 2's nearest-premise bound loses: answer-sentence support with every window vs the m nearest (issue 20).

Usage:
    python bench/bench_verify_premises.py --store runs/owasp-store --k 5 --n 36 --m 1 2 3 \
        --out runs/bench/verify_premises.json

For each bundled OWASP question the gate answers from the store (extractive writer; Stage 1
reduced to the structural signal so that no retrieved document is withheld and the run is
fast), then :class:`~ragtrust.verification.FactualityVerifier` scores the answer against the
top-K documents with ``max_premises=None`` (every sentence against every window of every
document: the reference grid) and with each ``--m``. Reported per m: NLI pairs per query
(median; pairs asked for, cached or not), sentences whose ``supported`` flag changes against
the grid, the largest support drop and how many sentences drop by more than 0.05, and the
factuality F (median, largest change). One JSON object with the machine, load and commit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from importlib import resources
from pathlib import Path
from typing import Any


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def main() -> None:
    """Print (and optionally write) the per-m comparison with the all-pairs grid."""
    from ragtrust.config import load_settings
    from ragtrust.ingest.store import Store
    from ragtrust.models.embedder import default_embedder
    from ragtrust.models.nli import default_nli
    from ragtrust.pipeline import TrustGate
    from ragtrust.verification import FactualityVerifier

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, help="a store of the OWASP cheat sheets (ragtrust ingest)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--n", type=int, default=36, help="questions")
    ap.add_argument("--m", type=int, nargs="+", default=[1, 2, 3], help="max_premises values to compare")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    if a.k < 1 or a.n < 1 or any(m < 1 for m in a.m):
        ap.error("--k, --n and --m must be at least 1")
    if not Path(a.store).is_dir():
        ap.error(f"--store {a.store}: no such folder (build it with `ragtrust ingest`)")
    load = os.getloadavg()
    started = time.perf_counter()
    settings = load_settings(env={}, overrides={"retrieval": {"top_k": a.k}, "screening": {"signals": ["structural"]}})
    embedder = default_embedder(settings)
    store = Store.open(a.store, embedder, settings=settings, read_only=True)
    nli = default_nli(settings)
    gate = TrustGate.from_settings(settings, store=store, nli=nli, embedder=embedder)
    gate.warm_up()
    text = resources.files("ragtrust.data").joinpath("owasp_questions.jsonl").read_text(encoding="utf-8")
    questions = [json.loads(line)["question"] for line in text.splitlines() if line.strip()][: a.n]
    values: list[int | None] = [None, *a.m]
    rows: dict[str, dict[str, Any]] = {str(m): {"pairs": [], "flips": 0, "drops": [], "f": []} for m in values}
    answered = sentences = 0
    for question in questions:
        verdict = gate.ask(question)
        docs, _ = gate.retrieve(question)
        if not verdict.answer.strip():
            continue
        answered += 1
        grid = None
        for m in values:
            before = nli.pairs_scored + nli.cache_hits
            report = FactualityVerifier(nli=nli, max_premises=m).verify(verdict.answer, docs)
            row = rows[str(m)]
            row["pairs"].append(nli.pairs_scored + nli.cache_hits - before)
            row["f"].append(report.factuality)
            if grid is None:
                grid = report
                sentences += len(report.sentences)
                continue
            for full, near in zip(grid.sentences, report.sentences, strict=True):
                row["flips"] += full.supported != near.supported
                row["drops"].append(full.support - near.support)
    grid_f = rows["None"]["f"]

    def f_change(f: list[float]) -> float:
        return round(max((abs(x - y) for x, y in zip(f, grid_f, strict=True)), default=0.0), 4)

    result: dict[str, Any] = {
        "command": "python bench/bench_verify_premises.py "
        + f"--store {a.store} --k {a.k} --n {a.n} --m {' '.join(map(str, a.m))}",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}",
        "load_average_at_start": load,
        "commit": _commit(),
        "questions_answered": answered,
        "sentences": sentences,
        "max_premises": {
            str(m): {
                "nli_pairs_median": statistics.median(row["pairs"]) if row["pairs"] else 0,
                "supported_changed": row["flips"],
                "support_drop_max": round(max(row["drops"], default=0.0), 4),
                "support_drops_over_0.05": sum(d > 0.05 for d in row["drops"]),
                "factuality_median": round(statistics.median(row["f"]), 4) if row["f"] else None,
                "factuality_change_max": f_change(row["f"]),
            }
            for m, row in ((m, rows[str(m)]) for m in values)
        },
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    out = json.dumps(result, indent=2)
    print(out)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(out + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
