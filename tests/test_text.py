from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragtrust.text import split_sentences, word_tokens


def test_sentences_keep_offsets_and_abbreviations() -> None:
    text = "Use e.g. bcrypt here. Then rotate keys!  Done?\n\n- item one\n- item two"
    sentences = split_sentences(text)
    assert [s.text for s in sentences] == [
        "Use e.g. bcrypt here.",
        "Then rotate keys!",
        "Done?",
        "- item one",
        "- item two",
    ]
    for s in sentences:
        assert text[s.start : s.end] == s.text


@given(st.text(max_size=300))
def test_offsets_always_round_trip(text: str) -> None:
    for s in split_sentences(text):
        assert text[s.start : s.end] == s.text and s.text.strip() == s.text
    for t in word_tokens(text):
        assert text[t.start : t.end].casefold() != "" and t.text
