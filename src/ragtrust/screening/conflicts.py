"""Knowledge conflicts: claims that disagree, with witnesses, and who is to blame (issue 15).

A poisoned fact can only be caught by something that knows better. This signal compares
*claims*, not whole documents:

1. **Pool.** The retrieved documents, plus *witnesses*: documents of the store near the
   retrieved ones that did not make the top-K (passed in by the pipeline, ``origin
   "store"``), and, for a retrieved document whose content changed since it was vetted,
   the text of its last vetted version from the provenance ledger (``origin "vetted"``).
2. **Claims** (:func:`~ragtrust.screening.claims.extract_claims`): prose assertions with
   their spans, at most ``max_claims_per_doc`` per document and ``max_claims`` in all
   (a warning says when a cap cut the work). A claim is embedded (once, cached) only when it
   shares enough content words with a claim it may be paired with
   (:func:`~ragtrust.screening.claims.alignable`): no other claim can pass step 3.
3. **Alignment** (:func:`~ragtrust.screening.claims.aligned_pairs`): pairs with cosine >=
   ``min_cosine`` and content-word overlap >= ``min_overlap``, at least one side retrieved,
   at most ``max_pairs`` (most similar first): the work grows with aligned pairs, not K².
4. **Two checks per aligned pair.** The conflict diff
   (:func:`~ragtrust.screening.claims.diff_conflict`: numbers, dates, names, negation,
   modals, quantifiers, antonyms, and a prohibition against a permission of the same action
   (``permission``: "Never commit API keys ..." / "It is fine to commit API keys ...", also a
   requirement against a waiver, "... must rotate ..." / "There is no need to rotate ..."), the
   last two only between two documents or against a vetted version for a claim the edit
   changed) with strength ``diff_strength[kind]``; and NLI contradiction in both
   directions, ``c = max(c(a->b), c(b->a))``, mapped through the ramp
   ``clip((c - low) / (high - low))`` whose ``low`` is calibrated per model on aligned pairs of
   clean text (``signal_calibration["claim_conflict"]`` in the model manifest; ``ragtrust eval
   conflicts --calibrate``), :data:`DEFAULT_RAMP` otherwise. A pair is a conflict when either
   check fires; its strength is the larger. With ``max_nli_pairs`` set (aligned pairs; each
   costs two NLI inputs), NLI first reads only that many pairs, the nearest the question (the
   larger cosine of the pair's claims to it; the most similar without a question, as in a
   scan), and the witnesses' own pairs not at all; when the diff or those readings find a
   conflict outside the witnesses' own pairs, the rest are read too, so such a set is judged
   as without the budget, up to the floating-point noise of a different NLI batch
   (docs/benchmarks.md, "Claim-conflict NLI on the pairs nearest the question").
   With ``answer_check`` on and a question that asks for one name or number, a third,
   lexical check (:mod:`~ragtrust.screening.claim_answers`) compares the values of the
   claims that answer the question, aligned or not: different names (or numbers) in two
   documents that never mention each other's are a conflict of kind ``answer``; a shared
   one is agreement, heard by step 5.
   ``nli_contradiction = False`` turns the NLI check off: the model is then asked only
   whether two claims *agree* (step 5), and only when the diff found a conflict to
   attribute, so most retrieved sets cost no NLI pair.
   Measured with the shipped model (docs/benchmarks.md, "Claim conflicts without the NLI
   check"): clean held-out FEVER sets with a conflict 9% -> 2% and FEVER's clean decision
   false-positive rate 6% -> 0%, for one FEVER poisoned query of 15 (53% -> 47%) and 7-9
   points of FEVER contradiction recall; every other benchmark figure equal. It stays on by
   default: the rule written before that run allowed no decision-recall cell to fall by
   more than 3 points.
5. **Attribution** (documented rule, in this order; it lives in
   :mod:`~ragtrust.screening.attribution`). A conflict between claim *a* of document X and
   claim *b* of document Y:

   * X == Y: the document contradicts itself; it is blamed with ``intra_factor`` x strength.
   * the last vetted version of a document is one side: the other side is blamed
     ("the vetted version says otherwise").
   * the ledger's tiers differ (vetted against unvetted): the unvetted side is blamed.
   * one document states both sides (it contradicts itself on the point) and the other does
     not: it is blamed.
   * majority of independent witnesses: every other document of the pool with a claim that
     *agrees* with *a* (the same sentence, or a paraphrase: cosine >= ``agree_cosine``, NLI
     entailment >= ``agree_entailment`` one way, no conflict found), none in conflict
     with *a* and none agreeing with *b*, sides with *a* (and vice versa); a document that was
     never aligned with either claim has no say. Sides are counted in independent sources:
     chunks of one parent document and near-duplicate texts count once. When one side has at
     least two sources and more than the other, the other side's document is blamed.
   * otherwise the conflict is **contested**: nobody is blamed, both documents get
     ``contested_factor`` x strength, and the pipeline refuses to trust an answer that uses
     either claim. One exception to the scores, never to the refusal: in one source against
     one, when a name, number or date was swapped and one document's own question (title,
     question, or the last question line before the claim in its section; not a Markdown
     heading) names the *other* side's value and not its own ("What books are still banned
     in California? Very few books are still banned in Massachusetts."), while the other's
     question names its own value and not this one's, that document is the *suspect* and
     scores the full strength (the default policy then usually withholds it). An edit of
     every mention leaves no trace.

A document's score is its strongest blame (a witness from the store gets no result: it is
not in the retrieved set). The batch consistency C is ``1 - max`` over conflicts of the
strength (contested) or half the strength (resolved); 1.0 without conflicts. Every result
carries the conflicts that touch its document in ``details["conflicts"]`` (the
:class:`~ragtrust.documents.Conflict` form), and the cost in ``details`` (claims, aligned
pairs, NLI pairs).

Example:
    >>> from ragtrust.testing import HashingEmbedder, LexicalNLI, retrieved
    >>> docs = retrieved(["A queen bee lives two to five years in the hive.",
    ...                   "In the hive, a queen bee lives two to five years.",
    ...                   "A queen bee lives about three weeks in the hive."])
    >>> rs = ClaimConflictSignal(nli=LexicalNLI(), embedder=HashingEmbedder(), min_cosine=0.3).score_batch(docs)
    >>> [round(r.score, 2) for r in rs]
    [0.0, 0.0, 0.9]
    >>> rs[2].details["conflicts"][0]["resolution"]
    '2 independent sources against 1'
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ragtrust.documents import ClaimRef, Conflict, Document, RetrievedDoc, SignalResult
from ragtrust.errors import ModelError
from ragtrust.models.base import CONTRADICTION, ENTAILMENT, Embedder, NLIModel
from ragtrust.models.cache import ByteLRU, MiB
from ragtrust.registry import register, warm_up
from ragtrust.screening.attribution import (
    RETRIEVED,
    STORE,
    VETTED,
    Attribution,
    Found,
    PoolDoc,
    Stances,
    attribute,
    same_subject,
)
from ragtrust.screening.base import Signal
from ragtrust.screening.claim_answers import (
    OwnQuestions,
    answer_conflict,
    answer_values,
    asks_for,
    covers,
    question_words,
    same_question,
    values_agree,
)
from ragtrust.screening.claims import Claim, alignable, aligned_pairs, diff_conflict, extract_claims, names_in
from ragtrust.screening.ramp import contradiction_ramp, resolve_ramp

#: the signal's name
CLAIM_CONFLICT = "claim_conflict"
#: strength of a diff finding, per kind (a changed number or name is near-certain evidence
#: when the claims are otherwise the same; a modal or quantifier change a little less)
DEFAULT_DIFF_STRENGTH: Mapping[str, float] = {
    "number": 0.9,
    "date": 0.9,
    "entity": 0.9,
    "negation": 0.9,
    "modal": 0.8,
    "quantifier": 0.8,
    "antonym": 0.8,
    "permission": 0.9,
    "answer": 0.8,
}
#: answering claims per document compared by the answer check (the first in the document)
MAX_ANSWERS_PER_DOC = 4
#: the answer check reads documents of at most this many claims: a passage about a question. In
#: a longer document (a 512-token chunk of a guide) a sentence that shares the question's
#: words is rarely its answer (docs/benchmarks.md, "A third version: passages")
PASSAGE_CLAIMS = 6


#: the start of the note of a set whose tiers or vetted versions could not be read
LEDGER_FAILED = "the provenance ledger could not be read"


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _parent(doc: Document) -> str:
    parent = doc.metadata.get("parent_id")
    if isinstance(parent, str) and parent:
        return parent
    head, sep, tail = doc.id.rpartition("#")
    return head if sep and tail.isdigit() else doc.id


def _antonyms_apart(pool: Sequence[PoolDoc], a: Claim, b: Claim) -> bool:
    """Whether a word and its antonym in claims ``a`` and ``b`` can be a conflict.

    Inside one document (its chunks) they list two cases ("Identify the synchronous calls" /
    "Identify the asynchronous calls"). Against the document's vetted version they are an
    edit, but only for a claim the edit changed: a claim still found word for word in the
    vetted text is one of the cases the vetted page lists.
    """
    left, right = pool[a.doc], pool[b.doc]
    if left.group != right.group:
        return True
    if VETTED not in (left.origin, right.origin) or left.origin == right.origin:
        return False
    served, vetted = (a, right) if right.origin == VETTED else (b, left)
    return _normal(served.text) not in _normal(vetted.document.text)


@register("signal", CLAIM_CONFLICT)
@dataclass
class ClaimConflictSignal(Signal):
    """Aligned-claim conflicts with witnesses and attribution (see the module docstring).

    Attributes:
        nli: the NLI model (one ``predict`` call per batch).
        embedder: embeds the claims (cached by text).
        ledger: the store's provenance ledger (vetted versions and tiers); optional.
        min_cosine / min_overlap: alignment thresholds.
        max_pairs: aligned pairs checked per batch (cost bound).
        max_nli_pairs: of those, how many the NLI contradiction check reads up front: the
            pairs nearest the question (the larger cosine of the two claims to the question's
            embedding), the most similar without a question; the rest are read only when a
            conflict was found (the diff, or NLI on the first ones). ``None``: all of them.
        max_claims_per_doc / max_claims: claim caps.
        low / high: the NLI contradiction ramp (``None`` = the model's calibration).
        nli_contradiction: run the NLI contradiction check on every aligned pair; off, NLI
            only hears agreement, when a diff conflict needs attributing (see step 4).
        answer_check: for a question that asks for one name or number, also compare the
            values of the claims that answer it, aligned or not
            (:mod:`~ragtrust.screening.claim_answers`, step 4). Measured on held-out items, it
            blames LLM-written poison beside two clean passages in 49% of them (2% without),
            with no more clean false alarms or refusals (docs/benchmarks.md, "Claims that
            answer the question with different values").
        diff_strength: strength of a diff finding per kind.
        intra_factor: blame of a document that contradicts itself.
        contested_factor: score of each side of a contested conflict.
        near_duplicate: 5-gram shingle Jaccard at which two witnesses count as one source.
        agree_cosine / agree_entailment: a pair *agrees* (testifies for a side) when no check
            fires, its cosine reaches ``agree_cosine`` and NLI entailment reaches
            ``agree_entailment`` in one direction (or the two sentences are the same).
        cache_size / cache_bytes: claim embeddings kept, bounded by entries and by bytes.
        embed_every_claim: also embed the claims of the retrieved documents that no claim in
            this pool can align with (they are not compared), so that they are in the store's
            persisted vectors when a later question puts them beside other documents. A
            corpus scan sets it; results are the same either way.
    """

    nli: NLIModel
    embedder: Embedder
    # a data source read per document (a scan keys each row by its records), not a parameter
    ledger: Any = field(default=None, compare=False)
    min_cosine: float = 0.6
    min_overlap: float = 0.3
    max_pairs: int = 48
    max_nli_pairs: int | None = 10
    max_claims_per_doc: int = 40
    max_claims: int = 400
    low: float | None = None
    high: float | None = None
    nli_contradiction: bool = True
    answer_check: bool = True
    diff_strength: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_DIFF_STRENGTH))
    intra_factor: float = 0.6
    contested_factor: float = 0.5
    near_duplicate: float = 0.8
    agree_cosine: float = 0.8
    agree_entailment: float = 0.6
    cache_size: int = 50_000
    cache_bytes: int = 32 * MiB
    # what is cached, not what is found: a scan sets it (``ragtrust.scan``)
    embed_every_claim: bool = field(default=False, compare=False)

    name: ClassVar[str] = CLAIM_CONFLICT
    document_level: ClassVar[bool] = False
    uses_witnesses: ClassVar[bool] = True
    cache_table: ClassVar[str | None] = "claim_embeddings"
    _cache: ByteLRU[npt.NDArray[np.float32]] = field(default_factory=lambda: ByteLRU(0, 0), init=False, repr=False)

    def warm_up(self) -> None:
        """Warm the NLI model and the embedder."""
        warm_up(self.nli, self.embedder)

    def prefetch(self, documents: Sequence[Document]) -> None:
        """Embed, in one call, the claims that judging each of ``documents`` will embed.

        Only with ``embed_every_claim`` (a scan), where judging a document embeds all of its
        claims whatever its witnesses are: a scan judges one document at a time, and one call
        for a batch of them pays the embedder's per-call cost once and pads less. The vectors
        are the same (the embedder's length batches do not change them), so the results are.
        Without the flag it does nothing: which claims are embedded depends on the pool.
        """
        if not self.embed_every_claim:
            return
        per_doc = min(self.max_claims, self.max_claims_per_doc)
        self._embed([c.bare for d in documents for c in extract_claims(0, d.text, per_doc)])

    # ------------------------------------------------------------------ pool and claims
    def _pool(
        self, docs: Sequence[RetrievedDoc], witnesses: Sequence[RetrievedDoc], errors: list[str]
    ) -> list[PoolDoc]:
        """The retrieved documents, the witnesses and the vetted versions; ledger failures go to ``errors``."""
        pool = [PoolDoc(d.document, RETRIEVED, _parent(d.document), self._tier(d.document, errors)) for d in docs]
        seen = {d.id for d in docs}
        for w in witnesses:
            if w.id not in seen:
                seen.add(w.id)
                pool.append(PoolDoc(w.document, STORE, _parent(w.document), self._tier(w.document, errors)))
        for d in docs:
            vetted = self._vetted_version(d.document, errors)
            if vetted is not None:
                pool.append(PoolDoc(vetted, VETTED, _parent(d.document), VETTED))
        return pool

    def _tier(self, doc: Document, errors: list[str]) -> str | None:
        if self.ledger is None:
            return None
        try:
            record = self.ledger.get(_parent(doc))
        except Exception as exc:  # noqa: BLE001 - no tier known: attribution falls back to witnesses
            errors.append(f"{type(exc).__name__}: {exc}")
            return None
        return None if record is None else record.tier

    def _vetted_version(self, doc: Document, errors: list[str]) -> Document | None:
        """The last vetted text of ``doc``'s parent when the served text is not in it."""
        if self.ledger is None:
            return None
        try:
            record = self.ledger.get(_parent(doc))
            if record is None or record.vetted_hash is None or not record.changed_since_vetted:
                return None
            text = self.ledger.version_text(record.doc_id, record.vetted_hash)
        except Exception as exc:  # noqa: BLE001 - the provenance signal reports ledger failures
            errors.append(f"{type(exc).__name__}: {exc}")
            return None
        if not text or " ".join(doc.text.split()) in " ".join(text.split()):
            return None
        return Document(id=f"{record.doc_id}@vetted", text=text, url=doc.url, source="provenance ledger")

    def _disk_keys(self, texts: Sequence[str]) -> list[str]:
        """Keys of the persisted claim embeddings: the embedder's identity and the text."""
        model = (
            str(getattr(self.embedder, "fingerprint", "") or getattr(self.embedder, "model_id", ""))
            or type(self.embedder).__name__
        )
        dim = getattr(self.embedder, "dim", "")
        return [hashlib.sha256(f"{model}\x00{dim}\x00{t}".encode("utf-8", "surrogatepass")).hexdigest() for t in texts]

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self._cache.limit(self.cache_size, self.cache_bytes)
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        fresh: dict[str, npt.NDArray[np.float32]] = {}
        if missing and self.disk is not None:
            # claims embedded before (a scan, an earlier query), kept in the store
            stored = self.disk.get_many(self._disk_keys(missing))
            fresh = {t: v for t, v in zip(missing, stored, strict=True) if v is not None and v.ndim == 1 and v.size}
            self._cache.put_many(fresh.items())
            missing = [t for t in missing if t not in fresh]
        if missing:
            vectors = np.asarray(self.embedder.embed(missing), dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(missing):
                raise ModelError(f"embedder returned shape {vectors.shape}, expected ({len(missing)}, dim)")
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
            computed = dict(zip(missing, vectors, strict=True))
            self._cache.put_many(computed.items())
            if self.disk is not None:
                self.disk.put_many(zip(self._disk_keys(missing), vectors, strict=True))
            fresh.update(computed)
        rows = []
        for t, cached in zip(texts, self._cache.get_many(texts), strict=True):
            vec = fresh.get(t) if cached is None else cached
            if vec is None:  # evicted by a concurrent batch: embed again
                vec = np.asarray(self.embedder.embed([t]), dtype=np.float32)[0]
                vec = vec / max(float(np.linalg.norm(vec)), 1e-12)
            rows.append(vec)
        return np.vstack(rows) if rows else np.zeros((0, 1), np.float32)

    # ------------------------------------------------------------------ scoring
    def score_batch(
        self, docs: Sequence[RetrievedDoc], query: str | None = None, witnesses: Sequence[RetrievedDoc] = ()
    ) -> list[SignalResult]:
        """Score the retrieved documents; conflicts go into each result's details."""
        if not docs:
            return []
        ledger_errors: list[str] = []
        pool = self._pool(docs, witnesses, ledger_errors)
        notes: list[str] = []
        if ledger_errors:
            notes.append(
                f"{LEDGER_FAILED} ({len(ledger_errors)} lookup(s), first: {ledger_errors[0]}): "
                "tiers and vetted versions were not used"
            )
        claims: list[Claim] = []
        for i, p in enumerate(pool):
            room = self.max_claims - len(claims)
            if room <= 0:
                notes.append(f"claim cap {self.max_claims} reached: {len(pool) - i} document(s) not compared")
                break
            found = extract_claims(i, p.document.text, self.max_claims_per_doc + 1)
            kept = found[: min(room, self.max_claims_per_doc)]
            if len(kept) < len(found):
                notes.append(f"{p.document.id}: only the first {len(kept)} claims compared")
            claims.extend(kept)
        retrieved = len(docs)
        checked: list[tuple[int, int, float]] = []
        identical: list[tuple[int, int, float]] = []
        testimony: list[tuple[int, int, float]] = []
        kept_rows: dict[int, int] = {}
        vectors = None
        if len(claims) >= 2:
            # only claims that share enough words with a claim they may be checked against can
            # be aligned: the others are not embedded (about a quarter of them on OWASP chunks)
            keep = [k for k, ok in enumerate(alignable(claims, min_overlap=self.min_overlap, anchors=retrieved)) if ok]
            kept = [claims[k] for k in keep]
            if self.embed_every_claim:
                self._embed([c.bare for c in claims if c.doc < retrieved])
            vectors = self._embed([c.bare for c in kept]) if len(kept) >= 2 else None
            kept_rows = {k: row for row, k in enumerate(keep)}
            candidates = (
                []
                if vectors is None
                else [
                    (keep[i], keep[j], cos)
                    for i, j, cos in aligned_pairs(
                        kept,
                        vectors,
                        min_cosine=self.min_cosine,
                        min_overlap=self.min_overlap,
                        max_pairs=10 * self.max_pairs,
                        identical=True,
                    )
                ]
            )
            # at least one side in the retrieved set; witness-witness pairs testify to nothing
            pairs = [p for p in candidates if claims[p[0]].doc < retrieved or claims[p[1]].doc < retrieved]
            same = [_normal(claims[i].bare) == _normal(claims[j].bare) for i, j, _ in pairs]
            identical = [p for p, eq in zip(pairs, same, strict=True) if eq]
            checked = [p for p, eq in zip(pairs, same, strict=True) if not eq]
            if len(checked) > self.max_pairs:
                notes.append(f"{len(checked)} aligned claim pairs; the {self.max_pairs} most similar were checked")
                checked = checked[: self.max_pairs]
            # witnesses testify for each other: two witness claims that both face a checked
            # retrieved claim may agree (one side of a conflict), never conflict (nobody
            # retrieved is in the pair); NLI only within what is left of max_pairs
            facing = {k for i, j, _ in identical + checked for k in (i, j) if claims[k].doc >= retrieved}
            between = [
                p for p in candidates if p[0] in facing and p[1] in facing and claims[p[0]].doc != claims[p[1]].doc
            ]
            witness_same = [_normal(claims[i].bare) == _normal(claims[j].bare) for i, j, _ in between]
            identical += [p for p, eq in zip(between, witness_same, strict=True) if eq]
            testimony = [p for p, eq in zip(between, witness_same, strict=True) if not eq]
            testimony = testimony[: max(0, self.max_pairs - len(checked))]
        witness_only = {(i, j) for i, j, _ in testimony}
        first = self._first_read(checked, claims, kept_rows, vectors, query)
        conflicts, agreeing, nli_pairs = self._check(pool, claims, checked + testimony, witness_only, first)
        if first is not None and len(first) < len(checked) and nli_pairs == 2 * len(first):
            chosen = "the nearest the question" if query and query.strip() else "the most similar"
            notes.append(
                f"NLI read {len(first)} of {len(checked)} aligned claim pairs ({chosen}); "
                "no conflict was found that called for the rest"
            )
        conflicts = [c for c in conflicts if (c.i, c.j) not in witness_only]
        agreements = identical + agreeing
        kind = asks_for(query) if self.answer_check else None
        if kind is not None:
            taken = {(c.i, c.j) for c in conflicts}
            answered, answer_agree = self._answers(pool, claims, query or "", kind, retrieved, taken)
            conflicts += answered
            agreements += answer_agree
        stances = Stances.build(claims, conflicts, agreements)
        resolved = [attribute(pool, claims, c, stances, self.near_duplicate) for c in conflicts]
        return self._results(docs, pool, claims, resolved, len(checked), nli_pairs, notes)

    def _first_read(
        self,
        checked: Sequence[tuple[int, int, float]],
        claims: Sequence[Claim],
        rows: Mapping[int, int],
        vectors: npt.NDArray[np.float32] | None,
        query: str | None,
    ) -> list[int] | None:
        """Indices of ``checked`` whose NLI contradiction is read up front (``None``: every pair, witnesses' too).

        At most ``max_nli_pairs``: the pairs nearest the question (a pair's relevance is the
        larger cosine of its two claims to the question), ties and no question in ``checked``'s
        order (most similar first). The witnesses' pairs (testimony) are never read up front:
        they only matter to a conflict.
        """
        budget = self.max_nli_pairs
        if budget is None or not self.nli_contradiction:
            return None
        if len(checked) <= budget:
            return list(range(len(checked)))
        order = list(range(len(checked)))
        if query and query.strip() and vectors is not None:
            q = np.asarray(self.embedder.embed([query]), dtype=np.float32).reshape(-1)
            if q.shape[0] != vectors.shape[1]:
                raise ModelError(
                    f"embedder returned a question vector of size {q.shape[0]}, expected {vectors.shape[1]}"
                )
            if not np.isfinite(q).all():
                raise ModelError("embedder returned a question vector that is not finite")
            q = q / max(float(np.linalg.norm(q)), 1e-12)
            near = vectors @ q
            relevance = [max(float(near[rows[i]]), float(near[rows[j]])) for i, j, _ in checked]
            order.sort(key=lambda m: -relevance[m])  # stable: equal relevance keeps the similarity order
        return sorted(order[: max(0, budget)])

    def _check(
        self,
        pool: Sequence[PoolDoc],
        claims: Sequence[Claim],
        pairs: Sequence[tuple[int, int, float]],
        witness_only: set[tuple[int, int]],
        first: Sequence[int] | None = None,
    ) -> tuple[list[Found], list[tuple[int, int, float]], int]:
        """The conflicting pairs among ``pairs`` (diff, and NLI when on), the agreeing ones, and the NLI pairs scored.

        A pair agrees when no check fires, its cosine is at least ``agree_cosine`` and the NLI
        model reads entailment (>= ``agree_entailment``) in one direction: a paraphrase, not
        merely the same topic. With ``nli_contradiction`` off, agreement is only heard when a
        conflict outside ``witness_only`` needs attributing, and only for pairs that can agree
        (cosine >= ``agree_cosine``): most retrieved sets then cost no NLI pair at all.
        ``first`` (indices of ``pairs``): with the NLI check on, only these are read at first;
        the others are read too when a conflict outside ``witness_only`` was found, so such a
        set is judged exactly as without ``first``.
        """
        if not pairs:
            return [], [], 0
        texts = [(claims[i].bare, claims[j].bare) for i, j, _ in pairs]
        # the names each document writes mid-sentence, once per document (not once per pair)
        names = {d: names_in(pool[d].document.text) for d in {claims[k].doc for p in pairs for k in p[:2]}}
        findings = []
        for (i, j, _), (a, b) in zip(pairs, texts, strict=True):
            apart = _antonyms_apart(pool, claims[i], claims[j])
            finding = diff_conflict(
                a,
                b,
                names[claims[i].doc] | names[claims[j].doc],
                frequencies=claims[i].doc != claims[j].doc,
                antonyms=apart,
                permissions=apart,
            )
            if finding is not None and not same_subject(pool, claims[i], claims[j], finding):
                finding = None
            findings.append(finding)

        def conflict_to_attribute(found: Sequence[Found] | None = None) -> bool:
            if found is None:
                return any(
                    f is not None and (p[0], p[1]) not in witness_only for p, f in zip(pairs, findings, strict=True)
                )
            return any((f.i, f.j) not in witness_only for f in found)

        if self.nli_contradiction:
            scored = list(range(len(pairs))) if first is None else sorted(set(first))
        elif conflict_to_attribute():
            scored = [
                m
                for m, (p, f) in enumerate(zip(pairs, findings, strict=True))
                if f is None and p[2] >= self.agree_cosine
            ]
        else:
            scored = []
        probs = self._read(texts, scored)
        found, agree = self._judge(pairs, findings, probs)
        if self.nli_contradiction and len(probs) < len(pairs) and conflict_to_attribute(found):
            probs.update(self._read(texts, [m for m in range(len(pairs)) if m not in probs]))
            found, agree = self._judge(pairs, findings, probs)
        return found, agree, 2 * len(probs)

    def _answers(
        self,
        pool: Sequence[PoolDoc],
        claims: Sequence[Claim],
        query: str,
        kind: str,
        retrieved: int,
        taken: set[tuple[int, int]],
    ) -> tuple[list[Found], list[tuple[int, int, float]]]:
        """Claims of two documents that answer a question asking for a ``kind`` of value: conflicts and agreements.

        See :mod:`ragtrust.screening.claim_answers`. Lexical only (no NLI pair), aligned or
        not, in documents of at most :data:`PASSAGE_CLAIMS` claims; at most
        :data:`MAX_ANSWERS_PER_DOC` answering claims per document and ``max_pairs`` pairs
        heard (conflicts and agreements together). A conflict needs a retrieved document on
        one side (witnesses only testify) and passes
        :func:`~ragtrust.screening.attribution.same_subject`'s test of two subjects; pairs in
        ``taken`` (a conflict already found) are skipped.
        """
        asked = question_words(query)
        if not asked:
            return [], []
        answering = _answering(pool, claims, asked, kind)
        found: list[Found] = []
        agree: list[tuple[int, int, float]] = []
        strength = self.diff_strength.get("answer", 0.0)
        for x, (i, left) in enumerate(answering):
            for j, right in answering[x + 1 :]:
                a, b = claims[i], claims[j]
                if a.doc == b.doc or (i, j) in taken or len(found) + len(agree) >= self.max_pairs:
                    continue
                da, db = pool[a.doc].document.text, pool[b.doc].document.text
                if values_agree(left, right, da, db):
                    agree.append((i, j, 0.0))
                    continue
                if a.doc >= retrieved and b.doc >= retrieved:
                    continue
                finding = answer_conflict(left, right, da, db)
                if finding is not None and strength > 0 and same_subject(pool, a, b, finding, leaning=False):
                    found.append(Found(i, j, finding.kind, strength, finding.left, finding.right, None))
        return found, agree

    def _read(self, texts: Sequence[tuple[str, str]], which: Sequence[int]) -> dict[int, npt.NDArray[np.float64]]:
        """NLI probabilities of the pairs ``which``, both directions: ``{index: 2 x 3 array}``."""
        nli_input = [q for m in which for q in (texts[m], texts[m][::-1])]
        if not nli_input:
            return {}
        probs = np.asarray(self.nli.predict(nli_input), dtype=np.float64)
        if probs.shape != (len(nli_input), 3):
            raise ModelError(f"NLI model returned shape {probs.shape}, expected ({len(nli_input)}, 3)")
        return {m: probs[2 * r : 2 * r + 2] for r, m in enumerate(which)}

    def _judge(
        self,
        pairs: Sequence[tuple[int, int, float]],
        findings: Sequence[Any],
        probs: Mapping[int, npt.NDArray[np.float64]],
    ) -> tuple[list[Found], list[tuple[int, int, float]]]:
        """Conflicts and agreements from the diff findings and the NLI readings in ``probs``."""
        low, high, _ = resolve_ramp(self.nli, CLAIM_CONFLICT, self.low, self.high)
        found: list[Found] = []
        agree: list[tuple[int, int, float]] = []
        for m, ((i, j, cos), finding) in enumerate(zip(pairs, findings, strict=True)):
            read = probs.get(m)
            # a pair the NLI model never read has no contradiction figure (None, not 0.0)
            c = float(read[:, CONTRADICTION].max()) if read is not None else None
            nli_strength = (
                round(contradiction_ramp(c, low, high), 6) if self.nli_contradiction and c is not None else 0.0
            )
            diff_strength = self.diff_strength.get(finding.kind, 0.0) if finding is not None else 0.0
            if finding is not None and diff_strength >= nli_strength:
                found.append(Found(i, j, finding.kind, diff_strength, finding.left, finding.right, c))
            elif nli_strength > 0:
                found.append(Found(i, j, "nli", nli_strength, "", "", c))
            elif (
                read is not None
                and finding is None
                and cos >= self.agree_cosine
                and float(read[:, ENTAILMENT].max()) >= self.agree_entailment
            ):
                agree.append((i, j, cos))
        return found, agree

    def _results(
        self,
        docs: Sequence[RetrievedDoc],
        pool: Sequence[PoolDoc],
        claims: Sequence[Claim],
        resolved: Sequence[Attribution],
        aligned: int,
        nli_pairs: int,
        notes: Sequence[str],
    ) -> list[SignalResult]:
        def ref(c: Claim) -> ClaimRef:
            p = pool[c.doc]
            return ClaimRef(p.document.id, c.start, c.end, c.text, p.document.url, p.origin)

        scores = [0.0] * len(docs)
        per_doc: list[list[Conflict]] = [[] for _ in docs]
        worst = 0.0
        for found, blamed, resolution, suspect in resolved:
            i, j, strength, contradiction = found.i, found.j, found.strength, found.contradiction
            x, y = claims[i].doc, claims[j].doc
            conflict = Conflict(
                left=ref(claims[i]),
                right=ref(claims[j]),
                kind=found.kind,
                strength=round(float(strength), 4),
                left_words=found.left_words,
                right_words=found.right_words,
                contradiction=None if contradiction is None else round(contradiction, 4),
                blamed=None if blamed is None else pool[blamed].document.id,
                resolution=resolution,
            )
            if x == y:
                share = {x: self.intra_factor * strength}
            elif blamed is None:
                share = {x: self.contested_factor * strength, y: self.contested_factor * strength}
                if suspect is not None:  # a trace points to one side: it scores as if blamed
                    share[suspect] = strength
            else:
                share = {blamed: strength}
            worst = max(worst, strength if blamed is None else strength / 2)
            for d in {x, y}:
                if d < len(docs):
                    scores[d] = max(scores[d], share.get(d, 0.0))
                    per_doc[d].append(conflict)
        consistency = round(1.0 - worst, 6)
        results = []
        for k, doc in enumerate(docs):
            reasons: list[str] = []
            for c in sorted(per_doc[k], key=lambda c: -c.strength)[:2]:
                mine, other = (c.left, c.right) if c.left.doc_id == doc.id else (c.right, c.left)
                verb = "is contradicted by" if c.blamed == doc.id else "conflicts with"
                where = {VETTED: "its vetted version", STORE: f"{other.doc_id} (from the store)"}.get(
                    other.origin, other.doc_id
                )
                if other.doc_id == doc.id:
                    where = "itself"
                reasons.append(
                    f"{verb} {where} ({c.kind}, {c.resolution}): {_quote(mine.text)} vs {_quote(other.text)}"
                )
            results.append(
                SignalResult(
                    name=self.name,
                    score=float(min(1.0, max(0.0, scores[k]))),
                    reasons=tuple(reasons),
                    details={
                        "consistency": consistency,
                        "conflicts": [c.to_dict() for c in per_doc[k]],
                        "claims": sum(1 for c in claims if c.doc == k),
                        "aligned_pairs": aligned,
                        "nli_pairs": nli_pairs,
                        "witnesses": sum(1 for p in pool if p.origin != RETRIEVED),
                        "notes": list(notes),
                    },
                )
            )
        return results


def _answering(
    pool: Sequence[PoolDoc], claims: Sequence[Claim], asked: set[str], kind: str
) -> list[tuple[int, dict[str, str]]]:
    """The claims that answer the question (content words ``asked``) with their values of ``kind``.

    Only in passages (documents of at most :data:`PASSAGE_CLAIMS` claims), at most
    :data:`MAX_ANSWERS_PER_DOC` per document, each claim read with its neighbours and, when
    its document poses the question asked, with that question
    (:mod:`~ragtrust.screening.claim_answers`).
    """
    names: dict[int, frozenset[str]] = {}
    questions: dict[int, OwnQuestions] = {}
    words: dict[int, set[str]] = {}  # each claim's content words, read once
    own_words: dict[str, set[str] | None] = {}  # a question's words, None when it is another question
    answering: list[tuple[int, dict[str, str]]] = []
    per_doc: dict[int, int] = {}

    def words_of(m: int) -> set[str]:
        if m not in words:
            words[m] = question_words(claims[m].bare)
        return words[m]

    # a passage by the claims its document has, not by those the signal's caps kept of it
    passage = {
        d: len(extract_claims(d, pool[d].document.text, PASSAGE_CLAIMS + 1)) <= PASSAGE_CLAIMS
        for d in {c.doc for c in claims}
    }
    for k, claim in enumerate(claims):
        if per_doc.get(claim.doc, 0) >= MAX_ANSWERS_PER_DOC or not passage[claim.doc]:
            continue
        if claim.doc not in questions:
            questions[claim.doc] = OwnQuestions(pool[claim.doc].document.text)
        own = questions[claim.doc].before(claim.start)
        if own not in own_words:
            own_words[own] = question_words(own) if not own or same_question(own, asked) else None
        context = own_words[own]
        if context is None:  # the document answers another question
            continue
        # the claim read with its neighbours (and the document's question when it is the one
        # asked: a document that poses it answers it in what follows)
        context = context | words_of(k)
        if k and claims[k - 1].doc == claim.doc:
            context |= words_of(k - 1)
        if k + 1 < len(claims) and claims[k + 1].doc == claim.doc:
            context |= words_of(k + 1)
        if not covers(context, asked):
            continue
        if claim.doc not in names:
            names[claim.doc] = names_in(pool[claim.doc].document.text)
        values = answer_values(claim.bare, asked, kind, names[claim.doc])
        if values:
            answering.append((k, values))
            per_doc[claim.doc] = per_doc.get(claim.doc, 0) + 1
    return answering


def _quote(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026")


def conflicts_from(results: Sequence[SignalResult]) -> list[Conflict]:
    """The distinct conflicts recorded by this signal in a list of per-document results."""
    seen: dict[tuple[str, int, str, int], Conflict] = {}
    for r in results:
        if r.name != CLAIM_CONFLICT or r.skipped:
            continue
        for raw in r.details.get("conflicts", ()):
            c = raw if isinstance(raw, Conflict) else Conflict.from_dict(raw)
            seen.setdefault((c.left.doc_id, c.left.start, c.right.doc_id, c.right.start), c)
    return sorted(seen.values(), key=lambda c: -c.strength)


__all__ = ["CLAIM_CONFLICT", "DEFAULT_DIFF_STRENGTH", "LEDGER_FAILED", "ClaimConflictSignal", "conflicts_from"]
