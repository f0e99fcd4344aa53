"""N-gram alignment and filtering of extracted passages (SPEC section 6.3, EvidenT).

Every passage an extractor returns claims to be a verbatim copy of a retrieved document.
:class:`NGramAligner` checks that claim with the multiset n-gram overlap ratio

    overlap_n(p, d) = |G_n(p) ∩ G_n(d)| / |G_n(p)|

and then, exactly as SPEC 6.3 says (n = 5, t = 0.7 by default):

- ``overlap > t``: the passage is kept with its URL (status ``kept``);
- ``0 < overlap <= t``: it is truncated to the part that overlaps the document
  (status ``truncated``; its text becomes the verbatim document text of the matching
  parts, joined by ``" ... "``);
- ``overlap == 0``, or the passage names a URL / doc id that was never retrieved:
  suspected citation drift; the passage is re-attributed to the retrieved document with
  the highest overlap if that overlap is ``> t`` (status ``reattributed``);
- otherwise it is dropped (status ``dropped``).

Tokenisation is :func:`ragtrust.text.word_tokens`: NFKC-folded, case-folded runs of
letters and digits. Whitespace, punctuation, case and Unicode compatibility forms (ligatures,
full-width letters, no-break spaces) therefore never break a match, and every token keeps
its character offsets in the original document, so each kept passage gets
:class:`~ragtrust.documents.Span` objects with ``document.text[start:end] == span.text``.

Passages shorter than ``n`` tokens use the largest ``n' <= n`` that fits (``n' = number of
tokens``), so a four-word passage is compared as one 4-gram instead of having no n-grams.

Example:
    >>> from ragtrust.testing import retrieved
    >>> docs = retrieved(["Always use parameterised queries to stop SQL injection in every database call."])
    >>> p = Passage("p1", "use parameterised queries to stop SQL injection", url=docs[0].document.url)
    >>> result = NGramAligner().align([p], docs)
    >>> result.passages[0].status, result.passages[0].spans[0].text
    ('kept', 'use parameterised queries to stop SQL injection')
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtrust.documents import Document, Passage, RetrievedDoc, Span
from ragtrust.errors import ConfigError, InputError
from ragtrust.text import Token, word_tokens

#: how many candidate positions of one n-gram are tried when growing a match (guards
#: against pathological repetition such as tables of identical rows)
_MAX_CANDIDATES = 64
#: documents whose token index is kept between calls (per aligner instance)
_CACHE_SIZE = 256
#: joins the verbatim parts of a truncated passage
TRUNCATION_JOINER = " ... "


@dataclass(frozen=True)
class AlignmentResult:
    """The outcome of aligning a batch of passages.

    Attributes:
        passages: kept, truncated and re-attributed passages (with spans), input order.
        dropped: passages with no support in any retrieved document.
        diagnostics: ``n_in``, ``kept``, ``truncated``, ``reattributed``, ``dropped``
            (counts) and ``pct_hallucinated`` (dropped / n_in), ``pct_url_drift_corrected``
            (reattributed / n_in), ``pct_partial`` (truncated / n_in: partially
            hallucinated passages), ``drift_candidates`` (overlap 0 with the claimed
            document, or a source that was never retrieved) and ``mean_overlap`` (over
            the input passages, against the claimed document; 0 when it was not
            retrieved). Percentages are fractions in [0, 1]; 0 when ``n_in == 0``.
    """

    passages: tuple[Passage, ...]
    dropped: tuple[Passage, ...]
    diagnostics: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "passages": [p.to_dict() for p in self.passages],
            "dropped": [p.to_dict() for p in self.dropped],
            "diagnostics": dict(self.diagnostics),
        }


class _DocIndex:
    """Tokens of one document and, per n, the positions of each n-gram."""

    __slots__ = ("_grams", "tokens", "words")

    def __init__(self, text: str) -> None:
        self.tokens = word_tokens(text)
        self.words = [t.text for t in self.tokens]
        self._grams: dict[int, dict[tuple[str, ...], list[int]]] = {}

    def grams(self, n: int) -> dict[tuple[str, ...], list[int]]:
        table = self._grams.get(n)
        if table is None:
            table = {}
            w = self.words
            for i in range(len(w) - n + 1):
                table.setdefault(tuple(w[i : i + n]), []).append(i)
            self._grams[n] = table
        return table


@dataclass
class NGramAligner:
    """Verify passages against retrieved documents by multiset n-gram overlap (SPEC 6.3).

    Args:
        n: n-gram length (EvidenT's production choice: 5).
        threshold: overlap ``t`` above which a passage is kept as is (EvidenT: 0.7).

    Example:
        >>> NGramAligner(n=2).overlap("a b c", "a b x")
        0.5
    """

    n: int = 5
    threshold: float = 0.7
    _cache: dict[str, _DocIndex] = field(default_factory=dict, init=False, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Validate the parameters (the user's to fix)."""
        if not isinstance(self.n, int) or self.n < 1:
            raise ConfigError(f"NGramAligner.n must be an integer >= 1, got {self.n!r}")
        if not 0.0 < float(self.threshold) <= 1.0:
            raise ConfigError(f"NGramAligner.threshold must be in (0, 1], got {self.threshold!r}")

    # -- public API ---------------------------------------------------------------------

    def overlap(self, passage: str, document: str) -> float:
        """``overlap_n(passage, document)`` with multiset n-grams, in [0, 1].

        Passages with fewer than ``n`` tokens use ``n' = len(tokens)``; a passage without
        any word token has overlap 0.
        """
        words = [t.text for t in word_tokens(passage)]
        return self._overlap(words, self._index(document))

    def locate(self, text: str, doc: Document | RetrievedDoc) -> tuple[float, tuple[Span, ...]]:
        """Overlap of ``text`` with ``doc`` and the document spans it was copied from.

        The spans are the maximal verbatim (token-level) matches of at least ``n'`` tokens,
        merged when they touch, in passage order; ``doc.text[start:end] == span.text``.
        """
        document = doc.document if isinstance(doc, RetrievedDoc) else doc
        tokens = word_tokens(text)
        index = self._index(document.text)
        score = self._overlap([t.text for t in tokens], index)
        if score == 0.0:
            return 0.0, ()
        return score, self._spans(text, tokens, index, document)

    def align(self, passages: Sequence[Passage], docs: Sequence[RetrievedDoc]) -> AlignmentResult:
        """Keep, truncate, re-attribute or drop each passage (SPEC 6.3).

        Args:
            passages: extracted passages; ``doc_id`` (preferred) or ``url`` names the
                claimed source. A claim that matches no retrieved document is treated as
                citation drift.
            docs: the retrieved documents (the only valid sources).

        Returns:
            An :class:`AlignmentResult`; every returned passage has ``doc_id``, ``url``
            (the document's citation target), ``spans``, ``status`` and ``overlap`` (the
            overlap that decided its fate: with the claimed document for kept/truncated,
            with the new document for re-attributed, the best one found for dropped).

        Raises:
            InputError: ``passages`` is not a list of :class:`~ragtrust.documents.Passage`
                (JSON passages: :func:`ragtrust.evidence.passages_from_json`), or ``docs``
                not a list of :class:`~ragtrust.documents.RetrievedDoc`.
        """
        passages = _checked_items(passages, Passage, "passages", "read JSON passages with passages_from_json()")
        docs = _checked_items(docs, RetrievedDoc, "docs", "wrap a Document as RetrievedDoc(document=...)")
        lookup = _lookup(docs)
        kept: list[Passage] = []
        dropped: list[Passage] = []
        counts = Counter[str]()
        drift_candidates = 0
        overlap_sum = 0.0
        for passage in passages:
            tokens = word_tokens(passage.text)
            words = [t.text for t in tokens]
            claimed = _resolve(passage, lookup)
            score = self._overlap(words, self._index(claimed.document.text)) if claimed is not None else 0.0
            overlap_sum += score
            if claimed is not None and score > self.threshold:
                out = self._attribute(passage, tokens, claimed, score, "kept")
            elif claimed is not None and score > 0.0:
                out = self._truncate(passage, tokens, claimed, score)
            else:
                drift_candidates += 1
                out = self._reattribute(passage, tokens, docs, exclude=claimed)
            counts[out.status] += 1
            (dropped if out.status == "dropped" else kept).append(out)
        n_in = len(passages)

        def pct(count: int) -> float:
            return count / n_in if n_in else 0.0

        diagnostics = {
            "n_in": float(n_in),
            "kept": float(counts["kept"]),
            "truncated": float(counts["truncated"]),
            "reattributed": float(counts["reattributed"]),
            "dropped": float(counts["dropped"]),
            "pct_hallucinated": pct(counts["dropped"]),
            "pct_url_drift_corrected": pct(counts["reattributed"]),
            "pct_partial": pct(counts["truncated"]),
            "drift_candidates": float(drift_candidates),
            "mean_overlap": overlap_sum / n_in if n_in else 0.0,
        }
        return AlignmentResult(passages=tuple(kept), dropped=tuple(dropped), diagnostics=diagnostics)

    def clear_cache(self) -> None:
        """Forget the token indexes of documents seen so far."""
        with self._lock:
            self._cache.clear()

    # -- internals ----------------------------------------------------------------------

    def _index(self, text: str) -> _DocIndex:
        with self._lock:
            index = self._cache.get(text)
        if index is not None:
            return index
        index = _DocIndex(text)
        with self._lock:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[text] = index
        return index

    def _effective_n(self, n_tokens: int) -> int:
        return min(self.n, n_tokens)

    def _overlap(self, words: Sequence[str], index: _DocIndex) -> float:
        if not words:
            return 0.0
        n = self._effective_n(len(words))
        grams = _passage_grams(tuple(words), n)  # cached: re-attribution scores one passage many times
        table = index.grams(n)
        shared = sum(min(count, len(table.get(gram, ()))) for gram, count in grams.items())
        return shared / (len(words) - n + 1)

    def _runs(self, words: Sequence[str], index: _DocIndex) -> list[tuple[int, int, int, int]]:
        """Greedy maximal verbatim runs as (passage start, passage end, doc start, doc end) tokens."""
        n = self._effective_n(len(words))
        table = index.grams(n)
        dwords = index.words
        runs: list[tuple[int, int, int, int]] = []
        i = 0
        while i <= len(words) - n:
            candidates = table.get(tuple(words[i : i + n]))
            if not candidates:
                i += 1
                continue
            best_j, best_len = candidates[0], n
            for j in candidates[:_MAX_CANDIDATES]:
                length = n
                while i + length < len(words) and j + length < len(dwords) and words[i + length] == dwords[j + length]:
                    length += 1
                if length > best_len:
                    best_j, best_len = j, length
            runs.append((i, i + best_len, best_j, best_j + best_len))
            i += best_len
        return runs

    def _spans(self, text: str, ptokens: Sequence[Token], index: _DocIndex, document: Document) -> tuple[Span, ...]:
        tokens = index.tokens
        dtext = document.text
        merged: list[list[int]] = []
        for p0, p1, d0, d1 in self._runs([t.text for t in ptokens], index):
            start, end = tokens[d0].start, tokens[d1 - 1].end
            # punctuation hugging the run (a final ".", opening quotes) is part of the copy when
            # the passage has the same characters there
            end += _common_prefix(text[ptokens[p1 - 1].end :], dtext[end:])
            start -= _common_prefix(text[: ptokens[p0].start][::-1], dtext[:start][::-1])
            if merged and merged[-1][0] <= end and start <= merged[-1][1]:
                merged[-1] = [min(merged[-1][0], start), max(merged[-1][1], end)]
            else:
                merged.append([start, end])
        return tuple(Span(document.id, s, e, dtext[s:e], url=document.cite) for s, e in merged)

    def _attribute(
        self, passage: Passage, tokens: Sequence[Token], doc: RetrievedDoc, score: float, status: str
    ) -> Passage:
        spans = self._spans(passage.text, tokens, self._index(doc.document.text), doc.document)
        return dataclasses.replace(
            passage, url=doc.document.cite, doc_id=doc.id, spans=spans, status=status, overlap=score
        )

    def _truncate(self, passage: Passage, tokens: Sequence[Token], doc: RetrievedDoc, score: float) -> Passage:
        out = self._attribute(passage, tokens, doc, score, "truncated")
        if not out.spans:  # overlap > 0 always yields at least one run; defensive
            return dataclasses.replace(out, status="dropped", spans=())
        return dataclasses.replace(out, text=TRUNCATION_JOINER.join(s.text for s in out.spans))

    def _reattribute(
        self, passage: Passage, tokens: Sequence[Token], docs: Sequence[RetrievedDoc], exclude: RetrievedDoc | None
    ) -> Passage:
        words = [t.text for t in tokens]
        best: RetrievedDoc | None = None
        best_score = 0.0
        for doc in docs:
            if exclude is not None and doc.id == exclude.id:
                continue
            score = self._overlap(words, self._index(doc.document.text))
            if score > best_score:
                best, best_score = doc, score
        if best is not None and best_score > self.threshold:
            return self._attribute(passage, tokens, best, best_score, "reattributed")
        return dataclasses.replace(passage, spans=(), status="dropped", overlap=best_score)


def _checked_items(items: object, kind: type[Any], name: str, hint: str) -> list[Any]:
    """``items`` as a list, each a ``kind``; else one :class:`InputError` naming what came and the fix.

    A ``str`` or a mapping is refused as a whole: iterating one gives characters or keys.

    Example:
        >>> _checked_items("x", Passage, "passages", "build Passage objects")
        Traceback (most recent call last):
        ...
        ragtrust.errors.InputError: passages must be a list of Passage, got str; build Passage objects
    """
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise InputError(f"{name} must be a list of {kind.__name__}, got {type(items).__name__}; {hint}")
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise InputError(f"{name}[{i}] must be a {kind.__name__}, got {type(item).__name__}; {hint}")
    return list(items)


@functools.lru_cache(maxsize=1024)
def _passage_grams(words: tuple[str, ...], n: int) -> Counter[tuple[str, ...]]:
    return Counter(words[i : i + n] for i in range(len(words) - n + 1))


def _common_prefix(a: str, b: str) -> int:
    """Length of the shared run of non-space, non-word characters at the start of a and b."""
    k = 0
    for x, y in zip(a, b, strict=False):
        if x != y or x.isspace() or x.isalnum():
            break
        k += 1
    return k


def _norm_url(url: str) -> str:
    return url.strip().rstrip("/")


def _lookup(docs: Sequence[RetrievedDoc]) -> dict[str, RetrievedDoc]:
    """Map ids, URLs and citation targets of the retrieved documents to the documents."""
    table: dict[str, RetrievedDoc] = {}
    for doc in docs:
        for key in (doc.document.cite, doc.document.url, doc.id):
            if key:
                table.setdefault(_norm_url(key), doc)
    return table


def _resolve(passage: Passage, lookup: dict[str, RetrievedDoc]) -> RetrievedDoc | None:
    for key in (passage.doc_id, passage.url):
        if key and _norm_url(key) in lookup:
            return lookup[_norm_url(key)]
    return None


def resolve_source(target: str, docs: Sequence[RetrievedDoc]) -> RetrievedDoc | None:
    """Find the retrieved document whose id, URL or citation target is ``target`` (or ``None``).

    URLs are compared after stripping whitespace and trailing slashes.
    """
    return _lookup(docs).get(_norm_url(target)) if target else None


__all__ = ["TRUNCATION_JOINER", "AlignmentResult", "NGramAligner", "resolve_source"]
