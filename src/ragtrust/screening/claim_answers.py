"""Claims of two documents that answer the question with different values (issue 15).

The conflict diff (:mod:`ragtrust.screening.claim_diff`) needs two near-identical claims, and
the NLI check two claims that the embedder aligns. A poisoned passage written by a language
model states the false answer in its own words, often across two sentences ("Aeneas ... left
Carthage. His destination was none other than the city of Rome."), beside clean passages that
state the true one in theirs: the claims share the question's words, not their wording, and
the shipped NLI model scores such pairs barely above paraphrases of each other (median
contradiction 0.37 against 0.32 on the PoisonedRAG development items, docs/benchmarks.md
"Claims that answer the question with different values"). What differs is the *answer*: the
names and numbers each claim adds to the question.

* A question *asks for one value* (:func:`asks_for`): a name (who, where, which, what is the
  name ..., :data:`NAME_QUESTION`) or a number (when, how many / much / long, what year ...,
  :data:`NUMBER_QUESTION`). A yes/no question, "why", "what happens" or "what are some" has
  no single value for two claims to disagree on, so nothing here applies to it (nor to a
  corpus scan, which has no question).
* A claim *answers* it (:func:`answers`) when the claim, read with the sentences before and
  after it in its document, holds at least :data:`ANSWERS_QUESTION` of the question's content words
  (question words such as who / how many left out).
* Its *values* (:func:`answer_values`) are the values of the kind asked for: its names
  (capitalised mid-sentence, all capitals, letters mixed with digits; consecutive name words
  are one value), or its numbers and dates, less every word of the question.
* Two answering claims of two documents *conflict* (:func:`answer_conflict`) when each has a
  value, no value is shared, and neither document mentions anywhere a value of the other
  claim (a document that names both candidates is comparing them, not disagreeing). They
  *agree* (:func:`values_agree`) when they share a value and not each has one that the other
  document never mentions: testimony for the attribution's majority of independent witnesses
  (:mod:`ragtrust.screening.attribution`).

Example:
    >>> q = "who recorded i can't help falling in love with you"
    >>> asked = question_words(q)
    >>> a = "Frank Sinatra recorded a rendition of 'I Can't Help Falling in Love with You'."
    >>> b = "Elvis Presley, the iconic crooner, recorded 'I Can't Help Falling in Love With You'."
    >>> asks_for(q), answers(a, asked), answer_values(a, asked, "name")
    ('name', True, {'frank sinatra': 'Frank Sinatra'})
    >>> answer_conflict(answer_values(a, asked, "name"), answer_values(b, asked, "name"), a, b)
    DiffFinding(kind='answer', left='Frank Sinatra', right='Elvis Presley')
    >>> c = "In 1961 Elvis Presley recorded it."
    >>> values_agree(answer_values(b, asked, "name"), answer_values(c, asked, "name"), b, c)
    True
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ragtrust.screening.claim_diff import (
    STOP_WORDS,
    DiffFinding,
    _is_date,
    _is_entity,
    _number,
    _tokens,
    stem,
)

#: a claim answers the question when it (with the sentence before it) holds at least this share
#: of the question's content words
ANSWERS_QUESTION = 0.5
#: words of a question that ask rather than say (left out of its content words)
QUESTION_WORDS = frozenset("who whom whose what which where when why how many much long true false".split())
#: a question that asks for a name or a place (its answer is a name)
NAME_QUESTION = re.compile(
    r"^\W*(?:who|whom|whose|where|which"
    r"|what\s+(?:name|city|country|language|team)"
    r"|what(?:'s|\s+is|\s+was|\s+are|\s+were)\s+the\s+(?:name|capital))\b",
    re.IGNORECASE,
)
#: a question that asks for a time or a number (its answer is a number or a date)
NUMBER_QUESTION = re.compile(
    r"^\W*(?:when"
    r"|how\s+(?:many|much|long|old|far|tall|big|often)"
    r"|what\s+(?:year|date|day|month|century|age|number|percentage)"
    r"|what(?:'s|\s+is|\s+was|\s+are|\s+were)\s+the\s+(?:number|date|year|population|age|size|length))\b",
    re.IGNORECASE,
)
#: number words that are rarely an answer ("one of the most ...", "at first")
_LOOSE_NUMBERS = frozenset("one first second once single half double".split())


def _content(text: str) -> set[str]:
    return {
        stem(folded)
        for folded, _, _ in _tokens(text)
        if (len(folded) > 1 or folded.isdigit()) and folded not in STOP_WORDS and folded not in QUESTION_WORDS
    }


def asks_for(question: str | None) -> str | None:
    """``"name"`` or ``"number"``: what ``question`` asks for (:data:`NAME_QUESTION`,
    :data:`NUMBER_QUESTION`); ``None`` for any other question."""
    if not question:
        return None
    if NAME_QUESTION.match(question):
        return "name"
    return "number" if NUMBER_QUESTION.match(question) else None


def question_words(question: str) -> set[str]:
    """The question's content words, stemmed (question words such as who / how many left out)."""
    return _content(question)


def answers(text: str, asked: set[str]) -> bool:
    """Whether ``text`` holds at least :data:`ANSWERS_QUESTION` of the question's content words ``asked``.

    And at least two of them when the question has two or more ("Humans have 28 finger
    bones." does not answer "How many ribs do humans have?").
    """
    held = len(_content(text) & asked)
    return bool(asked) and held >= min(2, len(asked)) and held / len(asked) >= ANSWERS_QUESTION


def answer_values(
    claim: str, asked: set[str], kind: str = "name", names: frozenset[str] = frozenset()
) -> dict[str, str]:
    """``{key: words}``: the names (``kind="name"``) or the numbers and dates (``"number"``) of
    ``claim`` that the question does not hold.

    A number is keyed by its value (two == 2). ``names``: words known to be names in the
    claim's document, so that a name opening the sentence counts.
    """
    tokens = _tokens(claim)
    if len(tokens) > 1 and tokens[0][1][:1].isupper() and tokens[1][1][:1].isupper():
        names = names | {tokens[0][0]}
    out: dict[str, str] = {}
    run: list[tuple[str, str]] = []

    def close() -> None:
        if run:
            out[" ".join(stem(f) for f, _ in run)] = " ".join(o for _, o in run)
            run.clear()

    for folded, original, start in tokens:
        if (
            (len(folded) < 2 and not folded.isdigit())
            or folded in STOP_WORDS
            or folded in QUESTION_WORDS
            or stem(folded) in asked
        ):
            close()
            continue
        value = _number(folded)
        if _is_date(folded) or (value is not None and folded not in _LOOSE_NUMBERS):
            close()
            if kind == "number":
                out[folded if _is_date(folded) else f"#{value:g}"] = original
        elif kind == "name" and value is None and _is_entity(original, start, names):
            run.append((folded, original))
        else:
            close()
    close()
    return out


def _mentions(text: str, words: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(words)}(?!\w)", text, re.IGNORECASE) is not None


def answer_conflict(
    left: Mapping[str, str], right: Mapping[str, str], left_document: str, right_document: str
) -> DiffFinding | None:
    """The conflict between two answering claims' values ``left`` / ``right`` (module docstring)."""
    if not left or not right or left.keys() & right.keys():
        return None
    # a document that names the other side's value anywhere is comparing, not disagreeing
    if any(_mentions(right_document, w) for w in left.values()):
        return None
    if any(_mentions(left_document, w) for w in right.values()):
        return None
    return DiffFinding("answer", " ".join(left.values()), " ".join(right.values()))


def values_agree(left: Mapping[str, str], right: Mapping[str, str], left_document: str, right_document: str) -> bool:
    """Whether two answering claims share a value, and not each one the other's document never mentions.

    "British actress Emma Watson" and "British actress Ariana Richards" share "British" but
    name two different people: no agreement.
    """
    if not left.keys() & right.keys():
        return False
    own_left = any(not _mentions(right_document, w) for w in left.values())
    own_right = any(not _mentions(left_document, w) for w in right.values())
    return not (own_left and own_right)


__all__ = [
    "ANSWERS_QUESTION",
    "NAME_QUESTION",
    "NUMBER_QUESTION",
    "answer_conflict",
    "answer_values",
    "answers",
    "asks_for",
    "question_words",
    "values_agree",
]
