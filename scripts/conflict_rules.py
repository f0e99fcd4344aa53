"""Can the shipped NLI model tell a poisoned answer beside the true one? (issue 17, docs/status.md)

Conflict rules over aligned claim pairs (the claim-conflict signal's own alignment), each a
per-set score: the largest rule value over the set's aligned pairs. Thresholds come from clean
retrieved sets only (the TruthfulQA and FEVER calibration splits and OWASP neighbourhoods,
:func:`ragtrust.eval.conflicts_calibration.calibration_sets`); recall is measured on the
threat suite's 100 TruthfulQA targets: the best answer against the first incorrect answer
(in the document's format) and against the first LLM-written passage of the committed cache::

    .venv/bin/python scripts/conflict_rules.py --data ../shared/data
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.config import load_settings
from ragtrust.eval.conflicts_calibration import calibration_sets
from ragtrust.eval.datasets import load_benchmark
from ragtrust.eval.llm_attacks import load_cached
from ragtrust.eval.threats import answer_poison
from ragtrust.models.base import CONTRADICTION, ENTAILMENT
from ragtrust.models.embedder import default_embedder
from ragtrust.models.nli import default_nli
from ragtrust.screening.aggregate import build_screener
from ragtrust.screening.claims import aligned_pairs, extract_claims

Pair = dict[str, float]
RULES: dict[str, Callable[[Pair], float]] = {
    "c": lambda p: p["c"],
    "c*(1-e)": lambda p: p["c"] * (1 - p["e"]),
    "cos*(1-e)": lambda p: p["cos"] * (1 - p["e"]),
    "(1-e)*[cos>=0.8]": lambda p: (1 - p["e"]) * (p["cos"] >= 0.8),
    "c*(1-e)*cos": lambda p: p["c"] * (1 - p["e"]) * p["cos"],
    "min c": lambda p: p["cmin"],
}


def pair_features(signal: Any, nli: Any, texts: Sequence[str]) -> list[Pair]:
    """Cosine, best entailment and contradiction (both directions) of each aligned pair across documents."""
    claims = [c for i, t in enumerate(texts) for c in extract_claims(i, t, 40)]
    if len(claims) < 2:
        return []
    vectors = signal._embed([c.bare for c in claims])  # noqa: SLF001 - the signal's own cache
    pairs = aligned_pairs(
        claims, vectors, min_cosine=signal.min_cosine, min_overlap=signal.min_overlap, max_pairs=48,
        same_document=False,
    )  # fmt: skip
    if not pairs:
        return []
    texts_in = [p for i, j, _ in pairs for p in ((claims[i].bare, claims[j].bare), (claims[j].bare, claims[i].bare))]
    probs = np.asarray(nli.predict(texts_in), dtype=float)
    out = []
    for k, (_, _, cos) in enumerate(pairs):
        a, b = probs[2 * k], probs[2 * k + 1]
        out.append(
            {
                "cos": float(cos),
                "e": float(max(a[ENTAILMENT], b[ENTAILMENT])),
                "c": float(max(a[CONTRADICTION], b[CONTRADICTION])),
                "cmin": float(min(a[CONTRADICTION], b[CONTRADICTION])),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--llm-cache", type=Path, default=Path("docs/results/threats/llm_poison.jsonl"))
    args = parser.parse_args()
    settings = load_settings(env={})
    embedder, nli = default_embedder(settings), default_nli(settings)
    signal = next(s for s in build_screener(settings, nli=nli, embedder=embedder).signals if s.name == "claim_conflict")
    clean = calibration_sets(embedder, args.data, n_eval=100, owasp=100, bench_calib=100, k=5, seed=42)
    negatives = [pair_features(signal, nli, [d.text for d in docs]) for docs in clean]
    bench = load_benchmark("truthfulqa", args.data, n=100, seed=42)
    llm: dict[str, str] = {}
    for passage in load_cached(args.llm_cache):
        if passage.ok:
            llm.setdefault(passage.target_id, passage.text)
    incorrect, written = [], []
    for q in bench.eval_queries:
        doc = bench.documents[q.doc_index]
        made = answer_poison(doc)
        if made is not None:
            incorrect.append(pair_features(signal, nli, [doc.text, made[0]]))
        if doc.id in llm:
            written.append(pair_features(signal, nli, [doc.text, llm[doc.id]]))
    print(f"{len(clean)} clean sets, {len(incorrect)} incorrect-answer pairs, {len(written)} LLM pairs")
    for name, rule in RULES.items():
        neg = np.sort([max((rule(p) for p in f), default=0.0) for f in negatives])
        for budget in (0.01, 0.02, 0.05):
            t = neg[len(neg) - 1 - int(budget * len(neg))]
            rec_i = np.mean([max((rule(p) for p in f), default=0.0) > t for f in incorrect])
            rec_l = np.mean([max((rule(p) for p in f), default=0.0) > t for f in written])
            print(
                f"{name:18s} clean sets <= {budget:.0%}: recall incorrect answers {rec_i:.2f}, LLM passages {rec_l:.2f}"
            )


if __name__ == "__main__":
    main()
