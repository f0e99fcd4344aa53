"""Calibrate and evaluate the injection signal on text it was not trained or tuned on.

**Calibration** (``ragtrust injection calibrate``): the signal's threshold is the window
probability that at most ``fpr`` (default 1%) of clean **calibration** documents reach:
the OWASP chunks of the calibration files plus the TruthfulQA and FEVER calibration
splits (:mod:`ragtrust.training.injection_data`). The same documents poisoned with the
attack generator's *development* injection families give the true-positive rate reported
beside it. The threshold is written into the model's manifest, keyed to its sha256.

**Evaluation** (``ragtrust injection eval``), three sets, none used for training or
threshold-setting, each reported separately:

* ``held_out_families``: the evaluation documents (OWASP evaluation files, TruthfulQA and
  FEVER evaluation splits) poisoned with the **held-out** instruction-injection families,
  against the same documents clean;
* ``public_corpus``: ``bastioncorpus`` (MIT), a labelled public injection corpus with
  benign look-alikes in five languages, never read by training or calibration;
* ``agent_bench``: the 24 indirect injections (tool results, fetched pages, e-mails) of
  ``agent-injection-bench`` (MIT), never read by training or calibration, against the
  clean evaluation documents as negatives;
* ``clean``: the clean evaluation documents, false-positive rate per source.

Per detector it reports ROC-AUC, recall and false-positive rate at the calibrated
threshold, and recall at the best threshold whose false-positive rate on that set's own
negatives is at most 1% (what the detector could do at that budget with perfect tuning).
Detectors: the injection signal ("after"), the regex signal ``linguistic`` and the
text-only per-document fusion ``linguistic + structural`` ("before").
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import InputError
from ragtrust.eval.metrics import roc_auc
from ragtrust.io import atomic_write_text
from ragtrust.record import utc_iso
from ragtrust.training.injection_data import benchmark_documents, owasp_chunks, package_dir

Scorer = Callable[[Sequence[Document]], list[float]]


def _retrieved(docs: Sequence[Document]) -> list[RetrievedDoc]:
    return [RetrievedDoc(document=d, rank=i + 1) for i, d in enumerate(docs)]


def injection_probabilities(signal: Any, docs: Sequence[Document], batch: int = 64) -> list[float]:
    """The strongest window probability of each document (0 for skipped ones)."""
    out: list[float] = []
    for start in range(0, len(docs), batch):
        for r in signal.score_batch(_retrieved(docs[start : start + batch])):
            out.append(float(r.details.get("probability", 0.0)))
    return out


def signal_scores(signals: Sequence[Any], docs: Sequence[Document]) -> list[float]:
    """Noisy-OR of the given signals' scores per document (the per-document P_i they give)."""
    from ragtrust.screening.aggregate import fuse

    per_doc: list[list[Any]] = [[] for _ in docs]
    for signal in signals:
        for i, r in enumerate(signal.score_batch(_retrieved(docs))):
            per_doc[i].append(r)
    return [fuse(rs) for rs in per_doc]


def threshold_at_fpr(clean: Sequence[float], fpr: float) -> float:
    """The smallest threshold (``score >= t`` fires) at which at most ``fpr`` of ``clean`` fire."""
    if not clean:
        raise InputError("calibration needs at least one clean document")
    if not 0.0 < fpr < 1.0:
        raise InputError(f"fpr must be in (0, 1), got {fpr}")
    ranked = sorted(clean, reverse=True)
    allowed = int(np.floor(fpr * len(ranked)))
    value = ranked[allowed] if allowed < len(ranked) else 0.0
    threshold = float(np.nextafter(value, np.inf))
    if threshold >= 1.0:
        raise InputError(
            f"no threshold below 1 keeps the false-positive rate within {fpr:.2%}: "
            f"{allowed + 1} of {len(ranked)} clean scores are 1.0"
        )
    return threshold


def rates(negatives: Sequence[float], positives: Sequence[float], threshold: float | None) -> dict[str, Any]:
    """ROC-AUC, recall / FPR at ``threshold`` and recall at <= 1% FPR on these negatives."""
    neg, pos = np.asarray(negatives, dtype=float), np.asarray(positives, dtype=float)
    out: dict[str, Any] = {"n_negative": len(neg), "n_positive": len(pos)}
    if len(neg) and len(pos):
        y = np.r_[np.zeros(len(neg)), np.ones(len(pos))]
        auc = roc_auc(y, np.r_[neg, pos])
        out["roc_auc"] = round(float(auc), 4) if auc is not None else float("nan")
        t1 = threshold_at_fpr(list(neg), 0.01)
        out["recall_at_1pct_fpr"] = round(float(np.mean(pos >= t1)), 4)
        out["fpr_at_that_threshold"] = round(float(np.mean(neg >= t1)), 4)
    if threshold is not None:
        if len(pos):
            out["recall_at_threshold"] = round(float(np.mean(pos >= threshold)), 4)
        if len(neg):
            out["fpr_at_threshold"] = round(float(np.mean(neg >= threshold)), 4)
    return out


def calibration_documents(data_dir: Path) -> dict[str, list[Document]]:
    """The clean calibration documents by source (see module docstring)."""
    return {
        "owasp": owasp_chunks(data_dir, "calib"),
        "truthfulqa": benchmark_documents(data_dir, "truthfulqa", "calib"),
        "fever": benchmark_documents(data_dir, "fever", "calib"),
    }


def evaluation_documents(data_dir: Path) -> dict[str, list[Document]]:
    """The clean evaluation documents by source."""
    return {
        "owasp": owasp_chunks(data_dir, "eval"),
        "truthfulqa": benchmark_documents(data_dir, "truthfulqa", "eval"),
        "fever": benchmark_documents(data_dir, "fever", "eval"),
    }


def poison_with_families(docs: Sequence[Document], families: str, seed: int) -> tuple[list[Document], list[str]]:
    """``docs`` poisoned by the instruction-injection ``families``, and the family of each."""
    from ragtrust.eval.attacks import AttackGenerator

    result = AttackGenerator(strategy="instruction_injection", rate=1.0, seed=seed, families=families).attack(docs)
    by_index = {r.index: r for r in result.records}
    order = sorted(by_index)
    return [result.poisoned[i] for i in order], [by_index[i].family for i in order]


def _poison(docs: Sequence[Document], families: str, seed: int) -> list[Document]:
    return poison_with_families(docs, families, seed)[0]


def calibrate_injection(
    signal: Any, data_dir: Path, *, fpr: float = 0.01, seed: int = 0, per_corpus: bool = False
) -> dict[str, Any]:
    """The threshold of ``signal``'s model at ``fpr`` on clean calibration documents (a JSON-ready report).

    The threshold lets ``fpr`` of all clean documents together fire (the pooled budget, spent on
    whichever corpus scores highest: OWASP chunks for the shipped model). ``per_corpus`` takes
    the highest of the per-corpus thresholds instead, each at ``fpr`` on that corpus alone, so
    every corpus stays within the budget (measured and not adopted: docs/benchmarks.md).
    """
    started = time.perf_counter()
    sources = calibration_documents(data_dir)
    clean_docs = [d for docs in sources.values() for d in docs]
    clean = injection_probabilities(signal, clean_docs)
    parts: dict[str, list[float]] = {}
    offset = 0
    for name, docs in sources.items():
        parts[name] = clean[offset : offset + len(docs)]
        offset += len(docs)
    own = {name: threshold_at_fpr(part, fpr) for name, part in parts.items() if part}
    threshold = max(own.values()) if per_corpus and own else threshold_at_fpr(clean, fpr)
    attacked, families = poison_with_families(clean_docs, "development", seed)
    poisoned = injection_probabilities(signal, attacked)
    # recall per family: a family left out of a run's training (``--exclude-dev-family``)
    # measures an unseen style, which more training text of the other families cannot inflate
    by_family = {
        name: round(float(np.mean([p >= threshold for p, f in zip(poisoned, families, strict=True) if f == name])), 4)
        for name in sorted(set(families))
    }
    per_source = {
        name: {
            "documents": len(part),
            "fpr": round(float(np.mean(np.asarray(part) >= threshold)), 4) if part else None,
            "own_threshold": round(own[name], 6) if name in own else None,
        }
        for name, part in parts.items()
    }
    model = signal._model()
    return {
        "created": utc_iso(),
        "elapsed_s": round(time.perf_counter() - started, 1),
        "model_id": getattr(model, "model_id", type(model).__name__),
        "sha256": getattr(model, "fingerprint", "").split("@")[-1].split("+")[0],
        "fpr_budget": fpr,
        "fpr_level": "document (strongest sentence window)",
        "window": window_shape(signal),
        "budget_scope": "each corpus" if per_corpus else "all corpora pooled",
        "threshold": round(threshold, 6),
        "clean_documents": len(clean),
        "per_source": per_source,
        "development_families": rates(clean, poisoned, threshold),
        "recall_by_family": by_family,
        "seed": seed,
    }


def window_shape(signal: Any) -> dict[str, Any]:
    """The sentence windows ``signal`` scores: a threshold holds only for windows of that shape."""
    return {"max_words": int(signal.max_words), "overlap": bool(signal.window_overlap)}


def write_calibration(manifest_file: Path, report: dict[str, Any]) -> None:
    """Store the threshold in the manifest, keyed to the model file's sha256."""
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    manifest["calibration"] = {
        "threshold": report["threshold"],
        "fpr_budget": report["fpr_budget"],
        "budget_scope": report.get("budget_scope", "all corpora pooled"),
        "sha256": manifest["sha256"],
        "clean_documents": report["clean_documents"],
        "created": report["created"],
    }
    if "window" in report:
        manifest["calibration"]["window"] = report["window"]
    atomic_write_text(manifest_file, json.dumps(manifest, indent=2) + "\n")


def public_corpus(root: Path | None = None) -> list[tuple[str, int, str]]:
    """``(text, label, language)`` rows of bastioncorpus (label 1 = injection)."""
    root = root or package_dir("bastioncorpus")
    path = root / "corpus" / "injections.jsonl" if root else None
    if path is None or not path.exists():
        raise InputError("the kept-aside public corpus is not installed: pip install --no-deps bastioncorpus==0.6.0")
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows.append((str(row["text"]), int(row["label"] == "malicious"), str(row.get("lang", "en"))))
    return rows


def agent_bench_injections(root: Path | None = None) -> list[str]:
    """The injected tool results of agent-injection-bench (all positives)."""
    root = root or package_dir("aib")
    path = root / "data" / "attacks.jsonl" if root else None
    if path is None or not path.exists():
        raise InputError("agent-injection-bench is not installed: pip install --no-deps agent-injection-bench==0.1.0")
    return [str(json.loads(line)["injected"]) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def evaluate(
    detectors: dict[str, tuple[Scorer, float | None]], data_dir: Path, *, seed: int = 42, log: Any = None
) -> dict[str, Any]:
    """Scores of each detector on the three evaluation sets (see module docstring).

    ``detectors`` maps a name to ``(score documents, threshold)``.
    """
    sources = evaluation_documents(data_dir)
    clean_docs = [d for docs in sources.values() for d in docs]
    attacked = _poison(clean_docs, "held_out", seed)
    rows = public_corpus()
    public_docs = [Document(id=f"pub-{i}", text=t) for i, (t, _, _) in enumerate(rows)]
    labels = np.array([y for _, y, _ in rows])
    agent_docs = [Document(id=f"aib-{i}", text=t) for i, t in enumerate(agent_bench_injections())]
    report: dict[str, Any] = {
        "created": utc_iso(),
        "seed": seed,
        "sets": {
            "held_out_families": {"clean": len(clean_docs), "poisoned": len(attacked)},
            "public_corpus": {"name": "bastioncorpus 0.6.0", "rows": len(rows), "injections": int(labels.sum())},
            "agent_bench": {"name": "agent-injection-bench 0.1.0", "injections": len(agent_docs)},
            "clean": {name: len(docs) for name, docs in sources.items()},
        },
        "detectors": {},
    }
    for name, (score, threshold) in detectors.items():
        started = time.perf_counter()
        clean = score(clean_docs)
        poisoned = score(attacked)
        public = np.asarray(score(public_docs))
        agent = score(agent_docs)
        per_source: dict[str, float] = {}
        offset = 0
        for source, docs in sources.items():
            part = np.asarray(clean[offset : offset + len(docs)])
            offset += len(docs)
            if threshold is not None:
                per_source[source] = round(float(np.mean(part >= threshold)), 4)
        by_language = {}
        if threshold is not None:
            for lang in sorted({lang for _, _, lang in rows}):
                mask = np.array([r[2] == lang for r in rows])
                by_language[lang] = rates(public[mask & (labels == 0)], public[mask & (labels == 1)], threshold)
        report["detectors"][name] = {
            "threshold": threshold,
            "held_out_families": rates(clean, poisoned, threshold),
            "public_corpus": rates(public[labels == 0], public[labels == 1], threshold),
            "public_corpus_by_language": by_language,
            "agent_bench": rates(clean, agent, threshold),
            "clean_fpr_by_source": per_source,
            "seconds": round(time.perf_counter() - started, 1),
        }
        if log:
            log(f"{name}: {json.dumps(report['detectors'][name]['held_out_families'])}")
    return report


__all__ = [
    "agent_bench_injections",
    "calibrate_injection",
    "calibration_documents",
    "evaluate",
    "evaluation_documents",
    "injection_probabilities",
    "poison_with_families",
    "public_corpus",
    "rates",
    "signal_scores",
    "threshold_at_fpr",
    "window_shape",
    "write_calibration",
]
