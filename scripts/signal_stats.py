"""Per-signal, document-level statistics of a benchmark run (``ragtrust eval run``).

Usage:
    python scripts/signal_stats.py runs/paper/samples.jsonl [--json]

For every dataset and every signal (and the fused P_i), over the distinct retrieved
documents of Part B (a document counted once per dataset and strategy): how many are
poisoned, the document-level ROC-AUC, and the share of clean and of poisoned documents
with a score above 0 and above 0.3. This is how docs/status.md's "clean documents with
P_i > 0.3" figures are made.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score


def signal_stats(samples: Path) -> list[dict[str, object]]:
    """One row per (dataset, signal) with the rates described in the module docstring."""
    values: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    seen: set[tuple[str, str, str, bool]] = set()
    with samples.open(encoding="utf-8") as f:
        for line in f:
            sample = json.loads(line)
            if sample["part"] != "B":
                continue
            for doc in sample["retrieved"]:
                key = (sample["dataset"], sample["strategy"], doc["id"], bool(doc["poisoned"]))
                if key in seen:
                    continue
                seen.add(key)
                scores = [*doc["signals"].items(), ("P", doc["poison_probability"])]
                for name, score in scores:
                    if score is not None:
                        values[sample["dataset"]][name].append((int(doc["poisoned"]), float(score)))
    rows: list[dict[str, object]] = []
    for dataset, signals in values.items():
        for name, pairs in signals.items():
            y = np.array([a for a, _ in pairs])
            x = np.array([b for _, b in pairs])
            clean, poisoned = x[y == 0], x[y == 1]
            rows.append(
                {
                    "dataset": dataset,
                    "signal": name,
                    "n": len(y),
                    "poisoned": int(y.sum()),
                    "roc_auc": round(float(roc_auc_score(y, x)), 3) if 0 < y.sum() < len(y) else None,
                    "clean_above_0": round(float(np.mean(clean > 0)), 3) if len(clean) else None,
                    "clean_above_0.3": round(float(np.mean(clean > 0.3)), 3) if len(clean) else None,
                    "poisoned_above_0": round(float(np.mean(poisoned > 0)), 3) if len(poisoned) else None,
                    "poisoned_above_0.3": round(float(np.mean(poisoned > 0.3)), 3) if len(poisoned) else None,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("samples", type=Path, help="samples.jsonl of a ragtrust eval run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = signal_stats(args.samples)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for r in rows:
        print(
            f"{r['dataset']:14} {r['signal']:18} n={r['n']:4} poisoned={r['poisoned']:3} AUC {r['roc_auc']}"
            f"  clean>0 {r['clean_above_0']}  clean>0.3 {r['clean_above_0.3']}"
            f"  poisoned>0 {r['poisoned_above_0']}  poisoned>0.3 {r['poisoned_above_0.3']}"
        )


if __name__ == "__main__":
    main()
