"""A clean security corpus nobody here wrote: the CWE weaknesses as one JSONL document each.

Usage:
    pip install --no-deps cwe2==3.0.0     # CWE 4.14 (MITRE's CWE Terms of Use; cwe2 itself is MIT)
    python bench/cwe_corpus.py --out runs/cwe/cwe.jsonl
    ragtrust ingest runs/cwe/cwe.jsonl --store runs/cwe-store
    ragtrust scan --store runs/cwe-store --json --report runs/cwe/scan.jsonl

Each weakness of the research view (``helpful_views/2000.csv``: 963 entries) becomes a
document "CWE-N: name", its description, extended description and potential mitigations as
prose. Nothing in it is poisoned, and many entries are written alike about opposite cases
(overflow / underflow, upper / lower bound), so every conflict a scan finds between two
entries is a false alarm or a real disagreement of the catalogue: the false-alarm check of
claim-conflict changes on text that was not read while building them.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from importlib import resources
from pathlib import Path

VIEW = "database_v49/helpful_views/2000.csv"
#: the ``::KEY:value::`` records of a mitigation cell keep only their DESCRIPTION
_DESCRIPTION = re.compile(r"DESCRIPTION:(.*?)(?=::|$)", re.DOTALL)


def _mitigations(cell: str) -> list[str]:
    return [" ".join(m.split()) for m in _DESCRIPTION.findall(cell or "") if m.strip()]


def documents(csv_path: Path) -> list[dict[str, str]]:
    """One ``{"id", "text", "url"}`` record per weakness, in CWE-id order."""
    csv.field_size_limit(10**8)
    out = []
    with csv_path.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            parts = [
                f"CWE-{row['CWE-ID']}: {row['Name']}.",
                row.get("Description", ""),
                row.get("Extended Description", ""),
            ]
            mitigations = _mitigations(row.get("Potential Mitigations", ""))
            text = "\n\n".join(" ".join(p.split()) for p in parts if p and p.strip())
            if mitigations:
                text += "\n\nPotential mitigations:\n\n" + "\n\n".join(mitigations)
            out.append(
                {
                    "id": f"CWE-{row['CWE-ID']}",
                    "text": text,
                    "url": f"https://cwe.mitre.org/data/definitions/{row['CWE-ID']}.html",
                }
            )
    return sorted(out, key=lambda d: int(d["id"].split("-")[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--csv", type=Path, help=f"the view CSV (default: cwe2's {VIEW})")
    parser.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    args = parser.parse_args()
    path = args.csv
    if path is None:
        try:
            path = Path(str(resources.files("cwe2").joinpath(VIEW)))
        except ModuleNotFoundError:
            parser.error("cwe2 is not installed: pip install --no-deps cwe2==3.0.0, or pass --csv")
    docs = documents(path)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    print(f"{len(docs)} weaknesses -> {args.out}")


if __name__ == "__main__":
    main()
