"""Claims, their alignment across documents, and the conflict diff (issue 15).

A **claim** is an assertion of a document (:func:`ragtrust.text.assertions`: no question,
no heading) outside its fenced code blocks that reads as prose: code, table rows and link
lists are not claims (:func:`is_prose`). Each claim keeps its character span in its document, so a conflict can
be shown as two spans side by side.

**Alignment.** Two claims of different documents talk about the same thing when their
embeddings are close (cosine >= ``min_cosine``) *and* they share content words (overlap
coefficient of their content words >= ``min_overlap``). Only aligned pairs go to the
expensive checks, so the cost grows with the number of aligned pairs, not with the square
of the number of claims; :func:`aligned_pairs` keeps at most ``max_pairs`` pairs, the most
similar first.

**The conflict diff** (:func:`diff_conflict`, in :mod:`ragtrust.screening.claim_diff`;
it still imports from here) compares two aligned claims token by token: a number, date,
name, negation, modal or quantifier changed between near-identical claims, a word replaced
by its antonym, two quantities of one unit whose ranges do not overlap, or (asked for
between two documents) a claim that forbids an action against one that permits it.

Example:
    >>> claims = extract_claims(0, "Queen bees live two years. A queen bee lives 2 years.")
    >>> len(claims), overlap_coefficient(content_words(claims[0].text), content_words(claims[1].text))
    (2, 1.0)
    >>> diff_conflict("Passwords must be hashed with bcrypt.", "Passwords may be hashed with bcrypt.").kind
    'modal'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from ragtrust.ingest.markup import markdown_code_ranges
from ragtrust.models.cache import ByteLRU, MiB
from ragtrust.screening.claim_diff import (
    STOP_WORDS,
    TOKEN,
    DiffFinding,
    diff_conflict,
    names_in,
    quantity_conflict,
    stem,
)
from ragtrust.text import assertions


@dataclass(frozen=True)
class Claim:
    """One claim: a prose assertion with its span in its document.

    Attributes:
        doc: index of the document in the pool the claim was extracted from.
        start / end: character offsets (``document.text[start:end] == text``).
        text: the claim.
    """

    doc: int
    start: int
    end: int
    text: str

    @cached_property
    def bare(self) -> str:
        """The claim without Markdown (what is embedded, diffed and sent to NLI; computed once)."""
        return plain(self.text)


_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"(\*\*|__|`|(?<!\w)\*(?!\s)|(?<!\s)\*(?!\w))")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_CODE = re.compile(r"`([^`]+)`")
_OPTION = re.compile(r"(?:^|\s)--?[a-z][\w-]*")
#: an answer particle before a claim ("No, very few books are banned") says nothing itself
_ANSWER = re.compile(r"^\s*(?:yes|no)\s*[,.;:]\s*", re.I)
_REFERENCE = re.compile(
    r"^(?:please\s+)?(?:see(?: also)?|refer to|more (?:information|details)|for more(?!\s+than\b)|read more)\b", re.I
)


def plain(text: str) -> str:
    """A claim's words without Markdown (links become their text; images, emphasis, bullets go) or a leading Yes/No.

    Example:
        >>> plain("- **Use** [bcrypt](https://x.example/b) ![logo](l.png) for `passwords`.")
        'Use bcrypt for passwords.'
    """
    text = _LINK.sub(r"\1", _IMAGE.sub("", text))
    text = _ANSWER.sub("", _BULLET.sub("", _MARKUP.sub("", text)))
    return " ".join(text.split())


def is_reference(sentence: str, bare: str | None = None) -> bool:
    """Whether a sentence points elsewhere instead of saying something: a reference or a lead-in.

    Mostly link text (a reference list item), a pointer ("See ...", "Please see ...", "For
    more ...", "Refer to ..."), or a lead-in to a list (it ends with a colon). ``bare``: the
    sentence's :func:`plain` text, when the caller has it.

    Example:
        >>> is_reference("- [OWASP Top 10 for LLM Applications](https://genai.owasp.org/)")
        True
        >>> is_reference("Different strategies for rotating keys exist:"), is_reference("Rotate keys yearly.")
        (True, False)
        >>> is_reference("OWASP recommends [DOMPurify](https://github.com/cure53/DOMPurify) for HTML sanitization.")
        False
    """
    raw = sentence.strip()
    text = plain(raw) if bare is None else bare
    if _REFERENCE.match(text) or text.endswith(":"):
        return True
    linked = sum(len(m.group(1).split()) for m in _LINK.finditer(raw))
    return bool(linked) and linked * 2 >= len(text.split())  # mostly a link: a reference list item


def is_prose(sentence: str, min_words: int = 4, max_chars: int = 600) -> bool:
    """Whether a sentence reads as a claim: enough words, mostly letters; not code, a table row or a reference.

    Example:
        >>> is_prose("Use a per-user salt of at least 16 bytes."), is_prose("| a | b | c |")
        (True, False)
        >>> is_prose("x = hashlib.sha256(pw).hexdigest()"), is_prose("See also: [Password Storage](p.md).")
        (False, False)
        >>> is_prose("Please see [Forgot Password Cheat Sheet](f.md) for details on this feature.")
        False
        >>> is_prose("- `javax.xml.XMLConstants.ACCESS_EXTERNAL_DTD`"), is_prose("Run openssl req -new -nodes now")
        (False, False)
    """
    if sentence.startswith(("    ", "\t")):  # an indented Markdown code block
        return False
    raw = sentence.strip()
    if not raw or len(raw) > max_chars:
        return False
    if raw.startswith(("|", "```", "<", "{", "[!")) or raw.count("|") >= 2:
        return False
    text = plain(raw)
    if not text or is_reference(raw, text):
        return False
    coded = sum(len(m.group(1).split()) for m in _CODE.finditer(raw))
    if coded and coded * 2 >= len(text.split()):  # mostly inline code: an identifier, not a claim
        return False
    if any(len(_OPTION.findall(line)) >= 2 for line in raw.splitlines()):  # a command line
        return False
    if re.search(r"[{};=]\s*$|\(\)|==|=>|->|::|\bdef |\bfunction\b|\breturn\b.*;", text):
        return False
    tokens = [t for t in TOKEN.findall(text) if t.isalpha()]
    if len(tokens) < min_words:
        return False
    letters = sum(map(str.isalpha, text)) + sum(map(str.isspace, text))  # no character is both
    return letters / len(text) >= 0.75


#: the claims found per text, as ``(spans, complete)``: ``(start, end, text)`` of each claim, and
#: whether the extraction read the whole text (not cut at a ``max_claims``). A claim's document
#: index is the caller's, so one entry serves every pool a chunk joins (a scan reads each chunk
#: as retrieved and again as a witness of its neighbours). Bounded by entries and bytes (the
#: key text is counted; the claims' own text is about as much again).
_EXTRACTED: ByteLRU[tuple[tuple[tuple[int, int, str], ...], bool]] = ByteLRU(4096, 8 * MiB)
#: texts longer than this (characters) are extracted every time, not kept
_KEPT_TEXT = 64 * 1024


def extract_claims(doc: int, text: str, max_claims: int = 40) -> list[Claim]:
    r"""The prose assertions of ``text`` (at most ``max_claims``, in order), with their spans.

    Nothing in a fenced code block that names its language (markdown-it-py's CommonMark
    parse, :func:`~ragtrust.ingest.markup.markdown_code_ranges`) is a claim: code read as
    prose ("MAX_ITEMS = 100") would be aligned and diffed against other documents' code.

    Example:
        >>> text = "## Salt\n\nWhy salt? A salt defeats rainbow tables.\n\n| salt | 16 bytes |"
        >>> [(c.text, c.start) for c in extract_claims(0, text)]
        [('A salt defeats rainbow tables.', 19)]
    """
    limit = max(1, max_claims)  # the extraction stops once it holds max_claims, after the first
    found = _EXTRACTED.get(text)
    if found is None or (not found[1] and len(found[0]) < limit):
        found = _spans(text, limit)
        if len(text) <= _KEPT_TEXT:  # one huge text must not push every chunk out
            _EXTRACTED.put(text, found)
    return [Claim(doc=doc, start=start, end=end, text=claim) for start, end, claim in found[0][:limit]]


def _spans(text: str, max_claims: int) -> tuple[tuple[tuple[int, int, str], ...], bool]:
    """The claims of ``text`` (at most ``max_claims``) and whether the whole text was read."""
    out: list[tuple[int, int, str]] = []
    code = markdown_code_ranges(text, labelled_only=True) if "```" in text or "~~~" in text else []
    for sentence in assertions(text):
        if any(a <= sentence.start < b for a, b in code):  # a line of a fenced code block
            continue
        if is_prose(sentence.text):
            out.append((sentence.start, sentence.end, sentence.text))
            if len(out) >= max_claims:
                return tuple(out), False
    return tuple(out), True


def content_words(text: str) -> set[str]:
    """Lower-cased, lightly stemmed content words (stop words and one-letter tokens removed).

    Example:
        >>> sorted(content_words("Queen bees live two years")) == sorted(content_words("A queen bee lives 2 years"))
        True
    """
    return {stem(t.lower()) for t in TOKEN.findall(text) if (len(t) > 1 or t.isdigit()) and t.lower() not in STOP_WORDS}


def overlap_coefficient(a: set[str], b: set[str]) -> float:
    """``|a & b| / min(|a|, |b|)`` (0 when either is empty)."""
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def alignable(claims: Sequence[Claim], *, min_overlap: float, anchors: int | None = None) -> list[bool]:
    """Which claims have a partner that :func:`aligned_pairs` could pair them with, from words alone.

    A pair needs content-word overlap >= ``min_overlap`` (or the same text) whatever the
    cosine, so a claim without such a partner is never aligned and need not be embedded.
    ``anchors``: only pairs with at least one claim of a document numbered below it count (the
    claim-conflict signal's retrieved documents; witness-witness pairs are never checked).

    Example:
        >>> second = "A queen bee lives 3 years. Drones leave the hive in spring."
        >>> cs = extract_claims(0, "Queen bees live two years.") + extract_claims(1, second)
        >>> alignable(cs, min_overlap=0.3)
        [True, True, False]
    """
    n = len(claims)
    if min_overlap <= 0:
        return [n > 1] * n
    words = [content_words(c.bare) for c in claims]
    holders: dict[str, list[int]] = {}
    for k, found in enumerate(words):
        for word in found:
            holders.setdefault(word, []).append(k)
    same_text: dict[str, list[int]] = {}
    for k, c in enumerate(claims):
        same_text.setdefault(c.bare.lower(), []).append(k)
    out = [False] * n
    for k in range(n):
        shared: dict[int, int] = {}
        for word in words[k]:
            for m in holders[word]:
                if m > k:
                    shared[m] = shared.get(m, 0) + 1
        twins = [m for m in same_text[claims[k].bare.lower()] if m > k]
        for m in [*shared, *twins]:
            if anchors is not None and claims[k].doc >= anchors and claims[m].doc >= anchors:
                continue
            if m in twins or shared[m] / min(len(words[k]), len(words[m])) >= min_overlap:
                out[k] = out[m] = True
    return out


def aligned_pairs(
    claims: Sequence[Claim],
    vectors: npt.NDArray[np.float32],
    *,
    min_cosine: float,
    min_overlap: float,
    max_pairs: int,
    same_document: bool = True,
    identical: bool = False,
) -> list[tuple[int, int, float]]:
    """``(i, j, cosine)`` for claim pairs that talk about the same thing, most similar first.

    Pairs of claims with identical (normalised) text are left out unless ``identical``
    (a sentence repeated verbatim agrees with itself: nothing to check, but it testifies).
    Pairs inside one document are kept when ``same_document``.
    """
    n = len(claims)
    if n < 2 or max_pairs <= 0:
        return []
    sims = vectors @ vectors.T
    iu, ju = np.triu_indices(n, 1)
    keep = sims[iu, ju] >= min_cosine
    candidates = sorted(
        ((int(i), int(j), float(sims[i, j])) for i, j in zip(iu[keep], ju[keep], strict=True)),
        key=lambda p: -p[2],
    )
    words = [content_words(c.bare) for c in claims]
    norm = [c.bare.lower() for c in claims]
    out: list[tuple[int, int, float]] = []
    for i, j, cos in candidates:
        if not same_document and claims[i].doc == claims[j].doc:
            continue
        if norm[i] == norm[j]:
            if identical:
                out.append((i, j, cos))
            continue
        if overlap_coefficient(words[i], words[j]) < min_overlap:
            continue
        out.append((i, j, cos))
        if len(out) >= max_pairs:
            break
    return out


__all__ = [
    "Claim",
    "DiffFinding",
    "alignable",
    "aligned_pairs",
    "content_words",
    "diff_conflict",
    "extract_claims",
    "is_prose",
    "is_reference",
    "names_in",
    "overlap_coefficient",
    "quantity_conflict",
]
