from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragtrust.models.windows import sentence_windows

WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma.", "Delta", "epsilon!", "Zeta?", "\n", "eta,"]), max_size=200)


def _word_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


@given(WORDS, st.integers(min_value=1, max_value=40), st.booleans())
def test_every_word_is_in_a_window_and_windows_stay_in_bounds(words: list[str], max_words: int, overlap: bool) -> None:
    text = " ".join(words)
    windows = sentence_windows(text, max_words, overlap=overlap)
    for a, b in windows:
        assert 0 <= a < b <= len(text)
        assert len(text[a:b].split()) <= max_words
    for start, end in _word_spans(text):
        assert any(a <= start and end <= b for a, b in windows), text[start:end]


@given(WORDS, st.integers(min_value=1, max_value=40))
def test_without_overlap_windows_are_disjoint_and_ordered(words: list[str], max_words: int) -> None:
    windows = sentence_windows(" ".join(words), max_words, overlap=False)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(windows, windows[1:], strict=False))


def test_adjacent_sentences_are_read_together_with_overlap() -> None:
    text = "One two three. Four five six. Seven eight nine. Ten eleven twelve."
    with_overlap = [text[a:b] for a, b in sentence_windows(text, 6)]
    without = [text[a:b] for a, b in sentence_windows(text, 6, overlap=False)]
    assert with_overlap == [
        "One two three. Four five six.",
        "Four five six. Seven eight nine.",
        "Seven eight nine. Ten eleven twelve.",
    ]
    assert without == ["One two three. Four five six.", "Seven eight nine. Ten eleven twelve."]


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_blank_text_has_no_windows(text: str) -> None:
    assert sentence_windows(text) == []


def test_max_words_is_validated() -> None:
    with pytest.raises(ValueError, match="max_words"):
        sentence_windows("a b c", 0)
