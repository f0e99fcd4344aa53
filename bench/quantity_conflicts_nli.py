"""The conflict diff's quantities on public NLI test pairs: where it fires, and the pairs' labels.

Usage:
    python bench/quantity_conflicts_nli.py --data-dir ../shared/data/nli/test --out F.json
    python bench/quantity_conflicts_nli.py --data-dir ../shared/data/nli/test --unit percent --unit frequency
    python bench/quantity_conflicts_nli.py --data-dir ../shared/data/nli/test --superlatives
    python bench/quantity_conflicts_nli.py --data-dir ../shared/data/nli/train --antonyms

``--superlatives`` reads :func:`~ragtrust.screening.claim_diff.superlative_conflict` instead,
on the sentence pairs in which both sides give a thing a rank ("X is the most secure ...");
``--negations`` reads the whole conflict diff (:func:`~ragtrust.screening.claim_diff.diff_conflict`)
and counts its ``negation``, ``modal`` and ``quantifier`` findings, on every sentence pair;
``--antonyms`` the same for its ``antonym`` findings (a word replaced by its WordNet antonym).

Text nobody here wrote or tuned on: each pair of the labelled NLI test files is split into
sentences, and every (premise sentence, hypothesis sentence) pair in which both sides give a
quantity of one of the ``--unit`` kinds (and neither is conditional) is read by
:func:`ragtrust.screening.claim_diff.quantity_conflict`, as the claim-conflict signal reads two
aligned claims. Per file: NLI pairs with such a sentence pair, how many the rule fires on, and
the labels of those (and, under ``fired_rows``, the line of each, to compare two runs with
``--compare``) (a fired pair should be labelled contradiction, or not_entailment in the
2-way files). The NLI pairs are aligned by construction (a claim and its evidence), so this
measures what the diff says about two claims on one subject, not the alignment.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ragtrust.screening.claim_diff import (
    DiffFinding,
    _quantities,
    _superlative,
    conditional,
    diff_conflict,
    quantity_conflict,
    superlative_conflict,
)
from ragtrust.text import split_sentences

UNITS = ("percent", "frequency", "temperature", "time", "size")


def _units(text: str, units: set[str]) -> set[str]:
    return {q[0] for q in _quantities(text) if q[0] in units}


def _quantity_rule(units: set[str]) -> tuple[Any, Any]:
    def applies(p: str, h: str) -> bool:
        return bool(_units(p, units) & _units(h, units)) and not conditional(p) and not conditional(h)

    def fires(p: str, h: str) -> DiffFinding | None:
        finding = quantity_conflict(p, h)
        ours = finding is not None and any(q[3] == finding.left and q[0] in units for q in _quantities(p))
        return finding if ours else None

    return applies, fires


def _superlative_rule() -> tuple[Any, Any]:
    def applies(p: str, h: str) -> bool:
        return _superlative(p) is not None and _superlative(h) is not None

    return applies, superlative_conflict


def _diff_rule(kinds: tuple[str, ...]) -> tuple[Any, Any]:
    def applies(p: str, h: str) -> bool:
        return True

    def fires(p: str, h: str) -> DiffFinding | None:
        finding = diff_conflict(p, h)
        return finding if finding is not None and finding.kind in kinds else None

    return applies, fires


def scan_file(path: Path, units: set[str], rule: str = "quantity") -> dict[str, Any]:
    """The counts of one JSONL file of ``premise`` / ``hypothesis`` / ``label`` rows."""
    rules = {
        "superlative": _superlative_rule,
        "negation": lambda: _diff_rule(("negation", "modal", "quantifier")),
        "antonym": lambda: _diff_rule(("antonym",)),
    }
    applies, fires = rules[rule]() if rule in rules else _quantity_rule(units)
    pairs, fired_labels, all_labels = 0, Counter[str](), Counter[str]()
    examples: list[dict[str, str]] = []
    fired_rows: dict[int, str] = {}
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh):
            row = json.loads(line)
            premise, hypothesis, label = row["premise"], row["hypothesis"], str(row["label"])
            fired = None
            candidates = 0
            for p in split_sentences(premise):
                for h in split_sentences(hypothesis):
                    if not applies(p.text, h.text):
                        continue
                    candidates += 1
                    finding = fires(p.text, h.text)
                    if finding is not None and fired is None:
                        fired = (p.text, h.text, finding)
            if not candidates:
                continue
            pairs += 1
            all_labels[label] += 1
            if fired is not None:
                fired_labels[label] += 1
                fired_rows[number] = label
                if len(examples) < 8:
                    examples.append(
                        {"label": label, "premise": fired[0][:240], "hypothesis": fired[1][:240],
                         "left": fired[2].left, "right": fired[2].right}
                    )  # fmt: skip
    return {
        "pairs": pairs,
        "labels": dict(all_labels),
        "fired": sum(fired_labels.values()),
        "fired_labels": dict(fired_labels),
        "examples": examples,
        "fired_rows": fired_rows,
    }


def compare(before: Path, after: Path) -> None:
    """The labels of the pairs only one of two runs fires on."""
    a, b = (json.loads(p.read_text(encoding="utf-8"))["files"] for p in (before, after))
    only: dict[str, Counter[str]] = {"after only": Counter(), "before only": Counter()}
    for name in sorted(set(a) | set(b)):
        rows_a = a.get(name, {}).get("fired_rows", {})
        rows_b = b.get(name, {}).get("fired_rows", {})
        only["after only"].update(label for row, label in rows_b.items() if row not in rows_a)
        only["before only"].update(label for row, label in rows_a.items() if row not in rows_b)
    for key, labels in only.items():
        print(f"fired {key}: {sum(labels.values())} {dict(labels)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="folder of NLI test JSONL files")
    parser.add_argument("--unit", action="append", choices=UNITS, help="quantity kinds to read (default: all)")
    parser.add_argument("--superlatives", action="store_true", help="read superlatives instead of quantities")
    parser.add_argument("--negations", action="store_true", help="read negation / modal / quantifier findings")
    parser.add_argument("--antonyms", action="store_true", help="read antonym findings (a word and its antonym)")
    parser.add_argument("--out", type=Path, help="write the counts as JSON")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="two --out files")
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    units = set(args.unit or UNITS)
    files = sorted(args.data_dir.glob("*.jsonl"))
    if not files:
        parser.error(f"no .jsonl files in {args.data_dir}")
    rule = "superlative" if args.superlatives else "negation" if args.negations else "quantity"
    rule = "antonym" if args.antonyms else rule
    report = {
        "rule": rule,
        "units": sorted(units),
        "files": {f.name: scan_file(f, units, rule) for f in files},
    }
    total = Counter[str]()
    for name, counts in report["files"].items():
        print(f"{name}: {counts['pairs']} pairs {counts['labels']}, fired {counts['fired']} {counts['fired_labels']}")
        total.update(counts["fired_labels"])
    print(f"fired in all: {sum(total.values())} {dict(total)}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
