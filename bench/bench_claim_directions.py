"""Could the claim-conflict signal read each aligned pair one way only? What the second direction adds.

Usage:
    python bench/bench_claim_directions.py --store runs/owasp-store [--n 36] [--out FILE]

The claim-conflict signal sends every aligned claim pair to the NLI model both ways: the
contradiction is ``max(c(a->b), c(b->a))`` and two claims *agree* when either direction is
an entailment >= ``agree_entailment``. The pairs are most of the NLI pairs of a query from
scratch (issue 20), so reading the reverse direction only when the forward one leaves room
would nearly halve them. This measures, on the bundled OWASP questions over the store (the
default gate, as a server runs it), every pair the signal scores: how often the forward
contradiction is below ``eps`` while the reverse one is high, how many pairs reach the
calibrated ramp either way, and how many agreements need the reverse direction. Nothing is
changed; the signal's own results are untouched.

Prints one JSON object (and writes it to ``--out``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
from bench_report import emit  # bench/, beside this script

import ragtrust.screening.conflicts as conflicts
from ragtrust.config import load_settings
from ragtrust.ingest.store import Store
from ragtrust.models.base import NLI_LABELS
from ragtrust.pipeline import TrustGate
from ragtrust.record import versions
from ragtrust.screening.ramp import resolve_ramp

CONTRADICTION, ENTAILMENT = NLI_LABELS.index("contradiction"), NLI_LABELS.index("entailment")


def recording_check(records: list[tuple[list[float], list[float]]]) -> Any:
    """``ClaimConflictSignal._check`` that also keeps each scored pair's (forward, reverse) probabilities."""
    original = conflicts.ClaimConflictSignal._check

    def check(self: conflicts.ClaimConflictSignal, *args: Any) -> Any:
        real = self.nli.predict

        def predict(items: Sequence[tuple[str, str]]) -> Any:
            out = real(items)
            rows = np.asarray(out, dtype=float)
            records.extend((rows[r].tolist(), rows[r + 1].tolist()) for r in range(0, len(items) - 1, 2))
            return out

        self.nli.predict = predict  # type: ignore[method-assign]
        try:
            return original(self, *args)
        finally:
            self.nli.predict = real  # type: ignore[method-assign]

    return check


def summarise(records: list[tuple[list[float], list[float]]], low: float, agree: float) -> dict[str, Any]:
    """The figures of the module docstring."""
    fwd, rev = np.array([r[0] for r in records]), np.array([r[1] for r in records])
    fc, rc = fwd[:, CONTRADICTION], rev[:, CONTRADICTION]
    fe, re_ = fwd[:, ENTAILMENT], rev[:, ENTAILMENT]
    agreeing = np.maximum(fe, re_) >= agree
    by_eps = {}
    for eps in (0.05, 0.1, 0.2, 0.3, 0.5):
        skipped = fc < eps
        by_eps[str(eps)] = {
            "reverse_skipped": round(float(skipped.mean()), 4),
            "skipped_with_reverse_contradiction_ge_0.5": int((skipped & (rc >= 0.5)).sum()),
            "skipped_with_reverse_at_ramp": int((skipped & (rc >= low)).sum()),
        }
    return {
        "pairs": len(records),
        "ramp_low": low,
        "at_ramp_either_way": int((np.maximum(fc, rc) >= low).sum()),
        "at_ramp_forward": int((fc >= low).sum()),
        "contradiction_correlation_forward_reverse": round(float(np.corrcoef(fc, rc)[0, 1]), 3),
        "agreeing_pairs": int(agreeing.sum()),
        "agreeing_only_in_reverse": int((agreeing & (fe < agree)).sum()),
        "if_reverse_read_only_when_forward_contradiction_ge_eps": by_eps,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="a store built by `ragtrust ingest` (OWASP cheat sheets)")
    ap.add_argument("--n", type=int, default=36, help="the first N bundled OWASP questions")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = files("ragtrust.data").joinpath("owasp_questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in rows if line.strip()][: args.n]
    records: list[tuple[list[float], list[float]]] = []
    conflicts.ClaimConflictSignal._check = recording_check(records)  # type: ignore[method-assign]
    settings = load_settings()
    gate = TrustGate.from_settings(settings, store=Store.open(args.store))
    start = time.monotonic()
    for question in questions:
        gate.ask(question)
    signal = conflicts.ClaimConflictSignal
    low, _, _ = resolve_ramp(gate.nli, conflicts.CLAIM_CONFLICT, None, None)
    report = {
        "bench": "claim_directions",
        "command": f"python bench/bench_claim_directions.py --store {args.store} --n {args.n}",
        "questions": len(questions),
        "seconds": round(time.monotonic() - start, 1),
        "agree_entailment": signal.agree_entailment,
        **summarise(records, low, signal.agree_entailment),
        "models": gate.model_ids(),
        "versions": versions("ragtrust", "onnxruntime", "tokenizers", "numpy", "python", "platform"),
    }
    emit(report, args.out)


if __name__ == "__main__":
    main()
