"""TrustGate itself: the stages run in order for one query (see :mod:`ragtrust.pipeline`).

:meth:`TrustGate.ask` / :meth:`TrustGate.answer_from` run the named steps of a full answer:
screen and gate (:mod:`ragtrust.pipeline.gating`), write (extract, align, generate,
post-process), check (NLI factuality merged with the verified spans), relevance; each step
fills the :class:`~ragtrust.pipeline.decision.Outcome` that :func:`~ragtrust.pipeline.decision.decide`
turns into the verdict. :meth:`TrustGate.screen` and :meth:`TrustGate.verify` run the stages
they need and share the decision.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ragtrust import registry
from ragtrust.config import Settings, load_settings
from ragtrust.documents import AnswerSentence, DocumentScreening, Passage, Query, RetrievedDoc, Verdict, shown_id
from ragtrust.errors import BackendError, ConfigError, InputError
from ragtrust.models.base import Embedder, NLIModel
from ragtrust.pipeline.calibration import apply_calibration, load_calibration
from ragtrust.pipeline.checks import checked_factuality, checked_relevance, merge_support, no_evidence
from ragtrust.pipeline.components import default_extractor, default_generator, model_ids
from ragtrust.pipeline.decision import Outcome, decide, drop_unsupported, empty_verdict
from ragtrust.pipeline.gating import Gated, gate_documents
from ragtrust.pipeline.inputs import DocsIn, answer_text, as_retrieved_docs, optional_query, question_text
from ragtrust.pipeline.parts import Aligns, Extracts, GateStore, Grounds, JudgesRelevance, Screens, Verifies
from ragtrust.pipeline.stopwatch import Stopwatch
from ragtrust.pipeline.telemetry import traced
from ragtrust.retrieval.base import Retriever

if TYPE_CHECKING:
    from ragtrust.evidence.citations import GroundedAnswer
    from ragtrust.generation.base import Generator
    from ragtrust.verification.factuality import FactualityReport

_Part = TypeVar("_Part")


def _store_folder(store: Any) -> tuple[str | None, bool]:
    """The store's folder (``root``; ``path`` for other store-like objects) and whether it is read-only."""
    if store is None:
        return None, False
    root = getattr(store, "root", None) or getattr(store, "path", None)
    return (None if root is None else str(root)), bool(getattr(store, "read_only", False))


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
    store: GateStore | None = None
    generator: Generator | None = None
    extractor: Extracts | None = None
    aligner: Aligns | None = None
    guard: Grounds | None = None
    screener: Screens | None = None
    verifier: Verifies | None = None
    relevance: JudgesRelevance | None = None
    calibration: Mapping[str, Any] | None = None
    _warm: bool = field(default=False, init=False, repr=False)
    _store_generation: str | None = field(default=None, init=False, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_settings(
        cls,
        settings: Settings | None = None,
        *,
        store: GateStore | None = None,
        retriever: Retriever | None = None,
        nli: NLIModel | None = None,
        embedder: Embedder | None = None,
        generator: Generator | None = None,
        calibration: str | Path | Mapping[str, Any] | None = None,
    ) -> TrustGate:
        """A gate over a :class:`~ragtrust.ingest.store.Store` (or any retriever)."""
        from ragtrust.models.embedder import default_embedder
        from ragtrust.models.nli import default_nli
        from ragtrust.models.nli_engine import NLI_CACHE_FILE

        settings = settings or load_settings(env={})
        cal: Mapping[str, Any] | None = None
        if calibration is not None:
            cal = load_calibration(calibration) if isinstance(calibration, (str, Path)) else dict(calibration)
            settings = apply_calibration(settings, cal)
        if embedder is None:
            embedder = getattr(store, "embedder", None) if store is not None else None
            embedder = embedder or default_embedder(settings)
        if nli is None:
            root, read_only = _store_folder(store)
            # a read-only store keeps the NLI cache in memory (nothing is written into it)
            cache = str(Path(root) / NLI_CACHE_FILE) if root is not None and not read_only else None
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
        documents: Sequence[DocsIn] | DocsIn,
        settings: Settings | None = None,
        *,
        nli: NLIModel | None = None,
        embedder: Embedder | None = None,
        generator: Generator | None = None,
    ) -> TrustGate:
        """A gate over an in-memory dense index of ``documents`` (no store on disk).

        ``documents``: the kinds :meth:`screen` takes (str, dict ``{id, text, url?}``, Document
        or RetrievedDoc); anything else is an :class:`~ragtrust.errors.InputError`.
        """
        from ragtrust.models.embedder import default_embedder
        from ragtrust.retrieval.dense import DenseIndex, DenseRetriever

        settings = settings or load_settings(env={})
        docs = [d.document for d in as_retrieved_docs(documents, allow_empty=True)]
        if not docs:
            raise InputError("from_documents needs at least one document")
        embedder = embedder or default_embedder(settings)
        index = DenseIndex.from_documents(docs, embedder)
        retriever = DenseRetriever(index=index, default_top_k=settings.retrieval.top_k)
        return cls.from_settings(settings, retriever=retriever, nli=nli, embedder=embedder, generator=generator)

    def _build_components(self) -> None:
        from ragtrust.evidence import CitationGuard, NGramAligner
        from ragtrust.screening.aggregate import build_screener
        from ragtrust.screening.base import SCREEN_CACHE_FILE, persist_caches
        from ragtrust.verification import FactualityVerifier

        s = self.settings
        if self.screener is None:
            ledger = getattr(self.store, "ledger", None) if self.store is not None else None
            in_store = getattr(self.store, "holds", None) if self.store is not None else None
            self.screener = build_screener(s, nli=self.nli, embedder=self.embedder, ledger=ledger, in_store=in_store)
            root, read_only = _store_folder(self.store)
            if root is not None:
                # documents screened before (a corpus scan, an earlier query) cost a lookup
                persist_caches(self.screener.signals, Path(root) / SCREEN_CACHE_FILE, read_only=read_only)
        if self.verifier is None:
            self.verifier = FactualityVerifier(nli=self.nli)
        if self.relevance is None and s.relevance.enabled:
            from ragtrust.verification.relevance import RelevanceJudge

            self.relevance = RelevanceJudge(
                embedder=self.embedder,
                context_threshold=s.relevance.context_threshold,
                answer_threshold=s.relevance.answer_threshold,
                names_required=s.relevance.names_required,
                vocabulary=getattr(self.store, "vocabulary", None) if s.relevance.unknown_terms_fail else None,
                min_vocabulary=s.relevance.unknown_terms_min_vocabulary,
            )
        if self.aligner is None:
            self.aligner = NGramAligner(n=s.evidence.ngram_n, threshold=s.evidence.overlap_threshold)
        if self.guard is None:
            self.guard = CitationGuard(n=s.evidence.ngram_n, threshold=s.evidence.overlap_threshold)
        if self.extractor is None:
            self.extractor = default_extractor(s, self.embedder)
        if self.generator is None:
            self.generator = default_generator(s, self.embedder)

    def warm_up(self) -> None:
        """Build the stages and load every model (idempotent)."""
        if self._warm:
            return
        self._build_components()
        registry.warm_up(self.embedder, self.nli, self.screener, self.generator, self.extractor, self.relevance)
        if self.store is not None and hasattr(self.store, "generation"):
            # read the live generation now: a damaged store (StoreDamagedError) fails the
            # warm-up, so a server reports it as not ready instead of failing every ask
            _ = self.store.generation
        self._warm = True

    # ------------------------------------------------------------------ stages
    def retrieve(self, question: str) -> tuple[list[RetrievedDoc], list[str]]:
        """Top-K documents for ``question`` and any warnings from the retriever.

        Raises:
            BackendError: the retriever failed, or gave one id to two different documents.
        """
        retriever = self._current_retriever()
        if retriever is None:
            raise ConfigError(
                "this TrustGate has no retriever or store: call answer_from(question, docs) with documents you "
                "retrieved (or screen / verify for one stage), or build the gate with a store or retriever"
            )
        docs = _distinct(retriever.retrieve(question, top_k=self.settings.retrieval.top_k), retriever)
        warnings = list(getattr(self.retriever, "last_warnings", []) or [])
        return docs, warnings

    def _current_retriever(self) -> Retriever | None:
        """The retriever, rebuilt when the store published a new generation."""
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
        return self.retriever

    def _witnesses(self, docs: Sequence[RetrievedDoc]) -> tuple[list[RetrievedDoc], list[str]]:
        """Documents of the store nearest to ``docs`` that are not among them, and any error.

        Only looked up when a screening signal reads witnesses and the retriever has a dense
        index (a store, :meth:`from_documents`); ``screening.witnesses`` = 0 turns it off.
        """
        k = self.settings.screening.witnesses
        signals = getattr(self.screener, "signals", ())
        if k <= 0 or not docs or not any(getattr(sig, "uses_witnesses", False) for sig in signals):
            return [], []
        try:
            index = _dense_index(self._current_retriever())
            if index is None:
                return [], []
            return index.neighbours([d.document for d in docs], k), []
        except Exception as exc:  # noqa: BLE001 - fail closed: recorded, verdict not trusted
            return [], [f"witness lookup failed: {type(exc).__name__}: {exc}"]

    def _screen(self, docs: Sequence[RetrievedDoc], query: str | None) -> Any:
        """Stage 1 with the store's witnesses; a failed witness lookup is a screening error."""
        witnesses, errors = self._witnesses(docs)
        if witnesses:
            report = _built(self.screener, "screener").screen(docs, query, witnesses=witnesses)
        else:
            report = _built(self.screener, "screener").screen(docs, query)
        if errors:
            report = dataclasses.replace(report, errors=(*report.errors, *errors))
        return report

    @traced("ask")
    def ask(self, question: str) -> Verdict:
        """Answer ``question`` from the store with a full trust verdict."""
        query = Query(question_text(question))
        self.warm_up()
        watch = Stopwatch()
        with watch.stage("retrieve"):
            docs, warnings = self.retrieve(query.text)
        return self._answer(query.text, docs, watch, list(warnings))

    @traced("answer_from")
    def answer_from(self, question: str, docs: Sequence[DocsIn] | DocsIn) -> Verdict:
        """The full pipeline on already-retrieved documents (no retrieval step)."""
        query = Query(question_text(question))
        self.warm_up()
        return self._answer(query.text, self._check_docs(docs, allow_empty=True), Stopwatch(), [])

    @traced("screen")
    def screen(self, docs: Sequence[DocsIn] | DocsIn, query: str | None = None) -> Verdict:
        """Stage 1 alone: a pre-generation verdict on ``docs`` (F = 0.5, nothing to verify).

        ``docs``: str (text, id ``doc-<n>``), dict ``{id, text, url?, similarity?}``, Document or RetrievedDoc.
        ``query``: ``None`` or a ``str``; one with nothing visible in it counts as no query.
        """
        query = optional_query(query)
        docs = self._check_docs(docs)
        self.warm_up()
        watch = Stopwatch()
        out = self._screened("screen", query, docs, watch, [])
        gated = out.gated
        out.warnings.extend(gated.quarantine_warnings("must not be used to answer"))
        if gated.blocked:
            out.refusal = (
                "an answer would be blocked: policy 'block' and suspicious document(s) were retrieved "
                f"({', '.join(gated.suspicious)})"
            )
        elif not gated.kept:
            out.refusal = "every document would be withheld (suspicious or quarantined): no answer could be given"
        return self._verdict(out, watch)

    @traced("verify")
    def verify(self, answer: str, docs: Sequence[DocsIn] | DocsIn, query: str | None = None) -> Verdict:
        """Stage 2 on a given answer: NLI factuality vs ``docs``, fused with Stage 1's C and P.

        With a ``query``, the answer's relevance to it is checked too (there are no passages
        here, so context relevance is not measured). An answer with no sentence that can be
        checked against the documents ("...", "[1]", a question) is not trusted, nor one that
        cites a source that is none of ``docs`` (``[7]`` of five: ``[n]`` names the n-th
        document as given; a URL or id none of them has).

        Raises:
            InputError: ``answer`` is not a ``str`` or shows nothing (whitespace, format
                characters), ``query`` is neither ``None`` nor a ``str``, or bad ``docs``.
        """
        from ragtrust.evidence.citations import citations_outside
        from ragtrust.generation.postprocess import says_not_stated

        answer = answer_text(answer)
        query = optional_query(query)
        docs = self._check_docs(docs)
        self.warm_up()
        watch = Stopwatch()
        out = self._screened("verify", query, docs, watch, [])
        gated = out.gated
        out.warnings.extend(gated.quarantine_warnings("was not used as evidence"))
        if gated.withheld_suspicious:
            out.warnings.append(
                f"{len(gated.withheld_suspicious)} suspicious document(s) were set aside and not used as evidence: "
                f"{', '.join(gated.withheld_suspicious)}."
            )
        if gated.blocked:
            out.refusal = (
                f"policy 'block': the answer's documents include suspicious ones ({', '.join(gated.suspicious)})"
            )
            out.warnings.append("Answer not trusted: its documents include suspicious ones (policy 'block').")
        elif not gated.kept:
            out.refusal = "every document was withheld (suspicious or quarantined): nothing to check the answer against"
            out.warnings.append(
                "Every document was withheld as suspicious or quarantined: the answer cannot be checked."
            )
        with watch.stage("verify"):
            # a withheld document is not evidence: verify against what the gate kept
            fact = self._factuality(answer, gated.kept) if gated.kept else no_evidence()
        out.answer = answer
        out.outside_citations = tuple(citations_outside(answer, docs))
        out.factuality, out.factuality_errors = fact.factuality, fact.errors
        out.sentences = tuple(
            AnswerSentence(text=s.text, support=s.support, supported=s.supported, best_doc_id=s.best_doc_id)
            for s in fact.sentences
        )
        drop_unsupported(out, self.settings)
        if query is not None:
            # no passages here: the answer's relevance to the question is measured, and the
            # question's names are looked for in the documents the gate kept
            with watch.stage("relevance"):
                out.relevance, out.relevance_errors = self._relevance(query, None, out.sentences, gated.kept)
        out.not_stated = says_not_stated(answer)
        return self._verdict(out, watch)

    def align(self, passages: Sequence[Passage], docs: Sequence[RetrievedDoc]) -> Any:
        """EvidenT alignment of ``passages`` against ``docs`` (keep / truncate / re-attribute / drop)."""
        docs = self._check_docs(docs)
        self._build_components()
        return _built(self.aligner, "aligner").align(passages, docs)

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _check_docs(docs: Sequence[DocsIn] | DocsIn, *, allow_empty: bool = False) -> list[RetrievedDoc]:
        """The documents as RetrievedDoc: str, dict, Document or RetrievedDoc items (:mod:`.inputs`)."""
        return as_retrieved_docs(docs, allow_empty=allow_empty)

    def _factuality(self, answer: str, docs: Sequence[RetrievedDoc]) -> FactualityReport:
        return checked_factuality(self.verifier, answer, docs)

    def _relevance(
        self,
        question: str,
        passages: Sequence[Passage] | None,
        sentences: Sequence[AnswerSentence],
        documents: Sequence[RetrievedDoc] = (),
    ) -> tuple[Any, tuple[str, ...]]:
        """The relevance report (``None`` when disabled) and any failure of the judge (fail closed)."""
        texts = [s.text for s in sentences]
        return checked_relevance(self.relevance, question, passages, texts, documents, sentences)

    def _gate(self, screenings: Sequence[DocumentScreening], docs: Sequence[RetrievedDoc]) -> Gated:
        """The document gate under this gate's policy, asking the store's ledger when it has one."""
        return gate_documents(
            screenings,
            docs,
            policy=self.settings.screening.policy,
            drop_threshold=self.settings.screening.drop_threshold,
            ledger=getattr(self.store, "ledger", None) if self.store is not None else None,
        )

    def _screened(
        self, stage: str, query: str | None, docs: Sequence[RetrievedDoc], watch: Stopwatch, warnings: list[str]
    ) -> Outcome:
        """Step 1 of every verdict: screen ``docs`` (Stage 1) and apply the document gate."""
        with watch.stage("screen"):
            report = self._screen(docs, query)
        gated = self._gate(report.documents, docs)
        return Outcome(
            stage=stage,
            query=query or "",
            docs=docs,
            report=report,
            gated=gated,
            warnings=[*warnings, *report.warnings],
        )

    def _answer(self, question: str, docs: list[RetrievedDoc], watch: Stopwatch, warnings: list[str]) -> Verdict:
        """A full answer in named steps: screen and gate, write, check, relevance, decide."""
        if not docs:
            warnings.append("Nothing was retrieved for this question: there is no evidence to answer from.")
            return self._empty_verdict(question, warnings, watch)
        out = self._screened("full", question, docs, watch, warnings)
        gated = out.gated
        out.warnings.extend(gated.quarantine_warnings("was withheld from the generator"))
        withheld = gated.withheld_suspicious
        if withheld and not gated.blocked:
            out.warnings.append(
                f"{len(withheld)} suspicious document(s) were withheld from the generator: {', '.join(withheld)}."
            )
        context = gated.context
        if gated.blocked:
            out.warnings.append("Answer blocked: the retrieved context contains suspicious documents (policy 'block').")
            out.refusal = (
                "the answer was blocked: policy 'block' and suspicious document(s) were retrieved "
                f"({', '.join(gated.suspicious)})"
            )
        elif not context:
            out.warnings.append(
                "Every retrieved document was withheld as suspicious or quarantined: no answer was generated."
            )
            out.refusal = "every retrieved document was withheld (suspicious or quarantined): no answer was given"
        else:
            grounded = self._write(out, context, watch)
            self._check(out, grounded, context, watch)
            with watch.stage("relevance"):
                out.relevance, out.relevance_errors = self._relevance(question, out.passages, out.sentences, context)
        return self._verdict(out, watch)

    def _write(self, out: Outcome, context: list[RetrievedDoc], watch: Stopwatch) -> GroundedAnswer:
        """Write the answer from the kept context: extract, align, generate, citation guard, post-process."""
        from ragtrust.generation.postprocess import evidence_answers_question, postprocess, says_not_stated

        question = out.query
        with watch.stage("extract"):
            extracted, extraction_failure = self._extract(question, context, out.warnings)
        with watch.stage("align"):
            out.passages = tuple(_built(self.aligner, "aligner").align(extracted, context).passages)
        with watch.stage("generate"):
            generated = _built(self.generator, "generator").generate(question, out.passages)
        out.warnings.extend(generated.warnings)
        if extraction_failure is not None:
            out.refusal = extraction_failure
        elif not out.passages:
            out.refusal = "no passage of the retrieved documents was verified as evidence for the answer"
        elif generated.cut_off:
            out.refusal = (
                "the answer was cut off at the writer's token limit: its last sentence may be unfinished "
                "(raise [generator] max_tokens)"
            )
        with watch.stage("postprocess"):
            grounded = _built(self.guard, "guard").apply(generated, out.passages, context)
            grounded = postprocess(
                grounded,
                self.settings.evidence,
                answers_question=evidence_answers_question(question, out.passages, context),
            )
        out.warnings.extend(grounded.warnings)
        out.answer = grounded.text
        out.preface = grounded.preface
        out.not_stated = bool(grounded.preface) or says_not_stated(out.answer)
        if out.refusal is None and not grounded.sentences:
            out.refusal = "the generator wrote no answer from the evidence"
            out.warnings.append("The generator wrote no usable answer: nothing to trust.")
        return grounded

    def _check(self, out: Outcome, grounded: GroundedAnswer, context: list[RetrievedDoc], watch: Stopwatch) -> None:
        """Stage 2 on the written answer: F, and each sentence's NLI support merged with its verified spans."""
        with watch.stage("verify"):
            # a withheld document is not evidence: verify against what the generator saw
            fact = self._factuality(out.answer, context) if grounded.sentences else None
        if fact is None:
            out.sentences = tuple(grounded.sentences)
            return
        out.factuality, out.factuality_errors = fact.factuality, fact.errors
        out.sentences = merge_support(grounded.sentences, fact.sentences)
        drop_unsupported(out, self.settings)

    def _extract(
        self, question: str, context: Sequence[RetrievedDoc], warnings: list[str]
    ) -> tuple[list[Passage], str | None]:
        """The extractor's passages, and why there are none when an LLM's reply was unusable.

        A malformed reply (after the extractor's repair attempt) is reported as a failed
        condition of the verdict, never raised: the screening result still reaches the user.
        """
        from ragtrust.evidence.extract_llm import extract_or_report

        extracted, notes, failure = extract_or_report(_built(self.extractor, "extractor"), question, context)
        warnings.extend(notes)
        if failure is None:
            return extracted, None
        warnings.append(f"No evidence could be extracted: {failure}")
        return [], f"the extractor's reply was unusable: {failure}"

    def model_ids(self) -> dict[str, str]:
        """The models and prompt versions behind a verdict (recorded in every result)."""
        return model_ids(nli=self.nli, embedder=self.embedder, generator=self.generator, extractor=self.extractor)

    def _verdict(self, out: Outcome, watch: Stopwatch) -> Verdict:
        """Fuse T and decide: trusted iff T >= tau and no other condition failed (see ``trust``)."""
        return decide(out, self.settings, watch, self.model_ids())

    def _empty_verdict(self, question: str, warnings: list[str], watch: Stopwatch) -> Verdict:
        return empty_verdict(question, warnings, self.settings, watch, self.model_ids())


def _built(part: _Part | None, name: str) -> _Part:
    """A stage :meth:`TrustGate.warm_up` built (every public entry point builds them first)."""
    if part is None:
        raise RuntimeError(f"TrustGate.{name} is not built: call warm_up() first")
    return part


def _distinct(docs: Sequence[RetrievedDoc], retriever: Any) -> list[RetrievedDoc]:
    """``docs`` with exact repeats left out; one id for two different documents is a :class:`BackendError`.

    The gate screens, withholds and cites by id: two documents under one id would share a
    verdict (a clean one withheld for the other's injection, their conflict read as one
    document contradicting itself).
    """
    seen: dict[str, RetrievedDoc] = {}
    for doc in docs:
        first = seen.setdefault(doc.id, doc)
        if first is not doc and first.document.content_hash != doc.document.content_hash:
            name = getattr(retriever, "name", type(retriever).__name__)
            raise BackendError(
                f"retriever {name!r} returned the id {shown_id(doc.id)} for 2 different documents: "
                "a retriever must give each document its own id"
            )
    return [doc for doc in docs if seen[doc.id] is doc]


def _dense_index(retriever: Any) -> Any:
    """The dense index behind a retriever (dense, or the dense side of a hybrid), else ``None``."""
    for candidate in (retriever, getattr(retriever, "dense", None)):
        index = getattr(candidate, "index", None)
        if index is not None and callable(getattr(index, "neighbours", None)):
            return index
    return None


__all__ = ["TrustGate"]
