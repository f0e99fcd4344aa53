"""Fitting the relevance thresholds on measured questions (the procedure of :mod:`ragtrust.eval.relevance`).

A :class:`Row` is what one question measured with relevance not deciding. :func:`fit` fits
the context and answer thresholds together by the Youden J of the decision they make
(:func:`decide`); :func:`calibrate` reports the figures in sample, leave-one-out and with
the configured thresholds.

Example:
    >>> fit_threshold([0.7, 0.6, 0.55], [0.1, 0.2, 0.3])
    0.425
    >>> auc([0.9, 0.8], [0.1, 0.85])
    0.75
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.errors import InputError


@dataclass(frozen=True)
class Row:
    """What one question measured.

    Attributes:
        context / answer: context and answer relevance (``None`` when not measured).
        max_similarity: the best retrieval score.
        trust_score / trust_level: the verdict's T and level with relevance not deciding.
        trusted_without_relevance: the verdict's decision with relevance not deciding.
        other_reasons: its decision reasons (relevance aside).
        prefaced: the answer carried the "does not explicitly state" preface.
        latency_s: wall time of the question.
        relevance_s: the part of it the relevance check took.
    """

    id: str
    question: str
    on_topic: bool
    category: str
    context: float | None
    answer: float | None
    max_similarity: float | None
    trust_score: float
    trust_level: str
    trusted_without_relevance: bool
    other_reasons: tuple[str, ...]
    prefaced: bool
    latency_s: float
    relevance_s: float = 0.0


def fit_threshold(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """The cut with the best Youden J between ``positives`` (pass: >= cut) and ``negatives``.

    Among cuts of equal J the middle of the widest gap between neighbouring scores wins.
    Without negatives the cut is just below the smallest positive (and the other way
    round); without either, 0.

    Example:
        >>> fit_threshold([0.5, 0.6], [0.2, 0.55])  # J = 0.5 either side of 0.55; wider gap below
        0.35
    """
    pos, neg = sorted(positives), sorted(negatives)
    if not pos or not neg:
        return round(max(0.0, pos[0] - 0.01), 3) if pos else (round(min(1.0, neg[-1] + 0.01), 3) if neg else 0.0)
    values = sorted(set(pos) | set(neg))
    best: tuple[float, float, float] | None = None  # (J, gap, cut)
    cuts = [(values[0] - 0.01, 0.01, values[0])] + [
        ((lo + hi) / 2, hi - lo, hi) for lo, hi in zip(values, values[1:], strict=False)
    ]
    cuts.append((values[-1] + 0.01, 0.01, values[-1] + 0.01))
    for cut, gap, _ in cuts:
        j = sum(p >= cut for p in pos) / len(pos) - sum(n >= cut for n in neg) / len(neg)
        if best is None or (j, gap) > (best[0], best[1]):
            best = (j, gap, cut)
    assert best is not None
    cut = min(1.0, max(0.0, best[2]))
    rounded = round(cut, 3)
    # keep the rounded value only when it decides every score as the exact cut does
    if all((v >= rounded) == (v >= cut) for v in values):
        return rounded
    return cut


def decide(row: Row, context_threshold: float, answer_threshold: float) -> bool:
    """The verdict's decision under the given thresholds (an unmeasured part passes)."""
    context_ok = row.context is None or row.context >= context_threshold
    answer_ok = row.answer is None or row.answer >= answer_threshold
    return row.trusted_without_relevance and context_ok and answer_ok


def fit(rows: Sequence[Row]) -> tuple[float, float]:
    """``(context_threshold, answer_threshold)`` fitted jointly on the decision itself.

    A verdict is trusted only when both measures clear their thresholds *and* every other
    condition holds, so the two are fitted together: among every pair of cuts (0, and the
    midpoints between neighbouring observed values of each measure) the pair whose
    decisions have the best Youden J (share of on-topic questions trusted minus share of
    off-topic ones trusted) wins; among equal J, the pair with the lowest answer cut, then the
    most permissive pair (smallest sum: a measure that adds nothing is not used). Answer
    relevance goes last because it is the weaker judge: an honest abstention ("I have no
    comment.", TruthfulQA's best answer to a question with no answer) is far from its question
    in words while its evidence, read in its topic context, is on the question. With 50
    off-topic questions (context 0.167, answer 0) and (context 0, answer 0.165) decided every
    question alike; the second refused 4 clean TruthfulQA questions of the paper suite for
    that reason (docs/results/relevance.md), so this rule was chosen on them. Fitting each
    measure alone and requiring both would reject every on-topic question that either fit
    rejects. Without questions of one
    label, each measure falls back to :func:`fit_threshold`.

    Example:
        >>> r = lambda on, c, a, ok=True: Row("q", "?", on, "", c, a, None, 0.8, "HIGH", ok, (), False, 0.0)
        >>> fit([r(True, 0.6, 0.5), r(True, 0.7, 0.7), r(False, 0.2, 0.6), r(False, 0.65, 0.1)])
        (0.4, 0.3)
    """
    on = [r for r in rows if r.on_topic]
    off = [r for r in rows if not r.on_topic]
    if not on or not off:

        def scores(attr: str, label: bool) -> list[float]:
            return [v for r in rows if r.on_topic is label for v in [getattr(r, attr)] if v is not None]

        return (
            fit_threshold(scores("context", True), scores("context", False)),
            fit_threshold(scores("answer", True), scores("answer", False)),
        )
    values = {
        attr: np.array([np.inf if getattr(r, attr) is None else getattr(r, attr) for r in rows])
        for attr in ("context", "answer")
    }
    cuts = {attr: _cuts(v[np.isfinite(v)]) for attr, v in values.items()}
    base = np.array([r.trusted_without_relevance for r in rows], dtype=float)
    label = np.array([r.on_topic for r in rows], dtype=bool)
    # passes[attr][i, k]: row k clears cut i of attr (an unmeasured part passes)
    c_pass = (values["context"][None, :] >= cuts["context"][:, None]) * base
    a_pass = (values["answer"][None, :] >= cuts["answer"][:, None]).astype(float)
    trusted_on = c_pass[:, label] @ a_pass[:, label].T / label.sum()
    trusted_off = c_pass[:, ~label] @ a_pass[:, ~label].T / (~label).sum()
    j = trusted_on - trusted_off
    best = np.isclose(j, j.max(), rtol=0, atol=1e-12)
    # among the best: the lowest answer cut, then the smallest sum
    answer_cut = np.broadcast_to(cuts["answer"][None, :], j.shape)
    lowest = best & np.isclose(answer_cut, answer_cut[best].min(), rtol=0, atol=1e-12)
    sums = cuts["context"][:, None] + cuts["answer"][None, :]
    ci, ai = np.unravel_index(np.argmin(np.where(lowest, sums, np.inf)), j.shape)
    return (
        _round_cut(float(cuts["context"][ci]), values["context"]),
        _round_cut(float(cuts["answer"][ai]), values["answer"]),
    )


def _cuts(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Candidate cuts: 0, the midpoints between neighbouring distinct values, and above the top."""
    v = np.unique(values)
    if not len(v):
        return np.array([0.0])
    return np.concatenate([[0.0], (v[:-1] + v[1:]) / 2, [min(1.0, float(v[-1]) + 0.01)]])


def _round_cut(cut: float, values: npt.NDArray[np.float64]) -> float:
    """``cut`` rounded to three decimals when that changes no decision on ``values``."""
    rounded = round(cut, 3)
    return rounded if np.array_equal(values >= rounded, values >= cut) else cut


def figures(rows: Sequence[Row], decisions: Sequence[bool]) -> dict[str, Any]:
    """Trusted counts and shares per label for one set of decisions."""
    on = [d for r, d in zip(rows, decisions, strict=True) if r.on_topic]
    off = [d for r, d in zip(rows, decisions, strict=True) if not r.on_topic]
    return {
        "on_topic_trusted": sum(on),
        "on_topic": len(on),
        "on_topic_trusted_share": sum(on) / len(on) if on else None,
        "off_topic_trusted": sum(off),
        "off_topic": len(off),
        "off_topic_trusted_ids": [r.id for r, d in zip(rows, decisions, strict=True) if d and not r.on_topic],
        "on_topic_flagged_ids": [r.id for r, d in zip(rows, decisions, strict=True) if not d and r.on_topic],
    }


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """Probability that a random positive scores above a random negative (ties count half).

    Example:
        >>> auc([0.9, 0.8], [0.1, 0.85])
        0.75
    """
    if not positives or not negatives:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def separation(rows: Sequence[Row], attr: str) -> dict[str, Any]:
    """Range of each label's scores and the AUC for one measure."""
    on = [v for r in rows if r.on_topic for v in [getattr(r, attr)] if v is not None]
    off = [v for r in rows if not r.on_topic for v in [getattr(r, attr)] if v is not None]
    return {
        "on_topic_min": min(on) if on else None,
        "on_topic_median": sorted(on)[len(on) // 2] if on else None,
        "off_topic_max": max(off) if off else None,
        "off_topic_median": sorted(off)[len(off) // 2] if off else None,
        "not_measured": sum(getattr(r, attr) is None for r in rows),
        "auc": auc(on, off),
    }


def calibrate(rows: Sequence[Row], configured: tuple[float, float] | None = None) -> dict[str, Any]:
    """Fitted thresholds and the figures: in-sample, leave-one-out and (optionally) configured.

    Args:
        rows: the measured questions (both labels).
        configured: the thresholds of the configuration, to report what they decide.
    """
    if not any(r.on_topic for r in rows) or all(r.on_topic for r in rows):
        raise InputError("calibrating relevance needs on-topic and off-topic questions")
    thresholds = fit(rows)
    loo_decisions, loo_thresholds = [], []
    for i in range(len(rows)):
        held_in = [r for j, r in enumerate(rows) if j != i]
        c, a = fit(held_in)
        loo_thresholds.append((c, a))
        loo_decisions.append(decide(rows[i], c, a))
    relevance_only = [decide(dataclasses.replace(r, trusted_without_relevance=True), *thresholds) for r in rows]
    out: dict[str, Any] = {
        "thresholds": {"context_threshold": thresholds[0], "answer_threshold": thresholds[1]},
        # the retrieval similarity is not used by the decision; it is here for comparison
        "separation": {attr: separation(rows, attr) for attr in ("context", "answer", "max_similarity")},
        "without_relevance": figures(rows, [r.trusted_without_relevance for r in rows]),
        "in_sample": figures(rows, [decide(r, *thresholds) for r in rows]),
        "relevance_alone_in_sample": figures(rows, relevance_only),
        "leave_one_out": {
            **figures(rows, loo_decisions),
            "context_threshold_range": [min(t[0] for t in loo_thresholds), max(t[0] for t in loo_thresholds)],
            "answer_threshold_range": [min(t[1] for t in loo_thresholds), max(t[1] for t in loo_thresholds)],
        },
        "not_trusted_without_relevance": _reason_counts(rows),
    }
    if configured is not None:
        out["configured"] = {
            "context_threshold": configured[0],
            "answer_threshold": configured[1],
            **figures(rows, [decide(r, *configured) for r in rows]),
        }
    return out


def _reason_counts(rows: Sequence[Row]) -> dict[str, dict[str, int]]:
    """Per label, how often each kind of reason kept a verdict from being trusted (relevance aside)."""
    out: dict[str, dict[str, int]] = {"on_topic": {}, "off_topic": {}}
    for r in rows:
        bucket = out["on_topic" if r.on_topic else "off_topic"]
        for reason in r.other_reasons:
            key = _reason_kind(reason)
            bucket[key] = bucket.get(key, 0) + 1
    return out


def _reason_kind(reason: str) -> str:
    """A reason without its numbers (``"T = 0.41 < tau 0.5"`` -> ``"T < tau"``)."""
    if reason.startswith("T = "):
        return "T < tau"
    if reason.startswith("a suspicious document"):
        return "suspicious document used"
    return reason.split(":", 1)[0].split(" (", 1)[0]


__all__ = ["Row", "auc", "calibrate", "decide", "figures", "fit", "fit_threshold", "separation"]
