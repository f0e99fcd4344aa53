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

Example:
    >>> q = EvidenceQuestion("q1", "How are passwords stored?", ("Password_Storage_Cheat_Sheet.md",))
    >>> q.gold
    ('Password_Storage_Cheat_Sheet.md',)
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import platform
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

from ragtrust.config import Settings, load_settings
from ragtrust.documents import Document, Passage, RetrievedDoc
from ragtrust.errors import InputError
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
from ragtrust.evidence.align import resolve_source
from ragtrust.io import atomic_write_text, read_question_rows
from ragtrust.models.base import Embedder, NLIModel
from ragtrust.text import split_sentences, word_tokens

#: the question set shipped with ragtrust (``ragtrust/data/owasp_questions.jsonl``)
QUESTIONS_FILE = "owasp_questions.jsonl"
#: n-gram lengths of AnsCov@n / DocFocus@n (SPEC section 9)
ANSCOV_NS = (2, 3, 5, 10)
#: the (n, t) grid of the alignment ablation
ABLATION_NS = (2, 3, 5, 10)
ABLATION_TS = (0.5, 0.6, 0.7, 0.8, 0.9)
#: kinds of synthetic extraction errors in the stress set, assigned round-robin
STRESS_KINDS = ("exact", "drift", "partial", "reworded", "fabricated")
#: the ideal outcome per kind: a paraphrase with no verbatim 5-gram left has no support
STRESS_EXPECTED = {
    "exact": "kept",
    "drift": "reattributed",
    "partial": "truncated",
    "reworded": "dropped",
    "fabricated": "dropped",
}
SEM_NOT_COMPUTED = "not computed (no NLI model shipped yet)"


@dataclass(frozen=True)
class EvidenceQuestion:
    """A question with its gold sources (file names of the documents that answer it)."""

    id: str
    question: str
    gold: tuple[str, ...] = ()


def load_questions(path: str | Path | None = None) -> list[EvidenceQuestion]:
    """Read a JSONL question file: ``{"id"?, "question", "gold": [file names]}`` per line.

    Args:
        path: the file; ``None`` reads the OWASP question set shipped with ragtrust.

    Raises:
        InputError: a line is not JSON, lacks ``question``, or ``gold`` is not a list of strings.
    """
    out: list[EvidenceQuestion] = []
    for where, n, row, question in read_question_rows(path, QUESTIONS_FILE):
        gold = row.get("gold", [])
        if isinstance(gold, str):
            gold = [gold]
        if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
            raise InputError(f"{where}: 'gold' must be a list of file names")
        out.append(EvidenceQuestion(str(row.get("id") or f"q{n}"), question, tuple(gold)))
    return out


def source_name(target: str) -> str:
    """The file name a citation target or document id points to (``…/X.md#chunk-3`` -> ``X.md``)."""
    path = target.split("#", 1)[0].rstrip("/")
    return PurePosixPath(path).name


def stress_passages(
    passages: Sequence[Passage],
    docs: Sequence[RetrievedDoc],
    foreign: Sequence[str],
    seed: int = 42,
    start: int = 0,
) -> list[tuple[Passage, str]]:
    """Seeded synthetic extraction errors built from honest passages (with their kind).

    Passage ``i`` becomes kind ``STRESS_KINDS[(start + i) % 5]`` (``start`` continues the
    round-robin across questions):

    - ``exact``: unchanged;
    - ``drift``: the same text claiming another retrieved document's URL;
    - ``partial``: the text followed by a sentence from a document that was not retrieved;
    - ``reworded``: every third word removed (a loose paraphrase);
    - ``fabricated``: a sentence from a document that was not retrieved, claiming this one.

    ``foreign`` holds the non-retrieved sentences to draw from (``random.Random(seed)``).
    Kinds that cannot be built (``drift`` with one document, no foreign text) stay exact.
    """
    rng = random.Random(seed)
    out: list[tuple[Passage, str]] = []
    for i, passage in enumerate(passages):
        kind = STRESS_KINDS[(start + i) % len(STRESS_KINDS)]
        base = dataclasses.replace(passage, spans=(), status="unverified", overlap=None)
        others = [d for d in docs if d.id != passage.doc_id]
        if kind == "drift" and others:
            target = others[rng.randrange(len(others))].document
            out.append((dataclasses.replace(base, url=target.cite, doc_id=target.id), kind))
        elif kind == "partial" and foreign:
            text = f"{passage.text} {foreign[rng.randrange(len(foreign))]}"
            out.append((dataclasses.replace(base, text=text), kind))
        elif kind == "reworded" and len(passage.text.split()) >= 9:
            text = " ".join(w for k, w in enumerate(passage.text.split()) if k % 3 != 2)
            out.append((dataclasses.replace(base, text=text), kind))
        elif kind == "fabricated" and foreign:
            out.append((dataclasses.replace(base, text=foreign[rng.randrange(len(foreign))]), kind))
        else:
            out.append((base, "exact"))
    return out


@dataclass(frozen=True)
class QuestionResult:
    """Every number measured for one question (see the module docstring)."""

    id: str
    question: str
    gold: tuple[str, ...]
    retrieved: tuple[str, ...]
    cited: tuple[str, ...]
    answer: str
    preface: bool
    sentences: int
    unsupported_sentences: int
    out_of_set_citations: int
    removed_citations: int
    hallucinated: float
    grounded: float
    gold_retrieved: bool
    ans_cov: float
    doc_focus: float
    ans_cov_at: Mapping[str, float]
    doc_focus_at: Mapping[str, float]
    sem_max: float | None
    sem_recall: float | None
    cov_at_10: float
    alignment: Mapping[str, float]
    extraction_failed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        data = dataclasses.asdict(self)
        data["gold"], data["retrieved"], data["cited"] = list(self.gold), list(self.retrieved), list(self.cited)
        return data


@dataclass
class EvidenceReport:
    """The report: summary numbers, per-question rows, ablations and provenance."""

    summary: dict[str, Any]
    questions: list[QuestionResult]
    ablation: list[dict[str, Any]]
    stress_ablation: list[dict[str, Any]]
    stress_confusion: dict[str, dict[str, int]]
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (what ``<out>.json`` holds)."""
        return {
            "summary": self.summary,
            "ablation": self.ablation,
            "stress_ablation": self.stress_ablation,
            "stress_confusion": self.stress_confusion,
            "provenance": self.provenance,
            "questions": [q.to_dict() for q in self.questions],
        }


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def shipped_nli_available() -> bool:
    """Whether the shipped NLI model's manifest exists (``models/assets/nli_manifest.json``)."""
    from ragtrust.models.nli import MANIFEST_FILE

    return Path(MANIFEST_FILE).is_file()


def load_corpus(
    data_dir: str | Path, settings: Settings, include: Sequence[str] = ("*.md",)
) -> tuple[list[Document], list[Document]]:
    """Load the documents of ``data_dir`` and chunk them (settings.chunking).

    Licence and read-me files are left out. Each chunk's URL is its document's URL plus
    ``#chunk-<n>`` so that a citation names the exact chunk.

    Returns:
        ``(documents, chunks)``.

    Raises:
        InputError: the folder holds no loadable document.
    """
    from ragtrust.ingest.chunker import chunk_document
    from ragtrust.ingest.loaders import load_paths

    folder = Path(data_dir)
    if not folder.is_dir():
        raise InputError(f"--data-dir {folder} is not a folder; pass the folder of cheat sheets")
    report = load_paths([folder], include=include, exclude=("LICENSE*", "README*"))
    documents = sorted(report.documents, key=lambda d: d.id)
    if not documents:
        raise InputError(f"no documents matching {list(include)} in {folder}")
    chunks: list[Document] = []
    for doc in documents:
        for chunk in chunk_document(doc, settings.chunking.chunk_tokens, settings.chunking.overlap_tokens):
            url = f"{chunk.cite}#chunk-{chunk.metadata.get('chunk_index', 0)}"
            chunks.append(dataclasses.replace(chunk, url=url))
    return documents, chunks


def cached_chunk_vectors(
    chunks: Sequence[Document], embedder: Embedder, settings: Settings, cache_dir: str | Path | None
) -> tuple[Any, bool]:
    """Embeddings of ``chunks``, read from / written to ``cache_dir`` when given.

    The cache file is named by the sha256 of the embedder id, the chunking settings and
    every chunk's id and content hash, so any change to the corpus, the chunker or the model
    misses the cache. Returns ``(vectors, hit)``.
    """
    import numpy as np

    from ragtrust.retrieval.dense import embed_texts

    model_id = str(getattr(embedder, "model_id", type(embedder).__name__))
    digest = hashlib.sha256(
        f"{model_id}\0{settings.chunking.chunk_tokens}/{settings.chunking.overlap_tokens}\n".encode()
    )
    for chunk in chunks:
        digest.update(f"{chunk.id}\0{chunk.content_hash}\n".encode())
    file = Path(cache_dir) / f"vectors-{digest.hexdigest()[:24]}.npy" if cache_dir else None
    if file is not None and file.is_file():
        vectors = np.load(file)
        if vectors.shape[0] == len(chunks):
            return vectors, True
    vectors = embed_texts(embedder, [c.text for c in chunks])
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_suffix(".tmp.npy")
        np.save(tmp, vectors)
        tmp.replace(file)
    return vectors, False


def _corpus_hash(documents: Sequence[Document]) -> str:
    digest = hashlib.sha256()
    for doc in documents:
        digest.update(f"{source_name(doc.id)}\0{doc.content_hash}\n".encode())
    return digest.hexdigest()


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
    t_ingest = time.perf_counter()
    vectors, cache_hit = cached_chunk_vectors(chunks, embedder, settings, index_cache)
    index = DenseIndex.from_vectors(chunks, vectors, embedder)
    retriever = DenseRetriever(index=index, default_top_k=settings.retrieval.top_k)
    gate = TrustGate.from_settings(settings, retriever=retriever, nli=nli, embedder=embedder)
    gate.warm_up()
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
    llm_warnings: Counter[str] = Counter()
    stage_s: list[dict[str, float]] = []
    for done, item in enumerate(questions, start=1):
        docs, _ = gate.retrieve(item.question)
        t0 = time.perf_counter()
        extracted, failure, notes = _extract(gate.extractor, item.question, docs)
        t1 = time.perf_counter()
        if failure is not None:
            llm_failures.append(f"{item.id}: {failure}")
        alignment = gate.aligner.align(extracted, docs)
        passages = list(alignment.passages)
        t2 = time.perf_counter()
        generated = gate.generator.generate(item.question, passages)
        t3 = time.perf_counter()
        stage_s.append({"extract": t1 - t0, "align": t2 - t1, "generate": t3 - t2})
        for note in (*notes, *generated.warnings):
            llm_warnings[note.split(":")[0]] += 1
        grounded = gate.guard.apply(generated, passages, docs)
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
    configured = ablation_table(extracted_by_q, docs_by_q, (gate.aligner.n,), (gate.aligner.threshold,))[0]
    summary["hallucination_before"] = configured.hallucination_before
    summary["hallucination_after"] = configured.hallucination_after
    summary["extraction_failures"] = llm_failures
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
        "date_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seed": settings.seed,
        "data_dir": str(Path(data_dir)),
        "corpus_sha256": _corpus_hash(documents),
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
            "aligner": {"n": gate.aligner.n, "threshold": gate.aligner.threshold},
        },
        "stages": "retrieve -> extract -> align -> generate -> citation guard -> post-process "
        "(Stage-1 screening and Stage-2 NLI verification not run)",
        "config": settings.to_dict(),
        "versions": {
            "ragtrust": _version("ragtrust"),
            "python": platform.python_version(),
            "numpy": _version("numpy"),
            "onnxruntime": _version("onnxruntime"),
            "tokenizers": _version("tokenizers"),
            "faiss-cpu": _version("faiss-cpu"),
            "bm25s": _version("bm25s"),
        },
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


def _extract(
    extractor: Any, question: str, docs: Sequence[RetrievedDoc]
) -> tuple[list[Passage], str | None, tuple[str, ...]]:
    """The extractor's passages, why there are none (an LLM's unusable reply), and its warnings."""
    from ragtrust.evidence.extract import ExtractionError

    try:
        with_warnings = getattr(extractor, "extract_with_warnings", None)
        if callable(with_warnings):
            passages, notes = with_warnings(question, docs)
            return list(passages), None, tuple(notes)
        return list(extractor.extract(question, docs)), None, ()
    except ExtractionError as exc:
        return [], str(exc), ()


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


# -- rendering --------------------------------------------------------------------------------


def _fmt(value: Any, pct: bool = False) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if pct:
        return f"{100 * float(value):.1f}%"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def render_markdown(report: EvidenceReport) -> str:
    """The report as Markdown (what ``<out>.md`` holds)."""
    s, p = report.summary, report.provenance
    a = s["alignment"]
    lines = [
        "# EvidenT evidence report",
        "",
        f"{s['questions']} questions over {s['documents']} documents ({s['chunks']} chunks), "
        f"top-K = {s['top_k']}; extractor `{p['models']['extractor']}`, answer writer `{p['models']['generator']}`"
        + (f" (model `{p['models']['generator_model']}`)" if p["models"].get("generator_model") else "")
        + ".",
        "",
        "## Provenance",
        "",
        f"- command: `{p.get('command') or 'library call'}`",
        f"- date (UTC): {p.get('date_utc')}; seed: {p.get('seed')}",
        f"- data: `{p.get('data_dir')}` (corpus sha256 `{str(p.get('corpus_sha256'))[:16]}…`, "
        f"questions sha256 `{str(p.get('questions_sha256'))[:16]}…`)",
        f"- models: embedder `{p['models']['embedder']}`; SemMax/SemRecall scorer: {p['models']['sem_scorer']}",
        f"- stages: {p.get('stages')}",
        f"- extractor: `{json.dumps(p['components']['extractor'], sort_keys=True)}`",
        f"- generator: `{json.dumps(p['components']['generator'], sort_keys=True)}`",
        f"- aligner: n = {p['components']['aligner']['n']}, t = {p['components']['aligner']['threshold']}; "
        f"chunking {p['config']['chunking']['chunk_tokens']}/{p['config']['chunking']['overlap_tokens']} tokens",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in p.get("versions", {}).items()),
        f"- platform: {p.get('platform')}; time: " + ", ".join(f"{k} {v} s" for k, v in p.get("timings_s", {}).items()),
        "",
        "The full configuration is in the JSON file next to this one (`provenance.config`).",
        "",
        *_llm_lines(report),
        "## Headline numbers",
        "",
        "| metric | value |",
        "|---|---|",
        f"| citations outside the retrieved set (final answers) | {s['out_of_set_citations']} |",
        f"| citations the writer made that the guard removed | {s.get('removed_citations', 0)} |",
        f"| %hallucinated citations (answers) | {_fmt(s['pct_hallucinated_citations'], True)} |",
        f"| %groundedness vs gold cheat sheets | {_fmt(s['groundedness'], True)} |",
        f"| gold cheat sheet in the top-K (retrieval) | {_fmt(s['gold_in_top_k'], True)} |",
        f"| answers with >= 1 sentence / with the not-stated preface | {s['answered']} / {s['preface']} |",
        f"| mean answer sentences; sentences without verbatim support | {_fmt(s['mean_sentences'])}; "
        f"{s['unsupported_sentences']} ({_fmt(s.get('pct_unsupported_sentences'), True)}) |",
        f"| %hallucinated passage tokens before / after alignment | {_fmt(s.get('hallucination_before'), True)} / "
        f"{_fmt(s.get('hallucination_after'), True)} |",
        f"| Cov@10 (kept passages) | {_fmt(s['cov_at_10'])} |",
        f"| retention after filtering | {_fmt(s['retention'], True)} |",
        f"| AnsCov / DocFocus (words) | {_fmt(s['ans_cov'])} / {_fmt(s['doc_focus'])} |",
        f"| SemMax / SemRecall | {_fmt(s['sem_max'])} / {_fmt(s['sem_recall'])} |",
        "",
        "AnsCov, DocFocus and their n-gram versions compare the answer (its sentences, without the "
        "preface or citation markers) with D, the concatenated text of the retrieved chunks it cites. "
        "SemMax/SemRecall use 256-token windows with stride 50, scored by NLI entailment "
        "(premise = document window, hypothesis = answer window).",
        "",
        "| n | AnsCov@n | DocFocus@n |",
        "|---|---|---|",
    ]
    for n in map(str, ANSCOV_NS):
        lines.append(f"| {n} | {_fmt(s['ans_cov_at'][n])} | {_fmt(s['doc_focus_at'][n])} |")
    lines += [
        "",
        "## Alignment diagnostics (the extractor's passages, n = "
        f"{p['components']['aligner']['n']}, t = {p['components']['aligner']['threshold']})",
        "",
        f"{int(a['n_in'])} passages: {int(a['kept'])} kept, {int(a['truncated'])} truncated, "
        f"{int(a['reattributed'])} re-attributed, {int(a['dropped'])} dropped; "
        f"%hallucinated {_fmt(a['pct_hallucinated'], True)}, %URL drift corrected "
        f"{_fmt(a['pct_url_drift_corrected'], True)}, %partially hallucinated {_fmt(a['pct_partial'], True)}.",
        "",
        "The extractive extractor copies document slices, so on its own output the aligner should keep "
        "everything: the tables below show that it does, and then what it does with the errors an LLM "
        "extractor makes.",
        "",
        "## (n, t) ablation: the extractor's passages",
        "",
        *_ablation_lines(report.ablation),
        "",
        "## (n, t) ablation: stress set (seeded synthetic extraction errors)",
        "",
        f"{s['stress']['passages']} passages built from the extractive ones, round-robin: "
        + ", ".join(f"{k} {v}" for k, v in s["stress"]["by_kind"].items())
        + " (exact copy; wrong URL; copy plus a fabricated sentence from a non-retrieved chunk; every third "
        "word removed; a sentence of a non-retrieved chunk claiming a retrieved one).",
        "",
        *_ablation_lines(report.stress_ablation),
        "",
        f"What the aligner (n = {p['components']['aligner']['n']}, t = {p['components']['aligner']['threshold']}) "
        f"did with each kind (expected in bold); agreement {_fmt(s['stress']['aligner_accuracy'], True)}:",
        "",
        "| kind | kept | truncated | reattributed | dropped |",
        "|---|---|---|---|---|",
    ]
    for kind, row in report.stress_confusion.items():
        cells = []
        for status in ("kept", "truncated", "reattributed", "dropped"):
            value = str(row.get(status, 0))
            cells.append(f"**{value}**" if STRESS_EXPECTED[kind] == status else value)
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Reading the table: a *partial* passage is kept whole (not truncated) when its fabricated tail "
        "holds less than 1 - t of its n-grams: that is SPEC 6.3's rule, and the residual is what the "
        "'halluc. after' column measures. A *drift* passage is kept or truncated instead of re-attributed "
        "when the wrongly claimed chunk holds all or part of its text too (consecutive chunks overlap by up "
        "to 50 tokens, and cheat sheets repeat boilerplate); a *fabricated* or *reworded* passage is "
        "truncated when a 5-gram of it happens to occur in the claimed chunk.",
        "",
        "## Per question",
        "",
        "| id | question | gold in top-K | grounded | preface | sentences | AnsCov | out-of-set |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report.questions:
        lines.append(
            f"| {r.id} | {r.question} | {'yes' if r.gold_retrieved else 'no'} | {'yes' if r.grounded else 'no'} | "
            f"{'yes' if r.preface else 'no'} | {r.sentences} | {r.ans_cov:.2f} | {r.out_of_set_citations} |"
        )
    return "\n".join(lines) + "\n"


def _llm_lines(report: EvidenceReport) -> list[str]:
    """The LLM's part of the report: model, prompts, failures, warnings, time per call."""
    s, models = report.summary, report.provenance["models"]
    if not any(k.endswith("_model") for k in models):
        return []
    llm = models.get("llm", {})
    t = report.provenance.get("mean_stage_s", {})
    failures = s.get("extraction_failures", [])
    return [
        "## The LLM",
        "",
        f"- model: `{models.get('generator_model') or models.get('extractor_model')}`"
        + (f", file `{llm['file']}` (sha256 `{llm['sha256']}`)" if llm.get("file") else "")
        + (f", served by {llm['server']} with a {llm['context_tokens']}-token window" if llm.get("server") else ""),
        "- prompts: " + ", ".join(f"{k} `{v}`" for k, v in models.items() if k.endswith("_prompt")),
        f"- mean seconds per question: extract {_fmt(t.get('extract'))}, align {_fmt(t.get('align'))}, "
        f"write {_fmt(t.get('generate'))}",
        f"- extraction replies unusable after one repair: {len(failures)} of {s['questions']}"
        + (
            " (" + "; ".join(f[:120] for f in failures[:3]) + ("; …" if len(failures) > 3 else "") + ")"
            if failures
            else ""
        ),
        "- warnings: " + (", ".join(f"{k} ({v})" for k, v in s.get("llm_warnings", {}).items()) or "none"),
        "",
    ]


def _ablation_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [
        "| n | t | retention | halluc. before | halluc. after | Cov@10 | truncated | re-attributed | dropped |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['t']:g} | {_fmt(r['retention'], True)} | {_fmt(r['hallucination_before'], True)} | "
            f"{_fmt(r['hallucination_after'], True)} | {r['cov_at_10']:.3f} | {_fmt(r['pct_truncated'], True)} | "
            f"{_fmt(r['pct_reattributed'], True)} | {_fmt(r['pct_dropped'], True)} |"
        )
    return lines


def _portable_paths(data_dir: str | None) -> Callable[[str], str]:
    """Rewrite the data folder's absolute path (and its file URL) as the path given on the command line.

    Document URLs of a folder ingest are absolute ``file://`` URLs; a committed report must
    not name the machine it ran on.
    """
    if not data_dir or Path(data_dir).is_absolute():
        return lambda text: text
    absolute = Path(data_dir).resolve()
    pairs = [(absolute.as_uri(), data_dir), (str(absolute), data_dir)]

    def rewrite(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    return rewrite


def write_evidence_report(report: EvidenceReport, out: str | Path) -> tuple[Path, Path]:
    """Write ``<out>.md`` and ``<out>.json`` (a ``.md``/``.json`` suffix on ``out`` is dropped)."""
    base = Path(out)
    if base.suffix in (".md", ".json"):
        base = base.with_suffix("")
    base.parent.mkdir(parents=True, exist_ok=True)
    md, js = base.with_name(base.name + ".md"), base.with_name(base.name + ".json")
    portable = _portable_paths(report.provenance.get("data_dir"))
    atomic_write_text(md, portable(render_markdown(report)))
    atomic_write_text(js, portable(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"))
    return md, js


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
    "load_corpus",
    "load_questions",
    "render_markdown",
    "run_evidence_report",
    "shipped_nli_available",
    "source_name",
    "stress_passages",
    "write_evidence_report",
]
