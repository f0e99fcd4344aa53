"""Signal 5: semantic outlier, the embedding deviation from the batch (SPEC section 3).

For each document ``i`` the distance ``d_i = 1 - cos(e_i, centroid of the others)`` is
taken to the **leave-one-out** centroid (a single outlier cannot drag the centroid towards
itself, which is what hid outliers in the reference at K = 5). The distances are turned
into a robust z-score ``z_i = (d_i - median(d)) / max(1.4826 * MAD(d), min_scale)``
(median and MAD instead of mean and population std, whose z cannot exceed 2 at K = 5;
``min_scale`` keeps a tight batch from turning tiny differences into huge z). The score is
``clip((z - z_low) / (z_high - z_low))`` with ``z_low = 1.5``, ``z_high = 3.5``, and 0 when
the document is close to its neighbours anyway: ``d_i < min_distance``, or ``d_i`` covers
less than ``min_excess`` of the way from the median distance to the maximum distance 1
(``(d_i - median) / (1 - median)``), so a batch of near-duplicates does not turn a small
difference into an outlier.

With K = 1 or 2 there is no batch to deviate from: every document is skipped with a
reason. All texts are embedded in one ``embed`` call.

Example:
    >>> from ragtrust.testing import HashingEmbedder, retrieved
    >>> texts = ["Hash passwords with bcrypt or argon2 and a per-user salt."] * 4
    >>> texts.append("The festival features jazz bands and street food every summer.")
    >>> rs = SemanticOutlierSignal(embedder=HashingEmbedder()).score_batch(retrieved(texts))
    >>> [round(r.score, 1) for r in rs]
    [0.0, 0.0, 0.0, 0.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ragtrust.documents import RetrievedDoc, SignalResult
from ragtrust.errors import ModelError
from ragtrust.models.base import Embedder
from ragtrust.registry import register, warm_up
from ragtrust.screening.base import Signal


@register("signal", "semantic_outlier")
@dataclass
class SemanticOutlierSignal(Signal):
    """Leave-one-out centroid distance with a robust z-score.

    Attributes:
        embedder: the sentence embedder (unit-norm rows).
        min_docs: below this batch size every document is skipped (3: K = 1..2 skip).
        z_low / z_high: the z-score ramp.
        min_scale: floor of the robust scale (cosine-distance units).
        min_distance: distance below which a document is never an outlier.
        min_excess: share of the way from the median distance to 1 a document must cover.
    """

    embedder: Embedder
    min_docs: int = 3
    z_low: float = 1.5
    z_high: float = 3.5
    min_scale: float = 0.05
    min_distance: float = 0.25
    min_excess: float = 0.3

    name: ClassVar[str] = "semantic_outlier"
    document_level: ClassVar[bool] = False

    def warm_up(self) -> None:
        """Warm the embedder when it has a ``warm_up``."""
        warm_up(self.embedder)

    def score_batch(self, docs: Sequence[RetrievedDoc], query: str | None = None) -> list[SignalResult]:
        """Score every document against the others of the batch."""
        k = len(docs)
        if k < self.min_docs:
            return [self.skipped(f"needs at least {self.min_docs} documents to find an outlier, got {k}") for _ in docs]
        emb = np.asarray(self.embedder.embed([d.document.text for d in docs]), dtype=np.float64)
        if emb.ndim != 2 or emb.shape[0] != k:
            raise ModelError(f"embedder returned shape {emb.shape}, expected ({k}, dim)")
        norms = np.linalg.norm(emb, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        emb = np.divide(emb, norms, out=np.zeros_like(emb), where=norms > 0)
        total = emb.sum(axis=0)
        dist = np.zeros(k)
        for i in range(k):
            centroid = total - emb[i]
            c_norm = np.linalg.norm(centroid)
            dist[i] = 1.0 - float(emb[i] @ centroid / c_norm) if c_norm > 0 else 1.0
        median = float(np.median(dist))
        mad = float(np.median(np.abs(dist - median)))
        scale = max(1.4826 * mad, self.min_scale)
        results = []
        for i in range(k):
            if empty[i]:
                results.append(self.skipped("the document has no embeddable content"))
                continue
            z = (dist[i] - median) / scale
            score = 0.0
            excess = (dist[i] - median) / (1.0 - median) if median < 1.0 else 0.0
            if dist[i] >= self.min_distance and excess >= self.min_excess:
                score = min(1.0, max(0.0, (z - self.z_low) / (self.z_high - self.z_low)))
            reasons = (
                (f"is a semantic outlier: far from the other retrieved documents (distance {dist[i]:.2f}, z {z:.1f})",)
                if score > 0
                else ()
            )
            results.append(
                SignalResult(
                    name=self.name,
                    score=float(score),
                    reasons=reasons,
                    details={"distance": round(float(dist[i]), 4), "z": round(float(z), 3), "median": round(median, 4)},
                )
            )
        return results


__all__ = ["SemanticOutlierSignal"]
