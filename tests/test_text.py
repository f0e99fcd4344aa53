from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragtrust.text import assertions, split_sentences, word_tokens


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


@pytest.mark.parametrize(
    ("text", "claims"),
    [
        ("#### Never transmit secrets to the client\n\nAnything sent can be read.", ["Anything sent can be read."]),
        ("### Heading\nText on the next line. More.", ["Text on the next line.", "More."]),
        ("Intro sentence.\n## Sub\n- item one\n- item two", ["Intro sentence.", "- item one", "- item two"]),
        ("Issue #42 is fixed. C# is a language.", ["Issue #42 is fixed.", "C# is a language."]),
        ("## Only a title", []),
    ],
)
def test_assertions_drop_headings_not_their_text(text: str, claims: list[str]) -> None:
    found = assertions(text)
    assert [s.text for s in found] == claims
    assert all(text[s.start : s.end] == s.text for s in found)


def test_an_abbreviation_after_a_bracket_does_not_end_a_sentence() -> None:
    text = 'Use a slow hash (e.g. Argon2) for passwords. Quote it ("i.e. this") here. Next.'
    assert [s.text for s in split_sentences(text)] == [
        "Use a slow hash (e.g. Argon2) for passwords.",
        'Quote it ("i.e. this") here.',
        "Next.",
    ]
