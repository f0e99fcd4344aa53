"""Which clean OWASP evaluation chunks the injection signal flags, with the window that triggered it.

Usage:
    python bench/bench_injection_owasp_flags.py --data-dir ../shared/data

The chunks are those of ``ragtrust injection eval``'s clean OWASP set (the evaluation split's
files, 512-token chunks); the signal is the shipped one at its manifest threshold, every window
read as in a query. Prints the share flagged and each flagged chunk's probability and reason.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    """List the flagged OWASP evaluation chunks."""
    from ragtrust.documents import RetrievedDoc
    from ragtrust.screening.injection import InjectionSignal
    from ragtrust.training.injection_data import owasp_chunks

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    args = ap.parse_args()
    chunks = owasp_chunks(args.data_dir, "eval")
    signal = InjectionSignal()
    results = signal.score_batch([RetrievedDoc(document=c, score=None, rank=i + 1) for i, c in enumerate(chunks)])
    flagged = [(c, r) for c, r in zip(chunks, results, strict=True) if r.score > 0]
    threshold, source = signal.resolved_threshold()
    print(
        f"{len(chunks)} chunks, {len(flagged)} flagged ({len(flagged) / max(1, len(chunks)):.1%}) "
        f"at {threshold:.4f} ({source})"
    )
    for chunk, result in flagged:
        print(f"- {chunk.id} {result.details.get('probability')}: {(result.reasons or ('',))[0][:240]}")


if __name__ == "__main__":
    main()
