"""Can the NLI model tell a TruthfulQA answer's falsehoods from its paraphrases? (issue 15)

Usage:
    python bench/tqa_answer_pairs.py --data-dir ../shared/data [--with-question] [--n 300]

TruthfulQA's contradiction attack puts an incorrect answer beside the best one, and the
claim-conflict signal can only call the pair a conflict if the NLI model reads it as a
contradiction (the two rarely differ by a word the diff could name). Per question outside
the benchmark's evaluation split (n = 100, seed 42): the best answer against one incorrect
answer (positive) and against one other *correct* answer (negative), both directions, the
larger contradiction counting; ``--with-question`` puts the question before each side.
Prints the ROC-AUC and the share of each group above a few thresholds: the ceiling of any
NLI-based witness on this benchmark with the model asked.
"""

from __future__ import annotations

import argparse
import csv
import random
from pathlib import Path

import numpy as np

from ragtrust.eval.datasets import TRUTHFULQA_FILE, load_benchmark
from ragtrust.eval.metrics import roc_auc
from ragtrust.models.base import CONTRADICTION
from ragtrust.models.nli import default_nli


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "?", "!")) else text + "."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--with-question", action="store_true", help="the question before each answer")
    parser.add_argument("--n", type=int, default=300, help="questions read (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    evaluation = {q.doc_id for q in load_benchmark("truthfulqa", args.data_dir, n=100, seed=42).eval_queries}
    with (args.data_dir / TRUTHFULQA_FILE).open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    rng = random.Random(args.seed)
    order = [i for i in range(len(rows)) if f"tqa-{i:03d}" not in evaluation]
    rng.shuffle(order)
    positives, negatives = [], []
    for i in order[: args.n]:
        row = rows[i]
        best = _sentence(row["Best Answer"])
        correct = [_sentence(a) for a in row["Correct Answers"].split(";") if a.strip() and _sentence(a) != best]
        incorrect = [_sentence(a) for a in row["Incorrect Answers"].split(";") if a.strip()]
        if correct:
            negatives.append((row["Question"].strip(), best, rng.choice(correct)))
        if incorrect:
            positives.append((row["Question"].strip(), best, rng.choice(incorrect)))
    nli = default_nli()

    def contradiction(items: list[tuple[str, str, str]]) -> np.ndarray:
        sides = [(f"{q} {a}", f"{q} {b}") if args.with_question else (a, b) for q, a, b in items]
        probs = nli.predict(sides + [(b, a) for a, b in sides])[:, CONTRADICTION]
        return np.maximum(probs[: len(items)], probs[len(items) :])

    pos, neg = contradiction(positives), contradiction(negatives)
    labels = np.array([True] * len(pos) + [False] * len(neg))
    print(f"model {nli.model_id}; question before each side: {args.with_question}")
    print(f"best vs incorrect: {len(pos)} pairs; best vs another correct answer: {len(neg)} pairs")
    print(f"ROC-AUC {roc_auc(labels, np.concatenate([pos, neg])):.3f}")
    for t in (0.5, 0.7, 0.9, 0.95):
        print(f"contradiction > {t}: incorrect {np.mean(pos > t):.1%}, correct {np.mean(neg > t):.1%}")


if __name__ == "__main__":
    main()
