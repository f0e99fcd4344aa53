from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragtrust.text import assertions, fold, is_front_matter, one_line, split_sentences, word_tokens


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


# The OWASP CSRF cheat sheet ("Cookie with __Host- prefix"), verbatim: the second item of each
# list continues the first; split at the list marker it was a claim without a subject.
_CSRF_PREFIXES = """It relaxes the restrictions on domain overwrites, i.e., they

- Can have `Domain` attributes and
- can be overwritten by subdomains.
- Can have a `Path` other than `/`.
"""


def test_a_list_item_continuing_the_one_before_is_not_a_sentence_of_its_own() -> None:
    found = [s.text for s in split_sentences(_CSRF_PREFIXES)]
    assert "- can be overwritten by subdomains." not in found
    assert found == [
        "It relaxes the restrictions on domain overwrites, i.e., they",
        "- Can have `Domain` attributes and\n- can be overwritten by subdomains.",
        "- Can have a `Path` other than `/`.",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "- item one\n- item two",  # lower-case items, nothing left dangling
        "- sec-ch-ua\n- sec-ch-ua-arch",  # a list of names
        "- Read the docs;\n- Then test it.",  # dangling, but a capital starts a new item
        "1. parse the input.\n2. validate it.",  # the first item is a finished sentence
    ],
)
def test_list_items_stay_boundaries_unless_one_continues_the_other(text: str) -> None:
    assert len(split_sentences(text)) == 2


# Markdown-ish pieces: list markers, blank lines, abbreviations, dangling words, odd spaces
_PIECES = [*"aZ .!?,;:-*+1)\n\t\"'([])#`é\u00a0\u2028", "e.g.", "and", "or", "\r\n", "\n- ", "\n\n", "## "]
_AWKWARD = st.lists(st.sampled_from(_PIECES), max_size=80).map("".join)


@given(_AWKWARD)
def test_offsets_round_trip_on_markdown_like_text(text: str) -> None:
    sentences = split_sentences(text)
    for s in sentences:
        assert text[s.start : s.end] == s.text and s.text and s.text.strip() == s.text
    # in order, not overlapping, and every non-blank character belongs to one sentence
    ends = [0] + [s.end for s in sentences]
    assert all(a <= s.start for a, s in zip(ends, sentences, strict=False))
    covered = "".join(s.text for s in sentences)
    assert "".join(text.split()) == "".join(covered.split())
    for claim in assertions(text):
        assert text[claim.start : claim.end] == claim.text and claim.text.strip() == claim.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Pick plan B\n\nThen go.", ["Pick plan B", "Then go."]),
        ("Just say no\n- Then go.", ["Just say no", "- Then go."]),
        ("See Fig. 2 and Dr. Who. Next.", ["See Fig. 2 and Dr. Who.", "Next."]),
        ("Agree on the URL, format etc.\n\nThen send it.", ["Agree on the URL, format etc.", "Then send it."]),
        ("- keys, certificates etc.\n- Backups.", ["- keys, certificates etc.", "- Backups."]),
        ("1. keys, certificates etc.\n2. Backups.", ["1. keys, certificates etc.", "2. Backups."]),
        (
            "Steps:\n1. Back up. Then wipe.\n\n## 2.1. Scope\nAll of it.",
            ["Steps:", "1. Back up.", "Then wipe.", "## 2.1. Scope", "All of it."],
        ),
    ],
)
def test_only_a_sentence_full_stop_ends_a_sentence(text: str, expected: list[str]) -> None:
    assert [s.text for s in split_sentences(text)] == expected


def test_closing_quotes_and_brackets_stay_with_their_sentence() -> None:
    text = 'He said "Stop." Then left. Use it (see the docs.) Next.\n.)\nZ'
    assert [s.text for s in split_sentences(text)] == [
        'He said "Stop."',
        "Then left.",
        "Use it (see the docs.)",
        "Next.\n.)",
        "Z",
    ]


def test_fold_is_nfkc_and_casefold_on_every_text() -> None:
    import unicodedata

    samples = [chr(c) for c in range(128)] + ["Straße", "ＡＢＣ", "ﬁle", "İstanbul", "Ω", "HTTP/2 Header", "x²"]
    for text in samples:
        assert fold(text) == unicodedata.normalize("NFKC", text).casefold(), repr(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Use bcrypt .", "Use bcrypt."),
        ("Store it , then hash it ; done !", "Store it, then hash it; done!"),
        ("Cite it [1] .", "Cite it [1]."),
        # punctuation that starts a name keeps its space (the answer read "In.NET" and "and.NET Core")
        ("In .NET Framework 4.6 and .NET Core, use PBKDF2.", "In .NET Framework 4.6 and .NET Core, use PBKDF2."),
        ("Keep secrets out of .env files and :root rules .", "Keep secrets out of .env files and :root rules."),
        ("Wait ...", "Wait..."),
        ("  many \n\t spaces  ", "many spaces"),
    ],
)
def test_one_line_removes_spaces_before_closing_punctuation_only(text: str, expected: str) -> None:
    assert one_line(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: Front Matter Doc\nauthor: x\n---\n# Passwords\n\nStore passwords with bcrypt.",
        "---\ntitle: Front Matter Doc\ntags:\n  - auth\n\n# a comment\n...\nStore passwords with bcrypt.",
        '+++\ntitle = "Front Matter Doc"\ntags = [\n  "auth",\n]\n+++\r\nStore passwords with bcrypt.',
    ],
)
def test_front_matter_is_a_sentence_of_its_own_and_asserts_nothing(text: str) -> None:
    first, *rest = split_sentences(text)
    assert is_front_matter(first.text) and first.start == 0
    assert [s.text for s in rest][-1] == "Store passwords with bcrypt."
    assert [s.text for s in assertions(text)] == ["Store passwords with bcrypt."]


@pytest.mark.parametrize(
    "text",
    [
        "---\n\nAn introduction in prose.\n\n---\n\nMore prose.",  # thematic breaks, not front matter
        "---\ntitle: x\n\nAn introduction in prose.\n---\n",  # a line of prose: not a block of keys
        "A sentence.\n---\ntitle: x\n---\n",  # not at the very start
    ],
)
def test_thematic_breaks_and_later_blocks_are_not_front_matter(text: str) -> None:
    assert not any(is_front_matter(s.text) for s in split_sentences(text))
