"""The EvidenT evidence report on a real corpus (issue 5's "Done when").

:func:`run_evidence_report` ingests a folder of documents (by default the OWASP cheat
sheets), answers a question set with TrustGate's evidence stages and measures every metric
of SPEC section 9; :func:`write_evidence_report` writes ``<out>.md`` and ``<out>.json`` with
the exact command, configuration, model ids, versions, seed and date beside the numbers.

What runs, per question (the order of :meth:`ragtrust.pipeline.TrustGate.ask`):

1. dense retrieval of the top-K chunks (512-token chunks, overlap 50, the real embedder);
2. :class:`~ragtrust.evidence.extract.ExtractiveExtractor` (verbatim passages);
3. :class:`~ragtrust.evidence.align.NGramAligner` (n = 5, t = 0.7 by default);
4. :class:`~ragtrust.generation.extractive.ExtractiveGenerator`, the citation guard and
   post-processing (with the "does not explicitly state" preface decision).

Stage-1 screening and Stage-2 NLI verification are not run: with the default ``flag``
policy they never change the context or the answer, they only score it, and they would
dominate the cost. The report is about evidence, not trust scores.

Metrics (SPEC section 9, :mod:`ragtrust.eval.evidence_metrics`), per question then averaged:

- ``out_of_set_citations``: citations of the final answer that resolve to no retrieved
  document (must be 0: the citation guard removes them); ``removed_citations``: the
  citations the writer made that the guard removed (an LLM citing ``[7]`` of five passages);
- ``hallucinated``: %Hallucination (any cited URL outside the retrieved URLs);
- ``grounded``: %Groundedness: a cited chunk belongs to a gold cheat sheet (file name);
- AnsCov / DocFocus and AnsCov@n / DocFocus@n (n in 2, 3, 5, 10) of the answer (its
  sentences, without preface or markers) against ``D``, the concatenated text of the
  retrieved chunks the answer cites;
- SemMax / SemRecall (256-token windows, stride 50) scored by the NLI engine's entailment
  probability when a scorer is available (the shipped NLI model), else ``None``;
- Cov@10 of the kept passages, retention after filtering, and the aligner's diagnostics.

The (n, t) ablation runs twice: on the extractive passages (verbatim by construction, so
it shows the aligner costs nothing on honest input) and on a **stress set**: the same
passages with seeded synthetic extraction errors of the kinds an LLM extractor makes
(:func:`stress_passages`: exact copies, wrong URL, a fabricated continuation, a reworded
copy, a fabricated passage), which gives the ablation something to filter and the aligner
a ground truth to be scored against.

The module by job: :mod:`ragtrust.eval.evidence_data` (questions, corpus, stress passages,
the records), this module (the run), :mod:`ragtrust.eval.evidence_render` (Markdown and
JSON); every name stays importable from here.

Example:
    >>> q = EvidenceQuestion("q1", "How are passwords stored?", ("Password_Storage_Cheat_Sheet.md",))
    >>> q.gold
    ('Password_Storage_Cheat_Sheet.md',)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtrust.config import Settings, load_settings
from ragtrust.documents import Passage, RetrievedDoc
from ragtrust.errors import BackendError, InputError
from ragtrust.eval.evidence_data import (
    ABLATION_NS,
    ABLATION_TS,
    ANSCOV_NS,
    QUESTIONS_FILE,
    SEM_NOT_COMPUTED,
    STRESS_EXPECTED,
    STRESS_KINDS,
    EvidenceQuestion,
    EvidenceReport,
    QuestionResult,
    cached_chunk_vectors,
    check_gold_sources,
    corpus_hash,
    load_corpus,
    load_questions,
    shipped_nli_available,
    source_name,
    stress_passages,
)
from ragtrust.eval.evidence_metrics import (
    PairScorer,
    ablation_table,
    aggregate_alignment,
    coverage_at,
    groundedness,
    hallucinated_citation,
    ngram_overlap,
    nli_entailment_scorer,
    sem_scores,
    word_overlap,
)
from ragtrust.eval.evidence_render import _portable_paths as _portable_paths  # the tests' import path
from ragtrust.eval.evidence_render import render_markdown, write_evidence_report
from ragtrust.evidence.align import NGramAligner, resolve_source
from ragtrust.evidence.extract_llm import extract_or_report
from ragtrust.generation.base import GeneratedAnswer
from ragtrust.models.base import Embedder, NLIModel
from ragtrust.record import utc_stamp, versions
from ragtrust.text import split_sentences, word_tokens


def run_evidence_report(
    data_dir: str | Path,
    questions: Sequence[EvidenceQuestion],
    *,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    nli: NLIModel | None = None,
    sem_scorer: PairScorer | None | str = "auto",
    ablation_ns: Sequence[int] = ABLATION_NS,
    ablation_ts: Sequence[float] = ABLATION_TS,
    command: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    index_cache: str | Path | None = None,
    llm: Mapping[str, Any] | None = None,
) -> EvidenceReport:
    """Ingest ``data_dir``, answer ``questions`` and measure the evidence metrics.

    Args:
        data_dir: folder of documents (Markdown), e.g. the OWASP cheat sheets.
        questions: the questions with gold file names (:func:`load_questions`).
        settings: configuration (chunking, top-K, n-gram n and t, seed); defaults otherwise.
        embedder: the sentence embedder; default: ``default_embedder(settings)`` (the
            packaged all-MiniLM-L6-v2 int8 ONNX).
        nli: the NLI model the gate holds (unused by the evidence stages); default: the
            configured model (``models.nli``, the shipped one unless set otherwise).
        sem_scorer: scorer for SemMax / SemRecall; ``"auto"`` uses the shipped NLI model's
            entailment when the model file exists and skips them otherwise; ``None`` skips.
        ablation_ns: n-gram lengths of the (n, t) ablation.
        ablation_ts: overlap thresholds of the (n, t) ablation.
        command: the command line to record.
        progress: called with ``(done, total)`` after each question.
        index_cache: folder for the chunk embeddings (:func:`cached_chunk_vectors`); a
            re-run on the same corpus, chunking and embedder skips the embedding step,
            which dominates the cost.
        llm: what to record of the LLM the settings point at (model file, sha256, window),
            e.g. from ``ragtrust eval evidence --local-llm``.

    Raises:
        InputError: no questions, or no documents in ``data_dir``.
    """
    from ragtrust.generation.postprocess import NOT_STATED_PREFACE, evidence_answers_question, postprocess
    from ragtrust.models.embedder import default_embedder
    from ragtrust.pipeline import TrustGate
    from ragtrust.retrieval.dense import DenseIndex, DenseRetriever

    if not questions:
        raise InputError("no questions to answer")
    started = time.perf_counter()
    settings = settings or load_settings(env={})
    embedder = embedder or default_embedder(settings)
    sem_model_id: str | None = None
    if isinstance(sem_scorer, str):
        if sem_scorer != "auto":
            raise InputError(f"sem_scorer must be 'auto', None or a callable, got {sem_scorer!r}")
        sem_scorer = None
        if shipped_nli_available():
            from ragtrust.models.nli import default_nli

            engine = default_nli(settings)
            nli = nli or engine
            sem_scorer = nli_entailment_scorer(engine)
            sem_model_id = engine.model_id
    if nli is None:
        from ragtrust.models.nli import default_nli

        nli = default_nli(settings)  # the configured model; a clear error when it is missing
    if sem_scorer is not None and sem_model_id is None:
        sem_model_id = getattr(sem_scorer, "model_id", getattr(sem_scorer, "__name__", "custom scorer"))

    documents, chunks = load_corpus(data_dir, settings)
    check_gold_sources(questions, chunks, data_dir)
    t_ingest = time.perf_counter()
    vectors, cache_hit = cached_chunk_vectors(chunks, embedder, settings, index_cache)
    index = DenseIndex.from_vectors(chunks, vectors, embedder)
    retriever = DenseRetriever(index=index, default_top_k=settings.retrieval.top_k)
    gate = TrustGate.from_settings(settings, retriever=retriever, nli=nli, embedder=embedder)
    gate.warm_up()
    # the stages warm_up built from the settings (the aligner's n and t are reported)
    aligner, generator, guard = gate.aligner, gate.generator, gate.guard
    if not isinstance(aligner, NGramAligner) or generator is None or guard is None:
        raise RuntimeError("the evidence report runs the gate's own stages: an NGramAligner, a generator, a guard")
    t_index = time.perf_counter()
    top_k = settings.retrieval.top_k

    results: list[QuestionResult] = []
    extracted_by_q: list[list[Passage]] = []
    docs_by_q: list[list[RetrievedDoc]] = []
    alignments = []
    kept_all: list[Passage] = []
    stress_by_q: list[list[Passage]] = []
    stress_kinds: list[str] = []
    llm_failures: list[str] = []
    writer_failures: list[str] = []
    llm_warnings: Counter[str] = Counter()
    stage_s: list[dict[str, float]] = []
    for done, item in enumerate(questions, start=1):
        docs, _ = gate.retrieve(item.question)
        t0 = time.perf_counter()
        extracted, notes, failure = _extract_passages(gate.extractor, item.question, docs)
        t1 = time.perf_counter()
        if failure is not None:
            llm_failures.append(f"{item.id}: {failure}")
        alignment = aligner.align(extracted, docs)
        passages = list(alignment.passages)
        t2 = time.perf_counter()
        generated, writer_failure = _write_answer(generator, item.question, passages)
        if writer_failure is not None:
            writer_failures.append(f"{item.id}: {writer_failure}")
        t3 = time.perf_counter()
        stage_s.append({"extract": t1 - t0, "align": t2 - t1, "generate": t3 - t2})
        for note in (*notes, *generated.warnings):
            llm_warnings[re.split(r"[:(]", note, maxsplit=1)[0].strip()] += 1  # the kind, not the details
        grounded = guard.apply(generated, passages, docs)
        answers = evidence_answers_question(item.question, passages, docs)
        grounded = postprocess(grounded, settings.evidence, answers_question=answers)

        cited = tuple(dict.fromkeys(c for s in grounded.sentences for c in s.citations))
        out_of_set = sum(resolve_source(c, docs) is None for c in cited)
        retrieved_targets = [d.document.cite for d in docs] + [d.id for d in docs]
        cited_docs = [d for d in (resolve_source(c, docs) for c in cited) if d is not None]
        doc_text = "\n\n".join(dict.fromkeys(d.document.text for d in cited_docs))
        answer_text = " ".join(s.text for s in grounded.sentences)
        ans_cov, doc_focus = word_overlap(answer_text, doc_text)
        at = {str(n): ngram_overlap(answer_text, doc_text, n) for n in ANSCOV_NS}
        sem: tuple[float | None, float | None] = (None, None)
        if sem_scorer is not None and answer_text and doc_text:
            sem = sem_scores(answer_text, doc_text, sem_scorer)
        gold = {g for g in item.gold}
        results.append(
            QuestionResult(
                id=item.id,
                question=item.question,
                gold=item.gold,
                retrieved=tuple(d.id for d in docs),
                cited=cited,
                answer=grounded.text,
                preface=grounded.text.startswith(NOT_STATED_PREFACE),
                sentences=len(grounded.sentences),
                unsupported_sentences=grounded.unsupported_sentences,
                out_of_set_citations=out_of_set,
                removed_citations=grounded.removed_citations,
                hallucinated=hallucinated_citation(cited, retrieved_targets),
                grounded=groundedness([source_name(c) for c in cited], gold),
                gold_retrieved=any(source_name(d.id) in gold for d in docs),
                ans_cov=ans_cov,
                doc_focus=doc_focus,
                ans_cov_at={n: v[0] for n, v in at.items()},
                doc_focus_at={n: v[1] for n, v in at.items()},
                sem_max=sem[0],
                sem_recall=sem[1],
                cov_at_10=coverage_at(passages, docs, 10),
                alignment=dict(alignment.diagnostics),
                extraction_failed=failure is not None,
            )
        )
        extracted_by_q.append(list(extracted))
        docs_by_q.append(list(docs))
        alignments.append(alignment)
        kept_all.extend(passages)
        retrieved_ids = {d.id for d in docs}
        foreign_chunks = [c for c in chunks if c.id not in retrieved_ids]
        rng = random.Random(f"{settings.seed}:{item.id}")
        pool = [foreign_chunks[rng.randrange(len(foreign_chunks))] for _ in range(3)] if foreign_chunks else []
        foreign = [s.text for c in pool for s in split_sentences(c.text) if 8 <= len(word_tokens(s.text)) <= 40]
        stressed = stress_passages(extracted, docs, foreign, seed=settings.seed, start=len(stress_kinds))
        stress_by_q.append([p for p, _ in stressed])
        stress_kinds.extend(kind for _, kind in stressed)
        if progress is not None:
            progress(done, len(questions))
    t_answer = time.perf_counter()

    all_docs = list({d.id: d for ds in docs_by_q for d in ds}.values())
    align_summary = aggregate_alignment(alignments)
    n = len(results)

    def mean(values: Sequence[float | None]) -> float | None:
        real = [v for v in values if v is not None]
        return sum(real) / len(real) if real else None

    summary: dict[str, Any] = {
        "questions": n,
        "documents": len(documents),
        "chunks": len(chunks),
        "top_k": top_k,
        "out_of_set_citations": sum(r.out_of_set_citations for r in results),
        "removed_citations": sum(r.removed_citations for r in results),
        "pct_hallucinated_citations": mean([r.hallucinated for r in results]),
        "groundedness": mean([r.grounded for r in results]),
        "gold_in_top_k": mean([float(r.gold_retrieved) for r in results]),
        "answered": sum(r.sentences > 0 for r in results),
        "preface": sum(r.preface for r in results),
        "mean_sentences": mean([float(r.sentences) for r in results]),
        "unsupported_sentences": sum(r.unsupported_sentences for r in results),
        "pct_unsupported_sentences": (
            sum(r.unsupported_sentences for r in results) / sum(r.sentences for r in results)
            if any(r.sentences for r in results)
            else None
        ),
        "cov_at_10": coverage_at(kept_all, all_docs, 10),
        "ans_cov": mean([r.ans_cov for r in results]),
        "doc_focus": mean([r.doc_focus for r in results]),
        "ans_cov_at": {k: mean([r.ans_cov_at[k] for r in results]) for k in map(str, ANSCOV_NS)},
        "doc_focus_at": {k: mean([r.doc_focus_at[k] for r in results]) for k in map(str, ANSCOV_NS)},
        "sem_max": mean([r.sem_max for r in results]) if sem_scorer is not None else SEM_NOT_COMPUTED,
        "sem_recall": mean([r.sem_recall for r in results]) if sem_scorer is not None else SEM_NOT_COMPUTED,
        "retention": align_summary["retention"],
        "alignment": align_summary,
    }
    ablation = [row.to_dict() for row in ablation_table(extracted_by_q, docs_by_q, ablation_ns, ablation_ts)]
    configured = ablation_table(extracted_by_q, docs_by_q, (aligner.n,), (aligner.threshold,))[0]
    summary["hallucination_before"] = configured.hallucination_before
    summary["hallucination_after"] = configured.hallucination_after
    summary["extraction_failures"] = llm_failures
    summary["writer_failures"] = writer_failures
    summary["llm_warnings"] = dict(llm_warnings)
    stress_ablation = [row.to_dict() for row in ablation_table(stress_by_q, docs_by_q, ablation_ns, ablation_ts)]
    confusion = _stress_confusion(stress_by_q, docs_by_q, stress_kinds, settings)
    summary["stress"] = {
        "passages": len(stress_kinds),
        "by_kind": dict(Counter(stress_kinds)),
        "aligner_accuracy": _confusion_accuracy(confusion),
    }
    t_end = time.perf_counter()
    provenance = {
        "command": command,
        "date_utc": utc_stamp(),
        "seed": settings.seed,
        "data_dir": str(Path(data_dir)),
        "corpus_sha256": corpus_hash(documents),
        "questions_sha256": hashlib.sha256(
            "\n".join(json.dumps(dataclasses.asdict(q), sort_keys=True) for q in questions).encode()
        ).hexdigest(),
        "models": {
            "embedder": str(getattr(embedder, "model_id", type(embedder).__name__)),
            "extractor": type(gate.extractor).__name__,
            "generator": str(getattr(gate.generator, "name", type(gate.generator).__name__)),
            "sem_scorer": sem_model_id or SEM_NOT_COMPUTED,
            **{k: v for k, v in gate.model_ids().items() if k.endswith(("_model", "_prompt"))},
            **({"llm": dict(llm)} if llm else {}),
        },
        "components": {
            "extractor": _params(gate.extractor),
            "generator": _params(gate.generator),
            "aligner": {"n": aligner.n, "threshold": aligner.threshold},
        },
        "stages": "retrieve -> extract -> align -> generate -> citation guard -> post-process "
        "(Stage-1 screening and Stage-2 NLI verification not run)",
        "config": settings.to_dict(),
        "versions": versions("ragtrust", "python", "numpy", "onnxruntime", "tokenizers", "faiss-cpu", "bm25s"),
        "index_cache": {"path": str(index_cache) if index_cache else None, "hit": cache_hit},
        "platform": platform.platform(),
        "timings_s": {
            "ingest": round(t_ingest - started, 2),
            "index": round(t_index - t_ingest, 2),
            "answer": round(t_answer - t_index, 2),
            "ablation": round(t_end - t_answer, 2),
            "total": round(t_end - started, 2),
        },
        "mean_stage_s": {
            k: round(sum(t[k] for t in stage_s) / len(stage_s), 3) for k in ("extract", "align", "generate")
        },
    }
    return EvidenceReport(summary, results, ablation, stress_ablation, confusion, provenance)


def _extract_passages(
    extractor: Any, question: str, docs: Sequence[RetrievedDoc]
) -> tuple[list[Passage], tuple[str, ...], str | None]:
    """:func:`extract_or_report`, with a backend failure (timeout, dead server) reported for this question only."""
    try:
        return extract_or_report(extractor, question, docs)
    except BackendError as exc:
        return [], (), f"extractor failed: {exc}"


def _write_answer(generator: Any, question: str, passages: Sequence[Passage]) -> tuple[GeneratedAnswer, str | None]:
    """The writer's answer, or an empty one and why (a timeout or server error loses one question, not the run)."""
    try:
        return generator.generate(question, passages), None
    except BackendError as exc:
        return GeneratedAnswer(text=""), str(exc)


def _params(component: Any) -> dict[str, Any]:
    if not dataclasses.is_dataclass(component):
        return {}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(component):
        value = getattr(component, f.name)
        if f.init and isinstance(value, (int, float, str, bool)):
            out[f.name] = value
    return out


def _stress_confusion(
    stress_by_q: Sequence[Sequence[Passage]],
    docs_by_q: Sequence[Sequence[RetrievedDoc]],
    kinds: Sequence[str],
    settings: Settings,
) -> dict[str, dict[str, int]]:
    from ragtrust.evidence.align import NGramAligner

    aligner = NGramAligner(n=settings.evidence.ngram_n, threshold=settings.evidence.overlap_threshold)
    confusion: dict[str, dict[str, int]] = {k: {} for k in STRESS_KINDS}
    i = 0
    for passages, docs in zip(stress_by_q, docs_by_q, strict=True):
        result = aligner.align(passages, docs)
        statuses = {p.passage_id: p.status for p in (*result.passages, *result.dropped)}
        for p in passages:
            row = confusion[kinds[i]]
            status = statuses[p.passage_id]
            row[status] = row.get(status, 0) + 1
            i += 1
    return {k: v for k, v in confusion.items() if v}


def _confusion_accuracy(confusion: Mapping[str, Mapping[str, int]]) -> float | None:
    total = sum(sum(v.values()) for v in confusion.values())
    right = sum(v.get(STRESS_EXPECTED[k], 0) for k, v in confusion.items())
    return right / total if total else None


__all__ = [
    "ABLATION_NS",
    "ABLATION_TS",
    "ANSCOV_NS",
    "QUESTIONS_FILE",
    "SEM_NOT_COMPUTED",
    "STRESS_EXPECTED",
    "STRESS_KINDS",
    "EvidenceQuestion",
    "EvidenceReport",
    "QuestionResult",
    "cached_chunk_vectors",
    "check_gold_sources",
    "load_corpus",
    "load_questions",
    "render_markdown",
    "run_evidence_report",
    "shipped_nli_available",
    "source_name",
    "stress_passages",
    "write_evidence_report",
]
