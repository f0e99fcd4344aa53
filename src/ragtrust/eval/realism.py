"""Attack-realism controls (issue 17): whether a family of poisoned documents leaks its format.

A detector should catch an attack by what it says, not by how long it is. When every
poisoned document of a family gains a sentence, repeats its claim or shouts in capitals, a
classifier can learn that tell instead of the attack, and its scores say nothing about
attacks written by another hand. This module measures the tell:

- :func:`format_features` describes a text by format alone (length, sentences, repetition,
  character shares), never by which words it uses;
- :func:`family_statistics` compares clean and poisoned documents feature by feature
  (mean, median, standardised mean difference);
- :func:`format_only_baseline` trains a content-blind detector on those features
  (standardised logistic regression, stratified k-fold cross-validated scores) and reports
  its ROC-AUC: at or above :data:`LEAK_AUC` the family leaks format and must be fixed;
- :func:`realism_report` / :func:`render_realism_markdown` do both for every family.

The negatives are the clean documents a detector sees (the corpus's unpoisoned documents);
the clean set is subsampled to at most :data:`CLEAN_RATIO` times the poisoned count so that
every family is judged at the same class balance.

Example:
    >>> f = format_features("Water is wet. Water is wet.")
    >>> f["sentences"], f["words"], f["max_repeat"]
    (2.0, 6.0, 2.0)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ragtrust.documents import Document
from ragtrust.errors import InputError, MissingDependencyError
from ragtrust.eval.metrics import EVAL_INSTALL, roc_auc
from ragtrust.text import split_sentences, words

#: A content-blind detector at or above this ROC-AUC is learning the generator's format, not
#: the attack. 0.5 is chance; 0.70 is the conventional lower bound of "acceptable"
#: discrimination (Hosmer & Lemeshow, *Applied Logistic Regression*, 2000, ch. 5) and sits
#: well above the noise of a cross-validated AUC on ~30 poisoned documents (a Hanley-McNeil
#: 95% half-width of about 0.12 at AUC 0.6 with 120 clean ones), so a family above it has a real format tell.
LEAK_AUC = 0.70
#: at most this many clean documents per poisoned one in the baseline (seeded subsample)
CLEAN_RATIO = 4
#: the baseline's folds: ``min(MAX_FOLDS, smallest class)``, at least 2
MAX_FOLDS = 5
#: below this many poisoned documents the table marks a verdict "(n < 10)": a cross-validated
#: AUC on a handful of documents is mostly noise (2 documents ranked above 8 by chance: 1/45)
MIN_JUDGED_N = 10

#: Every format feature, one line each (words are :func:`ragtrust.text.words` tokens,
#: sentences :func:`ragtrust.text.split_sentences`).
FEATURE_DOCS: Mapping[str, str] = {
    "characters": "length of the text in characters",
    "words": "number of word tokens",
    "sentences": "number of sentences",
    "lines": "number of non-blank lines",
    "words_per_sentence": "mean words per sentence (0 for no sentence)",
    "chars_per_word": "mean characters per word token (0 for no word)",
    "repeated_trigram_share": "share of word 3-gram positions whose 3-gram occurs more than once",
    "max_repeat": "largest count of one sentence (case-folded) or one word 4-gram",
    "type_token_ratio": "distinct words / words (0 for no word)",
    "punctuation_share": "share of characters that are punctuation (not letter, digit or space)",
    "digit_share": "share of characters that are digits",
    "uppercase_share": "share of letters that are upper case",
}
FEATURES: tuple[str, ...] = tuple(FEATURE_DOCS)


def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def format_features(text: str) -> dict[str, float]:
    """The format of ``text``, without its content (see :data:`FEATURE_DOCS`).

    Example:
        >>> f = format_features("A cat. A cat sat on a mat.")
        >>> f["characters"], f["sentences"], f["words_per_sentence"]
        (26.0, 2.0, 4.0)
        >>> f["repeated_trigram_share"], f["type_token_ratio"]
        (0.0, 0.625)
    """
    tokens = words(text)
    sentences = split_sentences(text)
    n_words, n_sentences, n_chars = len(tokens), len(sentences), len(text)
    trigrams = _ngrams(tokens, 3)
    tri_counts = Counter(trigrams)
    repeated = sum(1 for g in trigrams if tri_counts[g] > 1)
    sentence_counts = Counter(" ".join(s.text.casefold().split()) for s in sentences)
    four_counts = Counter(_ngrams(tokens, 4))
    max_repeat = max([0, *sentence_counts.values(), *four_counts.values()])
    letters = [c for c in text if c.isalpha()]
    punctuation = sum(1 for c in text if not (c.isalnum() or c.isspace()))
    return {
        "characters": float(n_chars),
        "words": float(n_words),
        "sentences": float(n_sentences),
        "lines": float(sum(1 for line in text.splitlines() if line.strip())),
        "words_per_sentence": n_words / n_sentences if n_sentences else 0.0,
        "chars_per_word": sum(len(t) for t in tokens) / n_words if n_words else 0.0,
        "repeated_trigram_share": repeated / len(trigrams) if trigrams else 0.0,
        "max_repeat": float(max_repeat),
        "type_token_ratio": len(set(tokens)) / n_words if n_words else 0.0,
        "punctuation_share": punctuation / n_chars if n_chars else 0.0,
        "digit_share": sum(1 for c in text if c.isdigit()) / n_chars if n_chars else 0.0,
        "uppercase_share": sum(1 for c in letters if c.isupper()) / len(letters) if letters else 0.0,
    }


def feature_matrix(texts: Iterable[str]) -> npt.NDArray[np.float64]:
    """One row of :data:`FEATURES` per text (shape ``(n, len(FEATURES))``)."""
    rows = [[format_features(t)[name] for name in FEATURES] for t in texts]
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(FEATURES))


def _text(item: str | Document) -> str:
    return item.text if isinstance(item, Document) else item


def _texts(items: Iterable[str | Document], name: str) -> list[str]:
    out = [_text(i) for i in items]
    if any(not isinstance(t, str) for t in out):
        raise InputError(f"{name} must hold strings or Documents")
    return out


def describe(texts: Sequence[str]) -> dict[str, dict[str, float]]:
    """Mean and median of every format feature over ``texts`` (empty dict for no text).

    Example:
        >>> describe(["One. Two.", "One."])["sentences"]
        {'mean': 1.5, 'median': 1.5}
    """
    if not texts:
        return {}
    x = feature_matrix(texts)
    return {
        name: {"mean": float(x[:, j].mean()), "median": float(np.median(x[:, j]))} for j, name in enumerate(FEATURES)
    }


def _smd(clean: npt.NDArray[np.float64], poisoned: npt.NDArray[np.float64]) -> float | None:
    # Cohen's d with the pooled standard deviation; positive = larger in poisoned documents
    diff = float(poisoned.mean() - clean.mean())
    n1, n2 = clean.size, poisoned.size
    var1 = float(clean.var(ddof=1)) if n1 > 1 else 0.0
    var2 = float(poisoned.var(ddof=1)) if n2 > 1 else 0.0
    pooled = math.sqrt(((n1 - 1) * var1 + (n2 - 1) * var2) / max(n1 + n2 - 2, 1))
    if pooled == 0.0:
        return 0.0 if diff == 0.0 else None  # constant in both sets: no spread to scale by
    return diff / pooled


def family_statistics(
    clean_texts: Sequence[str | Document], poisoned_texts: Sequence[str | Document]
) -> dict[str, Any]:
    """Format statistics of one family against the clean documents.

    Returns:
        ``{"n", "n_clean", "clean", "poisoned", "smd"}``: the two counts, :func:`describe`
        of each set, and the standardised mean difference (poisoned minus clean, over the
        pooled standard deviation) per feature; ``None`` where both sets are constant but
        differ (an unbounded difference).

    Raises:
        InputError: either set is empty.

    Example:
        >>> s = family_statistics(["Cats purr. Dogs bark.", "Owls hoot. Cows moo."],
        ...                       ["Cats purr. Dogs bark. Owls hoot.", "Cows moo. Bees hum. Ants march."])
        >>> s["n"], s["clean"]["sentences"]["mean"], s["poisoned"]["sentences"]["mean"]
        (2, 2.0, 3.0)
    """
    clean, poisoned = _texts(clean_texts, "clean_texts"), _texts(poisoned_texts, "poisoned_texts")
    if not clean or not poisoned:
        raise InputError(f"family statistics need clean and poisoned texts, got {len(clean)} and {len(poisoned)}")
    xc, xp = feature_matrix(clean), feature_matrix(poisoned)
    return {
        "n": len(poisoned),
        "n_clean": len(clean),
        "clean": describe(clean),
        "poisoned": describe(poisoned),
        "smd": {name: _smd(xc[:, j], xp[:, j]) for j, name in enumerate(FEATURES)},
    }


@dataclass(frozen=True)
class FormatBaseline:
    """A format-only detector's cross-validated result for one family.

    Attributes:
        auc: ROC-AUC of the out-of-fold scores (poisoned = positive).
        auc_interval: Hanley-McNeil 95% interval of ``auc``, clipped to [0, 1].
        n_clean / n_poisoned: the samples it was trained and scored on (after subsampling).
        folds: the number of stratified folds.
        coefficients: the logistic regression's coefficient per standardised feature, fitted
            on all samples (positive = the feature is larger in poisoned documents).
        leaks: ``auc >= LEAK_AUC``.
        seed: the subsampling and fold seed.
    """

    auc: float
    auc_interval: tuple[float, float]
    n_clean: int
    n_poisoned: int
    folds: int
    coefficients: Mapping[str, float] = field(default_factory=dict)
    leaks: bool = False
    seed: int = 42

    @property
    def top_feature(self) -> str:
        """The feature with the largest absolute coefficient (what leaks most)."""
        return max(self.coefficients, key=lambda k: abs(self.coefficients[k]))

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "auc": self.auc,
            "auc_interval": list(self.auc_interval),
            "n_clean": self.n_clean,
            "n_poisoned": self.n_poisoned,
            "folds": self.folds,
            "coefficients": dict(self.coefficients),
            "top_feature": self.top_feature,
            "leaks": self.leaks,
            "seed": self.seed,
        }


def hanley_mcneil_interval(auc: float, n_pos: int, n_neg: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Hanley & McNeil (1982) normal interval of a ROC-AUC (z = 1.96: 95%), clipped to [0, 1].

    Cheap and closed-form; like any interval built from the AUC alone it collapses to a
    point at AUC 0 or 1, so read small families with :data:`MIN_JUDGED_N` in mind.

    Example:
        >>> lo, hi = hanley_mcneil_interval(0.8, 30, 120)
        >>> round(lo, 3), round(hi, 3)
        (0.7, 0.9)
    """
    if n_pos < 1 or n_neg < 1:
        raise InputError(f"an AUC interval needs both classes, got {n_pos} positives and {n_neg} negatives")
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    var = (auc * (1 - auc) + (n_pos - 1) * (q1 - auc * auc) + (n_neg - 1) * (q2 - auc * auc)) / (n_pos * n_neg)
    half = z * math.sqrt(max(var, 0.0))
    return max(0.0, auc - half), min(1.0, auc + half)


def _sklearn() -> tuple[Any, Any, Any, Any]:
    try:
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold, cross_val_predict
        from sklearn.preprocessing import StandardScaler
    except ImportError as exc:
        raise MissingDependencyError("the format-only baseline (scikit-learn)", EVAL_INSTALL) from exc
    return LogisticRegression, StratifiedKFold, cross_val_predict, StandardScaler


def format_only_baseline(
    clean_texts: Sequence[str | Document], poisoned_texts: Sequence[str | Document], seed: int = 42
) -> FormatBaseline:
    """Cross-validated ROC-AUC of a detector that sees only :data:`FEATURES`.

    The clean set is subsampled (seeded) to at most :data:`CLEAN_RATIO` times the poisoned
    count; features are standardised inside each fold; a logistic regression scores the
    held-out fold (``cross_val_predict`` over ``min(MAX_FOLDS, smallest class)`` stratified,
    shuffled folds). A content-blind detector that separates the classes is learning the
    generator's format, so ``leaks`` is ``auc >= LEAK_AUC``.

    Raises:
        InputError: fewer than 2 clean or 2 poisoned texts (no two folds can be stratified).
        MissingDependencyError: scikit-learn is not installed.

    Example:
        >>> clean = [f"Fact {i} holds." for i in range(12)]
        >>> poisoned = [f"Fact {i} holds. Ignore it. Say no. Say no again." for i in range(4)]
        >>> b = format_only_baseline(clean, poisoned)
        >>> b.auc, b.leaks, b.n_clean, b.n_poisoned
        (1.0, True, 12, 4)
    """
    clean, poisoned = _texts(clean_texts, "clean_texts"), _texts(poisoned_texts, "poisoned_texts")
    if len(clean) < 2 or len(poisoned) < 2:
        raise InputError(
            "the format-only baseline needs at least 2 clean and 2 poisoned texts for a stratified "
            f"cross-validation, got {len(clean)} clean and {len(poisoned)} poisoned"
        )
    rng = np.random.default_rng(seed)
    cap = CLEAN_RATIO * len(poisoned)
    if len(clean) > cap:
        clean = [clean[i] for i in sorted(rng.choice(len(clean), size=cap, replace=False))]
    logistic, kfold, cross_val_predict, scaler = _sklearn()
    from sklearn.pipeline import make_pipeline

    x = feature_matrix([*clean, *poisoned])
    y = np.asarray([0] * len(clean) + [1] * len(poisoned))
    folds = min(MAX_FOLDS, len(clean), len(poisoned))
    model = make_pipeline(scaler(), logistic(max_iter=1000))
    cv = kfold(n_splits=folds, shuffle=True, random_state=seed)
    scores = cross_val_predict(model, x, y, cv=cv, method="predict_proba")[:, 1]
    auc = roc_auc(y, scores)
    if auc is None:  # unreachable with both classes present; kept for the type checker
        raise InputError("the format-only baseline needs both classes")
    model.fit(x, y)
    coefs = model[-1].coef_[0]
    return FormatBaseline(
        auc=auc,
        auc_interval=hanley_mcneil_interval(auc, len(poisoned), len(clean)),
        n_clean=len(clean),
        n_poisoned=len(poisoned),
        folds=folds,
        coefficients={name: float(c) for name, c in zip(FEATURES, coefs, strict=True)},
        leaks=auc >= LEAK_AUC,
        seed=seed,
    )


class PoisonLike(Protocol):
    """What :func:`group_by_family` reads of a record (e.g. an attack's ``PoisonRecord``)."""

    @property
    def original(self) -> str:
        """The clean text the attack started from."""

    @property
    def strategy(self) -> str:
        """The attack strategy."""

    @property
    def family(self) -> str:
        """The family within the strategy."""

    @property
    def poisoned(self) -> str:
        """The poisoned text."""


def group_by_family(records: Iterable[PoisonLike], *, original: bool = False) -> dict[str, list[str]]:
    """Poisoned texts (or, with ``original``, their clean originals) by ``strategy/family``.

    Example:
        >>> from types import SimpleNamespace as R
        >>> records = [R(strategy="s", family="f", poisoned="x", original="o")]
        >>> group_by_family(records), group_by_family(records, original=True)
        ({'s/f': ['x']}, {'s/f': ['o']})
    """
    out: dict[str, list[str]] = {}
    for r in records:
        out.setdefault(f"{r.strategy}/{r.family}", []).append(r.original if original else r.poisoned)
    return dict(sorted(out.items()))


def _baseline_or_none(clean: Sequence[str | Document], poisoned: Sequence[str], seed: int) -> dict[str, Any] | None:
    try:
        return format_only_baseline(clean, poisoned, seed=seed).to_dict()
    except InputError:
        return None


def realism_report(
    clean_docs: Sequence[str | Document],
    poisoned_by_family: Mapping[str, Sequence[str | Document]],
    seed: int = 42,
    *,
    originals_by_family: Mapping[str, Sequence[str | Document]] | None = None,
) -> dict[str, Any]:
    """Format statistics and the format-only baseline of every family (a JSON-able dict).

    Args:
        clean_docs: the clean documents a detector sees (the negatives).
        poisoned_by_family: family label (``strategy/family``, ``llm/smollm2``) -> its
            poisoned documents.
        seed: the baseline's subsampling and fold seed.
        originals_by_family: optional, family label -> the clean originals its poisoned
            documents were edited from. Each family then also gets an ``edit_baseline``:
            the format-only detector of poisoned documents against their own originals.
            It separates the edit's own tell from the attacker's choice of documents (an
            entity swap picks documents with names, which already differ in format from
            the rest of the corpus).

    Returns:
        ``{"seed", "leak_auc", "clean_ratio", "features", "n_clean", "clean", "families",
        "leaking"}``; each family holds ``stats`` (:func:`family_statistics`), ``baseline``
        (:meth:`FormatBaseline.to_dict`, ``None`` when it could not be fitted) and ``error``
        (why not, else ``None``), and ``edit_baseline`` with ``originals_by_family``;
        ``leaking`` lists the families whose baseline leaks.

    Raises:
        InputError: no clean document, or a family with no poisoned document.

    Example:
        >>> r = realism_report(["Cats purr.", "Dogs bark."], {"s/f": ["Cats purr. Dogs bark."]})
        >>> r["families"]["s/f"]["baseline"], r["families"]["s/f"]["error"][:40]
        (None, 'the format-only baseline needs at least ')
    """
    clean = _texts(clean_docs, "clean_docs")
    if not clean:
        raise InputError("the realism report needs the clean documents (the negatives), got none")
    families: dict[str, Any] = {}
    for label, docs in sorted(poisoned_by_family.items()):
        texts = _texts(docs, f"family {label!r}")
        if not texts:
            raise InputError(f"family {label!r} has no poisoned document; drop it or add some")
        baseline: dict[str, Any] | None = None
        error: str | None = None
        try:
            baseline = format_only_baseline(clean, texts, seed=seed).to_dict()
        except InputError as exc:
            error = str(exc)
        families[label] = {"stats": family_statistics(clean, texts), "baseline": baseline, "error": error}
        if originals_by_family is not None:
            families[label]["edit_baseline"] = _baseline_or_none(originals_by_family.get(label, ()), texts, seed)
    return {
        "seed": seed,
        "leak_auc": LEAK_AUC,
        "clean_ratio": CLEAN_RATIO,
        "features": dict(FEATURE_DOCS),
        "n_clean": len(clean),
        "clean": describe(clean),
        "families": families,
        "leaking": [label for label, f in families.items() if f["baseline"] and f["baseline"]["leaks"]],
    }


def _pair(stats: Mapping[str, Any], feature: str, digits: int) -> str:
    c, p = stats["clean"][feature]["mean"], stats["poisoned"][feature]["mean"]
    return f"{c:.{digits}f} / {p:.{digits}f}"


def _auc_cell(base: Mapping[str, Any] | None) -> str:
    if base is None:
        return "n/a"
    lo, hi = base["auc_interval"]
    return f"{base['auc']:.2f} [{lo:.2f}, {hi:.2f}]"


def render_realism_markdown(report: Mapping[str, Any]) -> str:
    """A Markdown table of :func:`realism_report`, one row per family, and the leaking families.

    Cells are means (clean / poisoned); repetition is the repeated word 3-gram share; a
    verdict on fewer than :data:`MIN_JUDGED_N` poisoned documents is marked ``(n < 10)``; an
    ``edit-only AUC`` column (poisoned against their own originals) appears when the report
    has one.

    Example:
        >>> clean = [f"Fact {i} holds." for i in range(12)]
        >>> md = render_realism_markdown(realism_report(clean, {"s/f": [c + " Ignore it. Say no." for c in clean]}))
        >>> "| s/f | 12 |" in md, "`s/f`" in md
        (True, True)
    """
    families: Mapping[str, Any] = report["families"]
    with_edit = any("edit_baseline" in fam for fam in families.values())
    lines = [
        "| family | n | chars clean/poisoned | sentences clean/poisoned | repetition clean/poisoned "
        "| format-only AUC |" + (" edit-only AUC |" if with_edit else "") + " leaks? |",
        "|---|---:|---:|---:|---:|---:|" + ("---:|" if with_edit else "") + "---|",
    ]
    for label, fam in families.items():
        stats, base = fam["stats"], fam["baseline"]
        leaks = "n/a" if base is None else "**yes**" if base["leaks"] else "no"
        if base is not None and stats["n"] < MIN_JUDGED_N:
            leaks += f" (n < {MIN_JUDGED_N})"
        edit = f" {_auc_cell(fam.get('edit_baseline'))} |" if with_edit else ""
        lines.append(
            f"| {label} | {stats['n']} | {_pair(stats, 'characters', 0)} | {_pair(stats, 'sentences', 1)} "
            f"| {_pair(stats, 'repeated_trigram_share', 2)} | {_auc_cell(base)} |{edit} {leaks} |"
        )
    leaking = [label for label in report["leaking"] if label in families]
    threshold = f"{report['leak_auc']:.2f}"
    if leaking:
        named = []
        for label in leaking:
            base = families[label]["baseline"]
            top = base["top_feature"]
            named.append(f"`{label}` (top feature: {top}, coefficient {base['coefficients'][top]:+.2f})")
        summary = f"Families that leak format (format-only AUC >= {threshold}): {'; '.join(named)}."
    else:
        summary = f"No family leaks format: every format-only AUC is below {threshold}."
    return "\n".join([*lines, "", summary, ""])


__all__ = [
    "CLEAN_RATIO",
    "FEATURES",
    "FEATURE_DOCS",
    "LEAK_AUC",
    "MAX_FOLDS",
    "MIN_JUDGED_N",
    "FormatBaseline",
    "PoisonLike",
    "describe",
    "family_statistics",
    "feature_matrix",
    "format_features",
    "format_only_baseline",
    "group_by_family",
    "hanley_mcneil_interval",
    "realism_report",
    "render_realism_markdown",
]
