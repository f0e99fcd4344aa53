"""Stage 2's evidence diff on NLI test pairs: false alarms on entailments, catches among the model's misses.

Usage:
    python bench/bench_answer_diff.py --data-dir ../shared/data --limit 2000 --out runs/bench/answer_diff.json

The decision rule of docs/benchmarks.md "An answer sentence that changes its evidence's number,
name, negation or modal" reads two of its three conditions here, on NLI test files that neither
the NLI model nor the diff was built on (the first ``--limit`` pairs of each, as the model card):

* (a) among gold *entailment* pairs, the share :func:`~ragtrust.screening.claim_diff.evidence_change`
  vetoes (the hypothesis as the answer sentence, the premise as its evidence) on each of
  ``vitaminc_heldout_pages.jsonl`` and ``snli_test.jsonl``: must be <= 2%;
* (b) among gold *contradiction* pairs that the shipped NLI model entails (entailment >= 0.5,
  Stage 2's threshold), pooled over the files, the share the diff vetoes: must be >= 10%.

``--files`` names other files of ``nli/test`` (the second rule's: ``sick_test.jsonl
healthver_dev_test.jsonl climate_fever.jsonl``).

The third (the 71 bundled OWASP questions keep every decision and level) is read by running
``ask`` on the OWASP store before and after. Prints and writes the shares with examples.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path
from typing import Any

FILES = ("vitaminc_heldout_pages.jsonl", "snli_test.jsonl")


def _vetoes(rows: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    from ragtrust.screening.claim_diff import evidence_change

    found = []
    for premise, hypothesis, _ in rows:
        change = evidence_change(hypothesis, premise)
        if change is not None:
            evidence, finding = change
            found.append(
                {
                    "evidence": evidence,
                    "sentence": hypothesis,
                    "kind": finding.kind,
                    "was": finding.left,
                    "now": finding.right,
                }
            )
    return found


def main() -> None:
    """Measure conditions (a) and (b) of the rule."""
    from ragtrust.models.base import ENTAILMENT
    from ragtrust.models.nli import default_nli
    from ragtrust.models.nli_eval import read_labelled

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=2000)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--files", nargs="+", default=list(FILES), help="files of nli/test (default: %(default)s)")
    args = ap.parse_args()

    report: dict[str, Any] = {"limit": args.limit, "host": platform.machine(), "files": {}}
    pooled = {"entailed_contradictions": 0, "vetoed": 0}
    for name in args.files:
        rows = read_labelled(args.data_dir / "nli" / "test" / name, limit=args.limit)
        entailed = [r for r in rows if r[2] == "entailment"]
        vetoed = _vetoes(entailed)
        entry: dict[str, Any] = {
            "entailment_pairs": len(entailed),
            "entailment_vetoed": len(vetoed),
            "entailment_vetoed_share": len(vetoed) / max(1, len(entailed)),
            "false_alarm_examples": vetoed[:15],
        }
        if any(r[2] == "contradiction" for r in rows):
            contradictions = [r for r in rows if r[2] == "contradiction"]
            nli = default_nli()
            probs = nli.predict([(p, h) for p, h, _ in contradictions])
            missed = [r for r, p in zip(contradictions, probs, strict=True) if float(p[ENTAILMENT]) >= 0.5]
            caught = _vetoes(missed)
            entry |= {
                "contradiction_pairs": len(contradictions),
                "contradiction_entailed_by_nli": len(missed),
                "of_those_vetoed": len(caught),
                "of_those_vetoed_share": len(caught) / max(1, len(missed)),
                "contradiction_vetoed_all": len(_vetoes(contradictions)),
                "catch_examples": caught[:15],
            }
            pooled["entailed_contradictions"] += len(missed)
            pooled["vetoed"] += len(caught)
        report["files"][name] = entry
        print(name, {k: v for k, v in entry.items() if not k.endswith("examples")})
    a = all(e["entailment_vetoed_share"] <= 0.02 for e in report["files"].values())
    share = pooled["vetoed"] / max(1, pooled["entailed_contradictions"])
    report["pooled_nli_misses"] = pooled | {"vetoed_share": share}
    print("pooled: contradictions the NLI model entails", pooled["entailed_contradictions"], "vetoed", f"{share:.3f}")
    b = share >= 0.10
    report["rule"] = {"a_entailment_vetoed_at_most_2pct": a, "b_nli_misses_vetoed_at_least_10pct": b}
    print("rule (a):", a, " (b):", b)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
