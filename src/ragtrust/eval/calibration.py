"""Offline calibration of the NLI contradiction signals: thresholds set to a false-alarm budget on clean text.

The intra- and cross-document signals turn an NLI contradiction probability ``c`` into a
score with the ramp ``clip((c - low) / (high - low))`` (:mod:`ragtrust.screening.ramp`, the
run-time half: which ramp a signal uses). Where ``low`` belongs depends on
the model: a small NLI model reads many honest pairs of sentences from one document as
contradictions (on the development corpus below, 22% of clean documents reach 0.4 on some
forward intra check with the shipped model: ``clean_above_default_low`` in the report), so a
fixed ``low = 0.4`` raises clean documents.
So ``low`` is **calibrated per model** on a development corpus of clean documents:

* retrieved sets are formed from the corpus itself: each development document and its
  ``k - 1`` nearest neighbours by embedding (:func:`neighbour_sets`). The false-alarm
  budget is per **retrieved set**, the unit a user sees (one query): at ``fpr = 0.05`` at
  most 5% of clean sets of 5 get any score from the signal;
* **intra**: a document's score is the strongest of the signal's checks (halves, tail,
  tail against related sentences); ``low`` is the ``1 - fpr`` quantile over clean sets of
  the strongest document score in the set;
* **cross**: ``low`` is the ``1 - fpr`` quantile over clean sets of the strongest
  related-pair contradiction in the set;
* **witness** (:mod:`ragtrust.screening.witness`, the corpus scan's former statistic): it
  judges documents, not retrieved sets, so ``low`` is the ``1 - fpr`` quantile over clean documents of the
  strongest mutual contradiction with a witness;
* ``high = (low + 1) / 2`` in all three: the score reaches 1 half-way between the threshold
  and certainty.

The development corpus (``ragtrust nli calibrate``) is a seeded sample of chunks of
the OWASP cheat sheets plus the documents of the TruthfulQA and FEVER **calibration
splits** (the items after the evaluation queries in each benchmark's seeded order); no
evaluated query's document and no knowledge-base rule is used. The same documents,
poisoned with the **development** attack families, give the true-positive rates reported
beside the thresholds (and choose the intra signal's direction rule), but the thresholds
themselves come from clean text only.

The thresholds go into the shipped model's manifest (:func:`write_to_manifest`,
``signal_calibration``, keyed to the ONNX file's sha256), where
:func:`ragtrust.screening.ramp.resolve_ramp` finds them at run time; or they are pasted into
``screening.signals`` (``report["suggested_spec"]``).

Example:
    >>> threshold_for([0.1, 0.2, 0.3, 0.4, 0.9], fpr=0.2)
    (0.5, 0.75)
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import InputError
from ragtrust.eval.metrics import roc_auc
from ragtrust.models.base import Embedder, NLIModel
from ragtrust.record import utc_iso
from ragtrust.screening.ramp import DEFAULT_RAMP

#: a cheaper intra direction rule is chosen when its true-positive rate is this close to the best
TPR_TOLERANCE = 0.02


def threshold_for(clean_scores: Sequence[float], fpr: float) -> tuple[float, float]:
    """``(low, high)`` for a false-alarm budget: ``low`` is the ``1 - fpr`` quantile of clean scores."""
    if not clean_scores:
        raise InputError("calibration needs at least one clean score")
    if not 0.0 < fpr < 1.0:
        raise InputError(f"fpr must be in (0, 1), got {fpr}")
    low = float(np.quantile(np.asarray(clean_scores, dtype=np.float64), 1.0 - fpr))
    low = min(round(low, 4), 0.98)
    return low, round((low + 1.0) / 2.0, 4)


def _rates(clean: Sequence[float], poisoned: Sequence[float], low: float) -> dict[str, float]:
    c, p = np.asarray(clean), np.asarray(poisoned)
    out = {"clean_above_low": round(float(np.mean(c > low)), 4) if len(c) else float("nan")}
    out["poisoned_above_low"] = round(float(np.mean(p > low)), 4) if len(p) else float("nan")
    if len(c) and len(p):
        auc = roc_auc(np.r_[np.zeros(len(c)), np.ones(len(p))], np.r_[c, p])
        out["roc_auc"] = round(float(auc), 4) if auc is not None else float("nan")
    return out


@dataclass(frozen=True)
class DevCorpus:
    """Clean development documents and their poisoned twins (development attack families)."""

    clean: tuple[Document, ...]
    poisoned: tuple[Document, ...]
    poisoned_index: frozenset[int]


def dev_corpus(
    documents: Sequence[Document], *, n: int, seed: int, attack: Callable[[Sequence[Document]], Any] | None = None
) -> DevCorpus:
    """A seeded sample of ``n`` documents, each poisoned with a development contradiction family."""
    if len(documents) < 2:
        raise InputError("calibration needs at least 2 development documents")
    sample = random.Random(seed).sample(list(documents), min(n, len(documents)))
    if attack is None:
        from ragtrust.eval.attacks import AttackGenerator

        attack = AttackGenerator(strategy="contradiction", rate=1.0, seed=seed, families="development").attack
    result = attack(sample)
    hit = frozenset(r.index for r in result.records)
    return DevCorpus(clean=tuple(result.clean), poisoned=tuple(result.poisoned), poisoned_index=hit)


def _as_retrieved(docs: Sequence[Document]) -> list[RetrievedDoc]:
    return [RetrievedDoc(document=d, rank=i + 1) for i, d in enumerate(docs)]


def _intra_max(nli: NLIModel, docs: Sequence[Document], direction: str) -> list[float | None]:
    from ragtrust.screening.intra import IntraConsistencySignal

    signal = IntraConsistencySignal(nli=nli, direction=direction)  # type: ignore[arg-type]
    out: list[float | None] = []
    for r in signal.score_batch(_as_retrieved(docs)):
        out.append(None if r.skipped else max(r.details["contradiction"].values()))
    return out


def neighbour_sets(embedder: Embedder, docs: Sequence[Document], k: int = 5) -> list[list[int]]:
    """Retrieved sets formed from the corpus itself: each document and its ``k - 1`` nearest."""
    vectors = np.asarray(embedder.embed([d.text for d in docs]), dtype=np.float32)
    sims = vectors @ vectors.T
    return [[i] + [int(j) for j in np.argsort(-sims[i]) if j != i][: k - 1] for i in range(len(docs))]


def calibrate_intra(
    nli: NLIModel, corpus: DevCorpus, sets: Sequence[Sequence[int]], *, fpr: float = 0.05
) -> dict[str, Any]:
    """The intra signal's direction rule and ramp for ``nli`` (see the module docstring).

    ``sets`` are retrieved sets of clean documents (indices, :func:`neighbour_sets`): ``low``
    is the ``1 - fpr`` quantile of the strongest document score per set. Every direction
    rule is measured at its own threshold; the cheapest rule whose true-positive rate (share
    of poisoned documents above ``low``) is within ``TPR_TOLERANCE`` of the best is chosen.
    """
    from ragtrust.screening.intra import DIRECTIONS

    report: dict[str, Any] = {"fpr": fpr, "level": "retrieved set", "n_sets": len(sets), "directions": {}}
    for direction in DIRECTIONS:
        clean = _intra_max(nli, corpus.clean, direction)
        poisoned = _intra_max(nli, [corpus.poisoned[i] for i in sorted(corpus.poisoned_index)], direction)
        set_scores = [max((clean[j] or 0.0 for j in members), default=0.0) for members in sets]
        c = [x for x in clean if x is not None]
        p = [x for x in poisoned if x is not None]
        low, high = threshold_for(set_scores, fpr)
        row: dict[str, Any] = {"low": low, "high": high, "n_clean": len(c), "n_poisoned": len(p)}
        row["clean_sets_above_low"] = round(float(np.mean(np.asarray(set_scores) > low)), 4)
        # what the uncalibrated default ramp would do to the same clean documents
        row["clean_above_default_low"] = round(float(np.mean(np.asarray(c) > DEFAULT_RAMP[0])), 4) if c else None
        row.update(_rates(c, p, low))
        report["directions"][direction] = row
    rates = {d: report["directions"][d]["poisoned_above_low"] for d in DIRECTIONS}
    best = max(rates.values())
    chosen = next(d for d in DIRECTIONS if rates[d] >= best - TPR_TOLERANCE)
    report.update(direction=chosen, low=report["directions"][chosen]["low"], high=report["directions"][chosen]["high"])
    return report


def _set_scores(nli: NLIModel, docs: Sequence[Document]) -> tuple[float, float] | None:
    """(strongest related-pair contradiction of the set, strongest one involving ``docs[0]``)."""
    from ragtrust.screening.cross import CrossConsistencySignal

    signal = CrossConsistencySignal(nli=nli, low=0.0, high=1.0)
    results = signal.score_batch(_as_retrieved(docs))
    if not results or not results[0].details.get("pairs_scored"):
        return None
    per_doc = [[float(v) for v in (r.details.get("contradiction") or {}).values()] for r in results]
    return max((max(v, default=0.0) for v in per_doc), default=0.0), max(per_doc[0], default=0.0)


def calibrate_cross(
    nli: NLIModel, corpus: DevCorpus, sets: Sequence[Sequence[int]], *, fpr: float = 0.05
) -> dict[str, Any]:
    """The cross signal's ramp for ``nli`` on retrieved sets of clean documents (:func:`neighbour_sets`).

    ``low`` bounds the share of clean sets with any pair above it (that is what lowers C
    and can blame a clean document). The rates compare the first document's pairs in the
    clean set with the same pairs after it is poisoned (``anchor_*``).
    """
    clean = list(corpus.clean)
    set_scores: list[float] = []
    clean_anchor: list[float] = []
    poisoned_anchor: list[float] = []
    for members_idx in sets:
        i = members_idx[0]
        members = [clean[j] for j in members_idx]
        scores = _set_scores(nli, members)
        if scores is None:
            continue
        set_scores.append(scores[0])
        if i in corpus.poisoned_index:
            attacked = _set_scores(nli, [corpus.poisoned[i]] + members[1:])
            if attacked is not None:
                clean_anchor.append(scores[1])
                poisoned_anchor.append(attacked[1])
    low, high = threshold_for(set_scores, fpr)
    report: dict[str, Any] = {"fpr": fpr, "low": low, "high": high, "n_clean_sets": len(set_scores)}
    report["clean_sets_above_low"] = round(float(np.mean(np.asarray(set_scores) > low)), 4)
    report["n_anchor_pairs"] = len(poisoned_anchor)
    report.update({f"anchor_{key}": v for key, v in _rates(clean_anchor, poisoned_anchor, low).items()})
    return report


def calibrate_witness(
    nli: NLIModel, embedder: Embedder, corpus: DevCorpus, *, witnesses: int = 3, fpr: float = 0.05
) -> dict[str, Any]:
    """The witness ramp for ``nli`` (the statistic of :mod:`ragtrust.screening.witness`).

    Each clean development document's witnesses are its ``witnesses`` nearest neighbours
    (cosine >= the scan's minimum, other parents only); ``low`` is the ``1 - fpr``
    quantile over clean documents of the strongest mutual contradiction. The rates compare
    each poisoned document's witness statistic with its clean twin's.
    """
    from ragtrust.screening.witness import neighbours, nli_pairs, witness_pairs, witness_result

    def strongest(docs: Sequence[Document], near: Sequence[Sequence[tuple[int, float]]]) -> list[float | None]:
        judged = nli_pairs(nli, [d.text for d in docs], witness_pairs(near))
        ids = [d.id for d in docs]
        out: list[float | None] = []
        for i in range(len(docs)):
            result, _ = witness_result(i, near[i], judged, ids)
            out.append(None if result.skipped else result.score)
        return out

    clean = list(corpus.clean)
    vectors = np.asarray(embedder.embed([d.text for d in clean]), dtype=np.float32)
    groups = [str(d.metadata.get("parent_id") or d.id) for d in clean]
    near = neighbours(vectors, groups, witnesses)
    clean_scores = strongest(clean, near)
    # the poisoned twin keeps the clean document's neighbours (its embedding barely moves)
    poisoned = list(clean)
    for i in corpus.poisoned_index:
        poisoned[i] = corpus.poisoned[i]
    poisoned_scores = strongest(poisoned, near)
    c = [x for x in clean_scores if x is not None]
    p = [x for x in (poisoned_scores[i] for i in sorted(corpus.poisoned_index)) if x is not None]
    low, high = threshold_for(c, fpr)
    report: dict[str, Any] = {"fpr": fpr, "level": "document", "witnesses": witnesses, "low": low, "high": high}
    report.update(n_clean=len(c), n_poisoned=len(p))
    report.update(_rates(c, p, low))
    return report


def calibrate_model(
    nli: NLIModel,
    embedder: Embedder,
    data: Path,
    *,
    benchmarks: Sequence[str] = ("truthfulqa", "fever"),
    bench_data: Path | None = None,
    bench_calib: int = 200,
    n: int = 240,
    seed: int = 0,
    fpr: float = 0.05,
    k: int = 5,
) -> dict[str, Any]:
    """The whole calibration of ``nli`` (``ragtrust nli calibrate``): a JSON-ready report.

    The development corpus is a seeded sample of ``n`` chunks of the documents under
    ``data`` plus the documents of each benchmark's calibration split
    (``load_benchmark(name, n=50, n_calib=bench_calib, seed=42)``: the items after the 50
    evaluation queries in its seeded order). ``report["signals"]`` holds the thresholds;
    ``report["suggested_spec"]`` the matching ``screening.signals`` entries.
    """
    from ragtrust.eval.datasets import load_benchmark
    from ragtrust.ingest.chunker import chunk_documents
    from ragtrust.ingest.loaders import load_paths

    started = time.perf_counter()
    chunks = chunk_documents(load_paths([data]).documents, tokenizer=getattr(embedder, "tokenizer", None))
    pool = random.Random(seed).sample(chunks, min(n, len(chunks)))
    sources = {"chunks": len(pool)}
    for name in benchmarks:
        bench = load_benchmark(name, bench_data, n=50, n_calib=bench_calib, seed=42)
        calib = [bench.documents[q.doc_index] for q in bench.calib_queries]
        pool += calib
        sources[f"{bench.name}_calibration_split"] = len(calib)
    corpus = dev_corpus(pool, n=len(pool), seed=seed)
    sets = neighbour_sets(embedder, corpus.clean, k=k)
    intra = calibrate_intra(nli, corpus, sets, fpr=fpr)
    cross = calibrate_cross(nli, corpus, sets, fpr=fpr)
    witness = calibrate_witness(nli, embedder, corpus, fpr=fpr)
    signals = {
        "intra_consistency": {"low": intra["low"], "high": intra["high"], "direction": intra["direction"]},
        "cross_consistency": {"low": cross["low"], "high": cross["high"]},
        "witness": {"low": witness["low"], "high": witness["high"]},
    }
    return {
        "created": utc_iso(),
        "elapsed_s": round(time.perf_counter() - started, 1),
        "nli_model_id": getattr(nli, "model_id", type(nli).__name__),
        "embedder": getattr(embedder, "model_id", type(embedder).__name__),
        "corpus": {
            "path": str(data),
            "chunks": len(chunks),
            "sampled": len(corpus.clean),
            "sources": sources,
            "poisoned": len(corpus.poisoned_index),
            "attack_families": "development/contradiction",
        },
        "seed": seed,
        "fpr": fpr,
        "fpr_level": f"retrieved set of {k} documents",
        "signals": signals,
        "intra_consistency": intra,
        "cross_consistency": cross,
        "witness": witness,
        "suggested_spec": [{"type": name, **values} for name, values in signals.items() if name != "witness"],
    }


def write_to_manifest(manifest_file: Path, report: Mapping[str, Any], report_path: str | None = None) -> None:
    """Store a calibration report's thresholds in an ONNX model's manifest (atomic write).

    The entry is keyed to the manifest's ``sha256``: :attr:`OnnxNLI.signal_calibration`
    ignores it once the ONNX file is replaced. Other signals' thresholds for the same model
    (``claim_conflict``, fitted by ``ragtrust eval conflicts --calibrate``) are kept.
    """
    from ragtrust.io import atomic_write_text
    from ragtrust.models.nli import read_manifest

    manifest = read_manifest(manifest_file)
    previous = manifest.get("signal_calibration") or {}
    kept = dict(previous.get("signals") or {}) if previous.get("nli_sha256") == manifest["sha256"] else {}
    manifest["signal_calibration"] = {
        "nli_sha256": manifest["sha256"],
        "signals": {**kept, **report["signals"]},
        "fpr": report.get("fpr"),
        "seed": report.get("seed"),
        "report": report_path,
    }
    atomic_write_text(manifest_file, json.dumps(manifest, indent=2) + "\n")


__all__ = [
    "DevCorpus",
    "calibrate_cross",
    "calibrate_intra",
    "calibrate_model",
    "calibrate_witness",
    "dev_corpus",
    "neighbour_sets",
    "threshold_for",
    "write_to_manifest",
]
