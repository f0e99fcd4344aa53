"""The injection signal's citation window on clean URLs: how many a corpus's file URIs would flag.

Usage:
    python bench/bench_injection_citations.py --data ../shared/data/owasp-cheatsheets

Every file of the folder gets the URL ``ragtrust ingest`` gives it (its ``file://`` URI); the
words of each (:func:`~ragtrust.screening.injection.citation_words`, five or more) are scored by
the shipped injection model at its manifest threshold. Prints how many were screened, the
highest probability and any flagged (a clean corpus should flag none).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    """Score the citation words of every file URI of ``--data``."""
    from ragtrust.models.injection import load_injection_model
    from ragtrust.screening.injection import InjectionSignal, citation_words, normalize_for_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    args = ap.parse_args()
    files = sorted(p for p in args.data.rglob("*") if p.is_file())
    said = [w for w in (citation_words(p.resolve().as_uri()) for p in files) if w]
    threshold, source = InjectionSignal().resolved_threshold()
    probs = [float(p) for p in load_injection_model().predict([normalize_for_model(w)[0] for w in said])]
    flagged = [(p, w) for p, w in zip(probs, said, strict=True) if p >= threshold]
    print(f"{len(files)} files, {len(said)} URLs screened, threshold {threshold:.4f} ({source})")
    print(f"highest probability {max(probs, default=0.0):.3f}; flagged {len(flagged)}")
    for p, w in flagged:
        print(f"  {p:.3f} {w}")


if __name__ == "__main__":
    main()
