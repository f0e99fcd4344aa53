"""Decision rules about what the answer used: suspicious text, contradicted claims, unsupported sentences.

A suspicious document kept in the context (policy ``flag``) or a claim that another source
contradicts fails the decision when the answer used it; so does an answer sentence that the
evidence does not support, unless ``trust.unsupported = "drop"`` removed it, an answer
with no sentence that can be checked at all, a given answer that cites a source it was not
checked against, and, in a store that vets its documents, a sentence that rests only on
documents nobody vetted.

Each rule returns the decision reasons (conditions that failed, in words) and the warnings
for a person; :mod:`ragtrust.pipeline.decision` adds them to the verdict.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragtrust.documents import AnswerSentence, ClaimRef, Conflict, DocumentScreening, Passage, normalize_text


def suspicious_use(
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


def conflict_use(
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
        sides = [
            (side, words)
            for side, words in ((c.left, c.left_words), (c.right, c.right_words))
            if side.origin == "retrieved" and side.doc_id in kept
        ]
        if c.blamed is not None:
            sides = [(side, words) for side, words in sides if side.doc_id == c.blamed]
        if stage != "screen":
            sides = [(side, words) for side, words in sides if any(touches(s, side, words) for s in sentences)]
        if not sides:
            continue
        said = f"{c.left.doc_id} says {_short(c.left.text)}, {c.right.doc_id} says {_short(c.right.text)}"
        how = "contested" if c.blamed is None else f"{c.blamed} blamed: {c.resolution}"
        use = "would use" if stage == "screen" else "uses"
        reasons.append(f"the answer {use} a claim that another source contradicts ({c.kind}, {how}): {said}")
        warnings.append(f"Sources disagree ({c.kind}, {how}): {said}. The answer {use} one side; check which is right.")
    return reasons, warnings


def unvetted_use(
    sentences: Sequence[AnswerSentence], screenings: Sequence[DocumentScreening], mode: str
) -> tuple[list[str], list[str]]:
    """Decision reasons and warnings for answer sentences that rest only on never-vetted documents.

    A store that vets documents (``ragtrust ingest --tier vetted``, ``ragtrust vet``) says which
    sources a person checked. When the context holds a vetted document (the provenance
    signal's ``details["tier"]``), a sentence whose verified spans and NLI support all come
    from store documents that are not vetted (``unvetted``, or no tier recorded: added later and
    never checked) is the unchecked part of the store speaking: under ``"refuse"`` the answer
    is not trusted, under ``"warn"`` it is only said. A context with no vetted document (a
    store without tiers, documents passed in without a ledger, the provenance signal turned
    off) is unaffected, and so is a sentence that a document from outside the store supports
    (a federated source: the store cannot vet it).

    Example:
        >>> from ragtrust.documents import SignalResult, Span
        >>> tier = lambda t: (SignalResult("provenance", 0.0, details={"tier": t}),)  # t None: no tier
        >>> docs = [DocumentScreening(i, None, 0.0, tier(t)) for i, t in (("kb#0", "vetted"), ("new#0", None))]
        >>> s = AnswerSentence("Use MD5.", spans=(Span("new#0", 0, 8, "Use MD5."),), supported=True)
        >>> unvetted_use([s], docs, "refuse")[0][0].split(", while")[0]
        'sentence 1 rests only on documents that were never vetted (new#0: no tier)'
        >>> unvetted_use([s], docs, "warn")[0], len(unvetted_use([s], docs, "warn")[1])
        ([], 1)
    """
    tiers = {d.doc_id: _tier(d) for d in screenings if d.action != "dropped"}
    if "vetted" not in tiers.values():
        return [], []
    reasons: list[str] = []
    warnings: list[str] = []
    for n, sentence in enumerate(sentences, start=1):
        sources = {sp.doc_id for sp in sentence.spans} | ({sentence.best_doc_id} if sentence.best_doc_id else set())
        sources &= tiers.keys()
        # only store documents a person could have vetted and did not: one the ledger does not
        # know (another source) or a vetted one among the sources settles nothing here
        if not sources or any(tiers[d] is None or tiers[d] == "vetted" for d in sources):
            continue
        named = ", ".join(f"{d}: {tiers[d]}" for d in sorted(sources))
        if mode == "refuse":
            reasons.append(
                f"sentence {n} rests only on documents that were never vetted ({named}), "
                "while vetted documents were retrieved"
            )
        warnings.append(
            f"Sentence {n} rests only on documents that were never vetted ({named}) while the other sources of this "
            f"question are vetted: {_short(sentence.text)} Vet them (ragtrust vet) or check the claim yourself."
        )
    return reasons, warnings


def _tier(screening: DocumentScreening) -> str | None:
    """A store document's ledger tier or ``"no tier"``; ``None`` when the ledger does not know it.

    ``None`` covers a document from outside the store (a federated source: no one can vet it
    here) and a context screened without the provenance signal.
    """
    from ragtrust.screening.provenance import PROVENANCE

    for r in screening.signals:
        if r.name == PROVENANCE and not r.skipped:
            tier = r.details.get("tier")
            return tier if isinstance(tier, str) else "no tier"
    return None


def touches(sentence: AnswerSentence, claim: ClaimRef, words: str = "") -> bool:
    """Whether an answer sentence uses a claim.

    It does when a verified span overlaps the claim, when the texts contain each other, or,
    for a sentence in other words (an answer given to ``verify``, an LLM's rewording), when
    the NLI model found its support in the claim's document and it states the words that
    side of the conflict differs by (``words``: "three weeks" against "two to five years").

    Example:
        >>> claim = ClaimRef("short", 0, 49, "A queen bee lives about three weeks in the hive.")
        >>> reworded = AnswerSentence("In the hive a queen bee lives three weeks.", supported=True, best_doc_id="short")
        >>> touches(reworded, claim), touches(reworded, claim, "three weeks")
        (False, True)
    """
    if any(sp.doc_id == claim.doc_id and sp.start < claim.end and claim.start < sp.end for sp in sentence.spans):
        return True
    mine, theirs = normalize_text(sentence.text).lower(), normalize_text(claim.text).lower()
    if mine and theirs and (theirs in mine or mine in theirs):
        return True
    said = normalize_text(words).lower()
    return (
        bool(said)
        and sentence.supported
        and sentence.best_doc_id == claim.doc_id
        and re.search(rf"(?<!\w){re.escape(said)}(?!\w)", mine) is not None
    )


def unsupported_use(
    sentences: Sequence[AnswerSentence], dropped: Sequence[AnswerSentence], mode: str
) -> tuple[list[str], list[str]]:
    """Decision reasons and warnings for answer sentences the evidence does not support (issue 16).

    ``sentences`` are the answer's sentences as the user gets them, ``dropped`` the
    unsupported ones removed under ``trust.unsupported = "drop"``. An answer none of whose
    sentences is supported (or with none left) always fails; under ``"refuse"`` a single
    unsupported sentence fails it too, naming each one.

    Example:
        >>> ok, bad = AnswerSentence("Use Argon2id.", supported=True), AnswerSentence("The sky is green.")
        >>> unsupported_use([ok, bad], [], "refuse")[0]
        ["1 of 2 answer sentences are not supported by the evidence: 'The sky is green.'"]
        >>> unsupported_use([ok], [bad], "drop")[0]
        []
    """
    reasons: list[str] = []
    warnings: list[str] = []
    written = len(sentences) + len(dropped)
    if dropped:
        warnings.append(
            f"{len(dropped)} of {written} answer sentence(s) were removed from the answer because the evidence "
            f"does not support them (no verified span, no NLI entailment): {_named(dropped)}"
        )
    unsupported = [s for s in sentences if not s.supported]
    if (sentences or dropped) and len(unsupported) == len(sentences):
        # nothing left, or nothing supported: SPEC's F = 0.5 "inconclusive" must not let it
        # pass on C and P alone
        warnings.append("No sentence of the answer is supported by the documents: the answer is not trusted.")
        reasons.append("no sentence of the answer is supported by the documents")
    elif unsupported and mode == "refuse":
        reasons.append(
            f"{len(unsupported)} of {written} answer sentences are not supported by the evidence: {_named(unsupported)}"
        )
    return reasons, warnings


def unchecked_answer(
    sentences: Sequence[AnswerSentence], dropped: Sequence[AnswerSentence]
) -> tuple[list[str], list[str]]:
    """Decision reason and warning for an answer with no sentence that can be checked ("...", "[1]", "?").

    Such an answer asserts nothing the evidence could support: the verifier gives SPEC's
    F = 0.5 "inconclusive" and no sentence is unsupported, so T could clear tau on C and P
    alone. Nothing checked is nothing trusted (fail closed).

    Example:
        >>> unchecked_answer([], [])[0]
        ['the answer has no sentence that can be checked against the evidence']
        >>> unchecked_answer([AnswerSentence("Use Argon2id.", supported=True)], [])
        ([], [])
    """
    if sentences or dropped:
        return [], []
    return ["the answer has no sentence that can be checked against the evidence"], [
        "The answer has no sentence that could be checked against the documents (no claim to verify): "
        "it is not trusted."
    ]


def foreign_citations(targets: Sequence[str]) -> tuple[list[str], list[str]]:
    """Decision reason and warning for a given answer that cites sources it was not checked against.

    ``targets``: the answer's citations that name none of the documents (``[7]`` of five, a
    URL never given; :func:`~ragtrust.evidence.citations.citations_outside`). The sentence may
    be true, but the answer tells its reader to look for it in a source nobody gave: its
    citations cannot be trusted (``ask`` removes such citations from its own answers).

    Example:
        >>> foreign_citations(["[7]"])[0]
        ["the answer cites a source that is none of the documents it was checked against: '[7]'"]
        >>> foreign_citations([])
        ([], [])
    """
    if not targets:
        return [], []
    more = f", \u2026 ({len(targets) - 3} more)" if len(targets) > 3 else ""
    named = ", ".join(repr(t) for t in targets[:3]) + more
    plural = "sources that are" if len(targets) > 1 else "a source that is"
    return [f"the answer cites {plural} none of the documents it was checked against: {named}"], [
        f"The answer cites {named}, not among the documents given: it is not trusted. "
        "[n] names the n-th document as given."
    ]


def score_reason(trust_score: float, tau: float) -> str:
    """The decision reason of a score below tau."""
    return f"T = {trust_score:.3f} < tau {tau:g}"


def _uses(documents: Sequence[DocumentScreening]) -> str:
    return ", ".join(f"{d.doc_id} (P = {d.poison_probability:.2f})" for d in documents)


def _named(sentences: Sequence[AnswerSentence], most: int = 3) -> str:
    """The first ``most`` sentences, each quoted and shortened, and how many more."""
    named = ", ".join(_short(s.text) for s in sentences[:most])
    return f"{named}, \u2026 ({len(sentences) - most} more)" if len(sentences) > most else named


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026")


__all__ = [
    "conflict_use",
    "score_reason",
    "suspicious_use",
    "touches",
    "unchecked_answer",
    "unsupported_use",
    "unvetted_use",
]
