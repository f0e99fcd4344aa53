"""The intra signal's tail check against the whole rest of a long document: what it costs, what it catches.

Usage:
    python bench/bench_intra_tail.py --data ../shared/data/owasp-cheatsheets [--store runs/owasp-store]
        [--chunks 240] [--questions 12] [--scan N] [--out FILE]

Compares ``IntraConsistencySignal(whole_tail=False)`` (the check on any length, the engine
cutting the rest into premise windows) with the default ``whole_tail=True`` (the check only
when the rest fits the model in one window each way):

* **detection** on the development corpus of ``ragtrust nli calibrate`` restricted to its
  chunks (the same seeded sample of ``--chunks`` chunks, each poisoned with a development
  contradiction family): the share of clean and of poisoned chunks whose strongest check
  lies above the shipped calibrated ``low``, and how many chunks get no check at all;
* **cost** with ``--store``: the signal alone on the top-5 of the first ``--questions`` OWASP
  questions, no NLI cache (median seconds and NLI pairs per query);
* **a first scan** with ``--scan N``: the first ``N`` chunks, 5 witnesses, fresh models (empty
  caches) per variant.

Prints one JSON object (and writes it to ``--out``).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

from bench_report import emit  # bench/, beside this script

from ragtrust.config import Settings
from ragtrust.eval.calibration import _as_retrieved, dev_corpus
from ragtrust.ingest.chunker import chunk_documents
from ragtrust.ingest.loaders import load_paths
from ragtrust.models.embedder import default_embedder
from ragtrust.models.nli import default_nli
from ragtrust.models.nli_engine import NLIEngine
from ragtrust.screening.intra import IntraConsistencySignal
from ragtrust.screening.ramp import resolve_ramp

VARIANTS = {"whole_tail=False (before)": False, "whole_tail=True (default)": True}


def _strongest(signal: IntraConsistencySignal, docs: list[Any]) -> list[float | None]:
    out: list[float | None] = []
    for k in range(0, len(docs), 5):
        for r in signal.score_batch(_as_retrieved(docs[k : k + 5])):
            out.append(None if r.skipped else max(r.details["contradiction"].values()))
    return out


def detection(model: Any, embedder: Any, data: Path, n: int) -> dict[str, Any]:
    """Clean and poisoned chunks above the calibrated ``low``, per variant (seed 0, as the calibration)."""
    chunks = chunk_documents(load_paths([data]).documents, tokenizer=getattr(embedder, "tokenizer", None))
    corpus = dev_corpus(random.Random(0).sample(chunks, min(n, len(chunks))), n=n, seed=0)
    poisoned = [corpus.poisoned[i] for i in sorted(corpus.poisoned_index)]
    out: dict[str, Any] = {"chunks": len(corpus.clean), "poisoned": len(poisoned)}
    for name, whole in VARIANTS.items():
        signal = IntraConsistencySignal(nli=NLIEngine(model, cache_size=0), direction="both", whole_tail=whole)
        low, _, source = resolve_ramp(signal.nli, signal.name, None, None)
        row: dict[str, Any] = {"low": low, "ramp_source": source}
        for part, docs in (("clean", list(corpus.clean)), ("poisoned", poisoned)):
            values = _strongest(signal, docs)
            row[f"{part}_above_low"] = round(sum((v or 0.0) > low for v in values) / len(values), 4)
            row[f"{part}_no_check"] = sum(v is None for v in values)
        out[name] = row
    return out


def cost(model: Any, embedder: Any, store: Path, n: int, settings: Settings) -> dict[str, Any]:
    """The signal alone on the top-5 of OWASP questions, no NLI cache."""
    from ragtrust.ingest.store import Store
    from ragtrust.pipeline.gate import TrustGate

    gate = TrustGate.from_settings(
        settings, store=Store.open(store, embedder, settings=settings, read_only=True), nli=model, embedder=embedder
    )
    questions = files("ragtrust.data").joinpath("owasp_questions.jsonl").read_text(encoding="utf-8").splitlines()
    sets = [gate.retrieve(json.loads(line)["question"])[0] for line in questions[:n]]
    out: dict[str, Any] = {"questions": len(sets), "k": 5}
    for name, whole in VARIANTS.items():
        counter = NLIEngine(model, cache_size=0)
        signal = IntraConsistencySignal(nli=counter, whole_tail=whole)
        signal.score_batch(sets[0])  # warm-up
        seconds, pairs = [], []
        for docs in sets:
            before = counter.pairs_scored
            t = time.perf_counter()
            signal.score_batch(docs)
            seconds.append(time.perf_counter() - t)
            pairs.append(counter.pairs_scored - before)
        out[name] = {"median_s": round(statistics.median(seconds), 4), "nli_pairs_median": statistics.median(pairs)}
    return out


def scan(data: Path, n: int, settings: Settings) -> dict[str, Any]:
    """A first scan of the first ``n`` chunks (5 witnesses, local engine), fresh models per variant."""
    from ragtrust.scan import scan_corpus
    from ragtrust.screening.aggregate import build_screener

    out: dict[str, Any] = {"chunks": n, "witnesses": 5}
    for name, whole in VARIANTS.items():
        embedder, nli = default_embedder(settings), default_nli(settings)  # empty caches
        chunks = chunk_documents(load_paths([data]).documents, tokenizer=getattr(embedder, "tokenizer", None))[:n]
        signals = build_screener(settings, nli=nli, embedder=embedder, ledger=None).signals
        for signal in signals:
            if isinstance(signal, IntraConsistencySignal):
                signal.whole_tail = whole
        t = time.perf_counter()
        report = scan_corpus(chunks, signals=signals, embedder=embedder, nli=nli, witnesses=5, engine="local")
        seconds = time.perf_counter() - t
        out[name] = {
            "seconds": round(seconds, 1),
            "docs_per_s": round(len(chunks) / seconds, 2),
            "suspicious": sorted(r.id for r in report.suspicious()),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--chunks", type=int, default=240)
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--scan", type=int, default=0, help="also time a first scan of the first N chunks")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    settings = Settings()
    embedder = default_embedder(settings)
    model = default_nli(settings).model
    report: dict[str, Any] = {"nli": getattr(model, "model_id", "")}
    report["detection"] = detection(model, embedder, args.data, args.chunks)
    if args.store:
        report["cost"] = cost(model, embedder, args.store, args.questions, settings)
    if args.scan:
        report["scan"] = scan(args.data, args.scan, settings)
    emit(report, args.out)


if __name__ == "__main__":
    main()
