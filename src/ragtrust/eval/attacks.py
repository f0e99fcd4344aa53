"""The attack generator of SPEC section 7: seeded knowledge-poisoning of a corpus.

Strategies:

- ``contradiction`` - append a statement that contradicts the document;
- ``instruction_injection`` - append a directive that tries to steer the answer;
- ``entity_swap`` - replace named entities, numbers, dates, CWE ids, key lengths or
  algorithm names **in place** (nothing is appended);
- ``subtle_manipulation`` - weaken the claim: false qualifiers, hedging, modal verbs;
- ``mixed`` - the strategy is drawn per poisoned document.

Template families and the development / held-out split
-------------------------------------------------------
The reference implementation poisoned documents with five fixed templates per strategy
that its own detector regexes matched, so its detection numbers were circular. Here every
strategy has several *families* (a family is one way of writing the attack). Families marked
``development`` are the ones the poison detector's patterns may be developed and tested
on (they use the classic markers of SPEC section 3: "ignore previous instructions",
"CORRECTION:", "common misconception", ...). Families marked ``held_out`` are reserved for
evaluation: the benchmark uses only them by default (``families="held_out"``), and a test
asserts that no held-out family's distinctive trigger phrase appears literally in
:mod:`ragtrust.screening.patterns`. A held-out attack may still be caught by a generic
pattern or by another signal - that is what the evaluation measures.

=====================  ==============================================  ===========================================
strategy               development families                            held-out families
=====================  ==============================================  ===========================================
contradiction          misconception_flip, contrary_belief,            bare_assertion, later_review,
                       actually_false                                  practitioner_consensus
instruction_injection  ignore_previous, correction_directive,          summariser_note, editorial_guideline,
                       system_override                                 verbatim_reply
entity_swap            number_shift                                    named_entity, date_shift, security_identifier
subtle_manipulation    expert_doubt, optional_step                     modal_weakening, rare_exception,
                                                                       hedged_claim, narrow_scope*,
                                                                       acceptable_shortcut*
=====================  ==============================================  ===========================================

(* security-specific: only for documents with CWE metadata.)

Security-specific forms (SPEC section 7): for documents that carry CWE ids (the secure-coding
knowledge base), the injected false statement recommends the insecure practice of the
rule's weakness (e.g. a "CORRECTION:" directive recommending a single round of MD5 for
passwords), ``security_identifier`` changes CWE numbers, key lengths, algorithm names and
protocol versions, and ``acceptable_shortcut`` / ``narrow_scope`` add misleading
qualifiers that make the insecure practice sound acceptable. Documents with
``metadata["false_claims"]`` (TruthfulQA's incorrect answers, FEVER's flipped claim) use
those natural false statements; otherwise the first sentence of the document body is negated.

Ground truth (:class:`PoisonRecord`): strategy, family, split, original and poisoned text,
the edited span ``(start, end)`` in the poisoned text (and the replaced span in the
original), the individual edits, and the injected false statement (the hypothesis for the
end-to-end attack-success NLI check). Clean and poisoned corpora are paired by index.

Named entities come from spaCy's ``en_core_web_sm`` pipeline (the ``eval`` extra), loaded
lazily; replacements are other entities of the same type found in the corpus itself - no
fixed swap dictionary.

Example:
    >>> from ragtrust.documents import Document
    >>> docs = [Document(id=f"d{i}", text=f"Is {i} small? Yes, {i} is a small number.") for i in range(10)]
    >>> result = AttackGenerator(strategy="instruction_injection", rate=0.3, seed=42).attack(docs)
    >>> len(result.records), result.records[0].strategy
    (3, 'instruction_injection')
    >>> r = result.records[0]
    >>> r.poisoned[r.span[0]:r.span[1]] == r.edited_text
    True
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrust.documents import Document
from ragtrust.errors import ConfigError, InputError
from ragtrust.eval.attack_edits import (
    _CWE_RE,
    INSECURE_PRACTICES,
    NAMED_LABELS,
    SPACY_INSTALL,
    Edit,
    Entity,
    Payload,
    _body_start,
    apply_replacements,
    insecure_practice,
    load_spacy,
    negate_statement,
)
from ragtrust.eval.attack_families import (
    ATTACK_STRATEGIES,
    FAMILIES,
    FAMILY_SELECTIONS,
    STRATEGIES,
    AttackContext,
    AttackFamily,
    families_for,
    held_out_triggers,
)

# -- ground truth and results -----------------------------------------------------------


@dataclass(frozen=True)
class PoisonRecord:
    """Ground truth for one poisoned document.

    Attributes:
        index: position in the corpus (clean and poisoned corpora are paired by index).
        doc_id: the document id (unchanged by poisoning).
        strategy / family / split: what produced it.
        original / poisoned: the full clean and poisoned texts.
        span: ``(start, end)`` of the edited region in the poisoned text.
        edited_text: ``poisoned[span[0]:span[1]]``.
        original_span / original_text: the region it replaced in the clean text
            (empty for appended attacks).
        false_statement: the injected false claim (hypothesis of the attack-success NLI).
        edits: the individual replacements.
    """

    index: int
    doc_id: str
    strategy: str
    family: str
    split: str
    original: str
    poisoned: str
    span: tuple[int, int]
    edited_text: str
    original_span: tuple[int, int]
    original_text: str
    false_statement: str
    edits: tuple[Edit, ...] = ()

    @property
    def appended(self) -> bool:
        """True when the attack appended text after the (whitespace-stripped) clean text."""
        return self.original_text.strip() == "" and self.original_span[1] == len(self.original)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        data = dataclasses.asdict(self)
        data["span"] = list(self.span)
        data["original_span"] = list(self.original_span)
        return data


def _record(index: int, doc: Document, family: AttackFamily, payload: Payload) -> PoisonRecord:
    start = min(e.start for e in payload.edits)
    end = max(e.end for e in payload.edits)
    o_start = min(e.original_start for e in payload.edits)
    o_end = max(e.original_end for e in payload.edits)
    return PoisonRecord(
        index=index,
        doc_id=doc.id,
        strategy=family.strategy,
        family=family.name,
        split=family.split,
        original=doc.text,
        poisoned=payload.text,
        span=(start, end),
        edited_text=payload.text[start:end],
        original_span=(o_start, o_end),
        original_text=doc.text[o_start:o_end],
        false_statement=payload.false_statement,
        edits=payload.edits,
    )


@dataclass(frozen=True)
class AttackResult:
    """Paired clean / poisoned corpora and the ground truth of every poisoned document."""

    clean: tuple[Document, ...]
    poisoned: tuple[Document, ...]
    records: tuple[PoisonRecord, ...]
    strategy: str
    rate: float
    seed: int
    families: str
    skipped: tuple[str, ...] = ()

    @property
    def poisoned_ids(self) -> frozenset[str]:
        """Ids of the poisoned documents."""
        return frozenset(r.doc_id for r in self.records)

    @property
    def poisoned_indices(self) -> frozenset[int]:
        """Corpus positions of the poisoned documents."""
        return frozenset(r.index for r in self.records)

    def record_for(self, doc_id: str) -> PoisonRecord | None:
        """The ground truth of a document, or ``None`` when it is clean."""
        for r in self.records:
            if r.doc_id == doc_id:
                return r
        return None

    def summary(self) -> dict[str, Any]:
        """Counts by strategy and family (for manifests and reports)."""
        by_family: dict[str, int] = {}
        by_strategy: dict[str, int] = {}
        for r in self.records:
            by_family[f"{r.strategy}/{r.family}"] = by_family.get(f"{r.strategy}/{r.family}", 0) + 1
            by_strategy[r.strategy] = by_strategy.get(r.strategy, 0) + 1
        return {
            "strategy": self.strategy,
            "rate": self.rate,
            "seed": self.seed,
            "families": self.families,
            "n_documents": len(self.clean),
            "n_poisoned": len(self.records),
            "by_strategy": dict(sorted(by_strategy.items())),
            "by_family": dict(sorted(by_family.items())),
            "skipped": len(self.skipped),
        }


@dataclass
class AttackGenerator:
    """Seeded poisoning of a corpus (SPEC section 7).

    Attributes:
        strategy: one of :data:`ATTACK_STRATEGIES`.
        rate: fraction of documents to poison (SPEC: 0.30).
        seed: random seed (SPEC: 42); the same inputs give the same output.
        families: ``held_out`` (default, for evaluation), ``development`` or ``all``.
        use_spacy: find named entities with spaCy (entity swap); when ``False`` only the
            rule-based numbers / dates / security identifiers are swapped.
        spacy_model: the spaCy pipeline name.

    Example:
        >>> gen = AttackGenerator(strategy="contradiction", rate=0.5, seed=1)
        >>> from ragtrust.documents import Document
        >>> res = gen.attack([Document(id="a", text="Is water wet? Water is wet."),
        ...                   Document(id="b", text="Is fire hot? Fire is hot.")])
        >>> len(res.records)
        1
    """

    strategy: str = "mixed"
    rate: float = 0.30
    seed: int = 42
    families: str = "held_out"
    use_spacy: bool = True
    spacy_model: str = "en_core_web_sm"

    def __post_init__(self) -> None:
        """Validate the parameters (cheap; no model is loaded here)."""
        if self.strategy not in ATTACK_STRATEGIES:
            raise ConfigError(f"unknown attack strategy {self.strategy!r}; valid: {', '.join(ATTACK_STRATEGIES)}")
        if not 0.0 < self.rate <= 1.0:
            raise ConfigError(f"attack rate must be in (0, 1], got {self.rate}")
        if self.families not in FAMILY_SELECTIONS:
            raise ConfigError(f"unknown family selection {self.families!r}; valid: {', '.join(FAMILY_SELECTIONS)}")

    @property
    def needs_spacy(self) -> bool:
        """Whether this configuration can use the named-entity family."""
        names = {f.name for f in families_for("entity_swap", self.families)}
        return self.use_spacy and self.strategy in ("entity_swap", "mixed") and "named_entity" in names

    def warm_up(self) -> None:
        """Load spaCy when the configuration needs it."""
        if self.needs_spacy:
            load_spacy(self.spacy_model)

    def _entities(self, documents: Sequence[Document]) -> list[list[Entity]]:
        if not self.needs_spacy:
            return [[] for _ in documents]
        nlp = load_spacy(self.spacy_model)
        out: list[list[Entity]] = []
        for doc, parsed in zip(documents, nlp.pipe([d.text for d in documents], batch_size=64), strict=True):
            start = _body_start(doc.text)
            out.append([(e.start_char, e.end_char, e.label_, e.text) for e in parsed.ents if e.start_char >= start])
        return out

    def attack(self, documents: Sequence[Document]) -> AttackResult:
        """Poison ``round(rate * len(documents))`` documents (at least one).

        Documents no family of the chosen strategy applies to (e.g. no entity to swap) are
        passed over and the next one in the seeded order is tried, so the poisoned set is
        the attacker's pick of editable documents.

        Raises:
            InputError: empty corpus or duplicate ids.
        """
        docs = list(documents)
        if not docs:
            raise InputError("the attack generator needs at least one document")
        if len({d.id for d in docs}) != len(docs):
            raise InputError("document ids must be unique to pair clean and poisoned corpora")
        target = max(1, round(self.rate * len(docs)))
        order = random.Random(self.seed).sample(range(len(docs)), len(docs))
        entities = self._entities(docs)
        pool = _entity_pool(entities)
        poisoned = list(docs)
        records: list[PoisonRecord] = []
        skipped: list[str] = []
        for index in order:
            if len(records) >= target:
                break
            record = self.poison(docs[index], index=index, entities=entities[index], entity_pool=pool)
            if record is None:
                skipped.append(docs[index].id)
                continue
            records.append(record)
            doc = docs[index]
            poisoned[index] = Document(
                id=doc.id, text=record.poisoned, url=doc.url, source=doc.source, metadata=dict(doc.metadata)
            )
        records.sort(key=lambda r: r.index)
        return AttackResult(
            clean=tuple(docs),
            poisoned=tuple(poisoned),
            records=tuple(records),
            strategy=self.strategy,
            rate=self.rate,
            seed=self.seed,
            families=self.families,
            skipped=tuple(skipped),
        )

    def entities(self, documents: Sequence[Document]) -> list[list[Entity]]:
        """Named entities of each document's body (empty lists when this configuration swaps none)."""
        return self._entities(documents)

    def attack_targets(
        self,
        documents: Sequence[Document],
        indices: Sequence[int],
        strategies: Sequence[str] | None = None,
        *,
        entities: Sequence[Sequence[Entity]] | None = None,
    ) -> AttackResult:
        """Poison exactly the documents at ``indices`` (the threat-model benchmark's targets).

        Each target's strategy is drawn from ``strategies`` (default: this generator's
        strategy) in a seeded order per document; when no family of the drawn strategy
        applies to it, the next one is tried, and a document none applies to is listed in
        ``skipped``. ``entities`` (from :meth:`entities`) saves finding them again when one
        corpus is attacked many times.

        Raises:
            InputError: empty corpus, duplicate ids or an index outside the corpus.
            ConfigError: an unknown strategy.
        """
        docs = list(documents)
        if not docs:
            raise InputError("the attack generator needs at least one document")
        if len({d.id for d in docs}) != len(docs):
            raise InputError("document ids must be unique to pair clean and poisoned corpora")
        bad = [i for i in indices if not 0 <= i < len(docs)]
        if bad:
            raise InputError(f"target index {bad[0]} is outside the corpus of {len(docs)} documents")
        pool_strategies = list(strategies or [self.strategy])
        unknown = [s for s in pool_strategies if s not in ATTACK_STRATEGIES]
        if unknown:
            raise ConfigError(f"unknown attack strategy {unknown[0]!r}; valid: {', '.join(ATTACK_STRATEGIES)}")
        targets = sorted(set(indices))
        found = [list(e) for e in entities] if entities is not None else self._entities(docs)
        if len(found) != len(docs):
            raise InputError(f"entities for {len(found)} documents, corpus of {len(docs)}")
        pool = _entity_pool(found)
        poisoned = list(docs)
        records: list[PoisonRecord] = []
        skipped: list[str] = []
        for index in targets:
            doc = docs[index]
            order = list(pool_strategies)
            random.Random(f"{self.seed}:targets:{index}:{doc.id}").shuffle(order)
            record = None
            for strat in order:
                record = self.poison(doc, index=index, strategy=strat, entities=found[index], entity_pool=pool)
                if record is not None:
                    break
            if record is None:
                skipped.append(doc.id)
                continue
            records.append(record)
            poisoned[index] = Document(
                id=doc.id, text=record.poisoned, url=doc.url, source=doc.source, metadata=dict(doc.metadata)
            )
        return AttackResult(
            clean=tuple(docs),
            poisoned=tuple(poisoned),
            records=tuple(records),
            strategy=self.strategy,
            rate=len(records) / len(docs),
            seed=self.seed,
            families=self.families,
            skipped=tuple(skipped),
        )

    def poison(
        self,
        doc: Document,
        *,
        index: int = 0,
        strategy: str | None = None,
        entities: Sequence[Entity] | None = None,
        entity_pool: Mapping[str, Sequence[str]] | None = None,
    ) -> PoisonRecord | None:
        """Poison one document; ``None`` when no family of the strategy applies to it."""
        rng = random.Random(f"{self.seed}:{index}:{doc.id}")
        strategy = strategy or self.strategy
        if strategy == "mixed":
            strategies = list(STRATEGIES)
            rng.shuffle(strategies)  # the first is the drawn strategy; the rest are fallbacks
        else:
            strategies = [strategy]
        if entities is None:
            entities = self._entities([doc])[0]
        for strat in strategies:
            candidates = [f for f in families_for(strat, self.families) if f.applies_to(doc)]
            rng.shuffle(candidates)
            for family in candidates:
                ctx = AttackContext(doc=doc, rng=rng, entities=entities, entity_pool=entity_pool or {})
                payload = family.build(ctx)
                if payload is None or payload.text == doc.text:
                    continue
                record = _record(index, doc, family, payload)
                if record.edited_text != record.original_text:
                    return record
        return None


def _entity_pool(entities: Sequence[Sequence[Entity]]) -> dict[str, list[str]]:
    pool: dict[str, set[str]] = {}
    for ents in entities:
        for _, _, label, text in ents:
            if label in NAMED_LABELS and len(text) > 1 and not _CWE_RE.search(text):
                pool.setdefault(label, set()).add(text)
    return {label: sorted(values) for label, values in pool.items()}


__all__ = [
    "ATTACK_STRATEGIES",
    "FAMILIES",
    "FAMILY_SELECTIONS",
    "INSECURE_PRACTICES",
    "NAMED_LABELS",
    "SPACY_INSTALL",
    "STRATEGIES",
    "AttackContext",
    "AttackFamily",
    "AttackGenerator",
    "AttackResult",
    "Edit",
    "Payload",
    "PoisonRecord",
    "apply_replacements",
    "families_for",
    "held_out_triggers",
    "insecure_practice",
    "load_spacy",
    "negate_statement",
]
