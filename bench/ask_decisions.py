"""Every bundled OWASP question through ``ask`` on a store: decision, level and reasons per question.

Usage:
    python bench/ask_decisions.py --store runs/owasp-store --out runs/bench/ask_decisions.json
    python bench/ask_decisions.py --compare runs/bench/before.json runs/bench/after.json
    python bench/ask_decisions.py --store S --out F --questions owasp_value_questions.jsonl

The questions are ``owasp_questions.jsonl`` and ``owasp_factoid_questions.jsonl`` of
``ragtrust.data`` (71; ``--questions`` names other files of ``ragtrust.data``), asked with the
default settings (extractive writer) in one process.
Decision rules of docs/benchmarks.md read "the OWASP questions keep every decision and level"
from ``--compare`` of a run before a change and one after it, each on its own copy of the store
(a store keeps Stage 1's per-document results, which a change to Stage 1 must not inherit).
"""

from __future__ import annotations

import argparse
import json
from importlib import resources
from pathlib import Path
from typing import Any

FILES = ("owasp_questions.jsonl", "owasp_factoid_questions.jsonl")


def questions(files: tuple[str, ...] = FILES) -> list[str]:
    """The bundled questions of ``files``, in file order."""
    out = []
    for name in files:
        text = resources.files("ragtrust.data").joinpath(name).read_text(encoding="utf-8")
        out += [json.loads(line)["question"] for line in text.splitlines() if line.strip()]
    return out


def ask_all(store: Path, files: tuple[str, ...] = FILES) -> list[dict[str, Any]]:
    """Each question's decision, level, reasons and changed sentences."""
    from ragtrust.config import load_settings
    from ragtrust.ingest.store import Store
    from ragtrust.pipeline import TrustGate

    settings = load_settings(env={})
    gate = TrustGate.from_settings(settings, store=Store.open(store))
    rows = []
    for question in questions(files):
        verdict = gate.ask(question)
        rows.append(
            {
                "question": question,
                "trusted": verdict.trusted,
                "level": str(verdict.trust_level),
                "reasons": list(verdict.decision_reasons),
                "changed": [s.change for s in verdict.sentences if getattr(s, "change", None)],
                "answer": verdict.answer,
            }
        )
    return rows


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[str]:
    """The questions whose decision or level differ, in words."""
    moved = []
    for a, b in zip(before, after, strict=True):
        if (a["trusted"], a["level"]) != (b["trusted"], b["level"]):
            moved.append(
                f"{a['question']!r}: {a['trusted']}/{a['level']} -> {b['trusted']}/{b['level']} {b['reasons']}"
            )
    return moved


def main() -> None:
    """Ask every question (``--store``) or compare two runs (``--compare``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", type=Path, nargs=2)
    ap.add_argument("--questions", nargs="+", default=list(FILES), help="question files of ragtrust.data")
    args = ap.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        moved = compare(before, after)
        trusted = [sum(r["trusted"] for r in rows) for rows in (before, after)]
        print(f"{len(before)} questions; trusted {trusted[0]} -> {trusted[1]}; decision or level changed: {len(moved)}")
        for line in moved:
            print(" ", line)
        return
    if args.store is None or args.out is None:
        ap.error("--store and --out (or --compare BEFORE AFTER)")
    rows = ask_all(args.store, tuple(args.questions))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(f"{len(rows)} questions, {sum(r['trusted'] for r in rows)} trusted -> {args.out}")


if __name__ == "__main__":
    main()
