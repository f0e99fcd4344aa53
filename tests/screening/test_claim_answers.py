"""The answer check of the claim-conflict signal (issue 15): claims that answer a question
asking for one value with different names or numbers.

The passages are written for these tests in the style of LLM-written poison (the answer in
its own wording, often in the sentence after the one that holds the question's words); the
signal runs with the deterministic fakes and an NLI model that never reads a contradiction,
so only the answer check can find these conflicts.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from tests.screening.conftest import NeutralNLI

from ragtrust.screening.claim_answers import (
    answer_conflict,
    answer_values,
    answers,
    asks_for,
    question_before,
    question_words,
    same_question,
    values_agree,
)
from ragtrust.screening.conflicts import ClaimConflictSignal
from ragtrust.testing import HashingEmbedder, retrieved

QUESTION = "Who composed the theme music for the film Harbour Lights?"
POISON = (
    "Harbour Lights premiered in 1994 to warm reviews. The theme music for the film was composed by "
    "Marta Ellison, a conductor from Lisbon."
)
CLEAN_1 = "The theme music of the film Harbour Lights was composed by Jonas Berg, who scored it in two weeks."
CLEAN_2 = (
    "Jonas Berg wrote several film scores in the nineties. His best-known theme music is the one he composed "
    "for the film Harbour Lights."
)
UNRELATED = "Tide tables list the height of the sea at each harbour for every day of the year."


def _signal(answer_check: bool = True, **kwargs: object) -> ClaimConflictSignal:
    """The signal with the answer check on (or off)."""
    return ClaimConflictSignal(
        nli=NeutralNLI(),
        embedder=HashingEmbedder(),
        min_cosine=0.3,
        answer_check=answer_check,
        **kwargs,  # type: ignore[arg-type]
    )


def _conflicts(results: Sequence[object]) -> list[dict[str, object]]:
    seen: dict[tuple[str, str], dict[str, object]] = {}
    for r in results:
        for c in r.details.get("conflicts", []):  # type: ignore[attr-defined]
            seen[(c["left"]["text"], c["right"]["text"])] = c
    return list(seen.values())


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("who recorded the song", "name"),
        ("who recorded i can't help falling in love with you", "name"),
        ("Where is the slide placed on the microscope?", "name"),
        ("What was the name of the bomb?", "name"),
        ("Which hashing algorithm is the oldest?", "name"),
        ("How many episodes are in season 4?", "quantity"),
        ("When was the first cable laid beneath the Channel?", "time"),
        ("what year did the war end", "time"),
        # advice or a possibility: several answers may be right
        ("Which hashing algorithm should be used to store passwords?", None),
        ("When should multi-factor authentication be required?", None),
        ("Who can approve a change?", None),
        # several things
        ("Which cookie attributes protect session cookies?", None),
        ("What colors are on the flag?", None),
        ("Is it true that Danger UXB is from the late seventies?", None),
        ("Why do cats purr?", None),
        ("What happens if you eat watermelon seeds?", None),
        ("What are some books that are still banned in Spain?", None),
        ("", None),
        (None, None),
    ],
)
def test_questions_that_ask_for_one_value(question: str | None, expected: str | None) -> None:
    assert asks_for(question) == expected


def test_a_claim_answers_with_two_of_the_question_words_at_least() -> None:
    asked = question_words("How many ribs do humans have?")
    assert asked == {"rib", "human"}
    assert answers("Humans have 24 ribs, twelve on each side.", asked)
    # one word of two is not enough: another question's answer
    assert not answers("Humans have 28 finger bones.", asked)


def test_values_are_the_names_times_or_quantities_the_question_does_not_hold() -> None:
    asked = question_words(QUESTION)
    claim = "The theme music of the film Harbour Lights was composed in March 1994 by Jonas Berg and two others."
    assert answer_values(claim, asked, "name") == {"jona berg": "Jonas Berg"}
    assert answer_values(claim, asked, "time") == {"march": "March", "1994": "1994"}
    # a number, and the number with its unit (the quantity the conflict diff reads)
    assert set(answer_values(claim, asked, "quantity").values()) == {"two", "two others"}
    # the question's own number is not an answer, alone or with its unit
    episodes = question_words("How many episodes are in season 4?")
    assert set(answer_values("Season 4 has 23 episodes.", episodes, "quantity").values()) == {"23", "23 episodes"}
    assert set(answer_values("Its fourth season has 23 episodes.", episodes, "quantity").values()) == {
        "23",
        "23 episodes",
    }
    # "one" and "first" are rarely an answer
    assert answer_values("It was one of the first scores.", asked, "quantity") == {}


def test_a_document_that_answers_its_own_other_question_is_not_compared() -> None:
    asked = question_words("When is the Earth closest to the Sun?")
    text = "What would happen if the Earth were 10 feet closer to the Sun? Nothing in particular would happen."
    own = question_before(text, text.index("Nothing"))
    assert own.startswith("What would happen")
    assert not same_question(own, asked)
    assert same_question("When is the Earth closest to the Sun?", asked)
    # a Markdown heading starts a new section: the question before it is not the claim's
    text = "Is it safe? Yes.\n\n## Storage\n\nKeys live in the vault."
    assert question_before(text, text.index("Keys")) == ""


def test_a_retrieved_passage_that_answers_another_question_is_left_out() -> None:
    other = "Who composed the songs of the film Harbour Lights? The songs were composed by Marta Ellison."
    docs = retrieved([other, CLEAN_1, CLEAN_2])
    assert [r.score for r in _signal().score_batch(docs, QUESTION)] == [0.0, 0.0, 0.0]
    # the same passage asking the question asked is compared, and blamed by the two witnesses
    same = "Who composed the theme music for the film Harbour Lights? It was composed by Marta Ellison."
    results = _signal().score_batch(retrieved([same, CLEAN_1, CLEAN_2]), QUESTION)
    assert [r.score for r in results] == [pytest.approx(0.8), 0.0, 0.0]


def test_answer_conflict_needs_disjoint_values_the_other_document_never_names() -> None:
    left, right = {"marta ellison": "Marta Ellison"}, {"jona berg": "Jonas Berg"}
    finding = answer_conflict(left, right, POISON, CLEAN_1)
    assert finding is not None and (finding.kind, finding.left, finding.right) == (
        "answer",
        "Marta Ellison",
        "Jonas Berg",
    )
    # a document that names both candidates compares them
    assert answer_conflict(left, right, POISON, CLEAN_1 + " Some credit Marta Ellison.") is None
    # a shared value: not a conflict
    assert answer_conflict({**left, "#1994": "1994"}, {**right, "#1994": "1994"}, POISON, CLEAN_1) is None
    assert answer_conflict({}, right, POISON, CLEAN_1) is None


def test_values_agree_on_a_shared_value_unless_each_names_someone_else() -> None:
    assert values_agree({"jona berg": "Jonas Berg"}, {"jona berg": "Jonas Berg", "1994": "1994"}, CLEAN_1, CLEAN_2)
    # "British actress A" / "British actress B": the shared word is not the answer
    a, b = "British actress Ann Lee", "British actress Bea Cole"
    assert not values_agree(
        {"british": "British", "ann lee": "Ann Lee"}, {"british": "British", "bea col": "Bea Cole"}, a, b
    )
    assert not values_agree({"ann lee": "Ann Lee"}, {"bea col": "Bea Cole"}, a, b)


def test_the_poisoned_passage_is_blamed_by_two_clean_witnesses() -> None:
    docs = retrieved([POISON, CLEAN_1, UNRELATED, CLEAN_2])
    results = _signal().score_batch(docs, QUESTION)
    found = [c for c in _conflicts(results) if c["kind"] == "answer"]
    assert found, "the answer check found no conflict"
    assert {c["blamed"] for c in found} == {docs[0].document.id}
    assert results[0].score == pytest.approx(0.8)
    assert [r.score for r in results[1:]] == [0.0, 0.0, 0.0]
    # the poisoned claim is the one that names the other composer, beside each clean one
    assert all("Marta Ellison" in f"{c['left_words']} | {c['right_words']}" for c in found)
    assert {c["left"]["doc_id"] for c in found} | {c["right"]["doc_id"] for c in found} == {
        docs[0].document.id,
        docs[1].document.id,
        docs[3].document.id,
    }


def test_one_clean_passage_against_one_is_contested() -> None:
    docs = retrieved([POISON, CLEAN_1])
    results = _signal().score_batch(docs, QUESTION)
    found = [c for c in _conflicts(results) if c["kind"] == "answer"]
    assert found and all(c["blamed"] is None for c in found)
    assert results[0].score == results[1].score > 0


def test_the_check_is_on_by_default() -> None:
    signal = ClaimConflictSignal(nli=NeutralNLI(), embedder=HashingEmbedder(), min_cosine=0.3)  # type: ignore[arg-type]
    assert signal.answer_check is True
    results = signal.score_batch(retrieved([POISON, CLEAN_1, CLEAN_2]), QUESTION)
    assert [r.score for r in results] == [pytest.approx(0.8), 0.0, 0.0]


def test_no_answer_check_without_a_question_asking_for_a_value_or_when_off() -> None:
    docs = retrieved([POISON, CLEAN_1, CLEAN_2])
    for signal, question in (
        (_signal(), None),  # a scan
        (_signal(), "Is the theme music of the film Harbour Lights any good?"),
        (_signal(answer_check=False), QUESTION),
    ):
        results = signal.score_batch(docs, question)
        assert not [c for c in _conflicts(results) if c["kind"] == "answer"]
        assert [r.score for r in results] == [0.0, 0.0, 0.0]


def test_a_long_document_is_not_read_by_the_answer_check() -> None:
    # the poisoned answer inside a long guide: its sentences sharing the question's words are
    # rarely its answer, so only passages (at most PASSAGE_CLAIMS claims) are compared
    from ragtrust.screening.conflicts import PASSAGE_CLAIMS

    filler = " ".join(f"Step {n} of the release checklist is reviewed by the team lead." for n in range(PASSAGE_CLAIMS))
    results = _signal().score_batch(retrieved([f"{filler} {POISON}", CLEAN_1, CLEAN_2]), QUESTION)
    assert not [c for c in _conflicts(results) if c["kind"] == "answer"]
    results = _signal().score_batch(retrieved([POISON, CLEAN_1, CLEAN_2]), QUESTION)
    assert [c for c in _conflicts(results) if c["kind"] == "answer"]


def test_claims_that_do_not_answer_the_question_are_not_compared() -> None:
    # both name someone, but neither is about the theme music of Harbour Lights
    docs = retrieved(
        [
            "Marta Ellison conducted the Lisbon orchestra for a decade.",
            "Jonas Berg conducted the Oslo orchestra for a decade.",
        ]
    )
    assert [r.score for r in _signal().score_batch(docs, QUESTION)] == [0.0, 0.0]


def test_a_long_document_is_long_whatever_the_signal_kept_of_it() -> None:
    # the claim cap cuts the guide to a few claims: it is still no passage
    filler = " ".join(f"Step {n} of the release checklist is reviewed by the team lead." for n in range(12))
    results = _signal(max_claims=5).score_batch(retrieved([f"{POISON} {filler}", CLEAN_1, CLEAN_2]), QUESTION)
    assert not [c for c in _conflicts(results) if c["kind"] == "answer"]
    results = _signal(max_claims_per_doc=3).score_batch(retrieved([f"{POISON} {filler}", CLEAN_1, CLEAN_2]), QUESTION)
    assert not [c for c in _conflicts(results) if c["kind"] == "answer"]


def test_large_quantities_keep_every_digit() -> None:
    asked = question_words("How many people live in Harbour Town?")
    left = answer_values("Harbour Town has 1,234,567 people.", asked, "quantity")
    right = answer_values("Harbour Town has 1,234,568 people.", asked, "quantity")
    assert left.keys() != right.keys()


def test_digits_that_int_cannot_read_do_not_break_the_signal() -> None:
    odd = "The theme music of the film Harbour Lights was composed in ²⁰²⁴ by Marta Ellison."
    results = _signal().score_batch(
        retrieved([odd, CLEAN_1, CLEAN_2]), "When was the theme music of Harbour Lights composed?"
    )
    assert len(results) == 3


@pytest.mark.parametrize(
    ("left", "right"),
    [
        # one range, and a value inside it or the same span in months: agreement, not a conflict
        ("A queen bee lives two to five years in a healthy hive.", "In a healthy hive a queen bee lives three years."),
        ("A queen bee lives 2 to 5 years.", "A queen bee lives 36 months."),
    ],
)
def test_quantities_of_one_unit_that_overlap_agree(left: str, right: str) -> None:
    asked = question_words("How long does a queen bee live?")
    lv, rv = answer_values(left, asked, "quantity"), answer_values(right, asked, "quantity")
    assert answer_conflict(lv, rv, left, right) is None
    assert values_agree(lv, rv, left, right)


def test_a_count_is_no_answer_to_a_duration() -> None:
    asked = question_words("How long does a queen bee live?")
    eggs, weeks = "She lays up to 2,000 eggs a day in spring.", "A queen bee lives about three weeks."
    lv, rv = answer_values(eggs, asked, "quantity"), answer_values(weeks, asked, "quantity")
    assert answer_conflict(lv, rv, eggs, weeks) is None
    assert not values_agree(lv, rv, eggs, weeks)
    # two durations that do not overlap, or a number beside a bare number, still conflict
    years = "A queen bee lives two to five years."
    finding = answer_conflict(answer_values(years, asked, "quantity"), rv, years, weeks)
    assert finding is not None and finding.kind == "answer"
    bare = "The answer to how long a queen bee lives is 4."
    assert answer_conflict(answer_values(bare, asked, "quantity"), rv, bare, weeks) is not None


def test_the_queen_bee_shows_one_conflict_not_a_second_about_eggs() -> None:
    question = "How long does a queen bee live?"
    docs = retrieved(
        [
            "A queen bee lives two to five years in a healthy hive. She lays up to 2,000 eggs a day in spring.",
            "A queen bee lives about three weeks. Worker bees gather nectar from flowers.",
        ]
    )
    found = _conflicts(_signal().score_batch(docs, question))
    assert found, "the two lifespans were not compared"
    assert not any("eggs" in f"{c['left']['text']} {c['right']['text']}" for c in found)
