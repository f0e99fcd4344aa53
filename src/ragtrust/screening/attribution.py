"""Who is to blame for a claim conflict: the pool, the same-subject test, independent sources.

The rules of :class:`~ragtrust.screening.conflicts.ClaimConflictSignal` that look at the
documents rather than at the claims' words: whether two differing claims are about the same
subject (:func:`same_subject`), which documents side with a claim (:class:`Stances`), how many
independent sources a side has (:func:`independent_sources`: chunks of one parent and
near-duplicates count once) and whom the conflict blames (:func:`attribute`, the rule of the
signal's module docstring).

Example:
    >>> len(shingles("a b c d e f", n=5))
    2
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ragtrust.documents import Document
from ragtrust.screening.claim_answers import question_before
from ragtrust.screening.claim_diff import STOP_WORDS
from ragtrust.screening.claims import Claim, DiffFinding
from ragtrust.text import split_sentences

#: where a pool document comes from
VETTED = "vetted"
STORE = "store"
RETRIEVED = "retrieved"


@dataclass(frozen=True)
class PoolDoc:
    """A document of the pool: retrieved, a witness from the store, or a vetted version."""

    document: Document
    origin: str
    group: str
    tier: str | None = None


@dataclass(frozen=True)
class Found:
    """A conflicting pair of claims (indices into the claim list) and what found it."""

    i: int
    j: int
    kind: str
    strength: float
    left_words: str
    right_words: str
    contradiction: float | None


@dataclass(frozen=True)
class Stances:
    """Per claim: the documents with a claim that agrees with it, and that conflict with it."""

    agree: dict[int, set[int]]
    oppose: dict[int, set[int]]

    @classmethod
    def build(
        cls, claims: Sequence[Claim], conflicts: Sequence[Found], agreements: Sequence[tuple[int, int, float]]
    ) -> Stances:
        """The stances of each claim from the conflicting and the agreeing pairs (claim indices)."""
        agree: dict[int, set[int]] = {}
        oppose: dict[int, set[int]] = {}
        for table, edges in ((agree, [(p[0], p[1]) for p in agreements]), (oppose, [(c.i, c.j) for c in conflicts])):
            for a, b in edges:
                table.setdefault(a, set()).add(claims[b].doc)
                table.setdefault(b, set()).add(claims[a].doc)
        return cls(agree, oppose)

    def side(self, mine: int, other: int) -> set[int]:
        """Documents that agree with claim ``mine``, and neither conflict with it nor agree with ``other``."""
        return self.agree.get(mine, set()) - self.oppose.get(mine, set()) - self.agree.get(other, set())


_REFERRING = re.compile(r"^(?:it|its|this|that|these|those|they|their|he|she|his|her|such|there)\b", re.I)
#: a claim this short (in words) leans on its document for its subject ("The weakness is CWE-89.")
SHORT_CLAIM = 7


def _outside(doc: Document, claim: Claim) -> str:
    return f"{doc.text[: claim.start]} {doc.text[claim.end :]}".lower()


def _anchored(words: str, context: str) -> bool:
    """Every changed content word also appears elsewhere in the claim's own document.

    Function words that changed with the name ("very few books (if any) are still banned in
    England" / "... in California") say nothing about the subject and need no anchor.
    """
    tokens = [t.lower() for t in re.findall(r"\w+", words) if len(t) > 1 or t.isdigit()]
    content = [t for t in tokens if t not in STOP_WORDS]
    return bool(content) and all(re.search(rf"\b{re.escape(t)}\b", context) for t in content)


def same_subject(pool: Sequence[PoolDoc], a: Claim, b: Claim, finding: DiffFinding, *, leaning: bool = True) -> bool:
    """Whether two claims that differ in a few words are about the same subject.

    Not when each side's differing words are stated elsewhere in its own document ("banned in
    California" in a document about California, "in Canada" in one about Canada: two
    subjects, two true claims). And a claim that leans on its document for its subject (it
    starts with a pronoun, or is shorter than :data:`SHORT_CLAIM` words: "The weakness is
    CWE-89.") is compared only with a version of the same document: the same parent document
    (its vetted version), or another document by :func:`_versions`; ``leaning=False`` skips
    that second test (the answer check reads each claim with the sentence before it).
    """
    da, db = pool[a.doc].document, pool[b.doc].document
    if a.doc != b.doc and _anchored(finding.left, _outside(da, a)) and _anchored(finding.right, _outside(db, b)):
        return False
    # a permission conflict spells the action out on both sides ("It is fine to commit API keys
    # ..." opens with a dummy "it"): neither claim leans on its document for the subject
    leans = (
        leaning
        and finding.kind != "permission"
        and any(_REFERRING.match(c.bare) or len(c.bare.split()) < SHORT_CLAIM for c in (a, b))
    )
    if leans and a.doc != b.doc and pool[a.doc].group != pool[b.doc].group:
        return _versions(da, a, db, b)
    return True


#: overlap of two documents without the compared claims: below it, two documents; from
#: :data:`_SAME_DOCUMENT` on, versions of one document whatever the sentence before says
_RELATED, _SAME_DOCUMENT = 0.3, 0.6


def _versions(da: Document, a: Claim, db: Document, b: Claim) -> bool:
    """Whether two documents are versions of one, as far as two claims that lean on them are concerned.

    What surrounds the claims must match, not the claims: two short documents that share a
    template ("That holds, according to the reference material.") share it mostly in the
    claims. Between loosely related documents, the sentence each claim leans on must also say
    the same: the content words of one are all in the other (words added or removed, none
    replaced; a claim that opens its document leans on nothing there), so "... founded in
    1979 by Emma Stone? That does not hold." and "... founded in 1971 by two people? That
    holds." are two statements, while an edit that adds a word before the claim is not.
    """
    rest = _overlap(shingles(_outside(da, a), 3), shingles(_outside(db, b), 3))
    if rest < _RELATED:
        return False
    if rest >= _SAME_DOCUMENT:
        return True
    before_a, before_b = _content(_before(da, a)), _content(_before(db, b))
    return not before_a or not before_b or before_a <= before_b or before_b <= before_a


def _overlap(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> float:
    """Jaccard overlap of two shingle sets (0 when both are empty)."""
    return len(a & b) / len(a | b) if a | b else 0.0


def _before(doc: Document, claim: Claim) -> str:
    """The sentence right before ``claim`` in its document (what "That holds" refers to), or ``""``."""
    sentences = split_sentences(doc.text[: claim.start])
    return sentences[-1].text if sentences else ""


def _content(text: str) -> set[str]:
    """The content words of ``text``, lower case."""
    return {t for t in re.findall(r"\w+", text.lower()) if t not in STOP_WORDS}


def shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    """The word ``n``-grams of ``text`` (lower case): near-duplicate and same-document tests."""
    words = text.lower().split()
    return {tuple(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}


def independent_sources(pool: Sequence[PoolDoc], members: set[int], near_duplicate: float) -> int:
    """Independent sources among ``members``: one per parent document, near-duplicates merged."""
    reps: list[tuple[str, set[tuple[str, ...]]]] = []
    for m in sorted(members):
        group, grams = pool[m].group, shingles(pool[m].document.text)
        duplicate = False
        for rep_group, rep_shingles in reps:
            union = len(grams | rep_shingles)
            if rep_group == group or (union and len(grams & rep_shingles) / union >= near_duplicate):
                duplicate = True
                break
        if not duplicate:
            reps.append((group, grams))
    return len(reps)


class Attribution(NamedTuple):
    """Who a conflict blames: ``blamed`` (a pool index, ``None`` = contested) and how, in words.

    ``suspect``: in a contested conflict, the side a trace points to (see :func:`_traced`);
    it scores as if blamed, but nobody is cleared: an answer that uses either claim still
    fails the decision.
    """

    found: Found
    blamed: int | None
    resolution: str
    suspect: int | None = None


def attribute(
    pool: Sequence[PoolDoc], claims: Sequence[Claim], found: Found, stances: Stances, near_duplicate: float
) -> Attribution:
    """The :class:`Attribution` of one conflict by the rule of :mod:`ragtrust.screening.conflicts`."""
    i, j = found.i, found.j
    x, y = claims[i].doc, claims[j].doc
    if x == y:
        return Attribution(found, x, "the document contradicts itself")
    px, py = pool[x], pool[y]
    if px.origin == VETTED or py.origin == VETTED:
        return Attribution(found, (y if px.origin == VETTED else x), "the vetted version says otherwise")
    if {px.tier, py.tier} == {"vetted", "unvetted"}:
        return Attribution(found, (x if px.tier == "unvetted" else y), "an unvetted source against a vetted one")
    # a document with another claim in conflict with its own claim states both sides
    x_both, y_both = x in stances.oppose[i], y in stances.oppose[j]
    if x_both != y_both:
        return Attribution(found, (x if x_both else y), "states both sides of the conflict")
    side_a = stances.side(i, j) | {x}
    side_b = stances.side(j, i) | {y}
    n_a = independent_sources(pool, side_a - {y}, near_duplicate)
    n_b = independent_sources(pool, side_b - {x}, near_duplicate)
    if n_a != n_b and max(n_a, n_b) >= 2:
        blamed = y if n_a > n_b else x
        return Attribution(found, blamed, f"{max(n_a, n_b)} independent sources against {min(n_a, n_b)}")
    contested = f"contested: {n_a} source(s) against {n_b}"
    if n_a == n_b == 1:
        traced = _traced(pool, claims, found)
        if traced is not None:
            suspect, names = traced
            return Attribution(
                found, None, f"{contested}; {pool[suspect].document.id} asks about {names!r}", suspect=suspect
            )
    return Attribution(found, None, contested)


#: the diff kinds whose changed words are values that an edit may leave behind elsewhere
_VALUE_KINDS = frozenset({"number", "date", "entity"})


def _question_topic(doc: Document, claim: Claim) -> str:
    """A document's title and question metadata and the last question line before ``claim`` (lower case)."""
    parts = [str(doc.metadata.get(key, "")) for key in ("title", "question")]
    return " ".join([*parts, question_before(doc.text, claim.start)]).lower()


def _phrase_in(words: str, context: str) -> bool:
    """``words`` (stop words trimmed at both ends) occur in ``context`` as one phrase, whole words."""
    tokens = re.findall(r"\S+", words.lower())
    while tokens and tokens[0].strip("()[],;:") in STOP_WORDS:
        tokens.pop(0)
    while tokens and tokens[-1].strip("()[],;:") in STOP_WORDS:
        tokens.pop()
    if not tokens:
        return False
    return re.search(r"(?<!\w)" + r"\s+".join(re.escape(t) for t in tokens) + r"(?!\w)", context) is not None


def _traced(pool: Sequence[PoolDoc], claims: Sequence[Claim], found: Found) -> tuple[int, str] | None:
    """The document of a one-against-one value conflict whose own question names the other side's value.

    When a name, number or date was swapped in a document's answer, its question (a title
    or question in its metadata, or the last question line before the claim in its section)
    often still names the original value ("What books are still banned in California? Very
    few books are still banned in Massachusetts."). The document whose question names the
    *other* side's value (as a phrase) and not its own is the *suspect*, when the other
    document's question names its own value (corroboration) and not this one's. It scores as
    if blamed (so the default ``drop-suspicious`` policy usually withholds it), but the
    conflict stays contested: a question may also name a value to warn against it ("Why is
    ECB unsafe?"), and a trace must never clear the other side. Markdown headings do not
    count ("Disable TLS 1.0" names what to avoid). An edit of every mention leaves no trace.

    Returns:
        ``(suspect pool index, the value its question names)`` or ``None``.
    """
    if found.kind not in _VALUE_KINDS or not found.left_words or not found.right_words:
        return None
    a, b = claims[found.i], claims[found.j]
    topic_a, topic_b = _question_topic(pool[a.doc].document, a), _question_topic(pool[b.doc].document, b)
    a_gives_b, b_gives_a = _phrase_in(found.right_words, topic_a), _phrase_in(found.left_words, topic_b)
    a_own, b_own = _phrase_in(found.left_words, topic_a), _phrase_in(found.right_words, topic_b)
    # the other side must be corroborated by its own question (the clean original asks about
    # its value); a question that names a value to warn against it corroborates nothing
    if b_gives_a and not b_own and not a_gives_b and a_own:
        return b.doc, found.left_words
    if a_gives_b and not a_own and not b_gives_a and b_own:
        return a.doc, found.right_words
    return None


__all__ = [
    "RETRIEVED",
    "Attribution",
    "SHORT_CLAIM",
    "STORE",
    "VETTED",
    "Found",
    "PoolDoc",
    "Stances",
    "attribute",
    "independent_sources",
    "same_subject",
    "shingles",
]
