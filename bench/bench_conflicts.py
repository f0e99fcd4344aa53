"""Stage-1 cost with the claim-conflict signal on 512-token OWASP chunks, at K = 5, 10, 20.

Usage (numbers go to docs/benchmarks.md with the machine and load noted):
    ragtrust ingest ../shared/data/owasp-cheatsheets --store runs/owasp-store   # once
    python bench/bench_conflicts.py --store runs/owasp-store --out runs/bench/conflicts.json

For each of the 36 bundled OWASP questions (``ragtrust/data/owasp_questions.jsonl``) and each
K, the store's dense retriever returns the top-K chunks and the store's index the
``--witnesses`` nearest other chunks; then the default Stage-1 screener (every default
signal) and the ``claim_conflict`` signal alone are timed on the same retrieved set.

* ``cold``: fresh signals and a fresh NLI model with its pair cache off (every claim embedded
  and every aligned pair scored for the first time; models already loaded);
* ``warm``: the same questions again through the same objects (claim embeddings and NLI pairs
  cached, as in a server that has seen these documents).

Reported per K and pass: median / p95 seconds of the whole Stage 1 and of ``claim_conflict``
alone, NLI pairs (claim pairs x 2 directions) per query, and the growth K=10 / K=5 and
K=20 / K=5 of the claim-conflict median (sub-quadratic: K=20 would be 16x if it grew with
K squared). One JSON object with the machine, the load average and the versions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from importlib import metadata, resources
from pathlib import Path
from typing import Any


def _quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median": round(statistics.median(ordered), 4), "p95": round(p95, 4)}


def main() -> None:
    """Print (and optionally write) one JSON object of per-K timings."""
    from ragtrust.config import load_settings
    from ragtrust.ingest.store import Store
    from ragtrust.models.embedder import default_embedder
    from ragtrust.models.nli import default_nli
    from ragtrust.screening.aggregate import build_screener
    from ragtrust.screening.conflicts import CLAIM_CONFLICT

    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True, help="a store of the OWASP cheat sheets (ragtrust ingest)")
    ap.add_argument("--k", type=int, nargs="+", default=[5, 10, 20])
    ap.add_argument("--witnesses", type=int, default=5)
    ap.add_argument("--limit", type=int, default=36, help="questions")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    settings = load_settings(env={})
    embedder = default_embedder(settings)
    if hasattr(embedder, "cache_size"):
        embedder.cache_size = 0  # cold means every claim is embedded; the signal keeps its own cache
    store = Store.open(a.store, embedder, settings=settings)
    retriever = store.retriever(mode="dense", top_k=max(a.k))
    index = retriever.index  # type: ignore[attr-defined]
    text = resources.files("ragtrust.data").joinpath("owasp_questions.jsonl").read_text(encoding="utf-8")
    questions = [json.loads(line)["question"] for line in text.splitlines() if line.strip()][: a.limit]
    result: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}",
        "load_average_at_start": os.getloadavg(),
        "store_chunks": len(index),
        "questions": len(questions),
        "witnesses": a.witnesses,
        "versions": {p: metadata.version(p) for p in ("ragtrust", "onnxruntime", "numpy")},
        "k": {},
    }
    for k in a.k:
        nli = default_nli(settings, cache_path=None)
        nli.warm_up()
        screener = build_screener(settings, nli=nli, embedder=embedder, ledger=store.ledger)
        screener.warm_up()
        sets = []
        for q in questions:
            docs = retriever.retrieve(q, top_k=k)
            sets.append((q, docs, index.neighbours([d.document for d in docs], a.witnesses)))
        row: dict[str, Any] = {}
        for phase in ("cold", "warm"):
            stage1: list[float] = []
            alone: list[float] = []
            pairs: list[float] = []
            for q, docs, witnesses in sets:
                start = time.perf_counter()
                report = screener.screen(docs, q, witnesses=witnesses)
                stage1.append(time.perf_counter() - start)
                alone.append(report.timings_s.get(CLAIM_CONFLICT, 0.0))
                found = next(r for r in report.documents[0].signals if r.name == CLAIM_CONFLICT)
                pairs.append(float(found.details.get("nli_pairs", 0)))
            row[phase] = {
                "stage1_s": _quantiles(stage1),
                "claim_conflict_s": _quantiles(alone),
                "nli_pairs": {"median": statistics.median(pairs), "max": max(pairs)},
            }
        result["k"][str(k)] = row
        print(k, json.dumps(row), flush=True)
    base = result["k"].get("5")
    if base:
        for row in result["k"].values():
            for phase in ("cold", "warm"):
                row[phase]["claim_conflict_vs_k5"] = round(
                    row[phase]["claim_conflict_s"]["median"] / max(base[phase]["claim_conflict_s"]["median"], 1e-9), 2
                )
                row[phase]["stage1_vs_k5"] = round(
                    row[phase]["stage1_s"]["median"] / max(base[phase]["stage1_s"]["median"], 1e-9), 2
                )
    text_out = json.dumps(result, indent=2)
    print(text_out)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text_out + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
