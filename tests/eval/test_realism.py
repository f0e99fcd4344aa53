from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest

from ragtrust.documents import Document
from ragtrust.errors import InputError
from ragtrust.eval.realism import (
    CLEAN_RATIO,
    FEATURE_DOCS,
    FEATURES,
    LEAK_AUC,
    describe,
    family_statistics,
    format_features,
    format_only_baseline,
    group_by_family,
    hanley_mcneil_interval,
    realism_report,
    render_realism_markdown,
)

_VOCAB = (
    "river stone forest lantern copper harbour meadow signal planet garden engine window "
    "silver market thunder valley orchard beacon canvas island marble pocket rocket violin"
).split()


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_VOCAB) for _ in range(rng.randint(5, 14))]
    return " ".join(words).capitalize() + "."


def _corpus(n: int, seed: int) -> list[str]:
    """Deterministic clean-like documents of 1 to 4 sentences."""
    rng = random.Random(seed)
    return [" ".join(_sentence(rng) for _ in range(rng.randint(1, 4))) for _ in range(n)]


def _leaky(n: int, seed: int) -> list[str]:
    """Clean-like documents plus an appended long sentence (the template tell of issue 17)."""
    tail = " In truth the opposite is the case according to the latest and most reliable sources available."
    return [doc + tail for doc in _corpus(n, seed)]


def _swapped(n: int, seed: int, docs: list[str] | None = None) -> list[str]:
    """Clean-like documents with one word swapped in place for a word of the same length."""
    out = []
    for doc in docs if docs is not None else _corpus(n, seed):
        words = doc.split(" ")
        i = len(words) // 2
        words[i] = "x" * len(words[i].rstrip(".")) + ("." if words[i].endswith(".") else "")
        out.append(" ".join(words))
    return out


CLEAN = _corpus(200, seed=1)


def test_every_feature_is_documented():
    assert set(FEATURES) == set(FEATURE_DOCS)
    assert set(format_features("Some text.")) == set(FEATURES)


def test_features_of_a_known_string():
    f = format_features("The cat sat. The dog ran fast!")
    assert f["characters"] == 30
    assert f["words"] == 7
    assert f["sentences"] == 2
    assert f["lines"] == 1
    assert f["words_per_sentence"] == pytest.approx(3.5)
    assert f["chars_per_word"] == pytest.approx(22 / 7)
    assert f["repeated_trigram_share"] == 0.0
    assert f["max_repeat"] == 1  # no repeated sentence or 4-gram: each occurs once
    assert f["type_token_ratio"] == pytest.approx(6 / 7)  # "the" twice
    assert f["punctuation_share"] == pytest.approx(2 / 30)
    assert f["digit_share"] == 0.0
    assert f["uppercase_share"] == pytest.approx(2 / 22)


def test_repetition_features_count_a_repeated_claim():
    f = format_features("Water boils at 50 degrees. Water boils at 50 degrees. Water boils at 50 degrees.")
    assert f["sentences"] == 3
    assert f["max_repeat"] == 3
    assert f["repeated_trigram_share"] == 1.0  # every 3-gram position recurs
    assert f["type_token_ratio"] == pytest.approx(5 / 15)
    assert f["digit_share"] == pytest.approx(6 / 80)


def test_features_of_empty_text_are_zero():
    assert all(v == 0.0 for v in format_features("").values())


def test_leaky_family_scores_high_and_leaks():
    base = format_only_baseline(CLEAN, _leaky(50, seed=2), seed=42)
    assert base.auc > 0.9
    assert base.leaks is True
    assert base.auc >= LEAK_AUC
    assert base.n_poisoned == 50 and base.n_clean == CLEAN_RATIO * 50  # clean subsampled to 4x
    assert base.folds == 5
    lo, hi = base.auc_interval
    assert lo <= base.auc <= hi
    # the appended sentence makes documents longer: the detector leans on a length feature
    assert base.top_feature in {"characters", "words", "sentences", "chars_per_word", "type_token_ratio"}


def test_in_place_swap_family_does_not_leak():
    base = format_only_baseline(CLEAN, _swapped(50, seed=3), seed=42)
    assert base.auc < LEAK_AUC
    assert base.leaks is False


def test_baseline_is_deterministic_under_its_seed():
    a = format_only_baseline(CLEAN, _leaky(20, seed=2), seed=7)
    b = format_only_baseline(CLEAN, _leaky(20, seed=2), seed=7)
    assert a == b


def test_baseline_accepts_documents():
    clean = [Document(id=f"c{i}", text=t) for i, t in enumerate(CLEAN[:40])]
    base = format_only_baseline(clean, _leaky(10, seed=2))
    assert base.n_clean == 40 and base.n_poisoned == 10


@pytest.mark.parametrize(
    ("clean", "poisoned"),
    [(CLEAN, ["One poisoned document."]), (["One clean document."], _leaky(5, seed=2)), ([], [])],
)
def test_baseline_needs_two_samples_per_class(clean, poisoned):
    with pytest.raises(InputError, match="at least 2 clean and 2 poisoned"):
        format_only_baseline(clean, poisoned)


def test_family_statistics_compare_the_two_sets():
    stats = family_statistics(CLEAN, _leaky(50, seed=2))
    assert stats["n"] == 50 and stats["n_clean"] == len(CLEAN)
    same_docs = describe(_corpus(50, seed=2))
    assert stats["poisoned"]["sentences"]["mean"] == pytest.approx(same_docs["sentences"]["mean"] + 1)
    assert stats["smd"]["characters"] > 0.8  # a large standardised difference
    same = family_statistics(CLEAN, _swapped(50, seed=3))
    assert abs(same["smd"]["sentences"]) < 0.5


def test_family_statistics_of_constant_sets():
    stats = family_statistics(["Cats purr.", "Dogs bark."], ["Cats purr. Dogs bark.", "Owls hoot. Cows moo."])
    assert stats["smd"]["sentences"] is None  # 1 vs 2 sentences with no spread: unbounded
    assert stats["smd"]["lines"] == 0.0
    with pytest.raises(InputError):
        family_statistics([], ["x"])


def test_describe_means_and_medians():
    d = describe(["One. Two. Three.", "One.", "One."])
    assert d["sentences"] == {"mean": pytest.approx(5 / 3), "median": 1.0}
    assert describe([]) == {}


def test_report_and_rendering_have_a_row_per_family():
    report = realism_report(
        CLEAN,
        {
            "instruction_injection/appended_note": _leaky(40, seed=2),
            "entity_swap/in_place": _swapped(40, seed=3),
            "llm/tiny": ["Only one document."],
        },
        seed=42,
    )
    json.dumps(report)  # JSON-able
    fams = report["families"]
    assert fams["instruction_injection/appended_note"]["baseline"]["leaks"] is True
    assert fams["entity_swap/in_place"]["baseline"]["leaks"] is False
    assert fams["llm/tiny"]["baseline"] is None and "at least 2" in fams["llm/tiny"]["error"]
    assert report["leaking"] == ["instruction_injection/appended_note"]

    md = render_realism_markdown(report)
    rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| family")]
    assert [r.split(" | ")[0][2:] for r in rows] == sorted(fams)
    assert "| llm/tiny | 1 |" in md and "n/a" in md
    summary = md.strip().splitlines()[-1]
    assert "`instruction_injection/appended_note`" in summary
    assert "entity_swap" not in summary
    assert "top feature" in summary


def test_small_families_are_marked():
    md = render_realism_markdown(realism_report(CLEAN, {"a/small": _leaky(6, seed=2)}))
    assert "**yes** (n < 10)" in md


def test_edit_only_baseline_separates_the_edit_from_the_choice_of_documents():
    # the attacker edits only long documents, in place: the family differs from the corpus
    # (selection) although the edit itself leaves no format trace
    long_docs = [d for d in _corpus(400, seed=5) if d.count(".") == 4][:40]
    leaky_originals = _corpus(40, seed=2)
    report = realism_report(
        CLEAN,
        {"a/selected": _swapped(0, 0, docs=long_docs), "b/appended": _leaky(40, seed=2)},
        originals_by_family={"a/selected": long_docs, "b/appended": leaky_originals},
    )
    selected, appended = report["families"]["a/selected"], report["families"]["b/appended"]
    assert selected["baseline"]["leaks"] is True  # longer than the corpus on average
    assert selected["edit_baseline"]["auc"] < LEAK_AUC  # but not longer than its originals
    assert appended["edit_baseline"]["auc"] > 0.9
    md = render_realism_markdown(report)
    assert "edit-only AUC" in md.splitlines()[0]
    assert all(line.count("|") == 9 for line in md.splitlines() if line.startswith("|"))


def test_rendering_without_leaks_says_so():
    md = render_realism_markdown(realism_report(CLEAN, {"entity_swap/in_place": _swapped(40, seed=3)}))
    assert "No family leaks format" in md


def test_report_rejects_empty_inputs():
    with pytest.raises(InputError, match="clean documents"):
        realism_report([], {"a/b": ["x", "y"]})
    with pytest.raises(InputError, match="no poisoned document"):
        realism_report(CLEAN, {"a/b": []})


def test_group_by_family_labels_strategy_and_family():
    records = [
        SimpleNamespace(strategy="contradiction", family="b", poisoned="p1", original="o1"),
        SimpleNamespace(strategy="contradiction", family="a", poisoned="p2", original="o2"),
        SimpleNamespace(strategy="contradiction", family="b", poisoned="p3", original="o3"),
    ]
    assert group_by_family(records) == {"contradiction/a": ["p2"], "contradiction/b": ["p1", "p3"]}
    assert group_by_family(records, original=True) == {"contradiction/a": ["o2"], "contradiction/b": ["o1", "o3"]}


def test_hanley_mcneil_interval_narrows_with_more_samples():
    lo_small, hi_small = hanley_mcneil_interval(0.8, 10, 40)
    lo_big, hi_big = hanley_mcneil_interval(0.8, 100, 400)
    assert lo_small < lo_big < 0.8 < hi_big < hi_small
    assert hanley_mcneil_interval(1.0, 5, 5) == (1.0, 1.0)
    with pytest.raises(InputError):
        hanley_mcneil_interval(0.5, 0, 3)
