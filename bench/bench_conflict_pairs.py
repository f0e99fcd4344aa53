"""What a lower ``max_pairs`` of the claim-conflict signal costs in detection (issue 20).

Usage:
    python bench/bench_conflict_pairs.py --data-dir ../shared/data -n 100 --owasp-sets 100 --max-pairs 48 16 \
        --out runs/bench/conflict_pairs.json

Runs the evaluation of ``ragtrust eval conflicts`` (:func:`ragtrust.eval.conflicts.run`: the
held-out attack families, poison beside its witness, without one and in a vetted store; clean
sets of every benchmark and of OWASP chunks; PoisonedRAG) once per ``--max-pairs`` value, with
the same seed, data and models, and prints per value the headline numbers side by side:
ROC-AUC and recall at <= 2% FPR per dataset / attack / placement, the share of clean sets with
a conflict and with a document blamed, and the NLI pairs per set (median). Every other
parameter of the signal is its default; the NLI ramp is the shipped model's calibration.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any


def _headline(report: dict[str, Any]) -> dict[str, Any]:
    cells: dict[str, Any] = {}
    clean: dict[str, Any] = {}
    for name, data in report["datasets"].items():
        for cell, row in data["cells"].items():
            cells[f"{name} {cell}"] = {
                "roc_auc": row["roc_auc"],
                "recall_at_2pct_fpr": row["recall_at_2pct_fpr"],
                "blamed": row["blamed"],
                "contested": row["contested"],
                "clean_document_blamed": row["clean_document_blamed"],
                "nli_pairs_median": row["nli_pairs_median"],
            }
        clean[name] = data["clean"]
    if "owasp_clean" in report:
        clean["owasp"] = {k: v for k, v in report["owasp_clean"].items() if k != "examples"}
    rag = report.get("poisonedrag", {})
    poisoned = {k: {"roc_auc": v["roc_auc"], "blamed": v["blamed"]} for k, v in rag.items() if isinstance(v, dict)}
    return {"cells": cells, "clean": clean, "poisonedrag": poisoned, "elapsed_s": report["elapsed_s"]}


def main() -> None:
    """Print (and optionally write) the headline numbers per ``max_pairs``."""
    from ragtrust.config import load_settings
    from ragtrust.eval.conflicts import run
    from ragtrust.models.embedder import default_embedder
    from ragtrust.models.nli import default_nli

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("-n", type=int, default=100, help="evaluation queries per benchmark")
    ap.add_argument("--owasp-sets", type=int, default=100)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--max-pairs", type=int, nargs="+", default=[48, 16])
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    if any(m < 1 for m in a.max_pairs):
        ap.error("--max-pairs must be at least 1")
    settings = load_settings(env={})
    nli, embedder = default_nli(settings), default_embedder(settings)
    result: dict[str, Any] = {
        "command": "python bench/bench_conflict_pairs.py "
        + f"--data-dir {a.data_dir} -n {a.n} --owasp-sets {a.owasp_sets} --seed {a.seed} "
        + "--max-pairs "
        + " ".join(map(str, a.max_pairs)),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}",
        "load_average_at_start": os.getloadavg(),
        "max_pairs": {},
    }
    started = time.perf_counter()
    for m in a.max_pairs:
        report = run(
            nli=nli,
            embedder=embedder,
            data_dir=a.data_dir,
            n=a.n,
            seed=a.seed,
            owasp_sets=a.owasp_sets,
            signal_params={"max_pairs": m},
        )
        result["max_pairs"][str(m)] = _headline(report)
        print(f"max_pairs={m} done after {time.perf_counter() - started:.0f} s", flush=True)
    text = json.dumps(result, indent=2)
    print(text)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
