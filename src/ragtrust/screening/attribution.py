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

from ragtrust.documents import Document
from ragtrust.evidence.extract import sentence_context
from ragtrust.screening.claim_diff import STOP_WORDS
from ragtrust.screening.claims import Claim, DiffFinding

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


def same_subject(pool: Sequence[PoolDoc], a: Claim, b: Claim, finding: DiffFinding) -> bool:
    """Whether two claims that differ in a few words are about the same subject.

    Not when each side's differing words are stated elsewhere in its own document ("banned in
    California" in a document about California, "in Canada" in one about Canada: two
    subjects, two true claims). And a claim that leans on its document for its subject (it
    starts with a pronoun, or is shorter than :data:`SHORT_CLAIM` words: "The weakness is
    CWE-89.") is compared only with a version of the same document (3-gram shingle overlap of
    the documents >= 0.3, or the same parent document: its vetted version).
    """
    da, db = pool[a.doc].document, pool[b.doc].document
    if a.doc != b.doc and _anchored(finding.left, _outside(da, a)) and _anchored(finding.right, _outside(db, b)):
        return False
    leaning = any(_REFERRING.match(c.bare) or len(c.bare.split()) < SHORT_CLAIM for c in (a, b))
    if leaning and a.doc != b.doc and pool[a.doc].group != pool[b.doc].group:
        sa, sb = shingles(da.text, 3), shingles(db.text, 3)
        return bool(sa | sb) and len(sa & sb) / len(sa | sb) >= 0.3
    return True


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


def attribute(
    pool: Sequence[PoolDoc], claims: Sequence[Claim], found: Found, stances: Stances, near_duplicate: float
) -> tuple[Found, int | None, str]:
    """``(conflict, blamed pool index or None, resolution)`` by the rule of :mod:`ragtrust.screening.conflicts`."""
    i, j = found.i, found.j
    x, y = claims[i].doc, claims[j].doc
    if x == y:
        return found, x, "the document contradicts itself"
    px, py = pool[x], pool[y]
    if px.origin == VETTED or py.origin == VETTED:
        return found, (y if px.origin == VETTED else x), "the vetted version says otherwise"
    if {px.tier, py.tier} == {"vetted", "unvetted"}:
        return found, (x if px.tier == "unvetted" else y), "an unvetted source against a vetted one"
    # a document with another claim in conflict with its own claim states both sides
    x_both, y_both = x in stances.oppose[i], y in stances.oppose[j]
    if x_both != y_both:
        return found, (x if x_both else y), "states both sides of the conflict"
    side_a = stances.side(i, j) | {x}
    side_b = stances.side(j, i) | {y}
    n_a = independent_sources(pool, side_a - {y}, near_duplicate)
    n_b = independent_sources(pool, side_b - {x}, near_duplicate)
    if n_a != n_b and max(n_a, n_b) >= 2:
        blamed = y if n_a > n_b else x
        return found, blamed, f"{max(n_a, n_b)} independent sources against {min(n_a, n_b)}"
    traced = _traced(pool, claims, found)
    if traced is not None:
        return found, traced[0], traced[1]
    return found, None, f"contested: {n_a} source(s) against {n_b}"


#: the diff kinds whose changed words are values that an edit may leave behind elsewhere
_VALUE_KINDS = frozenset({"number", "date", "entity"})


def _traced(pool: Sequence[PoolDoc], claims: Sequence[Claim], found: Found) -> tuple[int, str] | None:
    """The document whose own topic names the other side's value, and the resolution.

    A tie-breaker for one source against one: when a name, number or date was swapped in a
    document's answer, its topic (title, question or heading, and the nearest heading or
    question line before the claim: :func:`~ragtrust.evidence.extract.sentence_context`)
    often still names the original value ("What books are still banned in California? Very
    few books are still banned in Massachusetts."). The document whose topic names the
    *other* side's value and not its own is blamed, when the other document's topic does not
    name this one's value. Only the topic counts, not the rest of the text: a body sentence
    may name a value to warn against it ("stay away from ... ECB mode"). An edit of every
    mention leaves no trace.
    """
    if found.kind not in _VALUE_KINDS or not found.left_words or not found.right_words:
        return None
    a, b = claims[found.i], claims[found.j]
    topic_a = sentence_context(pool[a.doc].document, a.start).lower()
    topic_b = sentence_context(pool[b.doc].document, b.start).lower()
    a_gives_b, b_gives_a = _anchored(found.right_words, topic_a), _anchored(found.left_words, topic_b)
    a_own, b_own = _anchored(found.left_words, topic_a), _anchored(found.right_words, topic_b)
    if b_gives_a and not b_own and not a_gives_b:
        return b.doc, f"its own topic names {found.left_words!r}"
    if a_gives_b and not a_own and not b_gives_a:
        return a.doc, f"its own topic names {found.right_words!r}"
    return None


__all__ = [
    "RETRIEVED",
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
