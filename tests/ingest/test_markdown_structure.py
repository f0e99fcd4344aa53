r"""Markdown structure from markdown-it-py's CommonMark block parser (issue 21).

The hand-written scan this replaced paired any two fence lines in order and knew only ATX
headings: a heading in a Markdown example inside a four-backtick fence was a section heading,
a ``~~~`` closed a ```` ``` ```` block, setext headings were missed. Offsets come
from the token stream's source line map, counted in the raw text (``\r\n`` and ``\r`` too).
The growth test compares two input sizes (no wall-time threshold): linear work grows about 4x
for 4x the input, quadratic work 16x.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from ragtrust.ingest.markup import markdown_code_ranges, markdown_metadata


def _headings(text: str) -> list[tuple[int, str, str]]:
    """``(level, title, the text at the offset)`` of each heading."""
    return [(level, title, text[offset : offset + 6]) for level, title, offset in markdown_metadata(text)["headings"]]


def test_a_markdown_example_in_a_longer_fence_is_code() -> None:
    text = "# Writing guides\n\n````md\n```\n# an example heading\n```\n````\n\n## Next\n"
    assert _headings(text) == [(1, "Writing guides", "# Writ"), (2, "Next", "## Nex")]


def test_a_fence_closes_only_on_its_own_kind() -> None:
    text = "```\n~~~\n# inside\n```\n# Outside\n"
    assert _headings(text) == [(1, "Outside", "# Outs")]
    assert [text[a:b] for a, b in markdown_code_ranges(text)] == ["```\n~~~\n# inside\n```\n"]


def test_setext_headings_and_an_unclosed_fence() -> None:
    text = "Storage guide\n=============\n\nSalts\n-----\n\n```\n# never closed\n"
    meta = markdown_metadata(text)
    assert _headings(text) == [(1, "Storage guide", "Storag"), (2, "Salts", "Salts\n")]
    assert meta["title"] == "Storage guide"
    assert [text[a:b] for a, b in markdown_code_ranges(text)] == ["```\n# never closed\n"]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_offsets_count_every_kind_of_line_break(newline: str) -> None:
    text = newline.join(["# A", "", "text", "", "   ## B ##", "    # indented code", "### C", ""])
    expected = [[1, "A", 0], [2, "B", text.index("## B")], [3, "C", text.index("### C")]]
    assert markdown_metadata(text)["headings"] == expected


def _seconds(parse: Callable[[str], object], text: str) -> float:
    best = float("inf")
    for _ in range(3):  # the least of three: other work on the machine only adds time
        start = time.perf_counter()
        parse(text)
        best = min(best, time.perf_counter() - start)
    return best


PATHOLOGICAL = {
    "a heading line of blanks": lambda n: "# Title" + " \t" * (n // 2) + "x ##\n",
    "a run of blank lines": lambda n: "\n" * n + "# x\n",
    "nested block quotes": lambda n: "> " * (n // 2) + "# x\n",
    "nested list markers": lambda n: "- " * (n // 2) + "# x\n",
    "fences and headings": lambda n: "```\n# in code\n```\n## Real\n" * (n // 24),
    "an open link reference": lambda n: "[a]: <" + "b" * n + "\n# x\n",
    "an unclosed front matter": lambda n: "---\n" + "key: value\n" * (n // 11) + "# x\n",
    "a front matter of one long line": lambda n: "---\n" + "k" * n + "\n---\n# x\n",
}


@pytest.mark.parametrize("make", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_markdown_parsing_grows_linearly_on_pathological_input(make: Callable[[int], str]) -> None:
    small, large = make(20_000), make(80_000)
    ratio = _seconds(markdown_metadata, large) / max(_seconds(markdown_metadata, small), 1e-4)
    assert ratio < 10, f"4x the input took {ratio:.1f}x the time (linear: about 4, quadratic: 16)"


FRONT_MATTER = "---\ntitle: Front Matter Doc\nauthor: x\n---\n# Passwords\n\nPasswords must be hashed with bcrypt.\n"


def test_front_matter_is_no_heading_and_its_title_is_the_documents_without_a_level_1_heading() -> None:
    # Jekyll / Hugo / MkDocs / Docusaurus pages start with a YAML block: its closing '---' made
    # it a setext heading, "title: Front Matter Doc\nauthor: x", the chunks' section heading
    assert _headings(FRONT_MATTER) == [(1, "Passwords", "# Pass")]
    assert markdown_metadata(FRONT_MATTER)["title"] == "Passwords"
    hugo = "+++\ntitle = 'Salting'\n+++\n\nSalt every hash.\n\n## Why\n"
    assert markdown_metadata(hugo) == {"headings": [[2, "Why", hugo.index("## Why")]], "title": "Salting"}
    fence = '---\r\ntitle: "Code: ``` fences"\r\n---\r\n# A\r\n'  # nothing in it is Markdown
    assert markdown_metadata(fence)["headings"] == [[1, "A", fence.index("# A")]]
    assert markdown_code_ranges(fence) == []


@pytest.mark.parametrize(
    ("text", "headings"),
    [
        ("---\n\nAn introduction in prose.\n\n---\n# A\n", [(1, "A", "# A\n")]),  # thematic breaks around prose
        ("Intro.\n---\ntitle: x\n---\n", [(2, "Intro.", "Intro."), (2, "title: x", "title:")]),  # not at the start
        ("---\ntitle: never closed\n# A\n", [(1, "A", "# A\n")]),
    ],
)
def test_only_a_block_of_keys_at_the_very_start_is_front_matter(
    text: str, headings: list[tuple[int, str, str]]
) -> None:
    assert _headings(text) == headings
