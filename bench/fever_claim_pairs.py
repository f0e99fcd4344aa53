"""The conflict diff on pairs of FEVER's own claims: does it fire where one claim is refuted?

Usage:
    python bench/fever_claim_pairs.py --data ../shared/data/fever/paper_dev.jsonl --kinds antonym --out F.json
    python bench/fever_claim_pairs.py --data ../shared/data/fever/paper_dev.jsonl --out F.json   # every kind

FEVER's REFUTES claims were written by mutating true claims (negation, a similar or an
opposite word, another entity or number), so two near-identical claims about one subject,
one SUPPORTS and one REFUTES, disagree, while two SUPPORTS claims are both true and must not
conflict. Each claim is paired with the claims that share its two rarest words (a blocking
step: the pairs read are those, not all 50 million), each pair is read by
:func:`ragtrust.screening.claim_diff.diff_conflict` as two aligned claims of two documents,
and the findings of ``--kinds`` are counted by the two claims' labels. ``SUPPORTS/REFUTES``
fires are conflicts found; ``SUPPORTS/SUPPORTS`` fires are false alarms. Pairs with a NOT
ENOUGH INFO claim and REFUTES / REFUTES pairs are counted but say nothing either way.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from ragtrust.io import atomic_write_text
from ragtrust.screening.claim_diff import STOP_WORDS, _tokens, diff_conflict

SHORT = {"SUPPORTS": "S", "REFUTES": "R", "NOT ENOUGH INFO": "N"}
#: a word shared by more claims than this is no blocking key
MAX_POSTING = 200


def read_claims(path: Path) -> list[tuple[str, str]]:
    """(claim, label) of each row, duplicates of one claim text kept once per label."""
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            key = (" ".join(row["claim"].split()), SHORT[row["label"]])
            if key not in seen:
                seen.add(key)
                out.append(key)
    return out


def candidate_pairs(claims: list[tuple[str, str]]) -> set[tuple[int, int]]:
    """Index pairs (i < j) of claims sharing one of the two rarest content words of either."""
    words = [{t[0] for t in _tokens(text) if t[0] not in STOP_WORDS} for text, _label in claims]
    posting: dict[str, list[int]] = defaultdict(list)
    for i, ws in enumerate(words):
        for w in ws:
            posting[w].append(i)
    pairs: set[tuple[int, int]] = set()
    for i, ws in enumerate(words):
        rare = sorted((w for w in ws if len(posting[w]) <= MAX_POSTING), key=lambda w: (len(posting[w]), w))[:2]
        for w in rare:
            pairs.update((min(i, j), max(i, j)) for j in posting[w] if j != i)
    return pairs


def run(path: Path, kinds: set[str] | None) -> dict[str, Any]:
    claims = read_claims(path)
    pairs = candidate_pairs(claims)
    fired: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, list[dict[str, str]]] = defaultdict(list)
    rows: list[list[Any]] = []
    for i, j in sorted(pairs):
        (left, la), (right, lb) = claims[i], claims[j]
        if left.lower() == right.lower():
            continue
        finding = diff_conflict(left, right)
        if finding is None or (kinds and finding.kind not in kinds):
            continue
        labels = "/".join(sorted((la, lb), key="SRN".index))
        fired[labels] += 1
        by_kind[finding.kind][labels] += 1
        rows.append([i, j, finding.kind, labels])
        if labels in ("S/R", "S/S") and len(examples[labels]) < 10:
            examples[labels].append(
                {"left": left, "right": right, "kind": finding.kind, "words": f"{finding.left} / {finding.right}"}
            )
    decided = fired["S/R"] + fired["S/S"]
    return {
        "data": path.name,
        "claims": len(claims),
        "pairs_read": len(pairs),
        "kinds": sorted(kinds) if kinds else "all",
        "fired": dict(fired),
        "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
        "conflict_share": round(fired["S/R"] / decided, 4) if decided else None,
        "examples": dict(examples),
        "fired_rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="FEVER paper_dev.jsonl")
    parser.add_argument("--kinds", nargs="*", help="finding kinds to count (default: every kind)")
    parser.add_argument("--out", type=Path, help="write the counts as JSON")
    args = parser.parse_args()
    report = run(args.data, set(args.kinds) if args.kinds else None)
    print(f"{report['claims']} claims, {report['pairs_read']} pairs read; fired by labels {report['fired']}")
    for kind, labels in report["by_kind"].items():
        print(f"  {kind}: {labels}")
    print(f"S/R share of S/R + S/S fires: {report['conflict_share']}")
    for labels, items in report["examples"].items():
        for e in items[:5]:
            print(f"  [{labels} {e['kind']}: {e['words']}] {e['left']} | {e['right']}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out, json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
