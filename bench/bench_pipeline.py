"""Per-query cost of the trust layer: Stage 1 + Stage 2 (excluding generation), NLI pairs per stage and signal.

Usage:
    python bench/bench_pipeline.py [--n 40] [--k 5] [--threads 2] [--fake] [--out result.json]
    python bench/bench_pipeline.py --store runs/owasp-store --questions owasp --n 12 --k 3 5 10 20

Two corpora:

* the default: the 40 questions of the bundled secure-coding knowledge base over an in-memory
  dense index of its 40 one-paragraph rules;
* ``--store`` with ``--questions owasp``: a store built by ``ragtrust ingest`` (the OWASP cheat
  sheets, 512-token chunks) and the 36 bundled OWASP questions
  (``ragtrust/data/owasp_questions.jsonl``), with the store's witnesses, as a server sees them.

Models: the packaged MiniLM int8 ONNX embedder and the shipped NLI model
(``ragtrust.models.nli.default_nli``). When the shipped NLI model is missing the bench
falls back to ``NLIEngine(LexicalNLI())`` and says so in ``nli_fallback``: its Stage 2
numbers then do not measure a neural NLI model. ``--fake`` uses the fakes for both models
(a smoke test of the bench itself).

Passes, each with a fresh gate per K:

* ``cold`` — the NLI pair cache, the gate's embedding cache and the signals' kept
  per-document results are disabled, and (knowledge
  base) the index is built by a separate embedder instance: every query pays for every NLI
  pair and document embedding (documents never seen before);
* ``fresh`` — a new question on documents never seen, as a user's first question meets a
  newly ingested store: a fresh gate per question (models loaded before the clock), every
  cache on and empty, the store's persisted caches detached. Unlike ``cold``, what one stage
  computed is reused by a later stage of the same question (the writer's sentence embeddings
  by the relevance check, an NLI pair asked twice);
* ``scanned`` (store only) — a new question, each asked once by a fresh gate with empty
  in-memory caches, over a store that ``ragtrust scan --store`` went over: the gate reads the
  store's persisted caches (claim embeddings, injection windows, NLI pairs, the
  question-independent signals' per-document results) and never writes
  them, so the query pays only for what depends on the question and on the retrieved
  combination (the answer's Stage 2 pairs, claim pairs across documents the scan never put
  side by side). The other passes never read those files;
* ``plain`` — what a RAG app without ragtrust does, on the same store and questions: dense
  top-K retrieval, then the extractive answer writer over the retrieved chunks (the
  extractor's passages, then the writer), with no screening, alignment, citation guard,
  verification or relevance; caches off, as in ``cold``. The result's ``ratios`` divide each
  pass's ``ask_s`` (the whole trusted answer) and ``stage12_s`` (the trust layer's Stage 1 +
  Stage 2) by this pass's ``plain_s``, median over median (paper: its verifier cost about
  17x a plain answer);
* ``warm`` — the default caches (a long-running server). Knowledge base: each question once,
  from empty caches (documents screened for an earlier question are not screened again).
  Store: each question is asked once to fill the caches and timed on its second ask (the
  figure of a question, or a retrieved set, seen before); the first ask is reported as
  ``first_ask_s``.

``--paper N`` times, for the first N questions, the NLI passes the paper's verifier runs
(:mod:`ragtrust.eval.paper_cost`: whole answer vs whole document twice, document halves, at
most 10 document pairs; batch 1, no cache) on a model of bart-large-mnli's shape with random
weights (torch, fp32, ``--threads`` threads), using the ``plain`` pass's answer and retrieved
chunks (the paper verified the answer a plain RAG app wrote). ``ratios`` then also gives
``paper_s`` over each pass's ``stage12_s``: how many times cheaper ragtrust's verdict is per
query than the paper's configuration, measured in the same run (needs ``--passes plain``).

Per query it records the stage timings the Verdict carries. ``stage12_s`` = screen +
verify + trust (SPEC section 2's Stage 1 + Stage 2, excluding retrieval, extraction,
generation and post-processing); ``generation_s`` = extract + align + generate +
postprocess; ``ask_s`` = wall time of ``ask()``. Knowledge base only: ``screen_only_s``, the
stand-alone pre-generation gate (``TrustGate.screen`` on the retrieved documents).

**NLI pairs** are counted where they are spent: every ``predict`` call on the NLI engine is
attributed to the screening signal or the verifier that made it (``intra_consistency``,
``claim_conflict``, ``factuality``, ...). ``requested`` = (premise, hypothesis) pairs the
caller asked for; ``scored`` = pairs the model ran after the engine split long premises into
windows and removed duplicates (and, warm, cache hits). ``nli_pairs_per_query`` is the total
scored. Prints one JSON object (median / p90 / p95 / mean per quantity, models, versions,
machine, load, commit).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.config import Settings, load_settings
from ragtrust.data.kb import load_knowledge_base, load_rules
from ragtrust.errors import MissingDependencyError, ModelError
from ragtrust.models.nli_engine import NLIEngine, WindowedPrediction
from ragtrust.pipeline import TrustGate
from ragtrust.record import versions
from ragtrust.screening.base import limit_kept_results

KB_CORPUS = "ragtrust secure-coding knowledge base (40 rules, in-memory dense index)"
GENERATION_STAGES = ("extract", "align", "generate", "postprocess")
#: the modules whose NLI calls are attributed to a signal or a stage (the last dotted part names it)
_CALLERS = ("ragtrust.screening.", "ragtrust.verification.", "ragtrust.evidence.", "ragtrust.generation.")
_SIGNAL_OF_MODULE = {"intra": "intra_consistency", "conflicts": "claim_conflict", "cross": "cross_consistency"}


def _caller() -> str:
    """The signal or stage whose call reached the engine (the first ragtrust module up the stack)."""
    frame = sys._getframe(2)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith(_CALLERS):
            last = module.rsplit(".", 1)[-1]
            return _SIGNAL_OF_MODULE.get(last, last)
        frame = frame.f_back  # type: ignore[assignment]
    return "other"


def CountingEngine(model: Any, **params: Any) -> Any:  # noqa: N802 - reads as the engine it makes
    """An :class:`NLIEngine` that counts the pairs each caller asks for (``requested``) and runs (``scored``).

    The counting is put on the instance, so the engine is an ``NLIEngine`` like the one a user
    runs: what names it (its type and parameters) is the same, and the results kept by a
    ``ragtrust scan`` under that name are found. ``snapshot()`` copies the counters.
    """
    engine = NLIEngine(model, **params)
    real = engine.predict_windows
    requested: Counter[str] = Counter()
    scored: Counter[str] = Counter()

    def predict_windows(pairs: Sequence[tuple[str, str]]) -> list[WindowedPrediction]:
        who = _caller()
        before = engine.pairs_scored
        out = real(pairs)
        requested[who] += len(pairs)
        scored[who] += engine.pairs_scored - before
        return out

    engine.predict_windows = predict_windows  # type: ignore[method-assign]
    engine.requested, engine.scored = requested, scored  # type: ignore[attr-defined]
    engine.snapshot = lambda: (Counter(requested), Counter(scored))  # type: ignore[attr-defined]
    return engine


def _models(settings: Settings, fake: bool, cache: bool, cache_path: str | None = None) -> tuple[Any, Any, str | None]:
    """Embedder, counting NLI engine and the reason for an NLI fallback (``None`` when none).

    Without ``cache`` the embedder's and the NLI engine's caches are disabled; ``cache_path``
    is a store's persisted NLI cache, read and never written.
    """
    from ragtrust.testing import HashingEmbedder, LexicalNLI

    cache_size = settings.models.nli_cache_size if cache else 0
    persisted = {"cache_path": cache_path, "cache_read_only": True}
    if fake:
        return HashingEmbedder(dim=384), CountingEngine(LexicalNLI(), cache_size=cache_size, **persisted), "--fake"
    from ragtrust.models.embedder import default_embedder
    from ragtrust.models.nli import default_nli

    embedder = default_embedder(settings)
    if not cache and hasattr(embedder, "cache_size"):
        embedder.cache_size = 0
    embedder.warm_up()
    shipped = default_nli(settings)
    nli = CountingEngine(shipped.model, cache_size=cache_size, **persisted)
    try:
        nli.warm_up()
    except (ModelError, MissingDependencyError) as exc:
        return embedder, CountingEngine(LexicalNLI(), cache_size=cache_size), f"shipped NLI model unavailable: {exc}"
    return embedder, nli, None


def _summary(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {
        "median": round(float(np.median(arr)), 5),
        "p90": round(float(np.percentile(arr, 90)), 5),
        "p95": round(float(np.percentile(arr, 95)), 5),
        "mean": round(float(arr.mean()), 5),
        "min": round(float(arr.min()), 5),
        "max": round(float(arr.max()), 5),
    }


def _gate(
    settings: Settings, store: str | None, fake: bool, cache: bool, scanned: bool = False
) -> tuple[TrustGate, Any, Any]:
    """A fresh gate over the store (or the knowledge base) with a counting NLI engine.

    ``scanned``: the store's persisted caches (what ``ragtrust scan`` left there) are read;
    otherwise they are detached, so no pass but ``scanned`` benefits from an earlier run.
    """
    from ragtrust.models.nli_engine import NLI_CACHE_FILE
    from ragtrust.retrieval.dense import DenseIndex, DenseRetriever

    persisted = str(Path(store) / NLI_CACHE_FILE) if scanned and store is not None else None
    embedder, nli, fallback = _models(settings, fake, cache, persisted)
    if store is not None:
        from ragtrust.ingest.store import Store

        opened = Store.open(store, embedder, settings=settings, read_only=True)
        gate = TrustGate.from_settings(settings, store=opened, nli=nli, embedder=embedder)
    elif cache:
        gate = TrustGate.from_documents(load_knowledge_base(), settings, nli=nli, embedder=embedder)
    else:
        # a separate (caching) embedder builds the index, so the gate's embedder starts cold
        indexer, _, _ = _models(settings, fake, cache=True)
        index = DenseIndex.from_documents(load_knowledge_base(), indexer)
        retriever = DenseRetriever(index=index, default_top_k=settings.retrieval.top_k)
        gate = TrustGate.from_settings(settings, retriever=retriever, nli=nli, embedder=embedder)
    gate.warm_up()
    for signal in gate.screener.signals:  # type: ignore[union-attr]
        if not scanned:
            signal.disk = None
            object.__setattr__(signal, "results_disk", None)
        if not cache:  # kept per-document results are a cache too
            limit_kept_results(signal, 0, 0)
    return gate, nli, fallback


def run_pass(
    settings: Settings,
    questions: list[str],
    *,
    fake: bool,
    cache: bool,
    store: str | None = None,
    scanned: bool = False,
    fresh: bool = False,
) -> dict[str, Any]:
    """One pass over ``questions`` with a fresh gate (``fresh``: one per question); the timing and pair summary."""
    started = time.perf_counter()
    gate, nli, fallback = _gate(settings, store, fake, cache, scanned)
    setup_s = time.perf_counter() - started
    repeat = cache and store is not None and not scanned and not fresh
    names = ("retrieve_s", "screen_s", "verify_s", "stage12_s", "generation_s", "ask_s")
    extra = ["first_ask_s"] if repeat else [] if fresh else ["screen_only_s"]
    rows: dict[str, list[float]] = {k: [] for k in (*names, *extra)}
    pairs: list[int] = []
    per_caller: dict[str, list[int]] = {}
    requested: dict[str, list[int]] = {}
    trusted = 0
    errors: list[str] = []
    for number, question in enumerate(questions):
        if fresh and number:  # a new gate: every in-memory cache empty
            gate, nli, fallback = _gate(settings, store, fake, cache, scanned)
        if repeat:
            t0 = time.perf_counter()
            gate.ask(question)
            rows["first_ask_s"].append(time.perf_counter() - t0)
        asked, ran = nli.snapshot()
        t0 = time.perf_counter()
        verdict = gate.ask(question)
        ask_s = time.perf_counter() - t0
        asked, ran = nli.requested - asked, nli.scored - ran
        pairs.append(sum(ran.values()))
        for who in set(per_caller) | set(ran) | set(asked):
            per_caller.setdefault(who, [0] * (len(pairs) - 1)).append(ran.get(who, 0))
            requested.setdefault(who, [0] * (len(pairs) - 1)).append(asked.get(who, 0))
        timings = verdict.timings_s
        rows["ask_s"].append(ask_s)
        rows["retrieve_s"].append(timings.get("retrieve", 0.0))
        rows["screen_s"].append(timings.get("screen", 0.0))
        rows["verify_s"].append(timings.get("verify", 0.0))
        rows["stage12_s"].append(timings.get("screen", 0.0) + timings.get("verify", 0.0) + timings.get("trust", 0.0))
        rows["generation_s"].append(sum(timings.get(s, 0.0) for s in GENERATION_STAGES))
        trusted += verdict.trusted
        errors.extend(verdict.errors)
        if not repeat and not fresh:
            # the stand-alone pre-generation gate on the same retrieved set; cold pass: no cache,
            # warm pass: the documents were just screened, so this shows the cache at work
            docs, _ = gate.retrieve(question)
            t1 = time.perf_counter()
            gate.screen(docs, question)
            rows["screen_only_s"].append(time.perf_counter() - t1)
    return {
        "nli_cache": cache,
        "setup_and_warm_up_s": round(setup_s, 3),
        "nli_fallback": fallback,
        "models": dict(verdict.models),
        "nli_pairs_per_query": {"median": statistics.median(pairs), "max": max(pairs)},
        "nli_pairs_by_caller": {
            who: {
                "scored_median": statistics.median(v),
                "scored_max": max(v),
                "requested_median": statistics.median(requested[who]),
            }
            for who, v in sorted(per_caller.items())
        },
        "nli_pairs_per_question": pairs,
        "trusted": trusted,
        "errors": sorted(set(errors)),
        **{k: _summary(v) for k, v in rows.items()},
    }


def run_plain(
    settings: Settings, questions: list[str], *, fake: bool, store: str | None = None
) -> tuple[dict[str, Any], list[tuple[str, list[str]]]]:
    """The ``plain`` pass: retrieval + the extractive writer, nothing of the trust layer.

    Returns its summary and, per question, the plain answer with the retrieved texts (what
    the paper's verifier would check).
    """
    from ragtrust.evidence.extract_llm import extract_or_report

    started = time.perf_counter()
    gate, _, _ = _gate(settings, store, fake, cache=False)
    setup_s = time.perf_counter() - started
    rows: list[float] = []
    checked: list[tuple[str, list[str]]] = []
    for question in questions:
        t0 = time.perf_counter()
        docs, _ = gate.retrieve(question)
        passages, _, _ = extract_or_report(gate.extractor, question, docs)
        answer = gate.generator.generate(question, passages)  # type: ignore[union-attr]
        rows.append(time.perf_counter() - t0)
        checked.append((answer.text, [d.document.text for d in docs]))
    summary = {"setup_and_warm_up_s": round(setup_s, 3), "plain_s": _summary(rows)}
    return summary, checked


def run_paper(checked: list[tuple[str, list[str]]], *, threads: int, count_tokens: Any) -> dict[str, Any]:
    """The paper's NLI passes for each (answer, retrieved texts), timed on a bart-large-mnli-shaped model."""
    from ragtrust.eval.paper_cost import BART_LARGE_MNLI, ShapeTimer, paper_passes

    timer = ShapeTimer(count_tokens=count_tokens, threads=threads)
    t0 = time.perf_counter()
    timer.warm_up()
    build_s = time.perf_counter() - t0
    costs = [timer.time(paper_passes(answer, texts)) for answer, texts in checked]
    kinds = sorted({k for c in costs for k in c.seconds_by_kind})
    return {
        "model": "random-weight BartForSequenceClassification of facebook/bart-large-mnli's shape, fp32, batch 1",
        "config": dict(BART_LARGE_MNLI),
        "threads": threads,
        "versions": versions("torch", "transformers"),
        "build_s": round(build_s, 1),
        "queries": len(costs),
        "passes_per_query": [c.passes for c in costs],
        "tokens_per_pass_median": statistics.median(t for c in costs for t in c.tokens),
        "paper_s": _summary([c.seconds for c in costs]),
        "paper_s_by_kind_median": {
            k: round(statistics.median(c.seconds_by_kind.get(k, 0.0) for c in costs), 3) for k in kinds
        },
        "per_query_s": [round(c.seconds, 3) for c in costs],
    }


def _ratios(passes: dict[str, Any], paper: dict[str, Any] | None) -> dict[str, Any]:
    """Each pass against the plain answer (and the paper's configuration), median over median."""
    plain = passes["plain"]["plain_s"]["median"]
    out: dict[str, Any] = {}
    for name, result in passes.items():
        if name == "plain":
            continue
        row = {
            "ask_over_plain": round(result["ask_s"]["median"] / plain, 2),
            "trust_layer_over_plain": round(result["stage12_s"]["median"] / plain, 2),
        }
        if paper is not None:
            row["paper_over_verdict"] = round(paper["paper_s"]["median"] / result["stage12_s"]["median"], 1)
        out[name] = row
    return out


def run_k(settings: Settings, questions: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Every pass of one K (and the paper's passes, and the ratios, when asked for)."""
    passes: dict[str, Any] = {}
    checked: list[tuple[str, list[str]]] = []
    for name in args.passes:
        if name == "plain":
            passes[name], checked = run_plain(settings, questions, fake=args.fake, store=args.store)
            continue
        passes[name] = run_pass(
            settings,
            questions,
            fake=args.fake,
            cache=name != "cold",
            store=args.store,
            scanned=name == "scanned",
            fresh=name == "fresh",
        )
    paper = None
    if args.paper:
        count = _token_counter(settings, args.fake)
        paper = run_paper(checked[: args.paper], threads=args.threads, count_tokens=count)
        passes["paper"] = paper
    if "plain" in passes:
        passes["ratios"] = _ratios({n: v for n, v in passes.items() if n in args.passes}, paper)
    return passes


def _token_counter(settings: Settings, fake: bool) -> Any:
    """Tokens of a text: the shipped NLI model's WordPiece counter (words x 1.3 with ``--fake``)."""
    if not fake:
        from ragtrust.models.nli import default_nli

        model = default_nli(settings).model
        counter = getattr(model, "count_tokens", None)
        if callable(counter):
            model.warm_up()
            return counter
    return lambda text: int(len(text.split()) * 1.3) + 1


def _machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus_usable": usable,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
    }


def _commit() -> str | None:
    """The checkout's commit (with ``+dirty`` when files differ), or ``None`` outside git."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "src", "bench"],
            cwd=here.parent,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _versions() -> dict[str, str]:
    return versions("ragtrust", "onnxruntime", "tokenizers", "numpy", "faiss-cpu")


def _questions(name: str) -> list[str]:
    if name == "kb":
        return [rule.question for rule in load_rules()]
    text = resources.files("ragtrust.data").joinpath("owasp_questions.jsonl").read_text(encoding="utf-8")
    return [json.loads(line)["question"] for line in text.splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    """Run the bench and print its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", help="a store built by `ragtrust ingest` (default: the in-memory knowledge base)")
    parser.add_argument("--questions", choices=("kb", "owasp"), help="default: owasp with --store, else kb")
    parser.add_argument("--n", type=int, default=None, help="queries per pass (default: all questions)")
    parser.add_argument("--k", "--top-k", dest="k", type=int, nargs="+", default=[5], help="retrieval K (several)")
    parser.add_argument("--threads", type=int, default=2, help="ONNX Runtime threads per model")
    parser.add_argument(
        "--passes", nargs="+", choices=("plain", "cold", "fresh", "warm", "scanned"), default=["cold", "warm"]
    )
    parser.add_argument(
        "--paper",
        type=int,
        default=0,
        metavar="N",
        help="time the paper's bart-large-mnli passes for the first N questions (needs --passes plain)",
    )
    parser.add_argument("--fake", action="store_true", help="HashingEmbedder + LexicalNLI (smoke test)")
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="SECTION.KEY=JSON",
        help="a settings override, e.g. --set 'screening.witnesses=0' (repeatable)",
    )
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    source = args.questions or ("owasp" if args.store else "kb")
    if args.store is None and source != "kb":
        parser.error("--questions owasp needs --store (a store of the OWASP cheat sheets)")
    if "scanned" in args.passes and args.store is None:
        parser.error("--passes scanned needs --store (a store that `ragtrust scan --store` went over)")
    if args.paper and "plain" not in args.passes:
        parser.error("--paper needs --passes plain (the paper verified the plain answer)")
    if args.paper < 0:
        parser.error("--paper must be 0 or more")
    if args.store is not None and not Path(args.store).is_dir():
        parser.error(f"--store {args.store}: no such folder (build it with `ragtrust ingest`)")
    all_questions = _questions(source)
    n = len(all_questions) if args.n is None else args.n
    if not 1 <= n <= len(all_questions):
        parser.error(f"--n must be between 1 and {len(all_questions)}")
    if any(k < 1 for k in args.k):
        parser.error("--k must be at least 1")
    extra: dict[str, dict[str, Any]] = {}
    for item in args.sets:
        key, sep, raw = item.partition("=")
        section, dot, field_name = key.partition(".")
        if not sep or not dot:
            parser.error(f"--set {item!r}: expected SECTION.KEY=JSON")
        try:
            extra.setdefault(section, {})[field_name] = json.loads(raw)
        except json.JSONDecodeError as exc:
            parser.error(f"--set {item!r}: the value is not JSON ({exc.msg})")
    questions = all_questions[:n]
    machine = _machine()
    started = time.perf_counter()
    by_k: dict[str, dict[str, Any]] = {}
    settings = load_settings(env={})
    for k in args.k:
        overrides = {**extra, "retrieval": {**extra.get("retrieval", {}), "top_k": k}}
        overrides["models"] = {**extra.get("models", {}), "threads": args.threads}
        settings = load_settings(env={}, overrides=overrides)
        by_k[str(k)] = run_k(settings, questions, args)
        print(f"K={k} done after {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    first_k = next(iter(by_k.values()))
    first = next((v for n, v in first_k.items() if n in ("cold", "fresh", "warm", "scanned")), {})
    result = {
        "bench": "pipeline",
        "command": "python bench/bench_pipeline.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "corpus": f"store {Path(args.store).name}" if args.store else KB_CORPUS,
        "questions": source,
        "n_queries": len(questions),
        "k": args.k,
        "models": first.get("models"),
        "nli_fallback": first.get("nli_fallback"),
        "definitions": {
            "stage12_s": "screen + verify + trust (Stage 1 + Stage 2, excluding generation)",
            "generation_s": "extract + align + generate + postprocess",
            "plain_s": "plain pass: retrieval + extractor + extractive writer (no trust layer)",
            "paper_s": "the paper's NLI passes for the plain answer, bart-large-mnli-shaped model, batch 1",
            "ratios": "ask_s or stage12_s median over plain_s median; paper_s median over stage12_s median",
            "ask_s": "wall time of TrustGate.ask (retrieval to Verdict)",
            "screen_only_s": "TrustGate.screen on the retrieved set (pre-generation gate alone)",
            "first_ask_s": "store, warm pass: the question's first ask (filling the caches)",
            "nli_pairs_by_caller": "requested = pairs the signal or verifier asked for; scored = pairs the model ran",
        },
        "by_k": by_k,
        "settings": {
            "retrieval": settings.retrieval.model_dump(mode="json"),
            "models": settings.models.model_dump(mode="json"),
            "screening_signals": list(settings.screening.signals),
            "witnesses": settings.screening.witnesses,
            "generator": settings.generator.type,
            "seed": settings.seed,
            "overrides": extra,
        },
        "machine": machine,
        "commit": _commit(),
        "versions": _versions(),
        "total_s": round(time.perf_counter() - started, 1),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
