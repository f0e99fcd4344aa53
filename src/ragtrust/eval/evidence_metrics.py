"""Evidence metrics of EvidenT (SPEC section 9).

All token counts use :func:`ragtrust.text.word_tokens` (NFKC-folded, case-folded runs of
letters and digits), the same tokenisation as the aligner, and all n-gram sets are
multisets.

- :func:`hallucinated_citation`: 1 if any cited URL is not among the retrieved URLs.
- :func:`groundedness`: 1 if the cited set intersects the (non-exhaustive) gold set.
- :func:`word_overlap`: ``O = sum_t min(count_A(t), count_D(t))``; AnsCov = O/|A|,
  DocFocus = O/|D|.
- :func:`ngram_overlap`: AnsCov@n = I_n/|G_n(A)|, DocFocus@n = I_n/|G_n(D)| with
  ``I_n = |G_n(A) ∩ G_n(D)|``.
- :func:`sem_scores`: SemMax / SemRecall over windows of 256 word tokens, stride 50.
- :func:`aggregate_alignment`: pooled alignment diagnostics of many queries.
- :func:`ablation_table`: the (n, t) ablation with retention, hallucination before / after
  filtering and Cov@10.

Example:
    >>> word_overlap("the cat sat", "the cat ran far")
    (0.6666666666666666, 0.5)
    >>> ngram_overlap("a b c d", "a b c x", 2)
    (0.6666666666666666, 0.6666666666666666)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ragtrust.documents import Passage, RetrievedDoc
from ragtrust.errors import InputError
from ragtrust.evidence.align import AlignmentResult, NGramAligner, resolve_source
from ragtrust.models.base import ENTAILMENT, NLIModel
from ragtrust.text import word_tokens, words

#: scores (premise = document window, hypothesis = answer window) pairs, one float per pair
PairScorer = Callable[[Sequence[tuple[str, str]]], Sequence[float]]


def _norm(url: str) -> str:
    return url.strip().rstrip("/")


def hallucinated_citation(cited_urls: Iterable[str], retrieved_urls: Iterable[str]) -> float:
    """1.0 if any cited URL is not among the retrieved URLs, else 0.0 (%Hallucination per answer).

    URLs are compared after stripping whitespace and trailing slashes.

    Example:
        >>> hallucinated_citation(["https://a/", "https://b"], ["https://a"])
        1.0
    """
    retrieved = {_norm(u) for u in retrieved_urls}
    return float(any(_norm(u) not in retrieved for u in cited_urls))


def groundedness(cited: Iterable[str], gold: Iterable[str]) -> float:
    """1.0 if the cited set intersects the gold set, else 0.0 (%Groundedness per answer)."""
    return float(bool({_norm(u) for u in cited} & {_norm(u) for u in gold}))


def word_overlap(answer: str, doc: str) -> tuple[float, float]:
    """(AnsCov, DocFocus) of the word multisets; 0 for an empty side."""
    a, d = Counter(words(answer)), Counter(words(doc))
    shared = sum((a & d).values())
    n_a, n_d = sum(a.values()), sum(d.values())
    return (shared / n_a if n_a else 0.0, shared / n_d if n_d else 0.0)


def _grams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def ngram_overlap(answer: str, doc: str, n: int) -> tuple[float, float]:
    """(AnsCov@n, DocFocus@n) with multiset n-grams; 0 for a side shorter than ``n`` tokens."""
    if n < 1:
        raise InputError(f"n must be >= 1, got {n}")
    a, d = _grams(words(answer), n), _grams(words(doc), n)
    shared = sum((a & d).values())
    n_a, n_d = sum(a.values()), sum(d.values())
    return (shared / n_a if n_a else 0.0, shared / n_d if n_d else 0.0)


def token_windows(text: str, window: int = 256, stride: int = 50) -> list[str]:
    """Windows of ``window`` word tokens every ``stride`` tokens (the last one reaches the end).

    Each window is the original text from its first token to its last, so a scorer sees
    readable text. A text shorter than ``window`` is one window; no tokens, no windows.
    """
    if window < 1 or stride < 1:
        raise InputError(f"window and stride must be >= 1, got {window} and {stride}")
    tokens = word_tokens(text)
    if not tokens:
        return []
    starts = list(range(0, max(len(tokens) - window, 0) + 1, stride))
    if starts[-1] + window < len(tokens):
        starts.append(len(tokens) - window)
    return [text[tokens[s].start : tokens[min(s + window, len(tokens)) - 1].end] for s in starts]


def sem_scores(answer: str, doc: str, scorer: PairScorer, window: int = 256, stride: int = 50) -> tuple[float, float]:
    """(SemMax, SemRecall) of an answer against a document.

    Both texts are cut into :func:`token_windows`; ``scorer`` scores every
    (document window, answer window) pair, in that order (premise, hypothesis). ragtrust
    uses the NLI engine's **entailment probability** (:func:`nli_entailment_scorer`), so a
    score says how well a document window supports an answer window; any relevance model
    returning higher-is-better scores works too. SemMax is the best pair score; SemRecall
    the mean over answer windows of the best document window. Empty texts give (0, 0).

    Example:
        >>> sem_scores("a b", "a b c", lambda pairs: [1.0 if h in p else 0.0 for p, h in pairs])
        (1.0, 1.0)
    """
    a_windows, d_windows = token_windows(answer, window, stride), token_windows(doc, window, stride)
    if not a_windows or not d_windows:
        return 0.0, 0.0
    pairs = [(d, a) for a in a_windows for d in d_windows]
    scores = np.asarray(scorer(pairs), dtype=np.float64).reshape(len(a_windows), len(d_windows))
    return float(scores.max()), float(scores.max(axis=1).mean())


def nli_entailment_scorer(nli: NLIModel) -> PairScorer:
    """Build a :data:`PairScorer` that returns the entailment column of ``nli.predict``."""

    def score(pairs: Sequence[tuple[str, str]]) -> Sequence[float]:
        return [float(v) for v in nli.predict(list(pairs))[:, ENTAILMENT]]

    return score


_COUNT_KEYS = ("n_in", "kept", "truncated", "reattributed", "dropped", "drift_candidates")


def aggregate_alignment(results: Iterable[AlignmentResult | Mapping[str, float]]) -> dict[str, float]:
    """Pool the diagnostics of many alignments (micro-average over passages).

    Returns the summed counts (``n_in``, ``kept``, ``truncated``, ``reattributed``,
    ``dropped``, ``drift_candidates``) and ``pct_hallucinated`` = dropped / n_in,
    ``pct_url_drift_corrected`` = reattributed / n_in, ``pct_partial`` = truncated / n_in,
    ``retention`` = (n_in - dropped) / n_in.
    """
    totals = dict.fromkeys(_COUNT_KEYS, 0.0)
    for result in results:
        diag = result.diagnostics if isinstance(result, AlignmentResult) else result
        for key in _COUNT_KEYS:
            totals[key] += float(diag.get(key, 0.0))
    n_in = totals["n_in"]

    def pct(x: float) -> float:
        return x / n_in if n_in else 0.0

    totals.update(
        pct_hallucinated=pct(totals["dropped"]),
        pct_url_drift_corrected=pct(totals["reattributed"]),
        pct_partial=pct(totals["truncated"]),
        retention=pct(n_in - totals["dropped"]),
    )
    return totals


class _TokenCache:
    def __init__(self) -> None:
        self._words: dict[str, list[str]] = {}
        self._grams: dict[tuple[str, int], Counter[tuple[str, ...]]] = {}

    def words(self, text: str) -> list[str]:
        if text not in self._words:
            self._words[text] = words(text)
        return self._words[text]

    def grams(self, text: str, n: int) -> Counter[tuple[str, ...]]:
        key = (text, n)
        if key not in self._grams:
            self._grams[key] = _grams(self.words(text), n)
        return self._grams[key]


def _source(passage: Passage, docs: Sequence[RetrievedDoc]) -> RetrievedDoc | None:
    for key in (passage.doc_id, passage.url):
        if key and (doc := resolve_source(key, docs)) is not None:
            return doc
    return None


def hallucinated_token_rate(
    passages: Sequence[Passage], docs: Sequence[RetrievedDoc], ref_n: int = 5, _cache: _TokenCache | None = None
) -> float:
    """Share of passage tokens not copied from the document each passage is attributed to.

    A token counts as copied when it lies inside some ``n'``-gram of the passage that also
    occurs in its document (``n' = min(ref_n, passage tokens)``); every token of a passage
    whose source is not among ``docs`` counts as hallucinated. Pooled over passages;
    0 when there are no tokens.
    """
    cache = _cache or _TokenCache()
    total = uncovered = 0
    for passage in passages:
        tokens = cache.words(passage.text)
        total += len(tokens)
        doc = _source(passage, docs)
        if doc is None or not tokens:
            uncovered += len(tokens)
            continue
        n = min(ref_n, len(tokens))
        table = cache.grams(doc.document.text, n)
        covered = [False] * len(tokens)
        for i in range(len(tokens) - n + 1):
            if tuple(tokens[i : i + n]) in table:
                covered[i : i + n] = [True] * n
        uncovered += covered.count(False)
    return uncovered / total if total else 0.0


def coverage_at(
    passages: Sequence[Passage], docs: Sequence[RetrievedDoc], n: int = 10, _cache: _TokenCache | None = None
) -> float:
    """Cov@n: share of the passages' n-grams found in their attributed documents.

    Precisely: ``sum_p |G_n'(p) ∩ G_n'(d_p)| / sum_p |G_n'(p)|`` over the passages ``p``
    (multiset n-grams, ``d_p`` the retrieved document ``p`` is attributed to by ``doc_id``
    or ``url``, ``n' = min(n, tokens of p)`` for short passages). A passage whose source is
    not retrieved contributes its n-grams to the denominator only. 0 without n-grams.
    EvidenT reports Cov@10 of the passages kept after filtering (0.999 at n=5, t=0.7).
    """
    cache = _cache or _TokenCache()
    shared = total = 0
    for passage in passages:
        tokens = cache.words(passage.text)
        if not tokens:
            continue
        k = min(n, len(tokens))
        grams = cache.grams(passage.text, k)
        total += sum(grams.values())
        doc = _source(passage, docs)
        if doc is not None:
            shared += sum((grams & cache.grams(doc.document.text, k)).values())
    return shared / total if total else 0.0


@dataclass(frozen=True)
class AblationRow:
    """One (n, t) setting of the alignment ablation.

    Attributes:
        n / t: n-gram length and overlap threshold.
        n_passages: passages aligned (all queries).
        retention: share of passages not dropped (kept + truncated + re-attributed).
        hallucination_before: :func:`hallucinated_token_rate` of the raw passages against
            their claimed sources (identical in every row; the baseline).
        hallucination_after: the same rate for the passages that survive filtering,
            against the documents they end up attributed to.
        cov_at_10: :func:`coverage_at` with n = 10 of the surviving passages.
        pct_truncated / pct_reattributed / pct_dropped: shares of the input passages.
    """

    n: int
    t: float
    n_passages: int
    retention: float
    hallucination_before: float
    hallucination_after: float
    cov_at_10: float
    pct_truncated: float
    pct_reattributed: float
    pct_dropped: float

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)


def _groups(
    passages_with_sources: Sequence[Any], docs: Sequence[Any]
) -> list[tuple[Sequence[Passage], Sequence[RetrievedDoc]]]:
    if not passages_with_sources or isinstance(passages_with_sources[0], Passage):
        if docs and not isinstance(docs[0], RetrievedDoc):
            raise InputError("ablation_table: flat passages need a flat list of RetrievedDoc")
        return [(passages_with_sources, docs)]
    if len(passages_with_sources) != len(docs):
        raise InputError(
            f"ablation_table: {len(passages_with_sources)} passage groups but {len(docs)} document groups; "
            "pass one document list per query"
        )
    return list(zip(passages_with_sources, docs, strict=True))


def ablation_table(
    passages_with_sources: Sequence[Passage] | Sequence[Sequence[Passage]],
    docs: Sequence[RetrievedDoc] | Sequence[Sequence[RetrievedDoc]],
    ns: Sequence[int] = (2, 3, 5, 10),
    ts: Sequence[float] = (0.5, 0.6, 0.7, 0.8, 0.9),
    ref_n: int = 5,
) -> list[AblationRow]:
    """Align the same passages under every (n, t) and report what filtering achieves.

    Args:
        passages_with_sources: passages as extracted (each naming its claimed source by
            ``doc_id`` or ``url``): one flat list, or one list per query.
        docs: the retrieved documents: one flat list, or one list per query.
        ns: the n-gram lengths to try.
        ts: the overlap thresholds to try.
        ref_n: n-gram length of the hallucinated-token measure (fixed across rows so that
            before / after are comparable).

    Returns:
        One :class:`AblationRow` per (n, t), n-major.
    """
    groups = _groups(passages_with_sources, docs)
    cache = _TokenCache()
    n_total = sum(len(p) for p, _ in groups)
    all_before = [(p, d) for ps, d in groups for p in ps]
    before = _pooled_rate(all_before, ref_n, cache)
    rows: list[AblationRow] = []
    for n in ns:
        for t in ts:
            aligner = NGramAligner(n=n, threshold=t)
            results = [(aligner.align(ps, ds), ds) for ps, ds in groups]
            survivors = [(p, ds) for r, ds in results for p in r.passages]
            agg = aggregate_alignment(r for r, _ in results)
            rows.append(
                AblationRow(
                    n=n,
                    t=t,
                    n_passages=n_total,
                    retention=agg["retention"],
                    hallucination_before=before,
                    hallucination_after=_pooled_rate(survivors, ref_n, cache),
                    cov_at_10=_pooled_cov(survivors, 10, cache),
                    pct_truncated=agg["pct_partial"],
                    pct_reattributed=agg["pct_url_drift_corrected"],
                    pct_dropped=agg["pct_hallucinated"],
                )
            )
    return rows


def _pooled_rate(items: Sequence[tuple[Passage, Sequence[RetrievedDoc]]], ref_n: int, cache: _TokenCache) -> float:
    total = uncovered = 0.0
    for passage, ds in items:
        k = len(cache.words(passage.text))
        total += k
        uncovered += k * hallucinated_token_rate([passage], ds, ref_n, cache)
    return uncovered / total if total else 0.0


def _pooled_cov(items: Sequence[tuple[Passage, Sequence[RetrievedDoc]]], n: int, cache: _TokenCache) -> float:
    total = shared = 0.0
    for passage, ds in items:
        tokens = cache.words(passage.text)
        if not tokens:
            continue
        grams = len(tokens) - min(n, len(tokens)) + 1
        total += grams
        shared += grams * coverage_at([passage], ds, n, cache)
    return shared / total if total else 0.0


__all__ = [
    "AblationRow",
    "PairScorer",
    "ablation_table",
    "aggregate_alignment",
    "coverage_at",
    "groundedness",
    "hallucinated_citation",
    "hallucinated_token_rate",
    "ngram_overlap",
    "nli_entailment_scorer",
    "sem_scores",
    "token_windows",
]
