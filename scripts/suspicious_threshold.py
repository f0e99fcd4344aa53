"""Where the per-document "suspicious" threshold on P_i would sit if set to a false-alarm budget.

Usage:
    python scripts/suspicious_threshold.py --data-dir ../shared/data [--chunks 160] [--bench 150]
        [--fpr 0.02] [--out report.json]

The development corpus of ``ragtrust nli calibrate`` (a seed-0 sample of OWASP cheat-sheet
chunks plus the TruthfulQA and FEVER calibration splits; no evaluated query's document),
retrieved sets formed from the corpus itself (each document and its 4 nearest neighbours,
:func:`ragtrust.eval.calibration.neighbour_sets`), screened by the default screener
(``screening.signals``, every model as shipped). Reported:

* per clean set, its largest P_i; the ``1 - fpr`` quantile over sets is the threshold a
  budget of ``fpr`` clean retrieved sets would give, and the share of each source's sets at
  or above a ladder of thresholds (0.7 is today's ``suspicious_threshold``);
* which signal carries each clean set's largest P_i when it is at or above 0.3;
* each document poisoned with a *development* attack family (contradiction, entity swap,
  subtle manipulation, instruction injection) placed in its own set, alone and with its
  clean original beside it (a witness): the share of poisoned documents at or above each
  threshold. The linguistic patterns were written from the development families, so these
  rates say how the fusion scales, not what held-out attacks would get.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

LADDER = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
STRATEGIES = ("contradiction", "entity_swap", "subtle_manipulation", "instruction_injection")


def measure(data_dir: Path, n_chunks: int, n_bench: int, fpr: float, seed: int = 0) -> dict[str, Any]:
    """The report described in the module docstring."""
    from ragtrust.config import load_settings
    from ragtrust.documents import Document, RetrievedDoc
    from ragtrust.eval.attacks import AttackGenerator
    from ragtrust.eval.calibration import neighbour_sets
    from ragtrust.eval.datasets import load_benchmark
    from ragtrust.ingest.chunker import chunk_documents
    from ragtrust.ingest.loaders import load_paths
    from ragtrust.pipeline.gate import TrustGate

    started = time.perf_counter()
    settings = load_settings(env={})
    seed_doc = Document(id="seed", text="A placeholder document for the gate's index.")
    gate = TrustGate.from_documents([seed_doc], settings)
    gate.warm_up()
    embedder, screener = gate.embedder, gate.screener
    chunks = chunk_documents(
        load_paths([data_dir / "owasp-cheatsheets"]).documents, tokenizer=getattr(embedder, "tokenizer", None)
    )
    pool = random.Random(seed).sample(chunks, min(n_chunks, len(chunks)))
    source = ["owasp"] * len(pool)
    for name in ("truthfulqa", "fever"):
        bench = load_benchmark(name, data_dir, n=50, n_calib=200, seed=42)
        calib = [bench.documents[q.doc_index] for q in bench.calib_queries][:n_bench]
        pool += calib
        source += [name] * len(calib)
    sets = neighbour_sets(embedder, pool, k=5)

    def screen(docs: list[Document]) -> tuple[list[float], list[dict[str, float]]]:
        report = screener.screen([RetrievedDoc(document=d, rank=i + 1) for i, d in enumerate(docs)])
        probabilities = [float(s.poison_probability) for s in report.documents]
        signals = [{r.name: float(r.score) for r in s.signals if not r.skipped} for s in report.documents]
        return probabilities, signals

    clean_max: list[float] = []
    carriers: Counter[str] = Counter()
    for members in sets:
        probabilities, signals = screen([pool[j] for j in members])
        top = int(np.argmax(probabilities))
        clean_max.append(max(probabilities))
        if probabilities[top] >= 0.3:
            strongest = signals[top]
            carriers[max(strongest, key=lambda name: strongest[name])] += 1
    scores = np.asarray(clean_max)
    by_source = {
        name: {str(t): round(float(np.mean(scores[[s == name for s in source]] >= t)), 4) for t in LADDER}
        for name in ("owasp", "truthfulqa", "fever")
    }
    poisoned: dict[str, Any] = {}
    for strategy in STRATEGIES:
        attack = AttackGenerator(strategy=strategy, rate=1.0, seed=seed, families="development").attack(pool)
        alone, beside = [], []
        for record in attack.records:
            i = record.index
            neighbours = [pool[j] for j in sets[i][1:]]
            alone.append(screen([attack.poisoned[i], *neighbours])[0][0])
            beside.append(screen([attack.poisoned[i], *neighbours[:3], pool[i]])[0][0])
        poisoned[strategy] = {
            "n": len(alone),
            "alone": {str(t): round(float(np.mean(np.asarray(alone) >= t)), 4) for t in LADDER},
            "with_witness": {str(t): round(float(np.mean(np.asarray(beside) >= t)), 4) for t in LADDER},
        }
    return {
        "command": "python scripts/suspicious_threshold.py --data-dir ../shared/data "
        f"--chunks {n_chunks} --bench {n_bench} --fpr {fpr}",
        "seed": seed,
        "signals": list(map(str, settings.screening.signals)),
        "suspicious_threshold_today": settings.screening.suspicious_threshold,
        "clean_sets": {"n": len(sets), "by_source": {s: source.count(s) for s in ("owasp", "truthfulqa", "fever")}},
        "threshold_at_budget": {"fpr": fpr, "value": round(float(np.quantile(scores, 1 - fpr)), 4)},
        "clean_sets_at_or_above": {
            "all": {str(t): round(float(np.mean(scores >= t)), 4) for t in LADDER},
            **by_source,
        },
        "clean_carrier_signal_at_0.3": dict(carriers),
        "poisoned_at_or_above": poisoned,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--chunks", type=int, default=160)
    parser.add_argument("--bench", type=int, default=150)
    parser.add_argument("--fpr", type=float, default=0.02)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = measure(args.data_dir, args.chunks, args.bench, args.fpr)
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
