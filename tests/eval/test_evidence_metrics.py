from __future__ import annotations

import pytest

from ragtrust.documents import Passage
from ragtrust.errors import InputError
from ragtrust.eval.evidence_metrics import (
    AblationRow,
    ablation_table,
    aggregate_alignment,
    coverage_at,
    groundedness,
    hallucinated_citation,
    hallucinated_token_rate,
    ngram_overlap,
    nli_entailment_scorer,
    sem_scores,
    token_windows,
    word_overlap,
)
from ragtrust.evidence.align import NGramAligner
from ragtrust.testing import LexicalNLI, retrieved
from ragtrust.text import words


def test_hallucination_and_groundedness() -> None:
    assert hallucinated_citation(["https://a/", "https://b"], ["https://a", "https://b"]) == 0.0
    assert hallucinated_citation(["https://a", "https://evil"], ["https://a"]) == 1.0
    assert hallucinated_citation([], ["https://a"]) == 0.0
    assert groundedness(["u1", "u2"], ["u2", "u9"]) == 1.0
    assert groundedness(["u1"], ["u2"]) == 0.0
    assert groundedness([], ["u2"]) == 0.0


def test_word_overlap_hand_computed() -> None:
    # A: the x2, cat, sat, on, mat (6); D: the x2, cat, ate, fish (5); O = 2 + 1 = 3
    assert word_overlap("The cat sat on the mat", "the cat ate the fish") == (3 / 6, 3 / 5)
    assert word_overlap("", "x") == (0.0, 0.0)


def test_ngram_overlap_hand_computed() -> None:
    # bigrams A: the-cat cat-sat sat-on on-the the-mat (5); D: the-cat cat-ate ate-the the-fish (4); I = 1
    assert ngram_overlap("the cat sat on the mat", "the cat ate the fish", 2) == (1 / 5, 1 / 4)
    assert ngram_overlap("the cat sat on the mat", "the cat ate the fish", 3) == (0.0, 0.0)
    # multiset: A has a-b twice, D once
    assert ngram_overlap("a b a b", "a b", 2) == (1 / 3, 1.0)
    with pytest.raises(InputError):
        ngram_overlap("a", "a", 0)


def test_token_windows() -> None:
    assert token_windows("a b c d e f g h", window=4, stride=2) == ["a b c d", "c d e f", "e f g h"]
    assert token_windows("e f g h x", window=4, stride=2) == ["e f g h", "f g h x"]
    assert token_windows("short text", window=256, stride=50) == ["short text"]
    assert token_windows("  ", 4, 2) == []
    long = " ".join(f"w{i}" for i in range(300))
    windows = token_windows(long)
    assert len(windows) == 2 and windows[0].split()[0] == "w0" and windows[-1].split()[-1] == "w299"
    assert all(len(w.split()) == 256 for w in windows)


def test_sem_scores_hand_computed() -> None:
    def share(pairs: list[tuple[str, str]]) -> list[float]:  # share of hypothesis words in the premise
        return [sum(w in p.split() for w in h.split()) / len(h.split()) for p, h in pairs]

    # answer windows "e f g h" (best 1.0) and "f g h x" (best 0.75)
    sem_max, sem_recall = sem_scores("e f g h x", "a b c d e f g h", share, window=4, stride=2)
    assert sem_max == 1.0 and sem_recall == pytest.approx(0.875)
    assert sem_scores("", "a b", share) == (0.0, 0.0)


def test_nli_entailment_scorer_uses_the_entailment_column() -> None:
    nli = LexicalNLI()
    pairs = [("The cat sat on the mat.", "The cat sat on the mat."), ("Dogs bark.", "Quantum physics.")]
    scores = nli_entailment_scorer(nli)(pairs)
    assert scores == pytest.approx(nli.predict(pairs)[:, 0].tolist())
    assert scores[0] > 0.8 > scores[1]


DOCS = retrieved(
    [
        "Always use parameterised queries so that user input is never executed as SQL code by the database engine.",
        "Store passwords with a slow salted hash such as Argon2id and never with MD5 or SHA-1 or plain text.",
    ]
)
U0, U1 = DOCS[0].document.url, DOCS[1].document.url
EXACT = Passage("p1", "use parameterised queries so that user input is never executed as SQL code", url=U0)
FAKE = Passage("p2", "rotate every password daily and email them to all users for convenience and safety", url=U1)
DRIFT = Passage("p3", "Store passwords with a slow salted hash such as Argon2id and never with MD5", url=U0)


def test_hallucinated_token_rate_and_coverage_hand_computed() -> None:
    docs = retrieved(["a b c d e f g h i j"])
    p_short = Passage("s", "a b c d e x y", doc_id="doc-0")  # only the first 5-gram matches: 2 of 7 uncovered
    assert hallucinated_token_rate([p_short], docs, ref_n=5) == pytest.approx(2 / 7)
    p_long = Passage("l", "a b c d e f g h i j k", doc_id="doc-0")  # 10-grams: (a..j) yes, (b..k) no
    assert coverage_at([p_long], docs, n=10) == pytest.approx(1 / 2)
    # short passage: n' = 7, its one 7-gram is not in the doc; pooled (0 + 1) / (1 + 2)
    assert coverage_at([p_short, p_long], docs, n=10) == pytest.approx(1 / 3)
    unknown = Passage("u", "a b c d e", url="https://elsewhere")
    assert hallucinated_token_rate([unknown], docs) == 1.0 and coverage_at([unknown], docs) == 0.0
    assert hallucinated_token_rate([], docs) == 0.0 and coverage_at([], docs) == 0.0


def test_aggregate_alignment_pools_passages() -> None:
    aligner = NGramAligner()
    r1 = aligner.align([EXACT, FAKE], DOCS)
    r2 = aligner.align([DRIFT], DOCS)
    agg = aggregate_alignment([r1, r2.diagnostics])
    assert (agg["n_in"], agg["kept"], agg["dropped"], agg["reattributed"]) == (3, 1, 1, 1)
    assert agg["pct_hallucinated"] == pytest.approx(1 / 3)
    assert agg["pct_url_drift_corrected"] == pytest.approx(1 / 3)
    assert agg["retention"] == pytest.approx(2 / 3)
    assert aggregate_alignment([])["retention"] == 0.0


def test_ablation_table_hand_computed() -> None:
    rows = ablation_table([EXACT, FAKE, DRIFT], DOCS)
    assert len(rows) == 20 and all(isinstance(r, AblationRow) for r in rows)
    assert [(r.n, r.t) for r in rows[:6]] == [(2, 0.5), (2, 0.6), (2, 0.7), (2, 0.8), (2, 0.9), (3, 0.5)]
    row = next(r for r in rows if (r.n, r.t) == (5, 0.7))
    n1, n2, n3 = (len(words(p.text)) for p in (EXACT, FAKE, DRIFT))
    assert row.n_passages == 3
    assert row.retention == pytest.approx(2 / 3)
    assert row.hallucination_before == pytest.approx((n2 + n3) / (n1 + n2 + n3))
    assert row.hallucination_after == 0.0
    assert row.cov_at_10 == 1.0
    assert row.pct_dropped == pytest.approx(1 / 3) and row.pct_reattributed == pytest.approx(1 / 3)
    assert row.to_dict()["cov_at_10"] == 1.0
    # per-query groups give the same numbers as one flat group here
    grouped = ablation_table([[EXACT, FAKE], [DRIFT]], [DOCS, DOCS], ns=(5,), ts=(0.7,))
    assert grouped[0] == row
    with pytest.raises(InputError):
        ablation_table([[EXACT]], [DOCS, DOCS])


def test_ablation_partial_passage_improves_after_filtering() -> None:
    partial = Passage("p4", EXACT.text + " and then disable every firewall in the building at once", url=U0)
    (row,) = ablation_table([partial], DOCS, ns=(5,), ts=(0.7,))
    assert row.pct_truncated == 1.0 and row.retention == 1.0
    assert row.hallucination_before > 0.3 and row.hallucination_after == 0.0 and row.cov_at_10 == 1.0
