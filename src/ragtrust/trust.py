"""The Trust Index (SPEC section 5): pure functions of numbers.

    T_raw   = alpha * F + beta * C + gamma * (1 - P)          (0.40, 0.35, 0.25)
    d(P)    = 1                                   if P <= 0.70
            = 1 - 0.40 * (P - 0.70) / 0.30        if P >  0.70     (continuous, d(1) = 0.6)
    m(s)    = 1                                   if s_max is None or s_max >= 0.30
            = 0.5 + 0.5 * s_max / 0.30            otherwise        (continuous, m(0) = 0.5)
    T_final = clip(T_raw * d(P) * m(s_max), 0, 1)

**Low-retrieval modifier.** We keep the reference's size: it halves T when nothing
similar was retrieved and fades out linearly at ``s_max = 0.30``. That size makes a
perfect answer (T_raw = 1) over an unrelated context land at 0.5 — on the decision
boundary, never comfortably trusted. It is only meaningful for cosine similarities
(``RetrievedDoc.score`` is cosine by contract); without scores it is 1.

**Levels** (half-open intervals, no overlap with the decision):

    HIGH      T >= level_high (0.8)
    MEDIUM    tau (0.5) <= T < level_high
    LOW       level_low (0.3) <= T < tau
    VERY LOW  T < level_low

so every trusted verdict (T >= tau) is MEDIUM or HIGH and every flagged one LOW or
VERY LOW; the reference made T = 0.5 both "LOW" and trusted.

**The paper's Trust Index vs ragtrust's decision.** T, F, C, P and the levels above are
the paper's, unchanged. ragtrust's *decision* (``Verdict.trusted``) asks more than
``T >= tau``: the verdict is trusted only when, in addition, no internal check failed
(fail closed), an answer was given (not blocked, not every document withheld), some
sentence of it is grounded (a verified span or NLI entailment), and **no suspicious
document was used in its context** (possible only under the ``flag`` policy, which keeps
suspicious documents; ``drop-suspicious`` and ``block`` never let one through, and a
quarantined document is withheld under every policy), **the evidence is about the
question and the answer addresses it** (context and answer relevance above their
thresholds, :mod:`ragtrust.verification.relevance`), and the answer does not say the
documentation "does not explicitly state" an answer. T alone cannot guarantee the
suspicious-document condition: a document at P_i = 0.9 among clean, relevant neighbours moves the relevance-weighted
P little, and T can stay above tau with the poisoned text in the answer; nor relevance: a
grounded answer to another question scores as well as one to the question asked. When any of these
conditions fails, ``compute_trust(..., failed=True)`` keeps T as it is but makes the
verdict flagged and caps its level at LOW (VERY LOW stays VERY LOW), and
``Verdict.decision_reasons`` names each failed condition in words.

Example (SPEC worked example):
    >>> round(0.59 * dampener(0.9), 4)
    0.4327
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ragtrust.config import TrustConfig
from ragtrust.documents import TrustLevel
from ragtrust.errors import InputError

LEVELS: tuple[TrustLevel, ...] = ("HIGH", "MEDIUM", "LOW", "VERY LOW")


@dataclass(frozen=True)
class TrustResult:
    """The Trust Index and its parts.

    Attributes:
        trust_raw: T before dampener and modifier.
        dampener: d(P).
        retrieval_modifier: m(s_max).
        trust_score: T_final in [0, 1].
        level: HIGH / MEDIUM / LOW / VERY LOW.
        trusted: ``trust_score >= tau`` and no internal failure.
    """

    trust_raw: float
    dampener: float
    retrieval_modifier: float
    trust_score: float
    level: TrustLevel
    trusted: bool


def _unit(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        raise InputError(f"{name} must be a number in [0, 1], got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise InputError(f"{name} must be in [0, 1], got {value}")
    return float(value)


def dampener(p: float, threshold: float = 0.70, max_drop: float = 0.40) -> float:
    """d(P): 1 up to ``threshold``, then linear down to ``1 - max_drop`` at P = 1.

    Example:
        >>> dampener(0.7), round(dampener(0.9), 4), round(dampener(1.0), 4)
        (1.0, 0.7333, 0.6)
    """
    p = _unit("poison probability P", p)
    if p <= threshold:
        return 1.0
    return 1.0 - max_drop * (p - threshold) / (1.0 - threshold)


def retrieval_modifier(max_similarity: float | None, threshold: float = 0.30, floor: float = 0.5) -> float:
    """m(s_max): ``floor + (1 - floor) * s_max / threshold`` below ``threshold``, else 1.

    Example:
        >>> retrieval_modifier(None), retrieval_modifier(0.0), retrieval_modifier(0.15), retrieval_modifier(0.3)
        (1.0, 0.5, 0.75, 1.0)
    """
    if max_similarity is None or threshold <= 0:
        return 1.0
    if isinstance(max_similarity, bool) or not isinstance(max_similarity, (int, float)) or math.isnan(max_similarity):
        raise InputError(f"max_similarity must be a number or None, got {max_similarity!r}")
    s = max(0.0, float(max_similarity))
    if s >= threshold:
        return 1.0
    return floor + (1.0 - floor) * s / threshold


def trust_level(t: float, config: TrustConfig) -> TrustLevel:
    """Return the level of a trust score (see module docstring for the cut points).

    Example:
        >>> c = TrustConfig()
        >>> [trust_level(t, c) for t in (0.8, 0.5, 0.4999, 0.3, 0.2999)]
        ['HIGH', 'MEDIUM', 'LOW', 'LOW', 'VERY LOW']
    """
    if t >= config.level_high:
        return "HIGH"
    if t >= config.tau:
        return "MEDIUM"
    if t >= config.level_low:
        return "LOW"
    return "VERY LOW"


def _below(tau: float) -> float:
    return max(0.0, tau - 1e-9)


def compute_trust(
    factuality: float,
    consistency: float,
    poison: float,
    max_similarity: float | None,
    config: TrustConfig,
    failed: bool = False,
) -> TrustResult:
    """Compute the Trust Index from F, C, P and the best retrieval similarity.

    Args:
        factuality: F in [0, 1].
        consistency: C in [0, 1].
        poison: P in [0, 1].
        max_similarity: best cosine retrieval similarity, ``None`` when unknown.
        config: weights, dampener, modifier, levels and tau.
        failed: a condition of ragtrust's decision failed besides the score (an internal
            error, a refused or ungrounded answer, suspicious text used, no relevant
            evidence, an answer that does not address the question): the verdict is
            never trusted and its level is at most LOW; T itself is unchanged.

    Raises:
        InputError: a component outside [0, 1] or not a number.

    Example:
        >>> r = compute_trust(1.0, 1.0, 0.0, 0.9, TrustConfig())
        >>> r.trust_score, r.level, r.trusted
        (1.0, 'HIGH', True)
    """
    f = _unit("factuality F", factuality)
    c = _unit("consistency C", consistency)
    p = _unit("poison probability P", poison)
    raw = config.alpha * f + config.beta * c + config.gamma * (1.0 - p)
    d = dampener(p, config.dampener_threshold, config.dampener_max_drop)
    m = retrieval_modifier(max_similarity, config.low_retrieval_threshold, config.low_retrieval_floor)
    score = min(1.0, max(0.0, raw * d * m))
    return TrustResult(
        trust_raw=raw,
        dampener=d,
        retrieval_modifier=m,
        trust_score=score,
        # A failed verdict (internal error, refused or unsupported answer, suspicious text
        # used) is never trusted and never reads above LOW, whatever its score.
        level=trust_level(min(score, _below(config.tau)) if failed else score, config),
        trusted=(score >= config.tau) and not failed,
    )


def trust_warnings(
    result: TrustResult,
    *,
    factuality: float,
    consistency: float,
    poison: float,
    max_similarity: float | None,
    config: TrustConfig,
    factuality_inconclusive: bool = False,
) -> tuple[str, ...]:
    """Plain-language warnings explaining a verdict's score (document warnings come from Stage 1).

    Example:
        >>> c = TrustConfig()
        >>> r = compute_trust(0.5, 0.6, 0.9, 0.2, c)
        >>> for w in trust_warnings(r, factuality=0.5, consistency=0.6, poison=0.9, max_similarity=0.2, config=c):
        ...     print(w)
        Flagged: trust score 0.27 is below the threshold 0.50 (VERY LOW).
        High poison probability (0.90): the score was reduced by 27%.
        The retrieved documents contradict each other (consistency 0.60).
        Weak retrieval: the best document has similarity 0.20 to the question; the score was reduced by 17%.
    """
    out: list[str] = []
    if not result.trusted:
        if result.trust_score >= config.tau:
            out.append(
                f"Flagged although the trust score {result.trust_score:.2f} reaches the threshold "
                f"{config.tau:.2f}: another condition of the decision failed (an internal error, a refused "
                "or ungrounded answer, suspicious text used to write it, or evidence or an answer that is "
                "not about the question)."
            )
        else:
            score, tau = result.trust_score, config.tau
            out.append(f"Flagged: trust score {score:.2f} is below the threshold {tau:.2f} ({result.level}).")
    if result.dampener < 1.0:
        out.append(f"High poison probability ({poison:.2f}): the score was reduced by {1 - result.dampener:.0%}.")
    elif poison > 0.5:
        out.append(f"Some retrieved documents look suspicious (poison probability {poison:.2f}).")
    if consistency < 0.7:
        out.append(f"The retrieved documents contradict each other (consistency {consistency:.2f}).")
    if factuality_inconclusive:
        out.append(
            "No sentence of the answer is clearly supported by the retrieved documents (factuality inconclusive)."
        )
    elif factuality < 0.5:
        out.append(f"The answer is poorly supported by the retrieved documents (factuality {factuality:.2f}).")
    if result.retrieval_modifier < 1.0 and max_similarity is not None:
        out.append(
            f"Weak retrieval: the best document has similarity {max_similarity:.2f} to the question; "
            f"the score was reduced by {1 - result.retrieval_modifier:.0%}."
        )
    return tuple(out)


__all__ = ["LEVELS", "TrustResult", "compute_trust", "dampener", "retrieval_modifier", "trust_level", "trust_warnings"]
