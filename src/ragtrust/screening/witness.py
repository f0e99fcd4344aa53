"""Corpus witnesses: a document's nearest neighbours in the whole corpus, and the whole-document witness statistic.

The corpus scan (:mod:`ragtrust.scan`) compares each document's claims with those of its
*witnesses*: its nearest neighbours in the corpus by embedding cosine (:func:`neighbours`:
chunks of the same parent document and neighbours below ``min_similarity`` do not count),
handed to a witness-reading signal in the store's form (:func:`witness_docs`).

:func:`witness_pairs`, :func:`nli_pairs` and :func:`witness_result` compute the
whole-document ``witness`` statistic: the strongest mutual NLI contradiction with a witness.
The scan judged witnesses this way before issue 15; it now uses the claim-conflict signal.
``ragtrust nli calibrate`` still measures the statistic
(:func:`ragtrust.eval.calibration.calibrate_witness`).

Example:
    >>> import numpy as np
    >>> vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]], dtype=np.float32)
    >>> [[j for j, _ in row] for row in neighbours(vectors, ["a", "b", "c"], k=2)]
    [[1], [0], []]
    >>> witness_pairs([[(1, 0.99)], [(0, 0.99)], []])
    [(0, 1)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ragtrust.documents import Document, RetrievedDoc, SignalResult, _JsonMixin
from ragtrust.models.base import CONTRADICTION, ENTAILMENT, NLIModel
from ragtrust.retrieval.dense import _faiss, normalize_rows
from ragtrust.screening.ramp import contradiction_ramp

#: cosine below which a neighbour is not a witness: it keeps the witness step to documents
#: about the same thing (and bounds its work; the claim alignment has its own thresholds)
MIN_WITNESS_SIMILARITY = 0.5
#: mutual contradiction above which a witness is named in the reasons (:func:`witness_result`)
WITNESS_REASON_THRESHOLD = 0.5


@dataclass(frozen=True)
class Witness(_JsonMixin):
    """A near neighbour of a document in the corpus, one of the witnesses of its claims."""

    id: str
    similarity: float


def neighbours(
    vectors: npt.NDArray[np.float32],
    groups: Sequence[str],
    k: int,
    min_similarity: float = MIN_WITNESS_SIMILARITY,
) -> list[list[tuple[int, float]]]:
    """For each row, up to ``k`` most similar other rows of another group (cosine >= min)."""
    n = len(vectors)
    if n < 2 or k <= 0:
        return [[] for _ in range(n)]
    faiss = _faiss()
    unit = np.ascontiguousarray(normalize_rows(vectors))
    index = faiss.IndexFlatIP(unit.shape[1])
    index.add(unit)
    # ask for extra candidates: the row itself and siblings of the same document come back too
    group_sizes: dict[str, int] = {}
    for g in groups:
        group_sizes[g] = group_sizes.get(g, 0) + 1
    fetch = min(n, k + max(group_sizes.values()) + 1)
    scores, rows = index.search(unit, fetch)
    out: list[list[tuple[int, float]]] = []
    for i in range(n):
        found: list[tuple[int, float]] = []
        for score, j in sorted(zip(scores[i].tolist(), rows[i].tolist(), strict=True), key=lambda t: (-t[0], t[1])):
            if j < 0 or j == i or groups[j] == groups[i] or score < min_similarity:
                continue
            found.append((int(j), float(min(1.0, score))))
            if len(found) == k:
                break
        out.append(found)
    return out


def witness_docs(docs: Sequence[Document], near: Sequence[tuple[int, float]]) -> list[RetrievedDoc]:
    """A document's corpus neighbours as witnesses, nearest first (the store's form, rank from 1)."""
    return [
        RetrievedDoc(docs[j], float(np.clip(sim, 0.0, 1.0)), rank, "witness")
        for rank, (j, sim) in enumerate(near, start=1)
    ]


def witness_pairs(near: Sequence[Sequence[tuple[int, float]]]) -> list[tuple[int, int]]:
    """Unordered pairs ``(i, j)``, ``i < j``, that need NLI (each judged once, both ways)."""
    return sorted({(min(i, j), max(i, j)) for i, row in enumerate(near) for j, _ in row})


def nli_pairs(
    nli: NLIModel, texts: Sequence[str], pairs: Sequence[tuple[int, int]], batch: int = 32
) -> dict[tuple[int, int], tuple[float, float, float, float]]:
    """``(i, j) -> (c(i->j), c(j->i), e(i->j), e(j->i))`` for every pair."""
    out: dict[tuple[int, int], tuple[float, float, float, float]] = {}
    for start in range(0, len(pairs), batch):
        chunk = pairs[start : start + batch]
        inputs = [(texts[i], texts[j]) for i, j in chunk] + [(texts[j], texts[i]) for i, j in chunk]
        probs = np.asarray(nli.predict(inputs), dtype=np.float64)
        m = len(chunk)
        for n, pair in enumerate(chunk):
            out[pair] = (
                float(probs[n, CONTRADICTION]),
                float(probs[m + n, CONTRADICTION]),
                float(probs[n, ENTAILMENT]),
                float(probs[m + n, ENTAILMENT]),
            )
    return out


def witness_result(
    doc_index: int,
    near: Sequence[tuple[int, float]],
    judged: Mapping[tuple[int, int], tuple[float, float, float, float]],
    ids: Sequence[str],
    ramp: tuple[float, float] = (0.0, 1.0),
) -> tuple[SignalResult, tuple[Witness, ...]]:
    """The whole-document ``witness`` statistic of one document (not used by :func:`scan_corpus`).

    The score is the strongest mutual contradiction ``(c(d -> n) + c(n -> d)) / 2`` over the
    witnesses, through the contradiction ramp ``ramp = (low, high)`` (``(0, 1)`` keeps it
    raw); ``details["contradictions"]`` has each witness's mutual contradiction.
    """
    if not near:
        return SignalResult("witness", skipped=True, skip_reason="no near neighbour in the corpus"), ()
    witnesses: list[Witness] = []
    mutual: dict[str, float] = {}
    for j, sim in near:
        c_ij, c_ji, _, _ = judged[(min(doc_index, j), max(doc_index, j))]
        witnesses.append(Witness(ids[j], round(sim, 6)))
        mutual[ids[j]] = round((c_ij + c_ji) / 2, 6)
    worst_id = max(mutual, key=lambda k: (mutual[k], k))
    reasons = tuple(
        f"contradicts near neighbour {w.id} (similarity {w.similarity:.2f}, contradiction {mutual[w.id]:.2f})"
        for w in sorted(witnesses, key=lambda w: -mutual[w.id])
        if mutual[w.id] >= WITNESS_REASON_THRESHOLD
    )
    score = contradiction_ramp(mutual[worst_id], *ramp)
    details = {"witnesses": len(witnesses), "strongest": mutual[worst_id], "ramp": list(ramp), "contradictions": mutual}
    return SignalResult("witness", score, reasons=reasons if score > 0 else (), details=details), tuple(witnesses)


__all__ = [
    "MIN_WITNESS_SIMILARITY",
    "WITNESS_REASON_THRESHOLD",
    "Witness",
    "neighbours",
    "nli_pairs",
    "witness_docs",
    "witness_pairs",
    "witness_result",
]
