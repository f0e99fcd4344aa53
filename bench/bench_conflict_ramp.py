"""What sets the claim-conflict signal's NLI ramp, and whether the question as context would lower it.

Usage:
    python bench/bench_conflict_ramp.py --data-dir ../shared/data [--out FILE]

The ramp's ``low`` is the 99% quantile of the strongest aligned-pair NLI contradiction over
clean retrieved sets (``ragtrust eval conflicts --calibrate 0.01``: the TruthfulQA and FEVER
calibration splits and OWASP chunk neighbourhoods, :func:`~ragtrust.eval.conflicts_calibration.calibration_sets`).
This prints that quantile per corpus, and, for each development attack family on the
calibration queries (the poisoned copy beside its clean original and three other retrieved
documents), the strongest contradiction over aligned pairs that touch the poisoned document:
the share above the pooled clean quantile and the set-level ROC-AUC against the clean sets.

Two ways of putting a pair to the model: the claims alone (what the signal does), and each
claim after its document's question or title (:func:`~ragtrust.screening.attribution._question_topic`),
so that two answers to one question read as answers to it. Development families and
calibration queries only: nothing here is held out, nothing is evaluated on held-out data.
Prints one JSON object (and writes it to ``--out``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from bench_report import emit  # bench/, beside this script
from sklearn.metrics import roc_auc_score

from ragtrust.config import Settings
from ragtrust.documents import Document
from ragtrust.eval.attacks import AttackGenerator
from ragtrust.eval.conflicts_calibration import calibration_sets
from ragtrust.eval.datasets import load_benchmark
from ragtrust.models.base import CONTRADICTION
from ragtrust.models.embedder import default_embedder
from ragtrust.models.nli import default_nli
from ragtrust.retrieval.dense import DenseIndex
from ragtrust.screening.attribution import _question_topic
from ragtrust.screening.claims import aligned_pairs, extract_claims
from ragtrust.screening.conflicts import ClaimConflictSignal

MODES = ("claims", "question_context")
CORPORA = (("truthfulqa", 0, 100), ("fever", 100, 200), ("owasp", 200, 300))


def strongest(signal: ClaimConflictSignal, docs: list[Document], focus: int | None = None) -> list[float]:
    """The strongest aligned-pair contradiction of a set, per mode (0 without pairs)."""
    claims = [c for i, d in enumerate(docs) for c in extract_claims(i, d.text, signal.max_claims_per_doc)]
    if len(claims) < 2:
        return [0.0, 0.0]
    vectors = signal._embed([c.bare for c in claims])  # noqa: SLF001 - the signal's own cache
    pairs = aligned_pairs(
        claims, vectors, min_cosine=signal.min_cosine, min_overlap=signal.min_overlap, max_pairs=signal.max_pairs
    )
    if focus is not None:
        pairs = [p for p in pairs if focus in (claims[p[0]].doc, claims[p[1]].doc)]
    if not pairs:
        return [0.0, 0.0]
    texts: dict[str, list[tuple[str, str]]] = {mode: [] for mode in MODES}
    for i, j, _ in pairs:
        a, b = claims[i], claims[j]
        texts["claims"] += [(a.bare, b.bare), (b.bare, a.bare)]
        qa = f"{_question_topic(docs[a.doc], a)} {a.bare}".strip()
        qb = f"{_question_topic(docs[b.doc], b)} {b.bare}".strip()
        texts["question_context"] += [(qa, qb), (qb, qa)]
    probs = np.asarray(signal.nli.predict(texts["claims"] + texts["question_context"]))
    n = len(texts["claims"])
    return [float(probs[:n, CONTRADICTION].max()), float(probs[n:, CONTRADICTION].max())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    settings = Settings()
    embedder, nli = default_embedder(settings), default_nli(settings)
    signal = ClaimConflictSignal(nli=nli, embedder=embedder)
    sets = calibration_sets(embedder, args.data_dir, n_eval=100, owasp=100, bench_calib=100, k=5, seed=42)
    clean = np.asarray([strongest(signal, list(s)) for s in sets])
    report: dict[str, Any] = {"nli": nli.model_id, "clean_sets": len(sets), "clean": {}, "attacked": {}}
    low = {mode: float(np.quantile(clean[:, m], 0.99)) for m, mode in enumerate(MODES)}
    report["clean"]["pooled_q99"] = {mode: round(v, 4) for mode, v in low.items()}
    for name, start, end in CORPORA:
        part = clean[start:end]
        report["clean"][name] = {
            mode: {str(q): round(float(np.quantile(part[:, m], q)), 3) for q in (0.5, 0.9, 0.99)}
            for m, mode in enumerate(MODES)
        }
    for name in ("truthfulqa", "fever"):
        bench = load_benchmark(name, args.data_dir, n=100, n_calib=100, seed=42)
        index = DenseIndex.from_documents(bench.documents, embedder)
        queries = bench.calib_queries
        sources = [bench.documents[q.doc_index] for q in queries]
        for strategy in ("contradiction", "entity_swap", "subtle_manipulation"):
            attack = AttackGenerator(strategy=strategy, rate=1.0, seed=42, families="development").attack(sources)
            scores = []
            for record in attack.records:
                source, query = sources[record.index], queries[record.index]
                others = [r.document for r in index.retrieve(query.text, 5) if r.document.id != source.id][:3]
                poisoned = Document(id=f"{source.id}~poisoned", text=record.poisoned, url=source.url)
                scores.append(strongest(signal, [poisoned, *others, source], focus=0))
            got = np.asarray(scores)
            y = np.r_[np.zeros(len(clean)), np.ones(len(got))]
            report["attacked"][f"{name}/{strategy}"] = {
                "sets": len(got),
                **{
                    mode: {
                        "above_clean_q99": round(float(np.mean(got[:, m] > low[mode])), 3),
                        "set_roc_auc": round(float(roc_auc_score(y, np.r_[clean[:, m], got[:, m]])), 3),
                        "median": round(float(np.median(got[:, m])), 3),
                    }
                    for m, mode in enumerate(MODES)
                },
            }
    emit(report, args.out)


if __name__ == "__main__":
    main()
