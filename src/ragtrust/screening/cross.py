"""Signal 4: cross-document consistency, and the batch consistency C (SPEC section 3).

**Pairs.** Every pair of retrieved documents that shares content (overlap coefficient of
their content words ``|A & B| / min(|A|, |B|) >= min_overlap``) is scored by NLI in both
directions, all pairs of the batch in **one** ``nli.predict`` call. Unrelated pairs are not
sent: MNLI models call unrelated text a "contradiction" (SPEC section 4), which is noise
here, and skipping them also saves NLI passes. The pair's contradiction is
``c_ij = max(c(i -> j), c(j -> i))`` mapped through the ramp ``clip((c - low) / (high - low))``,
written ``r_ij``. ``low`` / ``high`` default to the NLI model's calibration
(:mod:`ragtrust.eval.calibration`: for the shipped model, at most 5% of clean
development retrieved sets of 5 contain a pair above ``low``) and to 0.4 / 0.9 for a model
without one.

**Scoping (who is blamed).** A contradiction between two documents says one of them is
wrong, not which. Each document gets a disagreement level
``D_i = sum_j s_j * r_ij / sum_j s_j`` over all other retrieved documents ``j`` (``s_j``
= retrieval similarity, 1 when the retriever gives none; unrelated pairs count as
``r = 0``): how much of the *relevance-weighted* neighbourhood it contradicts. For a
contradicting pair, the document with the larger ``D`` (by more than ``margin``) takes
all of the blame: it is the one that disagrees with the majority / with the more relevant
neighbours. When the two are level (two documents alone, or two camps of equal weight)
the contradiction is ambiguous and each gets half. A document's score is the largest
blame share times ``r_ij`` over its pairs. So one poisoned document among four clean ones
(``D`` high for it, a quarter of that for each clean one) is blamed, and its clean
neighbours keep a score of 0.

**Consistency C** (batch, 1 = consistent) is one minus the relevance-weighted mean pair
contradiction ``C = 1 - sum_{i<j} s_i s_j r_ij / sum_{i<j} s_i s_j`` (unrelated pairs count
as agreeing: nothing disagrees). With a single document C = 1.0. Every result of the
batch carries it in ``details["consistency"]``; :func:`consistency_from` reads it back.

Example:
    >>> from ragtrust.testing import LexicalNLI, retrieved
    >>> docs = retrieved(["MD5 is broken for password storage.", "MD5 is broken for password storage today.",
    ...                   "MD5 is not broken for password storage."])
    >>> rs = CrossConsistencySignal(nli=LexicalNLI()).score_batch(docs)
    >>> [round(r.score, 2) for r in rs], consistency_from(rs) < 1.0
    ([0.0, 0.0, 0.9], True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ragtrust.documents import RetrievedDoc, SignalResult
from ragtrust.errors import ModelError
from ragtrust.models.base import CONTRADICTION, NLIModel
from ragtrust.registry import register, warm_up
from ragtrust.screening.base import Signal
from ragtrust.screening.ramp import contradiction_ramp, resolve_ramp
from ragtrust.text import assertions, words

_STOP_WORDS = (
    "a an the of to in on at is are was were be been by for with and or as that this it its from not no "
    "do does can may must should will would you your we our they their which when what than then there "
    "these those have has had but if into also more most any all each such only other"
)
_STOP = frozenset(_STOP_WORDS.split())


def content_words(text: str) -> set[str]:
    """Lower-cased content words (stop words and one-letter tokens removed)."""
    return {w for w in words(text) if len(w) > 1 and w not in _STOP}


def consistency_from(results: Sequence[SignalResult]) -> float | None:
    """Read the batch consistency C stored by :class:`CrossConsistencySignal` (``None`` if absent)."""
    for r in results:
        value = r.details.get("consistency") if r.details else None
        if value is not None:
            return float(value)
    return None


@register("signal", "cross_consistency")
@dataclass
class CrossConsistencySignal(Signal):
    """Pairwise NLI contradiction between retrieved documents, blamed on the dissenter.

    Attributes:
        nli: the NLI model (one ``predict`` call per batch).
        min_overlap: content-word overlap coefficient below which a pair is unrelated.
        low / high: the contradiction ramp; ``None`` = the model's calibration.
        margin: disagreement difference under which blame is shared (ambiguous).
        max_docs: only the first ``max_docs`` documents (by rank) are paired (cost bound).
    """

    nli: NLIModel
    min_overlap: float = 0.2
    low: float | None = None
    high: float | None = None
    margin: float = 0.05
    max_docs: int = 20

    name: ClassVar[str] = "cross_consistency"
    document_level: ClassVar[bool] = False

    def warm_up(self) -> None:
        """Warm the NLI model when it has a ``warm_up``."""
        warm_up(self.nli)

    def score_batch(self, docs: Sequence[RetrievedDoc], query: str | None = None) -> list[SignalResult]:
        """Score every document of the batch; C goes into each result's details."""
        k = len(docs)
        if k < 2:
            return [
                SignalResult(
                    name=self.name,
                    skipped=True,
                    skip_reason="needs at least 2 documents to compare",
                    details={"consistency": 1.0},
                )
                for _ in docs
            ]
        n = min(k, self.max_docs)
        low, high, ramp_source = resolve_ramp(self.nli, self.name, self.low, self.high)
        # questions assert nothing: compare the documents' claims only
        texts = [" ".join(a.text for a in assertions(d.document.text)) or d.document.text for d in docs[:n]]
        vocab = [content_words(t) for t in texts]
        related = [
            (i, j)
            for i in range(n)
            for j in range(i + 1, n)
            if vocab[i]
            and vocab[j]
            and len(vocab[i] & vocab[j]) / min(len(vocab[i]), len(vocab[j])) >= self.min_overlap
        ]
        raw = np.zeros((n, n), dtype=np.float64)
        if related:
            pairs = [p for i, j in related for p in ((texts[i], texts[j]), (texts[j], texts[i]))]
            probs = np.asarray(self.nli.predict(pairs), dtype=np.float64)
            if probs.shape != (len(pairs), 3):
                raise ModelError(f"NLI model returned shape {probs.shape}, expected ({len(pairs)}, 3)")
            for m, (i, j) in enumerate(related):
                c = max(probs[2 * m, CONTRADICTION], probs[2 * m + 1, CONTRADICTION])
                raw[i, j] = raw[j, i] = c
        ramp = np.vectorize(lambda c: contradiction_ramp(float(c), low, high))(raw) if n else raw
        np.fill_diagonal(ramp, 0.0)
        rel = np.array([d.score if d.score is not None and d.score > 0 else 0.0 for d in docs[:n]], dtype=np.float64)
        if any(d.score is None for d in docs[:n]) or rel.sum() <= 0:
            rel = np.ones(n)
        rel = np.maximum(rel, 1e-6)
        disagreement = np.array([(ramp[i] * rel).sum() / (rel.sum() - rel[i]) for i in range(n)])
        weights = np.outer(rel, rel)
        iu = np.triu_indices(n, 1)
        consistency = float(1.0 - (weights[iu] * ramp[iu]).sum() / weights[iu].sum())
        ids = [d.id for d in docs[:n]]
        results: list[SignalResult] = []
        for i in range(n):
            blamed: list[tuple[float, str, float]] = []
            for j in range(n):
                if j == i or ramp[i, j] <= 0:
                    continue
                if disagreement[i] > disagreement[j] + self.margin:
                    share = 1.0
                elif disagreement[j] > disagreement[i] + self.margin:
                    share = 0.0
                else:
                    share = 0.5
                blamed.append((share * ramp[i, j], ids[j], float(raw[i, j])))
            score = max((b[0] for b in blamed), default=0.0)
            conflicts = sorted((b for b in blamed if b[0] > 0), key=lambda b: -b[0])
            reasons: tuple[str, ...] = ()
            if conflicts:
                others = ", ".join(b[1] for b in conflicts[:4])
                shared = " (ambiguous: blame shared)" if score < ramp[i].max() else ""
                reasons = (
                    f"contradicts {len(conflicts)} of {n - 1} other retrieved documents ({others}; "
                    f"strongest contradiction {max(b[2] for b in conflicts):.2f}){shared}",
                )
            results.append(
                SignalResult(
                    name=self.name,
                    score=float(min(1.0, max(0.0, score))),
                    reasons=reasons,
                    details={
                        "consistency": round(consistency, 6),
                        "disagreement": round(float(disagreement[i]), 4),
                        "contradiction": {
                            ids[j]: round(float(raw[i, j]), 4) for j in range(n) if j != i and raw[i, j] > 0
                        },
                        "pairs_scored": 2 * len(related),
                        "ramp": [low, high],
                        "ramp_source": ramp_source,
                    },
                )
            )
        for _ in range(n, k):
            results.append(
                SignalResult(
                    name=self.name,
                    skipped=True,
                    skip_reason=f"beyond the first {self.max_docs} documents",
                    details={"consistency": round(consistency, 6)},
                )
            )
        return results


__all__ = ["CrossConsistencySignal", "consistency_from", "content_words"]
