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

The gate (``screening.policy``): ``drop-suspicious`` (default) withholds documents above
``drop_threshold`` from the generator and from the evidence; ``flag`` keeps them, and a
verdict whose context held one is never trusted; ``block`` gives no answer when any is
retrieved. A document quarantined in the store's ledger is withheld under every policy.

The decision (see :mod:`ragtrust.trust`): ``Verdict.trusted`` needs ``T >= tau`` *and* no
internal failure, an answer, a grounded sentence, no suspicious document in the context,
evidence about the question and an answer that addresses it (``relevance``: the RAG
triad's context and answer relevance, :mod:`ragtrust.verification.relevance`), and an
answer that does not say the documentation "does not explicitly state" one;
``Verdict.decision_reasons`` lists the conditions that failed.

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
    ClaimRef,
    Conflict,
    Document,
    DocumentScreening,
    Passage,
    Query,
    RetrievedDoc,
    Verdict,
    normalize_text,
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


@dataclass(frozen=True)
class _Gated:
    """What the pre-generation gate decided for one retrieved set.

    Attributes:
        documents: the screenings with their ``action`` (kept / flagged / dropped).
        kept: the documents not dropped, in retrieval order.
        quarantined: id -> why, for documents the ledger has quarantined (always dropped).
        suspicious: ids above the drop threshold or suspicious (quarantined or not).
        blocked: policy ``block`` and at least one suspicious document: no answer.
        errors: quarantine lookups that failed (fail closed).
    """

    documents: tuple[DocumentScreening, ...]
    kept: tuple[RetrievedDoc, ...]
    quarantined: Mapping[str, str]
    suspicious: tuple[str, ...]
    blocked: bool
    errors: tuple[str, ...] = ()

    @property
    def context(self) -> list[RetrievedDoc]:
        """What may reach the generator: nothing when blocked, else the kept documents."""
        return [] if self.blocked else list(self.kept)

    @property
    def withheld_suspicious(self) -> list[str]:
        """Ids dropped for their screening alone (quarantined ones are named separately)."""
        return sorted(d.doc_id for d in self.documents if d.action == "dropped" and d.doc_id not in self.quarantined)

    def quarantine_warnings(self, consequence: str) -> list[str]:
        """One warning per quarantined document, naming it and what happened to it."""
        return [
            f"Document {doc_id} is quarantined ({why}) and {consequence}." for doc_id, why in self.quarantined.items()
        ]


def _uses(documents: Sequence[DocumentScreening]) -> str:
    return ", ".join(f"{d.doc_id} (P = {d.poison_probability:.2f})" for d in documents)


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
    relevance: Any = None
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
        if self.relevance is None and s.relevance.enabled:
            from ragtrust.verification.relevance import RelevanceJudge

            self.relevance = RelevanceJudge(
                embedder=self.embedder,
                context_threshold=s.relevance.context_threshold,
                answer_threshold=s.relevance.answer_threshold,
            )
        if self.aligner is None:
            self.aligner = NGramAligner(n=s.evidence.ngram_n, threshold=s.evidence.overlap_threshold)
        if self.guard is None:
            self.guard = CitationGuard(n=s.evidence.ngram_n, threshold=s.evidence.overlap_threshold)
        if self.extractor is None:
            if s.evidence.extractor == "llm":
                from ragtrust.evidence.extract import LLMExtractor
                from ragtrust.generation.openai import ChatClient
                from ragtrust.prompts import EXTRACTION_SCHEMA

                schema = {
                    "type": "json_schema",
                    "json_schema": {"name": "collected_passages", "schema": EXTRACTION_SCHEMA},
                }
                self.extractor = LLMExtractor(
                    ChatClient.from_config(s.generator),
                    max_passages=s.evidence.max_passages,
                    context_tokens=s.generator.context_tokens,
                    reply_tokens=s.generator.max_tokens,
                    response_format=schema if s.evidence.json_schema else None,
                )
            else:
                self.extractor = build(
                    "extractor",
                    {"type": "extractive", "params": {"max_passages": s.evidence.max_passages}},
                    embedder=self.embedder,
                )
        if self.generator is None:
            if s.generator.type == "openai":
                from ragtrust.generation.openai import OpenAICompatibleGenerator

                self.generator = OpenAICompatibleGenerator.from_config(
                    s.generator, max_sentences=s.evidence.max_answer_sentences
                )
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
        for component in (self.embedder, self.nli, self.screener, self.generator, self.extractor, self.relevance):
            warm = getattr(component, "warm_up", None)
            if callable(warm):
                warm()
        if self.store is not None and hasattr(self.store, "generation"):
            # read the live generation now: a damaged store (StoreDamagedError) fails the
            # warm-up, so a server reports it as not ready instead of failing every ask
            _ = self.store.generation
        self._warm = True

    # ------------------------------------------------------------------ stages
    def retrieve(self, question: str) -> tuple[list[RetrievedDoc], list[str]]:
        """Top-K documents for ``question`` and any warnings from the retriever."""
        retriever = self._current_retriever()
        if retriever is None:
            raise ConfigError("this TrustGate has no retriever or store: pass documents to screen/verify instead")
        docs = retriever.retrieve(question, top_k=self.settings.retrieval.top_k)
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
        import dataclasses

        witnesses, errors = self._witnesses(docs)
        if witnesses:
            report = self.screener.screen(docs, query, witnesses=witnesses)
        else:
            report = self.screener.screen(docs, query)
        if errors:
            report = dataclasses.replace(report, errors=(*report.errors, *errors))
        return report

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
            report = self._screen(docs, query)
        gated = self._gate(report.documents, docs)
        warnings = [*report.warnings, *gated.quarantine_warnings("must not be used to answer")]
        refusal = None
        if gated.blocked:
            refusal = (
                "an answer would be blocked: policy 'block' and suspicious document(s) were retrieved "
                f"({', '.join(gated.suspicious)})"
            )
        elif not gated.kept:
            refusal = "every document would be withheld (suspicious or quarantined): no answer could be given"
        return self._verdict(
            query=query or "",
            docs=docs,
            report=report,
            gated=gated,
            factuality=0.5,
            factuality_errors=(),
            grounded=None,
            passages=(),
            warnings=warnings,
            watch=watch,
            stage="screen",
            refusal=refusal,
        )

    def verify(self, answer: str, docs: Sequence[RetrievedDoc], query: str | None = None) -> Verdict:
        """Stage 2 on a given answer: NLI factuality vs ``docs``, fused with Stage 1's C and P.

        With a ``query``, the answer's relevance to it is checked too (there are no passages
        here, so context relevance is not measured).
        """
        from ragtrust.generation.postprocess import says_not_stated

        if not isinstance(answer, str) or not answer.strip():
            raise InputError("the answer to verify is empty")
        docs = self._check_docs(docs)
        self.warm_up()
        watch = _Stopwatch()
        with watch.stage("screen"):
            report = self._screen(docs, query)
        gated = self._gate(report.documents, docs)
        warnings = [*report.warnings, *gated.quarantine_warnings("was not used as evidence")]
        if gated.withheld_suspicious:
            warnings.append(
                f"{len(gated.withheld_suspicious)} suspicious document(s) were set aside and not used as evidence: "
                f"{', '.join(gated.withheld_suspicious)}."
            )
        refusal = None
        if gated.blocked:
            refusal = f"policy 'block': the answer's documents include suspicious ones ({', '.join(gated.suspicious)})"
            warnings.append("Answer not trusted: its documents include suspicious ones (policy 'block').")
        elif not gated.kept:
            refusal = "every document was withheld (suspicious or quarantined): nothing to check the answer against"
            warnings.append("Every document was withheld as suspicious or quarantined: the answer cannot be checked.")
        with watch.stage("verify"):
            # a withheld document is not evidence: verify against what the gate kept
            fact = self._factuality(answer, gated.kept) if gated.kept else _no_evidence()
        sentences = tuple(
            AnswerSentence(
                text=s.text,
                support=s.support,
                supported=s.supported,
                best_doc_id=s.best_doc_id,
            )
            for s in fact.sentences
        )
        relevance: Any = None
        relevance_errors: tuple[str, ...] = ()
        if query and query.strip():
            # no passages here: only the answer's relevance to the question is measured
            with watch.stage("relevance"):
                relevance, relevance_errors = self._relevance(query, None, [s.text for s in sentences])
        return self._verdict(
            query=query or "",
            docs=docs,
            report=report,
            gated=gated,
            factuality=fact.factuality,
            factuality_errors=fact.errors,
            grounded=None,
            passages=(),
            warnings=warnings,
            watch=watch,
            stage="verify",
            answer=answer,
            sentences=sentences,
            refusal=refusal,
            relevance=relevance,
            relevance_errors=relevance_errors,
            not_stated=says_not_stated(answer),
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

    def _relevance(
        self, question: str, passages: Sequence[Passage] | None, answer_sentences: Sequence[str]
    ) -> tuple[Any, tuple[str, ...]]:
        """The relevance report (``None`` when disabled) and any failure of the judge (fail closed)."""
        if self.relevance is None:
            return None, ()
        try:
            return self.relevance.judge(question, passages, answer_sentences), ()
        except Exception as exc:  # noqa: BLE001 - fail closed: recorded, verdict not trusted
            return None, (f"relevance check failed: {type(exc).__name__}: {exc}",)

    def _gate(self, screenings: Sequence[DocumentScreening], docs: Sequence[RetrievedDoc]) -> _Gated:
        """Apply the policy; a quarantined document is dropped under every policy.

        Quarantine is read from the provenance finding's structured flag; when the
        provenance signal gave none (not configured, or it failed) and the gate has a
        store, the ledger is asked directly.
        """
        from ragtrust.screening.provenance import PROVENANCE, ledger_quarantine_note, quarantine_note

        policy = self.settings.screening.policy
        threshold = self.settings.screening.drop_threshold
        ledger = getattr(self.store, "ledger", None) if self.store is not None else None
        out: list[DocumentScreening] = []
        quarantined: dict[str, str] = {}
        suspicious: list[str] = []
        errors: list[str] = []
        for s, doc in zip(screenings, docs, strict=True):
            note = quarantine_note(s.signals)
            ran = any(r.name == PROVENANCE and not r.skipped for r in s.signals)
            if note is None and ledger is not None and not ran:
                try:
                    note = ledger_quarantine_note(ledger, doc)
                except Exception as exc:  # noqa: BLE001 - fail closed: recorded, verdict not trusted
                    errors.append(f"quarantine lookup failed for {s.doc_id}: {type(exc).__name__}: {exc}")
            is_suspicious = s.poison_probability > threshold or s.suspicious
            if is_suspicious:
                suspicious.append(s.doc_id)
            action = "kept"
            if note is not None:
                quarantined[s.doc_id] = note
                action = "dropped"
            elif is_suspicious:
                action = "dropped" if policy in ("drop-suspicious", "block") else "flagged"
            out.append(DocumentScreening(**{**_fields(s), "action": action}))
        dropped = {d.doc_id for d in out if d.action == "dropped"}
        return _Gated(
            documents=tuple(out),
            kept=tuple(d for d in docs if d.id not in dropped),
            quarantined=quarantined,
            suspicious=tuple(suspicious),
            blocked=policy == "block" and bool(suspicious),
            errors=tuple(errors),
        )

    def _answer(self, question: str, docs: list[RetrievedDoc], watch: _Stopwatch, warnings: list[str]) -> Verdict:
        from ragtrust.generation.postprocess import evidence_answers_question, postprocess, says_not_stated

        if not docs:
            warnings.append("Nothing was retrieved for this question: there is no evidence to answer from.")
            return self._empty_verdict(question, warnings, watch)
        with watch.stage("screen"):
            report = self._screen(docs, question)
        warnings.extend(report.warnings)
        gated = self._gate(report.documents, docs)
        warnings.extend(gated.quarantine_warnings("was withheld from the generator"))
        withheld = gated.withheld_suspicious
        context = gated.context
        if withheld and not gated.blocked:
            warnings.append(
                f"{len(withheld)} suspicious document(s) were withheld from the generator: {', '.join(withheld)}."
            )
        refusal = None
        grounded = None
        passages: tuple[Passage, ...] = ()
        answer = ""
        sentences: tuple[AnswerSentence, ...] = ()
        factuality, fact_errors = 0.5, ()
        relevance: Any = None
        relevance_errors: tuple[str, ...] = ()
        if gated.blocked:
            warnings.append("Answer blocked: the retrieved context contains suspicious documents (policy 'block').")
            refusal = (
                "the answer was blocked: policy 'block' and suspicious document(s) were retrieved "
                f"({', '.join(gated.suspicious)})"
            )
        elif not context:
            warnings.append(
                "Every retrieved document was withheld as suspicious or quarantined: no answer was generated."
            )
            refusal = "every retrieved document was withheld (suspicious or quarantined): no answer was given"
        else:
            with watch.stage("extract"):
                extracted, extraction_failure = self._extract(question, context, warnings)
            with watch.stage("align"):
                alignment = self.aligner.align(extracted, context)
                passages = tuple(alignment.passages)
            with watch.stage("generate"):
                generated = self.generator.generate(question, passages)
            warnings.extend(generated.warnings)
            if extraction_failure is not None:
                refusal = extraction_failure
            elif not passages:
                refusal = "no passage of the retrieved documents was verified as evidence for the answer"
            with watch.stage("postprocess"):
                grounded = self.guard.apply(generated, passages, context)
                grounded = postprocess(
                    grounded,
                    self.settings.evidence,
                    answers_question=evidence_answers_question(question, passages, context),
                )
            warnings.extend(grounded.warnings)
            answer = grounded.text
            if refusal is None and not grounded.sentences:
                refusal = "the generator wrote no answer from the evidence"
                warnings.append("The generator wrote no usable answer: nothing to trust.")
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
            with watch.stage("relevance"):
                relevance, relevance_errors = self._relevance(question, passages, [s.text for s in sentences])
        return self._verdict(
            query=question,
            docs=docs,
            report=report,
            gated=gated,
            factuality=factuality,
            factuality_errors=fact_errors,
            grounded=grounded,
            passages=passages,
            warnings=warnings,
            watch=watch,
            stage="full",
            answer=answer,
            sentences=sentences,
            refusal=refusal,
            relevance=relevance,
            relevance_errors=relevance_errors,
            preface=grounded.preface if grounded is not None else "",
            not_stated=grounded is not None and (bool(grounded.preface) or says_not_stated(answer)),
        )

    def _extract(
        self, question: str, context: Sequence[RetrievedDoc], warnings: list[str]
    ) -> tuple[list[Passage], str | None]:
        """The extractor's passages, and why there are none when an LLM's reply was unusable.

        A malformed reply (after the extractor's repair attempt) is reported as a failed
        condition of the verdict, never raised: the screening result still reaches the user.
        """
        from ragtrust.evidence.extract import ExtractionError

        try:
            with_warnings = getattr(self.extractor, "extract_with_warnings", None)
            if callable(with_warnings):
                extracted, notes = with_warnings(question, context)
                warnings.extend(notes)
                return list(extracted), None
            return list(self.extractor.extract(question, context)), None
        except ExtractionError as exc:
            warnings.append(f"No evidence could be extracted: {exc}")
            return [], f"the extractor's reply was unusable: {exc}"

    def model_ids(self) -> dict[str, str]:
        """The models and prompt versions behind a verdict (recorded in every result)."""
        models = {
            "nli": str(getattr(self.nli, "model_id", type(self.nli).__name__)),
            "embedder": str(getattr(self.embedder, "model_id", type(self.embedder).__name__)),
            "generator": str(getattr(self.generator, "name", type(self.generator).__name__)),
        }
        for role, component in (("generator", self.generator), ("extractor", self.extractor)):
            model = getattr(component, "model", None) or getattr(getattr(component, "client", None), "model", None)
            if isinstance(model, str) and model:
                models[f"{role}_model"] = model
            version = getattr(component, "prompt_version", None)
            if isinstance(version, str):
                models[f"{role}_prompt"] = version
        return models

    def _verdict(
        self,
        *,
        query: str,
        docs: Sequence[RetrievedDoc],
        report: Any,
        gated: _Gated,
        factuality: float,
        factuality_errors: Sequence[str],
        grounded: Any,
        passages: Sequence[Passage],
        warnings: list[str],
        watch: _Stopwatch,
        stage: str,
        answer: str = "",
        sentences: Sequence[AnswerSentence] = (),
        refusal: str | None = None,
        relevance: Any = None,
        relevance_errors: Sequence[str] = (),
        preface: str = "",
        not_stated: bool = False,
    ) -> Verdict:
        """Fuse T and decide: trusted iff T >= tau and no other condition failed (see ``trust``)."""
        from ragtrust.trust import compute_trust

        errors = list(report.errors) + list(gated.errors) + list(factuality_errors) + list(relevance_errors)
        scores = [d.score for d in docs if d.score is not None]
        s_max = max(scores) if scores else None
        # the conditions of the decision besides T >= tau, each failed one in words
        reasons = [f"screening failed: {e}" for e in report.errors]
        reasons += [*gated.errors, *factuality_errors, *relevance_errors]
        if refusal is not None:
            reasons.append(refusal)
        # Under policy 'flag' a suspicious document stays in the context: T may still clear tau
        # (a relevance-weighted P moves little), but the answer is then written from, or checked
        # against, suspicious text, and is never trusted.
        used = [d for d in gated.documents if d.action == "flagged"]
        if used:
            used_reasons, used_warnings = _suspicious_use(stage, used, passages)
            reasons.extend(used_reasons)
            warnings.extend(used_warnings)
        # An answer none of whose sentences is grounded (no verified span, no NLI entailment)
        # is not trusted: SPEC's F = 0.5 "inconclusive" must not let it pass on C and P alone.
        ungrounded = stage != "screen" and bool(sentences) and not any(s.supported for s in sentences)
        if ungrounded:
            warnings.append("No sentence of the answer is supported by the documents: the answer is not trusted.")
            reasons.append("no sentence of the answer is supported by the documents")
        # The RAG triad's other two legs: evidence about the question, an answer that addresses
        # it. T measures neither (a grounded answer to another question scores as well).
        if relevance is not None:
            reasons.extend(relevance.failures())
            warnings.extend(relevance.warnings())
        # "The documentation does not explicitly state an answer": the sentences that follow
        # are the closest evidence, not an answer, however well grounded they are.
        if not_stated and self.settings.relevance.not_stated_fails and stage != "screen":
            reasons.append("the answer says the documentation does not explicitly state an answer to the question")
        # Two sources that disagree: an answer built on a contested claim (or on the side the
        # witnesses blame) is not trusted, whatever T says.
        conflicts = tuple(getattr(report, "conflicts", ()) or ())
        conflict_reasons, conflict_warnings = _conflict_use(stage, conflicts, sentences, gated.documents)
        reasons.extend(conflict_reasons)
        warnings.extend(conflict_warnings)
        with watch.stage("trust"):
            result = compute_trust(
                factuality,
                report.consistency,
                report.poison_probability,
                s_max,
                self.settings.trust,
                # any failed condition besides the score: never trusted, level at most LOW
                failed=bool(reasons),
            )
        if result.trust_score < self.settings.trust.tau:
            reasons.append(_score_reason(result.trust_score, self.settings.trust.tau))
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
            preface=preface,
            sentences=tuple(sentences),
            documents=gated.documents,
            passages=tuple(passages),
            context_relevance=None if relevance is None else relevance.context,
            answer_relevance=None if relevance is None else relevance.answer,
            warnings=tuple(dict.fromkeys(warnings)),
            errors=tuple(errors),
            decision_reasons=tuple(dict.fromkeys(reasons)),
            conflicts=conflicts,
            stage=stage,
            timings_s=dict(watch.timings),
            models=self.model_ids(),
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
            decision_reasons=(
                "nothing was retrieved: there is no evidence to answer from",
                _score_reason(result.trust_score, self.settings.trust.tau),
            ),
            timings_s=dict(watch.timings),
            models=self.model_ids(),
        )


def _suspicious_use(
    stage: str, used: Sequence[DocumentScreening], passages: Sequence[Passage]
) -> tuple[list[str], list[str]]:
    """Decision reasons and warnings for suspicious documents kept in the context (policy ``flag``)."""

    def reason(d: DocumentScreening, how: str) -> str:
        return f"a suspicious document ({d.doc_id}, P = {d.poison_probability:.2f}) {how}"

    keeps = "(policy 'flag' keeps suspicious documents)"
    if stage == "verify":
        return [reason(d, "was used as evidence") for d in used], [
            f"The answer was checked against suspicious text: {_uses(used)} stayed in the evidence {keeps}. "
            "Do not rely on the answer."
        ]
    if stage != "full":
        return [reason(d, "would be used in the context (policy 'flag')") for d in used], [
            f"Suspicious text would be used to write an answer: {_uses(used)} would stay in the context {keeps}."
        ]
    # the generator saw passages of some; the others sat in the context the answer was drawn
    # from and checked against
    fed = {p.doc_id for p in passages}
    written = [d for d in used if d.doc_id in fed]
    nearby = [d for d in used if d.doc_id not in fed]
    reasons = [reason(d, "was used to write the answer") for d in written]
    reasons += [reason(d, "was used in the context") for d in nearby]
    warnings = []
    if written:
        warnings.append(
            f"Suspicious text was used to write this answer: passages of {_uses(written)} went to the generator "
            f"{keeps}. Do not rely on the answer."
        )
    if nearby:
        warnings.append(
            f"Suspicious text was in the context used to write and check this answer: {_uses(nearby)} {keeps}. "
            "Do not rely on the answer."
        )
    return reasons, warnings


def _dense_index(retriever: Any) -> Any:
    """The dense index behind a retriever (dense, or the dense side of a hybrid), else ``None``."""
    for candidate in (retriever, getattr(retriever, "dense", None)):
        index = getattr(candidate, "index", None)
        if index is not None and callable(getattr(index, "neighbours", None)):
            return index
    return None


def _touches(sentence: AnswerSentence, claim: ClaimRef) -> bool:
    """Whether an answer sentence uses a claim: a verified span overlaps it, or the texts contain each other."""
    if any(sp.doc_id == claim.doc_id and sp.start < claim.end and claim.start < sp.end for sp in sentence.spans):
        return True
    mine, theirs = normalize_text(sentence.text).lower(), normalize_text(claim.text).lower()
    return bool(mine and theirs) and (theirs in mine or mine in theirs)


def _conflict_use(
    stage: str,
    conflicts: Sequence[Conflict],
    sentences: Sequence[AnswerSentence],
    screenings: Sequence[DocumentScreening],
) -> tuple[list[str], list[str]]:
    """Decision reasons and warnings for conflicts that touch the answer (or, screening alone, the context).

    A contested conflict fails the decision when the answer uses either claim (a screening
    verdict: when either document would be in the context); a resolved one when the answer
    uses the blamed side.
    """
    kept = {d.doc_id for d in screenings if d.action != "dropped"}
    reasons: list[str] = []
    warnings: list[str] = []
    for c in conflicts:
        sides = [side for side in (c.left, c.right) if side.origin == "retrieved" and side.doc_id in kept]
        if c.blamed is not None:
            sides = [side for side in sides if side.doc_id == c.blamed]
        if stage != "screen":
            sides = [side for side in sides if any(_touches(s, side) for s in sentences)]
        if not sides:
            continue
        said = f"{c.left.doc_id} says {_short(c.left.text)}, {c.right.doc_id} says {_short(c.right.text)}"
        how = "contested" if c.blamed is None else f"{c.blamed} blamed: {c.resolution}"
        use = "would use" if stage == "screen" else "uses"
        reasons.append(f"the answer {use} a claim that another source contradicts ({c.kind}, {how}): {said}")
        warnings.append(f"Sources disagree ({c.kind}, {how}): {said}. The answer {use} one side; check which is right.")
    return reasons, warnings


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026")


def _score_reason(trust_score: float, tau: float) -> str:
    return f"T = {trust_score:.3f} < tau {tau:g}"


def _no_evidence() -> Any:
    from ragtrust.verification import FactualityReport

    return FactualityReport(factuality=0.5, sentences=(), inconclusive=True)


def _fields(obj: Any) -> dict[str, Any]:
    import dataclasses

    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


__all__ = ["TrustGate", "apply_calibration", "load_calibration"]
