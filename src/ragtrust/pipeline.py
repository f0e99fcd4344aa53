"""TrustGate: one query through the whole trust layer (SPEC section 2).

::

    retrieve ─► Stage 1 screen (gate: flag / drop-suspicious / block)
             ─► extract passages ─► n-gram align ─► generate ─► citation guard ─► post-process
             ─► Stage 2 verify (NLI factuality per sentence) ─► Trust Index ─► Verdict

Every stage is a small component with its own contract (``screening.Screener``,
``evidence.ExtractiveExtractor``/``LLMExtractor``, ``evidence.NGramAligner``, a
``Generator``, ``evidence.CitationGuard``, ``verification.FactualityVerifier``) and is
usable on its own through :meth:`TrustGate.screen`, :meth:`TrustGate.verify` and
:meth:`TrustGate.align`. Construction is cheap; :meth:`TrustGate.warm_up` loads models.

Failure policy (fail closed): an exception inside a signal, the NLI model or the verifier
is recorded in ``Verdict.errors`` with a warning naming it, and such a verdict is never
trusted. Retrieval or generation failures raise :class:`~ragtrust.errors.BackendError`:
there is no answer to judge.

Example:
    >>> from ragtrust.documents import Document
    >>> from ragtrust.testing import HashingEmbedder, LexicalNLI
    >>> docs = [Document(id="kb-1", text="Store passwords with Argon2id, a slow adaptive hash.")]
    >>> gate = TrustGate.from_documents(docs, nli=LexicalNLI(), embedder=HashingEmbedder())
    >>> verdict = gate.ask("How should passwords be stored?")
    >>> verdict.trust_level in {"HIGH", "MEDIUM", "LOW", "VERY LOW"}
    True
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtrust.config import Settings, load_settings
from ragtrust.documents import (
    AnswerSentence,
    Document,
    DocumentScreening,
    Passage,
    Query,
    RetrievedDoc,
    Verdict,
)
from ragtrust.errors import ConfigError, InputError, RagTrustError
from ragtrust.models.base import Embedder, NLIModel
from ragtrust.retrieval.base import Retriever


def load_calibration(path: str | Path) -> dict[str, Any]:
    """Read a calibration file written by ``ragtrust eval calibrate`` (needs ``tau``)."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"calibration file {file} does not exist") from exc
    except ValueError as exc:
        raise ConfigError(f"calibration file {file} is not JSON: {exc}") from exc
    tau = data.get("tau") if isinstance(data, dict) else None
    if not isinstance(tau, (int, float)) or not 0.0 <= float(tau) <= 1.0:
        raise ConfigError(f"calibration file {file} must hold a 'tau' in [0, 1]")
    return dict(data)


def apply_calibration(settings: Settings, calibration: Mapping[str, Any]) -> Settings:
    """Settings whose tau is the calibrated one (level cut points widened to admit it)."""
    tau = float(calibration["tau"])
    trust = settings.trust
    return settings.with_overrides(
        {"trust": {"tau": tau, "level_low": min(trust.level_low, tau), "level_high": max(trust.level_high, tau)}}
    )


@dataclass
class _Stopwatch:
    timings: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start


@dataclass
class TrustGate:
    """The trust layer: retrieval, screening, grounding, verification, Trust Index.

    Build it with :meth:`from_settings` (a store directory), :meth:`from_documents` (an
    in-memory corpus) or by passing components. Models load on :meth:`warm_up` or on
    first use.
    """

    settings: Settings
    nli: NLIModel
    embedder: Embedder
    retriever: Retriever | None = None
    store: Any = None
    generator: Any = None
    extractor: Any = None
    aligner: Any = None
    guard: Any = None
    screener: Any = None
    verifier: Any = None
    calibration: Mapping[str, Any] | None = None
    _warm: bool = field(default=False, init=False, repr=False)
    _store_generation: str | None = field(default=None, init=False, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_settings(
        cls,
        settings: Settings | None = None,
        *,
        store: Any = None,
        retriever: Retriever | None = None,
        nli: NLIModel | None = None,
        embedder: Embedder | None = None,
        generator: Any = None,
        calibration: str | Path | Mapping[str, Any] | None = None,
    ) -> TrustGate:
        """A gate over a :class:`~ragtrust.ingest.store.Store` (or any retriever)."""
        from ragtrust.models.embedder import default_embedder
        from ragtrust.models.nli import default_nli

        settings = settings or load_settings(env={})
        cal: Mapping[str, Any] | None = None
        if calibration is not None:
            cal = load_calibration(calibration) if isinstance(calibration, (str, Path)) else dict(calibration)
            settings = apply_calibration(settings, cal)
        if embedder is None:
            embedder = store.embedder if store is not None and getattr(store, "embedder", None) else None
            embedder = embedder or default_embedder(settings)
        if nli is None:
            # Store exposes its folder as ``root`` (``path`` kept for other store-like objects)
            root = (getattr(store, "root", None) or getattr(store, "path", None)) if store is not None else None
            cache = str(Path(root) / "nli_cache.sqlite") if root is not None else None
            nli = default_nli(settings, cache_path=cache)
        return cls(
            settings=settings,
            nli=nli,
            embedder=embedder,
            retriever=retriever,
            store=store,
            generator=generator,
            calibration=cal,
        )

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        settings: Settings | None = None,
        *,
        nli: NLIModel | None = None,
        embedder: Embedder | None = None,
        generator: Any = None,
    ) -> TrustGate:
        """A gate over an in-memory dense index of ``documents`` (no store on disk)."""
        from ragtrust.models.embedder import default_embedder
        from ragtrust.retrieval.dense import DenseIndex, DenseRetriever

        settings = settings or load_settings(env={})
        if not documents:
            raise InputError("from_documents needs at least one document")
        embedder = embedder or default_embedder(settings)
        index = DenseIndex.from_documents(documents, embedder)
        retriever = DenseRetriever(index=index, default_top_k=settings.retrieval.top_k)
        return cls.from_settings(settings, retriever=retriever, nli=nli, embedder=embedder, generator=generator)

    def _build_components(self) -> None:
        from ragtrust.evidence import CitationGuard, NGramAligner
        from ragtrust.registry import build
        from ragtrust.screening.aggregate import build_screener
        from ragtrust.verification import FactualityVerifier

        s = self.settings
        if self.screener is None:
            ledger = getattr(self.store, "ledger", None) if self.store is not None else None
            self.screener = build_screener(s, nli=self.nli, embedder=self.embedder, ledger=ledger)
        if self.verifier is None:
            self.verifier = FactualityVerifier(nli=self.nli)
        if self.aligner is None:
            self.aligner = NGramAligner(n=s.evidence.ngram_n, threshold=s.evidence.overlap_threshold)
        if self.guard is None:
            self.guard = CitationGuard(n=s.evidence.ngram_n, threshold=s.evidence.overlap_threshold)
        if self.extractor is None:
            self.extractor = build(
                "extractor",
                {"type": "extractive", "params": {"max_passages": s.evidence.max_passages}},
                embedder=self.embedder,
            )
        if self.generator is None:
            if s.generator.type == "openai":
                from ragtrust.generation.openai import OpenAICompatibleGenerator

                self.generator = OpenAICompatibleGenerator.from_config(s.generator)
            else:
                self.generator = build(
                    "generator",
                    {"type": "extractive", "params": {"max_sentences": s.evidence.max_answer_sentences}},
                    embedder=self.embedder,
                )

    def warm_up(self) -> None:
        """Build the stages and load every model (idempotent)."""
        if self._warm:
            return
        self._build_components()
        for component in (self.embedder, self.nli, self.screener, self.generator, self.extractor):
            warm = getattr(component, "warm_up", None)
            if callable(warm):
                warm()
        self._warm = True

    # ------------------------------------------------------------------ stages
    def retrieve(self, question: str) -> tuple[list[RetrievedDoc], list[str]]:
        """Top-K documents for ``question`` and any warnings from the retriever."""
        if self.store is not None and (self.retriever is None or self._store_generation is not None):
            # Follow the store: a write (ingest through the server, another process) publishes
            # a new generation; rebuild the retriever over it instead of serving a stale index.
            self.store.refresh()
            generation = self.store.generation
            if self.retriever is None or generation != self._store_generation:
                self.retriever = self.store.retriever(
                    mode=self.settings.retrieval.mode, top_k=self.settings.retrieval.top_k
                )
                self._store_generation = generation
        if self.retriever is None:
            raise ConfigError("this TrustGate has no retriever or store: pass documents to screen/verify instead")
        docs = self.retriever.retrieve(question, top_k=self.settings.retrieval.top_k)
        warnings = list(getattr(self.retriever, "last_warnings", []) or [])
        return docs, warnings

    def ask(self, question: str) -> Verdict:
        """Answer ``question`` from the store with a full trust verdict."""
        query = Query(question)
        self.warm_up()
        watch = _Stopwatch()
        with watch.stage("retrieve"):
            docs, warnings = self.retrieve(query.text)
        return self._answer(query.text, docs, watch, list(warnings))

    def answer_from(self, question: str, docs: Sequence[RetrievedDoc]) -> Verdict:
        """The full pipeline on already-retrieved documents (no retrieval step)."""
        query = Query(question)
        self.warm_up()
        return self._answer(query.text, list(docs), _Stopwatch(), [])

    def screen(self, docs: Sequence[RetrievedDoc], query: str | None = None) -> Verdict:
        """Stage 1 alone: a pre-generation verdict on ``docs`` (F = 0.5, nothing to verify)."""
        docs = self._check_docs(docs)
        self.warm_up()
        watch = _Stopwatch()
        with watch.stage("screen"):
            report = self.screener.screen(docs, query)
        documents = self._gate(report.documents)
        return self._verdict(
            query=query or "",
            docs=docs,
            report=report,
            documents=documents,
            factuality=0.5,
            factuality_errors=(),
            grounded=None,
            passages=(),
            warnings=list(report.warnings),
            watch=watch,
            stage="screen",
        )

    def verify(self, answer: str, docs: Sequence[RetrievedDoc], query: str | None = None) -> Verdict:
        """Stage 2 on a given answer: NLI factuality vs ``docs``, fused with Stage 1's C and P."""
        if not isinstance(answer, str) or not answer.strip():
            raise InputError("the answer to verify is empty")
        docs = self._check_docs(docs)
        self.warm_up()
        watch = _Stopwatch()
        with watch.stage("screen"):
            report = self.screener.screen(docs, query)
        with watch.stage("verify"):
            fact = self._factuality(answer, docs)
        sentences = tuple(
            AnswerSentence(
                text=s.text,
                support=s.support,
                supported=s.supported,
                best_doc_id=s.best_doc_id,
            )
            for s in fact.sentences
        )
        return self._verdict(
            query=query or "",
            docs=docs,
            report=report,
            documents=report.documents,
            factuality=fact.factuality,
            factuality_errors=fact.errors,
            grounded=None,
            passages=(),
            warnings=list(report.warnings),
            watch=watch,
            stage="verify",
            answer=answer,
            sentences=sentences,
        )

    def align(self, passages: Sequence[Passage], docs: Sequence[RetrievedDoc]) -> Any:
        """EvidenT alignment of ``passages`` against ``docs`` (keep / truncate / re-attribute / drop)."""
        docs = self._check_docs(docs)
        self._build_components()
        return self.aligner.align(list(passages), docs)

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _check_docs(docs: Sequence[RetrievedDoc]) -> list[RetrievedDoc]:
        docs = list(docs)
        if not docs:
            raise InputError("no documents given: pass at least one document")
        if not all(isinstance(d, RetrievedDoc) for d in docs):
            raise InputError("documents must be RetrievedDoc objects (see ragtrust.io.read_documents_jsonl)")
        return docs

    def _factuality(self, answer: str, docs: Sequence[RetrievedDoc]) -> Any:
        from ragtrust.verification import FactualityReport

        try:
            report = self.verifier.verify(answer, docs)
        except RagTrustError as exc:
            return FactualityReport(
                factuality=0.5, sentences=(), errors=(f"verification failed: {exc}",), inconclusive=True
            )
        except Exception as exc:  # fail closed on anything unexpected
            return FactualityReport(
                factuality=0.5,
                sentences=(),
                errors=(f"verification crashed: {type(exc).__name__}: {exc}",),
                inconclusive=True,
            )
        return report

    def _gate(self, screenings: Sequence[DocumentScreening]) -> tuple[DocumentScreening, ...]:
        policy = self.settings.screening.policy
        threshold = self.settings.screening.drop_threshold
        out = []
        for s in screenings:
            action = "kept"
            if s.poison_probability > threshold or s.suspicious:
                action = "dropped" if policy in ("drop-suspicious", "block") else "flagged"
            out.append(DocumentScreening(**{**_fields(s), "action": action}))
        return tuple(out)

    def _answer(self, question: str, docs: list[RetrievedDoc], watch: _Stopwatch, warnings: list[str]) -> Verdict:
        from ragtrust.generation.postprocess import evidence_answers_question, postprocess

        if not docs:
            warnings.append("Nothing was retrieved for this question: there is no evidence to answer from.")
            return self._empty_verdict(question, warnings, watch)
        with watch.stage("screen"):
            report = self.screener.screen(docs, question)
        warnings.extend(report.warnings)
        documents = self._gate(report.documents)
        policy = self.settings.screening.policy
        dropped = {d.doc_id for d in documents if d.action == "dropped"}
        blocked = policy == "block" and bool(dropped)
        context = [d for d in docs if d.id not in dropped]
        if dropped and not blocked:
            warnings.append(
                f"{len(dropped)} suspicious document(s) were withheld from the generator: {', '.join(sorted(dropped))}."
            )
        grounded = None
        passages: tuple[Passage, ...] = ()
        answer = ""
        sentences: tuple[AnswerSentence, ...] = ()
        factuality, fact_errors = 0.5, ()
        if blocked:
            warnings.append("Answer blocked: the retrieved context contains suspicious documents (policy 'block').")
        elif not context:
            warnings.append("Every retrieved document was withheld as suspicious: no answer was generated.")
        else:
            with watch.stage("extract"):
                extracted = self.extractor.extract(question, context)
            with watch.stage("align"):
                alignment = self.aligner.align(extracted, context)
                passages = tuple(alignment.passages)
            with watch.stage("generate"):
                generated = self.generator.generate(question, passages)
            with watch.stage("postprocess"):
                grounded = self.guard.apply(generated, passages, context)
                grounded = postprocess(
                    grounded,
                    self.settings.evidence,
                    answers_question=evidence_answers_question(question, passages, context),
                )
            warnings.extend(grounded.warnings)
            answer = grounded.text
            with watch.stage("verify"):
                # a withheld document is not evidence: verify against what the generator saw
                fact = self._factuality(answer, context) if grounded.sentences else None
            if fact is not None:
                factuality, fact_errors = fact.factuality, fact.errors
                by_text = {s.text: s for s in fact.sentences}
                merged = []
                for sentence in grounded.sentences:
                    support = by_text.get(sentence.text)
                    if support is None:
                        merged.append(sentence)
                        continue
                    merged.append(
                        AnswerSentence(
                            text=sentence.text,
                            citations=sentence.citations,
                            spans=sentence.spans,
                            support=support.support,
                            # grounded = a verified verbatim span OR NLI entailment
                            supported=support.supported or bool(sentence.spans),
                            best_doc_id=support.best_doc_id,
                        )
                    )
                sentences = tuple(merged)
            else:
                sentences = tuple(grounded.sentences)
        return self._verdict(
            query=question,
            docs=docs,
            report=report,
            documents=documents,
            factuality=factuality,
            factuality_errors=fact_errors,
            grounded=grounded,
            passages=passages,
            warnings=warnings,
            watch=watch,
            stage="full",
            answer=answer,
            sentences=sentences,
            refused=blocked or not context,
        )

    def _models(self) -> dict[str, str]:
        return {
            "nli": str(getattr(self.nli, "model_id", type(self.nli).__name__)),
            "embedder": str(getattr(self.embedder, "model_id", type(self.embedder).__name__)),
            "generator": str(getattr(self.generator, "name", type(self.generator).__name__)),
        }

    def _verdict(
        self,
        *,
        query: str,
        docs: Sequence[RetrievedDoc],
        report: Any,
        documents: Sequence[DocumentScreening],
        factuality: float,
        factuality_errors: Sequence[str],
        grounded: Any,
        passages: Sequence[Passage],
        warnings: list[str],
        watch: _Stopwatch,
        stage: str,
        answer: str = "",
        sentences: Sequence[AnswerSentence] = (),
        refused: bool = False,
    ) -> Verdict:
        from ragtrust.trust import compute_trust

        errors = list(report.errors) + list(factuality_errors)
        scores = [d.score for d in docs if d.score is not None]
        s_max = max(scores) if scores else None
        # An answer none of whose sentences is grounded (no verified span, no NLI entailment)
        # is not trusted: SPEC's F = 0.5 "inconclusive" must not let it pass on C and P alone.
        ungrounded = stage != "screen" and bool(sentences) and not any(s.supported for s in sentences)
        if ungrounded:
            warnings.append("No sentence of the answer is supported by the documents: the answer is not trusted.")
        with watch.stage("trust"):
            result = compute_trust(
                factuality,
                report.consistency,
                report.poison_probability,
                s_max,
                self.settings.trust,
                # a blocked / fully withheld answer is never "trusted", whatever T says
                failed=bool(errors) or refused or ungrounded,
            )
        for err in errors:
            warnings.append(f"Internal failure, verdict not trusted: {err}")
        if s_max is not None and s_max < self.settings.trust.low_retrieval_threshold:
            warnings.append(
                f"Low-confidence retrieval: the best match has similarity {s_max:.2f} "
                f"(< {self.settings.trust.low_retrieval_threshold:.2f}); the trust score was reduced."
            )
        unsupported = [s for s in sentences if not s.supported]
        if sentences and unsupported and stage != "screen":
            warnings.append(
                f"{len(unsupported)} of {len(sentences)} answer sentence(s) are not supported by the documents."
            )
        return Verdict(
            query=query,
            trust_score=result.trust_score,
            trust_level=result.level,  # type: ignore[arg-type]
            trusted=result.trusted,
            tau=self.settings.trust.tau,
            factuality=factuality,
            consistency=report.consistency,
            poison_probability=report.poison_probability,
            trust_raw=result.trust_raw,
            dampener=result.dampener,
            retrieval_modifier=result.retrieval_modifier,
            max_similarity=s_max,
            answer=answer,
            sentences=tuple(sentences),
            documents=tuple(documents),
            passages=tuple(passages),
            warnings=tuple(dict.fromkeys(warnings)),
            errors=tuple(errors),
            stage=stage,
            timings_s=dict(watch.timings),
            models=self._models(),
        )

    def _empty_verdict(self, question: str, warnings: list[str], watch: _Stopwatch) -> Verdict:
        from ragtrust.trust import compute_trust

        result = compute_trust(0.5, 0.0, 1.0, 0.0, self.settings.trust, failed=True)
        return Verdict(
            query=question,
            trust_score=result.trust_score,
            trust_level=result.level,  # type: ignore[arg-type]
            trusted=False,
            tau=self.settings.trust.tau,
            factuality=0.5,
            consistency=0.0,
            poison_probability=0.0,
            trust_raw=result.trust_raw,
            dampener=result.dampener,
            retrieval_modifier=result.retrieval_modifier,
            max_similarity=None,
            warnings=tuple(warnings),
            errors=("no documents retrieved",),
            timings_s=dict(watch.timings),
            models=self._models(),
        )


def _fields(obj: Any) -> dict[str, Any]:
    import dataclasses

    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


__all__ = ["TrustGate", "apply_calibration", "load_calibration"]
