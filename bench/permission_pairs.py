"""The permission conflict on public NLI pairs: how often it fires, by gold label.

Usage:
    python bench/permission_pairs.py --data-dir ../shared/data/nli/test --out F.json

Each (premise, hypothesis) pair of every ``*.jsonl`` file is read by
:func:`ragtrust.screening.claim_diff.permission_conflict` as two aligned claims of two
documents. A fire on a gold *entailment* pair is a false alarm; fires on *contradiction*
pairs are conflicts found. The report also counts the pairs with a prohibition or a
permission on either side, which says how much of each file the check can see at all.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from ragtrust.io import atomic_write_text
from ragtrust.screening.claim_diff import _deontic, permission_conflict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    report: dict[str, object] = {}
    for path in sorted(args.data_dir.glob("*.jsonl")):
        fired: Counter[str] = Counter()
        deontic: Counter[str] = Counter()
        pairs: Counter[str] = Counter()
        examples: list[dict[str, str]] = []
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                row = json.loads(line)
                premise, hypothesis, label = str(row["premise"]), str(row["hypothesis"]), str(row["label"])
                pairs[label] += 1
                if any((_deontic(t) or ("",))[0] == "forbid" for t in (premise, hypothesis)):
                    deontic[label] += 1
                found = permission_conflict(premise, hypothesis)
                if found is not None:
                    fired[label] += 1
                    if len(examples) < 10:
                        examples.append({"label": label, "premise": premise, "hypothesis": hypothesis})
        report[path.name] = {"pairs": dict(pairs), "deontic": dict(deontic), "fired": dict(fired), "examples": examples}
        print(path.name, "pairs", dict(pairs), "a side forbids", dict(deontic), "fired", dict(fired))
    atomic_write_text(args.out, json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
