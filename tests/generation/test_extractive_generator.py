from __future__ import annotations

import pytest

from ragtrust.documents import Passage
from ragtrust.errors import ConfigError
from ragtrust.generation.extractive import ExtractiveGenerator
from ragtrust.registry import build
from ragtrust.testing import HashingEmbedder

PASSAGES = [
    Passage(
        "p1",
        "Use parameterised queries for every SQL statement. Escaping input is a weak fallback.",
        url="https://kb/sql",
    ),
    Passage("p2", "Hash passwords with Argon2id. Never store passwords in plain text.", url="https://kb/pw"),
    Passage("p3", "Parameterised queries also make statements faster to prepare.", url="https://kb/perf"),
    Passage(
        "p4", "Passwords in plain text were found in the fabricated report.", url="https://kb/bad", status="dropped"
    ),
]


def test_answer_cites_sources_in_order_of_first_use() -> None:
    # no cut-offs: every relevant sentence competes (the focus rules have their own test)
    answer = ExtractiveGenerator(max_sentences=3, relative_cutoff=0.0, focus_cutoff=0.0).generate(
        "Do parameterised queries or escaping input help SQL?", PASSAGES
    )
    assert answer.model == "extractive"
    assert answer.sentences == (
        ("Use parameterised queries for every SQL statement.", ("https://kb/sql",)),
        ("Escaping input is a weak fallback.", ("https://kb/sql",)),
        ("Parameterised queries also make statements faster to prepare.", ("https://kb/perf",)),
    )
    assert answer.text == (
        "Use parameterised queries for every SQL statement. [1] Escaping input is a weak fallback. [1] "
        "Parameterised queries also make statements faster to prepare. [2]"
    )


def test_every_sentence_is_copied_from_a_passage_and_dropped_ones_are_ignored() -> None:
    answer = ExtractiveGenerator(max_sentences=4).generate("passwords plain text", PASSAGES)
    for sentence, (url,) in answer.sentences:
        passage = next(p for p in PASSAGES if p.url == url)
        assert sentence in passage.text
        assert passage.status != "dropped"


def test_deterministic_and_limited() -> None:
    gen = ExtractiveGenerator(max_sentences=1)
    a, b = gen.generate("hash passwords", PASSAGES), gen.generate("hash passwords", PASSAGES)
    assert a == b and len(a.sentences) == 1 and a.text == "Hash passwords with Argon2id. [1]"


def test_no_relevant_sentence_gives_empty_answer() -> None:
    answer = ExtractiveGenerator().generate("kubernetes pod autoscaling", PASSAGES)
    assert answer.text == "" and answer.sentences == ()
    assert ExtractiveGenerator().generate("anything", []).text == ""


def test_duplicate_sentences_are_used_once() -> None:
    dup = [
        Passage("a", "Hash passwords with Argon2id.", url="u1"),
        Passage("b", "Hash  passwords with Argon2id.", url="u2"),
    ]
    answer = ExtractiveGenerator().generate("hash passwords", dup)
    assert len(answer.sentences) == 1


def test_registry_and_embedder() -> None:
    gen = build(
        "generator",
        {"type": "extractive", "params": {"max_sentences": 2, "relative_cutoff": 0.0, "focus_cutoff": 0.0}},
        embedder=HashingEmbedder(),
    )
    assert isinstance(gen, ExtractiveGenerator) and gen.max_sentences == 2 and gen.embedder is not None
    assert len(gen.generate("SQL statements", PASSAGES).sentences) == 2
    with pytest.raises(ConfigError):
        ExtractiveGenerator(max_sentences=0)
    with pytest.raises(ConfigError, match="focus_cutoff"):
        ExtractiveGenerator(focus_cutoff=1.5)


def test_headings_questions_and_emphasis() -> None:
    md = [
        Passage(
            "p",
            "## Password hashing\n\nWhy hash passwords at all?\n\n"
            "**Hash passwords with Argon2id** before storing them.",
            url="u",
        )
    ]
    answer = ExtractiveGenerator().generate("hash passwords", md)
    assert answer.sentences == (("Hash passwords with Argon2id before storing them.", ("u",)),)


def test_focus_keeps_the_lead_source_first_and_drops_weak_neighbours() -> None:
    passages = [
        Passage(
            "p1",
            "Bind every SQL variable with prepared statements. Check table names against an allow-list.",
            url="lead",
        ),
        Passage(
            "p2", "SQL databases store tables. Prepared statements bind SQL variables in every SQL query.", url="other"
        ),
    ]
    query = "How do prepared statements bind SQL variables?"
    weak = "SQL databases store tables."
    loose = ExtractiveGenerator(relative_cutoff=0.0, focus_cutoff=0.0).generate(query, passages)
    assert weak in [t for t, _ in loose.sentences]  # shares one word with the question: pads the answer
    # relative cut-off alone (0.5 x best) already removes it
    assert weak not in [t for t, _ in ExtractiveGenerator(focus_cutoff=0.0).generate(query, passages).sentences]
    # the focus rule removes it even with a permissive relative cut-off: not the lead source, < 0.9 x best
    unfocused = ExtractiveGenerator(relative_cutoff=0.1, focus_cutoff=0.0).generate(query, passages)
    focused = ExtractiveGenerator(relative_cutoff=0.1).generate(query, passages)
    assert weak in [t for t, _ in unfocused.sentences] and weak not in [t for t, _ in focused.sentences]
    # the lead source opens the answer although the neighbour has the single best sentence
    assert focused.sentences[0] == ("Bind every SQL variable with prepared statements.", ("lead",))
    assert focused.sentences[1] == ("Prepared statements bind SQL variables in every SQL query.", ("other",))


def test_a_link_alone_is_not_an_answer_sentence() -> None:
    passages = [
        Passage("p1", "- [Java RegEx](https://docs.oracle.com/javase/8/docs/api/java/util/regex/Pattern.html)"),
        Passage("p2", "Java XML parsers must disable external entities to prevent XXE."),
    ]
    answer = ExtractiveGenerator(relative_cutoff=0.0, focus_cutoff=0.0).generate(
        "How do I prevent XXE in Java?", passages
    )
    assert "Java RegEx" not in answer.text and "external entities" in answer.text


# OWASP cheat-sheet lines (Key Management, the "Related" lists of several sheets)
REFERENCES = [
    "- [OWASP Top 10 for LLM Applications](https://genai.owasp.org/)",
    "- [OWASP Software Supply Chain Security Cheat Sheet](https://cheatsheetseries.owasp.org/cheatsheets/x.html)",
    "Related OWASP Cheat Sheets:",
    "Different strategies for rotating keys exist:",
    "Please see [Password Storage Cheat Sheet](Password_Storage_Cheat_Sheet.md) for details on this feature.",
]


@pytest.mark.parametrize("line", REFERENCES)
def test_a_reference_line_is_not_an_answer_sentence(line: str) -> None:
    passages = [Passage("p1", f"{line}\n\nOWASP rotates cheat sheet keys yearly and publishes the OWASP Top 10.")]
    answer = ExtractiveGenerator(relative_cutoff=0.0, focus_cutoff=0.0).generate(
        "Which OWASP cheat sheets cover rotating keys?", passages
    )
    assert line.rstrip(":") not in answer.text
    assert "rotates cheat sheet keys yearly" in answer.text


def test_only_reference_lines_give_an_empty_answer_unless_asked_to_keep_them() -> None:
    passages = [Passage("p1", "\n\n".join(REFERENCES[:3]))]
    question = "Who maintains the OWASP Cheat Sheet Series?"
    assert ExtractiveGenerator().generate(question, passages).text == ""
    kept = ExtractiveGenerator(skip_references=False).generate(question, passages).text
    assert "Supply Chain Security Cheat Sheet" in kept and "Related OWASP Cheat Sheets:" in kept
