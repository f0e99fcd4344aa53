"""Calibrating the claim-conflict signal's NLI ramp on clean sets the evaluation never uses.

``ragtrust eval conflicts --calibrate FPR`` fits the ramp's ``low`` for aligned claim pairs
to a per-set false-alarm budget: the ``1 - fpr`` quantile of the strongest aligned-pair
contradiction over clean retrieved sets (:func:`calibration_sets`: the benchmarks'
calibration splits and a seeded sample of OWASP chunks with their nearest neighbours), and
``--write-manifest`` stores it in the NLI manifest (:func:`write_manifest_entry`). The
evaluation in :mod:`ragtrust.eval.conflicts` checks false alarms on the other half of the
OWASP draws (:func:`owasp_clean_sets`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import InputError
from ragtrust.models.base import CONTRADICTION, Embedder, NLIModel

_OWASP: dict[tuple[int, str], tuple[list[Document], Any]] = {}


def _owasp_index(embedder: Embedder, data_dir: str | Path | None) -> tuple[list[Document], Any]:
    """The OWASP cheat-sheet chunks and their dense index (built once per embedder and folder)."""
    from ragtrust.eval.datasets import data_folder
    from ragtrust.ingest.chunker import chunk_documents
    from ragtrust.ingest.loaders import load_paths
    from ragtrust.retrieval.dense import DenseIndex

    folder = data_folder(data_dir) / "owasp-cheatsheets"
    key = (id(embedder), str(folder))
    if key not in _OWASP:
        chunks = chunk_documents(load_paths([folder]).documents, tokenizer=getattr(embedder, "tokenizer", None))
        _OWASP[key] = (chunks, DenseIndex.from_documents(chunks, embedder))
    return _OWASP[key]


def calibration_sets(
    embedder: Embedder,
    data_dir: str | Path | None,
    *,
    n_eval: int,
    owasp: int,
    bench_calib: int,
    k: int,
    seed: int,
) -> list[list[Document]]:
    """Clean retrieved sets the evaluation never uses: calibration splits and OWASP chunk neighbourhoods.

    The calibration split of each benchmark is drawn after its ``n_eval`` evaluation queries
    (the same seeded order as the evaluation), so no evaluated question is used.
    """
    from ragtrust.eval.datasets import load_benchmark
    from ragtrust.retrieval.dense import DenseIndex

    sets: list[list[Document]] = []
    for name in ("truthfulqa", "fever"):
        bench = load_benchmark(name, data_dir, n=n_eval, n_calib=bench_calib, seed=seed)
        index = DenseIndex.from_documents(bench.documents, embedder)
        sets += [[r.document for r in index.retrieve(q.text, k)] for q in bench.calib_queries]
    chunks, index = _owasp_index(embedder, data_dir)
    # the even-numbered sample is for calibration, the odd-numbered one for the clean OWASP check
    sample = random.Random(seed).sample(chunks, min(2 * owasp, len(chunks)))[0::2]
    for chunk in sample:
        sets.append([chunk] + [w.document for w in index.neighbours([chunk], k - 1)])
    return sets


#: factoid questions written for the OWASP cheat sheets (ragtrust/data), half development, half held out
FACTOID_QUESTIONS = "owasp_factoid_questions.jsonl"


def owasp_question_sets(
    embedder: Embedder, data_dir: str | Path | None, *, k: int, witnesses: int
) -> list[tuple[str, str, list[RetrievedDoc], list[RetrievedDoc]]]:
    """``(split, question, top-K, store witnesses)`` per bundled factoid question, on the clean OWASP chunks.

    Questions that ask for one name, date or quantity ("How many iterations does PBKDF2
    need?"), so the claim-conflict signal's answer check runs on long technical chunks; the
    chunks are clean, so any conflict there is a false alarm (or the guides disagreeing).
    """
    from importlib import resources

    _, index = _owasp_index(embedder, data_dir)
    rows = [
        json.loads(line)
        for line in resources.files("ragtrust.data").joinpath(FACTOID_QUESTIONS).read_text("utf-8").splitlines()
        if line.strip()
    ]
    out = []
    for row in rows:
        top = index.retrieve(row["question"], k)
        near = [w for w in index.neighbours([d.document for d in top], witnesses)][:witnesses]
        out.append((str(row["split"]), str(row["question"]), list(top), near))
    return out


def owasp_clean_sets(
    embedder: Embedder, data_dir: str | Path | None, *, n: int, k: int, seed: int
) -> list[list[Document]]:
    """Clean OWASP sets disjoint from the calibration sample (the odd-numbered draws)."""
    chunks, index = _owasp_index(embedder, data_dir)
    sample = random.Random(seed).sample(chunks, min(2 * n, len(chunks)))[1::2]
    return [[c] + [w.document for w in index.neighbours([c], k - 1)] for c in sample]


def max_pair_contradiction(signal: Any, nli: NLIModel, docs: Sequence[Document]) -> float:
    """The strongest NLI contradiction over the aligned claim pairs of one clean set (0 without pairs)."""
    from ragtrust.screening.claims import aligned_pairs, extract_claims

    claims = [c for i, d in enumerate(docs) for c in extract_claims(i, d.text, signal.max_claims_per_doc)]
    if len(claims) < 2:
        return 0.0
    vectors = signal._embed([c.bare for c in claims])  # noqa: SLF001 - the signal's own cache
    pairs = aligned_pairs(
        claims, vectors, min_cosine=signal.min_cosine, min_overlap=signal.min_overlap, max_pairs=signal.max_pairs
    )
    if not pairs:
        return 0.0
    texts = [p for i, j, _ in pairs for p in ((claims[i].bare, claims[j].bare), (claims[j].bare, claims[i].bare))]
    probs = np.asarray(nli.predict(texts), dtype=np.float64)
    return float(probs[:, CONTRADICTION].max())


def calibrate(signal: Any, nli: NLIModel, sets: Sequence[Sequence[Document]], *, fpr: float) -> dict[str, Any]:
    """``low`` = the ``1 - fpr`` quantile of the per-set strongest aligned-pair contradiction."""
    from ragtrust.eval.calibration import threshold_for

    scores = [max_pair_contradiction(signal, nli, docs) for docs in sets]
    low, high = threshold_for(scores, fpr)
    return {
        "low": low,
        "high": high,
        "fpr": fpr,
        "fpr_level": "clean retrieved set",
        "sets": len(sets),
        "sets_with_aligned_pairs": int(sum(1 for s in scores if s > 0)),
        "quantiles": {str(q): round(float(np.quantile(scores, q)), 4) for q in (0.5, 0.9, 0.95, 0.98, 0.99)},
    }


def write_manifest_entry(report: Mapping[str, Any], report_path: str | None = None) -> Path:
    """Store the fitted ``claim_conflict`` ramp in the shipped NLI manifest, keeping the other signals'.

    Raises:
        InputError: the report has no calibration, or the manifest has no signal calibration
            for its current ONNX file (run ``ragtrust nli calibrate --write-manifest`` first).
    """
    from ragtrust.io import atomic_write_text
    from ragtrust.models.nli import MANIFEST_FILE, read_manifest

    calibration = report.get("calibration")
    if not isinstance(calibration, Mapping):
        raise InputError("the report has no calibration: run with --calibrate FPR")
    manifest = read_manifest(MANIFEST_FILE)
    entry = manifest.get("signal_calibration")
    if not isinstance(entry, dict) or entry.get("nli_sha256") != manifest.get("sha256"):
        raise InputError(f"{MANIFEST_FILE.name}: no signal calibration for this model; run `ragtrust nli calibrate`")
    entry.setdefault("signals", {})["claim_conflict"] = {
        "low": calibration["low"],
        "high": calibration["high"],
        "fpr": calibration["fpr"],
        "level": calibration["fpr_level"],
        "report": report_path,
    }
    atomic_write_text(MANIFEST_FILE, json.dumps(manifest, indent=2) + "\n")
    return MANIFEST_FILE


__all__ = ["calibrate", "calibration_sets", "max_pair_contradiction", "owasp_clean_sets", "write_manifest_entry"]
