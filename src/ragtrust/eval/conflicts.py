"""Knowledge-conflict evaluation: poison beside its witness, and without one (issue 15).

``ragtrust eval conflicts`` measures the claim-conflict signal
(:mod:`ragtrust.screening.conflicts`) per document, on held-out attack families that the
signal was never tuned on, under three placements of the poisoned document:

* ``witness`` - the poisoned copy is *added* beside its clean original: the retrieved set
  is the clean top-K for the benchmark question, with the clean source document in it (put
  in place of the last document when retrieval missed it) and the poisoned copy (another
  document id, another source) right after it, cut back to K. Store witnesses are the
  clean corpus's nearest neighbours of the set.
* ``no_witness`` - today's in-place protocol: the source document is replaced by its
  poisoned version under the same id, and the store holds the poisoned version (the clean
  original is nowhere). Only a document that contradicts itself can be caught here.
* ``vetted_history`` - the in-place edit of a vetted corpus: as ``no_witness``, but the
  provenance ledger holds the vetted original (ingested ``--tier vetted``, then edited).

Negatives are every other document of the poisoned sets plus every document of the clean
sets (the clean top-K of the same questions). Per (dataset, strategy, placement):
per-document ROC-AUC, PR-AUC, recall at <= 1% and <= 2% FPR (threshold = order statistic
of the negatives, :func:`ragtrust.eval.analysis.fpr_threshold`), the share of poisoned
documents blamed / contested / missed, the share of sets where a *clean* document was
blamed, and per held-out family. Clean false alarms are reported per query: the share of
clean sets with any conflict, and with any document blamed.

**LLM-written poison.** The PoisonedRAG NQ texts (``poisonedrag/nq.json``, GPT-4-written,
no templates): per item one adversarial passage, two clean passages *in the same style* (two
other adversarial passages of the item with the incorrect answer replaced by the correct
one), and two unrelated clean passages (other items); the poisoned passage should be blamed
by majority. A 1-vs-1 variant (one clean passage) should be contested. The first
:data:`POISONEDRAG_DEVELOPMENT` items of the file were read while building the answer check
(:mod:`ragtrust.screening.claim_answers`) and are reported as ``development``; the rest as
``held_out`` (and every item together, as before, under the variant's name).

**Calibration** (``--calibrate``): the NLI ramp's ``low`` for aligned claim pairs, fitted on
clean retrieved sets that the evaluation does not use (the benchmarks' calibration splits and
a seeded sample of OWASP chunks with their nearest neighbours) to a per-set false-alarm
budget; written to the results file and, with ``--write-manifest``, into the NLI manifest.

The calibration and its clean sets live in :mod:`~ragtrust.eval.conflicts_calibration`, the
Markdown report in :mod:`~ragtrust.eval.conflicts_report`; both still import from here.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.documents import Document, RetrievedDoc, SignalResult
from ragtrust.errors import InputError
from ragtrust.eval.conflicts_calibration import (
    calibrate,
    calibration_sets,
    max_pair_contradiction,
    owasp_clean_sets,
    owasp_question_sets,
    write_manifest_entry,
)
from ragtrust.eval.conflicts_report import render_markdown, write_report
from ragtrust.models.base import Embedder, NLIModel

STRATEGIES = ("contradiction", "entity_swap", "subtle_manipulation")
PLACEMENTS = ("witness", "no_witness", "vetted_history")
POISONEDRAG_FILE = "poisonedrag/nq.json"
#: the PoisonedRAG items (in file order) read while building the answer check; the rest are held out
POISONEDRAG_DEVELOPMENT = 50


@dataclass
class _Scored:
    """Scores of one cell: per-document labels and scores, and per-set facts."""

    y: list[int] = field(default_factory=list)
    s: list[float] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)  # per poisoned document: blamed / contested / missed
    clean_blamed_sets: int = 0
    sets: int = 0
    nli_pairs: list[int] = field(default_factory=list)


def _retrieved(docs: Sequence[Document], scores: Sequence[float] | None = None) -> list[RetrievedDoc]:
    return [
        RetrievedDoc(document=d, score=None if scores is None else float(scores[i]), rank=i + 1)
        for i, d in enumerate(docs)
    ]


def _outcome(result: SignalResult, doc_id: str) -> str:
    conflicts = result.details.get("conflicts", []) if not result.skipped else []
    if any(c.get("blamed") == doc_id for c in conflicts):
        return "blamed"
    if any(c.get("blamed") is None for c in conflicts):
        return "contested"
    return "missed"


def _blamed_ids(results: Sequence[SignalResult]) -> set[str]:
    return {
        str(c["blamed"]) for r in results if not r.skipped for c in r.details.get("conflicts", []) if c.get("blamed")
    }


def metrics(y: Sequence[int], s: Sequence[float]) -> dict[str, Any]:
    """ROC-AUC, PR-AUC and recall at <= 1% / <= 2% FPR of per-document scores."""
    from ragtrust.eval.analysis import fpr_threshold
    from ragtrust.eval.metrics import pr_auc, roc_auc, wilson_interval

    ya, sa = np.asarray(y, dtype=bool), np.asarray(s, dtype=float)
    out: dict[str, Any] = {"positives": int(ya.sum()), "negatives": int((~ya).sum())}
    if ya.all() or not ya.any():
        return out
    auc, ap = roc_auc(ya, sa), pr_auc(ya, sa)
    out["roc_auc"] = None if auc is None else round(auc, 4)
    out["pr_auc"] = None if ap is None else round(ap, 4)
    for budget in (0.01, 0.02):
        t = fpr_threshold(sa[~ya], budget)
        hits = int((sa[ya] > t).sum())
        ci = wilson_interval(hits, int(ya.sum()))
        key = f"at_{int(budget * 100)}pct_fpr"
        out[f"recall_{key}"] = round(hits / int(ya.sum()), 4)
        out[f"recall_{key}_ci95"] = None if ci is None else [round(ci[0], 4), round(ci[1], 4)]
        out[f"fpr_{key}"] = round(float((sa[~ya] > t).mean()), 4)
        out[f"threshold_{key}"] = round(t, 4)
    return out


class _MemoryLedger:
    """The two ledger calls the claim-conflict signal makes, for a vetted-then-edited corpus."""

    @dataclass(frozen=True)
    class _Record:
        doc_id: str
        tier: str
        vetted_hash: str
        changed_since_vetted: bool

    def __init__(self, vetted: Mapping[str, str], changed: set[str]) -> None:
        self._vetted = dict(vetted)
        self._changed = set(changed)

    def get(self, doc_id: str) -> Any:
        if doc_id not in self._vetted:
            return None
        return self._Record(doc_id, "vetted", f"vetted:{doc_id}", doc_id in self._changed)

    def version_text(self, doc_id: str, content_hash: str) -> str | None:
        return self._vetted.get(doc_id) if content_hash == f"vetted:{doc_id}" else None


def _place(placement: str, top: list[RetrievedDoc], source: Document, poisoned: Document, k: int) -> list[RetrievedDoc]:
    """The retrieved set of one poisoned query under ``placement`` (see the module docstring)."""
    docs = [r.document for r in top]
    ids = [d.id for d in docs]
    if placement == "witness":
        if source.id not in ids[: k - 1]:  # missed, or last: the pair takes the last two places
            return _retrieved([d for d in docs if d.id != source.id][: k - 2] + [source, poisoned])
        at = ids.index(source.id) + 1
        docs = (docs[:at] + [poisoned] + docs[at:])[:k]
    else:
        in_place = Document(id=source.id, text=poisoned.text, url=source.url, source=source.source)
        docs = [in_place if d.id == source.id else d for d in docs]
        if source.id not in ids:
            docs = docs[: k - 1] + [in_place]
    return _retrieved(docs)


def evaluate_dataset(
    name: str,
    signal: Any,
    embedder: Embedder,
    *,
    data_dir: str | Path | None,
    n: int,
    k: int,
    witnesses: int,
    seed: int,
    strategies: Sequence[str] = STRATEGIES,
    placements: Sequence[str] = PLACEMENTS,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every (strategy, placement) cell of one benchmark (see the module docstring)."""
    from ragtrust.eval.attacks import AttackGenerator
    from ragtrust.eval.datasets import load_benchmark
    from ragtrust.retrieval.dense import DenseIndex

    bench = load_benchmark(name, data_dir, n=n, seed=seed)
    index = DenseIndex.from_documents(bench.documents, embedder)
    queries = bench.eval_queries
    tops = {q.doc_id: index.retrieve(q.text, k) for q in queries}
    ledger_signal = _with_ledger(signal, None)

    def score(docs: list[RetrievedDoc], exclude: set[str], query: str, ledger: Any = None) -> list[SignalResult]:
        near = [
            w for w in index.neighbours([d.document for d in docs], witnesses + len(exclude)) if w.id not in exclude
        ]
        sig = ledger_signal if ledger is None else _with_ledger(signal, ledger)
        # the question, as the pipeline passes it (the NLI budget reads the pairs nearest it)
        return list(sig.score_batch(docs, query, witnesses=near[:witnesses]))

    clean = _Scored()
    clean_examples: list[dict[str, Any]] = []
    for q in queries:
        results = score(tops[q.doc_id], set(), q.text)
        clean.sets += 1
        clean.y += [0] * len(results)
        clean.s += [r.score for r in results]
        clean.nli_pairs.append(int(results[0].details.get("nli_pairs", 0)) if results else 0)
        found = [c for r in results for c in r.details.get("conflicts", [])]
        clean.outcomes.append("conflict" if found else "none")
        clean.clean_blamed_sets += bool(_blamed_ids(results))
        if found and len(clean_examples) < MAX_EXAMPLES:
            clean_examples.append(_example(found[0], q.text))
    cells: dict[str, Any] = {}
    sources = [bench.documents[q.doc_index] for q in queries]
    by_id = {q.doc_id: q for q in queries}
    for strategy in strategies:
        attack = AttackGenerator(strategy=strategy, rate=1.0, seed=seed, families="held_out").attack(sources)
        for placement in placements:
            cell = _Scored()
            for record in attack.records:
                source = sources[record.index]
                q = by_id[source.id]
                poisoned = Document(id=f"{source.id}~poisoned", text=record.poisoned, url=f"{source.url}~poisoned")
                docs = _place(placement, tops[q.doc_id], source, poisoned, k)
                target = poisoned.id if placement == "witness" else source.id
                ledger = None
                if placement == "vetted_history":
                    ledger = _MemoryLedger({source.id: source.text}, {source.id})
                # in place: the corpus holds the poisoned version, so the original is no witness
                results = score(docs, {source.id} if placement != "witness" else set(), q.text, ledger)
                cell.sets += 1
                cell.nli_pairs.append(int(results[0].details.get("nli_pairs", 0)) if results else 0)
                for d, r in zip(docs, results, strict=True):
                    positive = d.id == target
                    cell.y.append(int(positive))
                    cell.s.append(r.score)
                    if positive:
                        cell.families.append(record.family)
                        cell.outcomes.append(_outcome(r, target))
                cell.clean_blamed_sets += bool(_blamed_ids(results) - {target})
            cells[f"{strategy}/{placement}"] = _summarise(cell, clean)
            if progress:
                progress(f"{bench.name} {strategy}/{placement}: {cells[f'{strategy}/{placement}'].get('roc_auc')}")
    return {
        "dataset": bench.name,
        "queries": len(queries),
        "k": k,
        "witnesses": witnesses,
        "clean": {
            "sets": clean.sets,
            "sets_with_conflict": round(clean.outcomes.count("conflict") / max(1, clean.sets), 4),
            "sets_with_blame": round(clean.clean_blamed_sets / max(1, clean.sets), 4),
            "nli_pairs_median": float(np.median(clean.nli_pairs)) if clean.nli_pairs else 0.0,
            "examples": clean_examples,
        },
        "cells": cells,
        "data_files": {Path(p).name: sha for p, sha in bench.data_files.items()},
    }


def _share(count: int, total: int) -> float | None:
    """``count / total`` rounded; ``None`` (n/a, not 0%) when there is nothing to count."""
    return round(count / total, 4) if total else None


def _outcome_rates(cell: _Scored) -> dict[str, Any]:
    """What happened to the poisoned documents of a cell, and how often a clean one was blamed.

    A cell without a poisoned document (the attack skipped every source) has no rates: ``None``.
    """
    n = len(cell.outcomes)
    return {
        "sets": cell.sets,
        "blamed": _share(cell.outcomes.count("blamed"), n),
        "contested": _share(cell.outcomes.count("contested"), n),
        "missed": _share(cell.outcomes.count("missed"), n),
        "clean_document_blamed": _share(cell.clean_blamed_sets, cell.sets),
        "nli_pairs_median": float(np.median(cell.nli_pairs)) if cell.nli_pairs else 0.0,
    }


def _summarise(cell: _Scored, clean: _Scored) -> dict[str, Any]:
    y, s = cell.y + clean.y, cell.s + clean.s
    out = {**metrics(y, s), **_outcome_rates(cell)}
    families: dict[str, Any] = {}
    positives = [i for i, label in enumerate(cell.y) if label]
    for family in sorted(set(cell.families)):
        keep = [i for i, f in zip(positives, cell.families, strict=True) if f == family]
        ys = [1] * len(keep) + [label for label in cell.y if not label] + clean.y
        ss = [cell.s[i] for i in keep] + [x for x, label in zip(cell.s, cell.y, strict=True) if not label] + clean.s
        fam = metrics(ys, ss)
        outcomes = [o for o, f in zip(cell.outcomes, cell.families, strict=True) if f == family]
        fam["blamed"] = round(outcomes.count("blamed") / max(1, len(outcomes)), 4)
        fam["contested"] = round(outcomes.count("contested") / max(1, len(outcomes)), 4)
        families[family] = {
            key: fam[key] for key in ("positives", "roc_auc", "recall_at_2pct_fpr", "blamed", "contested") if key in fam
        }
    out["families"] = families
    return out


def _with_ledger(signal: Any, ledger: Any) -> Any:
    """The signal reading ``ledger`` (a shallow copy: the claim-embedding cache is shared)."""
    import copy

    twin = copy.copy(signal)
    twin.ledger = ledger
    return twin


def _swap_answer(text: str, wrong: str, right: str) -> str | None:
    pattern = re.compile(re.escape(wrong), re.IGNORECASE)
    if not wrong.strip() or not pattern.search(text):
        return None
    return pattern.sub(right, text)


def evaluate_poisonedrag(signal: Any, data_dir: str | Path | None, *, seed: int) -> dict[str, Any]:
    """The LLM-written poison cases (development figures, see the module docstring)."""
    from ragtrust.eval.datasets import data_folder

    path = data_folder(data_dir) / POISONEDRAG_FILE
    if not path.is_file():
        raise InputError(f"{path}: not found (the PoisonedRAG texts; see ../shared/data/README.md)")
    items = list(json.loads(path.read_text(encoding="utf-8")).values())
    rng = random.Random(seed)
    usable = []
    for item in items:
        wrong, right = str(item["incorrect answer"]), str(item["correct answer"])
        clean = [_swap_answer(t, wrong, right) for t in item["adv_texts"][1:]]
        clean_texts = [c for c in clean if c]
        if len(clean_texts) >= 2:
            usable.append((item, clean_texts))
    out: dict[str, Any] = {"items": len(items), "usable": len(usable), "file": POISONEDRAG_FILE}
    position = {id(item): n for n, item in enumerate(items)}
    splits: dict[str, dict[str, Any]] = {"development": {}, "held_out": {}}
    for variant, n_clean in (("two_clean_witnesses", 2), ("one_clean_witness", 1)):
        cell = _Scored()
        by_split = {name: _Scored() for name in splits}
        for m, (item, clean_texts) in enumerate(usable):
            part = by_split["development" if position[id(item)] < POISONEDRAG_DEVELOPMENT else "held_out"]
            others = [usable[(m + d) % len(usable)][1][0] for d in (1, 2, 3)][: 4 - n_clean]
            docs = [Document(id=f"{item['id']}-poison", text=item["adv_texts"][0], url=f"poisonedrag:{item['id']}:0")]
            docs += [Document(id=f"{item['id']}-clean{j}", text=t) for j, t in enumerate(clean_texts[:n_clean])]
            docs += [Document(id=f"{item['id']}-other{j}", text=t) for j, t in enumerate(others)]
            rng.shuffle(docs)
            results = signal.score_batch(_retrieved(docs), item["question"])
            for scored in (cell, part):
                scored.sets += 1
                scored.nli_pairs.append(int(results[0].details.get("nli_pairs", 0)))
                for d, r in zip(docs, results, strict=True):
                    positive = d.id.endswith("-poison")
                    scored.y.append(int(positive))
                    scored.s.append(r.score)
                    if positive:
                        scored.outcomes.append(_outcome(r, d.id))
                        scored.families.append("gpt4_poisonedrag")
                scored.clean_blamed_sets += bool(_blamed_ids(results) - {f"{item['id']}-poison"})
        out[variant] = {**metrics(cell.y, cell.s), **_outcome_rates(cell)}
        for name, scored in by_split.items():
            if scored.sets:
                splits[name][variant] = {**metrics(scored.y, scored.s), **_outcome_rates(scored)}
    out["development_items"] = POISONEDRAG_DEVELOPMENT
    out["splits"] = splits
    return out


def question_check(
    signal: Any, sets: Sequence[tuple[str, str, Sequence[RetrievedDoc], Sequence[RetrievedDoc]]]
) -> dict[str, Any]:
    """False alarms on clean sets retrieved for questions, per split: any conflict, an ``answer`` one, a blame."""
    from ragtrust.screening.claim_answers import asks_for

    out: dict[str, Any] = {}
    for split, question, top, near in sets:
        results = signal.score_batch(top, question, witnesses=near)
        found = [c for r in results for c in r.details.get("conflicts", [])]
        row = out.setdefault(
            split,
            {
                "sets": 0,
                "asking_for_a_value": 0,
                "with_conflict": 0,
                "with_answer_conflict": 0,
                "with_blame": 0,
                "examples": [],
            },
        )
        row["sets"] += 1
        row["asking_for_a_value"] += asks_for(question) is not None
        row["with_conflict"] += bool(found)
        row["with_answer_conflict"] += any(c["kind"] == "answer" for c in found)
        row["with_blame"] += bool(_blamed_ids(results))
        if found and len(row["examples"]) < 3:
            c = found[0]
            row["examples"].append(
                {
                    "question": question,
                    "kind": c["kind"],
                    "left": c["left"]["text"][:160],
                    "right": c["right"]["text"][:160],
                }
            )
    return out


#: false alarms quoted per clean check (a conflict found in a clean set)
MAX_EXAMPLES = 5


def _example(conflict: Mapping[str, Any], query: str | None = None) -> dict[str, Any]:
    """A conflict found in a clean set, as a report quotes it: its kind, both claims, blame and strength."""
    return {
        **({"query": query} if query is not None else {}),
        "kind": conflict["kind"],
        "left": conflict["left"]["text"][:200],
        "right": conflict["right"]["text"][:200],
        "blamed": conflict.get("blamed"),
        "strength": conflict["strength"],
    }


def clean_check(signal: Any, sets: Sequence[Sequence[Document]]) -> dict[str, Any]:
    """False alarms on clean retrieved sets: share with any conflict, with a blamed document."""
    conflict = blamed = 0
    pairs: list[int] = []
    examples: list[dict[str, Any]] = []
    for docs in sets:
        results = signal.score_batch(_retrieved(docs), None)
        pairs.append(int(results[0].details.get("nli_pairs", 0)))
        found = [c for r in results for c in r.details.get("conflicts", [])]
        conflict += bool(found)
        blamed += bool(_blamed_ids(results))
        if found and len(examples) < MAX_EXAMPLES:
            examples.append(_example(found[0]))
    n = max(1, len(sets))
    return {
        "sets": len(sets),
        "sets_with_conflict": round(conflict / n, 4),
        "sets_with_blame": round(blamed / n, 4),
        "nli_pairs_median": float(np.median(pairs)) if pairs else 0.0,
        "examples": examples,
    }


def benchmark_names(names: Sequence[str]) -> list[str]:
    """The benchmarks to evaluate, canonical and each once (``tqa`` -> ``truthfulqa``).

    Raises:
        ConfigError: an unknown name.
        InputError: no name at all (an evaluation of nothing reads "no gap").

    Example:
        >>> benchmark_names(["tqa", " truthfulqa", "kb"])
        ['truthfulqa', 'secure_coding']
    """
    from ragtrust.eval.datasets import DATASETS, canonical_dataset

    out = list(dict.fromkeys(canonical_dataset(n) for n in names if n.strip()))
    if not out:
        raise InputError(f"no benchmark to evaluate: --datasets names none of {', '.join(DATASETS)}")
    return out


def run(
    *,
    nli: NLIModel,
    embedder: Embedder,
    data_dir: str | Path | None,
    datasets: Sequence[str] = ("truthfulqa", "fever", "secure_coding"),
    n: int = 100,
    k: int = 5,
    witnesses: int = 5,
    seed: int = 42,
    owasp_sets: int = 100,
    signal_params: Mapping[str, Any] | None = None,
    calibrate_fpr: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The whole evaluation (``ragtrust eval conflicts``): a JSON-ready report."""
    from ragtrust import __version__
    from ragtrust.screening.conflicts import ClaimConflictSignal

    datasets = benchmark_names(datasets)
    started = time.perf_counter()
    params = dict(signal_params or {})
    signal = ClaimConflictSignal(nli=nli, embedder=embedder, **params)
    report: dict[str, Any] = {"ragtrust": __version__, "seed": seed, "k": k, "witnesses": witnesses, "n": n}
    if calibrate_fpr is not None:
        sets = calibration_sets(embedder, data_dir, n_eval=n, owasp=owasp_sets, bench_calib=100, k=k, seed=seed)
        report["calibration"] = calibrate(signal, nli, sets, fpr=calibrate_fpr)
        params.update(low=report["calibration"]["low"], high=report["calibration"]["high"])
        signal = ClaimConflictSignal(nli=nli, embedder=embedder, **params)
        if progress:
            progress(f"calibrated low={params['low']} on {len(sets)} clean sets")
    from ragtrust.screening.ramp import resolve_ramp

    low, high, source = resolve_ramp(nli, "claim_conflict", signal.low, signal.high)
    report["signal"] = {
        "min_cosine": signal.min_cosine,
        "min_overlap": signal.min_overlap,
        "max_pairs": signal.max_pairs,
        "max_nli_pairs": signal.max_nli_pairs,
        "nli_ramp": [low, high],
        "nli_ramp_source": source,
        "diff_strength": dict(signal.diff_strength),
        "contested_factor": signal.contested_factor,
        "intra_factor": signal.intra_factor,
        "nli_contradiction": signal.nli_contradiction,
        "answer_check": signal.answer_check,
    }
    report["models"] = {
        "nli": str(getattr(nli, "model_id", type(nli).__name__)),
        "embedder": str(getattr(embedder, "model_id", type(embedder).__name__)),
    }
    report["datasets"] = {}
    for name in datasets:
        report["datasets"][name] = evaluate_dataset(
            name, signal, embedder, data_dir=data_dir, n=n, k=k, witnesses=witnesses, seed=seed, progress=progress
        )
    if owasp_sets:
        report["owasp_clean"] = clean_check(signal, owasp_clean_sets(embedder, data_dir, n=owasp_sets, k=k, seed=seed))
        if progress:
            progress(f"owasp clean: {report['owasp_clean']['sets_with_conflict']}")
        report["owasp_questions"] = question_check(
            signal, owasp_question_sets(embedder, data_dir, k=k, witnesses=witnesses)
        )
    try:
        report["poisonedrag"] = evaluate_poisonedrag(signal, data_dir, seed=seed)
    except InputError as exc:
        report["poisonedrag"] = {"skipped": str(exc)}
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    return report


__all__ = [
    "PLACEMENTS",
    "STRATEGIES",
    "benchmark_names",
    "calibrate",
    "calibration_sets",
    "clean_check",
    "evaluate_dataset",
    "evaluate_poisonedrag",
    "max_pair_contradiction",
    "metrics",
    "owasp_clean_sets",
    "render_markdown",
    "run",
    "write_manifest_entry",
    "write_report",
]
