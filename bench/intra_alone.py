"""Score chosen documents of a store with the intra-consistency signal, each in a batch of one.

Usage:
    python bench/intra_alone.py --store STORE "CWE-1066#0" "owasp-cheatsheets/X.md#9"

A scan scores a batch's documents in one NLI call, so a change that adds or removes pairs of
one document moves the padding and batches of the others, and the int8 model's scores with
them. Scoring each document alone, with two versions of the code, tells a score that the
change moved from one that only its batch moved (docs/benchmarks.md, "A prohibition is no
claim").
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ragtrust.config import load_settings
from ragtrust.documents import RetrievedDoc
from ragtrust.ingest.store import Store
from ragtrust.models.embedder import default_embedder
from ragtrust.models.nli import default_nli
from ragtrust.screening.aggregate import build_screener


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("ids", nargs="+", help="chunk ids, as `ragtrust docs` lists them")
    args = parser.parse_args()
    embedder = default_embedder()
    screener = build_screener(load_settings(env={}), nli=default_nli(), embedder=embedder)
    (signal,) = [s for s in screener.signals if s.name == "intra_consistency"]
    store = Store.open(args.store, embedder)
    for doc_id in args.ids:
        result = signal.score_batch([RetrievedDoc(document=store.get(doc_id), score=None, rank=1)])[0]
        print(doc_id, round(result.score, 3), result.details.get("contradiction"))


if __name__ == "__main__":
    main()
