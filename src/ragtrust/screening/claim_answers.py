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
  name ..., :data:`NAME_QUESTION`), a time (when, what year ..., :data:`TIME_QUESTION`) or a
  quantity (how many / much / long ..., :data:`QUANTITY_QUESTION`). A yes/no question, "why",
  "what happens" or "what are some" has no single value for two claims to disagree on, nor
  has a question that asks for advice or a possibility (a modal verb: "Which algorithm
  *should* be used?") or for several things ("Which cookie attributes ..."), where two
  documents naming different values may both tell the truth: nothing here applies to them
  (nor to a corpus scan, which has no question).
* A claim *answers* it (:func:`answers`) when the claim, read with the sentences before and
  after it in its document, holds at least :data:`ANSWERS_QUESTION` of the question's content
  words (question words such as who / how many left out), and, when its document poses a
  question of its own before it (:func:`question_before`: "What would happen if the Earth were
  closer to the Sun? Nothing in particular ..."), that question is the one asked
  (:func:`same_question`): a document answering another question says nothing about this one,
  and one that poses this question answers it in what follows (its question is read with
  the claim).
* Its *values* (:func:`answer_values`) are the values of the kind asked for: its names
  (capitalised mid-sentence, all capitals, letters mixed with digits; consecutive name words
  are one value), its dates (years, months, weekdays) or its other numbers, less every word
  of the question. A number is also read with its unit, as the conflict diff reads it
  (:mod:`ragtrust.screening.claim_diff`: "two to five years" is one range, in days): two
  claims whose quantities of one unit overlap agree ("2 to 5 years" / "36 months"), and a
  duration is no answer where the other claim gives a count ("She lays up to 2,000 eggs a
  day" / "A queen bee lives about three weeks").
* Two answering claims of two documents *conflict* (:func:`answer_conflict`) when each has a
  value, no value is shared, and neither document mentions anywhere a value of the other
  claim (a document that names both candidates is comparing them, not disagreeing). They
  *agree* (:func:`values_agree`) when they share a value and not each has one that the other
  document never mentions: testimony for the attribution's majority of independent witnesses
  (:mod:`ragtrust.screening.attribution`).

The signal (:class:`~ragtrust.screening.conflicts.ClaimConflictSignal`) reads only passages:
documents of at most ``PASSAGE_CLAIMS`` claims. In a 512-token chunk of a guide, sentences that
share a question's words are rarely its answer, and names abound (".NET Framework", "HTTP",
"RFC").

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
from functools import lru_cache

from ragtrust.screening.claim_diff import (
    STOP_WORDS,
    DiffFinding,
    _is_date,
    _is_entity,
    _number,
    _overlap,
    _quantities,
    _tokens,
    stem,
)
from ragtrust.text import split_sentences

#: a claim answers the question when it (with the sentence before it) holds at least this share
#: of the question's content words
ANSWERS_QUESTION = 0.5
#: words of a question that ask rather than say (left out of its content words)
QUESTION_WORDS = frozenset("who whom whose what which where when why how many much long true false".split())
#: a question that asks for a name or a place (its answer is a name)
NAME_QUESTION = re.compile(
    r"^\W*(?:who|whom|whose|where|which"
    r"|what\s+(?:name|city|country|language|team)"
    r"|what(?:'s|\s+is|\s+was)\s+the\s+(?:name|capital))\b",
    re.IGNORECASE,
)
#: a question that asks for a time (its answer is a date)
TIME_QUESTION = re.compile(
    r"^\W*(?:when|what\s+(?:year|date|day|month|century)|what(?:'s|\s+is|\s+was)\s+the\s+(?:date|year))\b",
    re.IGNORECASE,
)
#: a question that asks for a quantity (its answer is a number)
QUANTITY_QUESTION = re.compile(
    r"^\W*(?:how\s+(?:many|much|long|old|far|tall|big|often)"
    r"|what\s+(?:age|number|percentage)"
    r"|what(?:'s|\s+is|\s+was)\s+the\s+(?:number|population|age|size|length))\b",
    re.IGNORECASE,
)
#: a modal verb among the first words of a question asks for advice or a possibility: several
#: answers may be right ("Which algorithm should be used?"; not "can't" in a title)
_MODALS = re.compile(
    r"^\W*\w+(?:\s+[\w'’-]+){0,3}?\s+(?:should|must|can|could|may|might|would|will|shall|need|needs|ought)\b(?!['’])",
    re.IGNORECASE,
)
#: "which / what" and the two words after it (a plural noun there asks for several things)
_WHICH = re.compile(r"^\W*(?:which|what)\s+(\w+)(?:\s+(\w+))?", re.IGNORECASE)
_NOT_PLURAL = frozenset("is was has does this its his us".split())
#: the share of the larger question's content words two questions must share to be the same
SAME_QUESTION = 0.8
#: number words that are rarely an answer ("one of the most ...", "at first")
_LOOSE_NUMBERS = frozenset("one first second once single half double".split())


#: texts longer than this are not kept by :func:`_content_of` (a claim is a sentence)
_KEPT_CHARS = 1000


def _content(text: str) -> set[str]:
    return set(_content_of(text) if len(text) <= _KEPT_CHARS else _words(text))


@lru_cache(maxsize=8192)
def _content_of(text: str) -> frozenset[str]:
    """The content words of a short text, kept for the 8,192 last read (claims recur across questions)."""
    return _words(text)


def _words(text: str) -> frozenset[str]:
    return frozenset(
        stem(folded)
        for folded, _, _ in _tokens(text)
        if (len(folded) > 1 or folded.isdigit()) and folded not in STOP_WORDS and folded not in QUESTION_WORDS
    )


def asks_for(question: str | None) -> str | None:
    """What ``question`` asks for: ``"name"``, ``"time"``, ``"quantity"`` or ``None``.

    ``None`` for any other question, for one that asks for advice or a possibility (a modal
    verb) and for one that asks for several things ("which" / "what" and a plural noun).
    """
    if not question or _MODALS.match(question) or _asks_for_several(question):
        return None
    for kind, pattern in (("name", NAME_QUESTION), ("time", TIME_QUESTION), ("quantity", QUANTITY_QUESTION)):
        if pattern.match(question):
            return kind
    return None


def question_words(question: str) -> set[str]:
    """The question's content words, stemmed (question words such as who / how many left out)."""
    return _content(question)


def _asks_for_several(question: str) -> bool:
    """Whether a "which / what" question names a plural noun ("Which cookie attributes ...", not "What was ...")."""
    m = _WHICH.match(question)
    words = [w.lower() for w in (m.groups() if m else ()) if w]
    return any(len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us")) and w not in _NOT_PLURAL for w in words)


def question_before(text: str, start: int) -> str:
    """The last question line before offset ``start`` of ``text``, in its section ("" when none)."""
    last = ""
    for sentence in split_sentences(text[:start]):
        stripped = sentence.text.strip()
        if stripped.startswith("#"):  # a new section: an earlier question is not this claim's
            last = ""
        elif stripped.rstrip("*_)\"'").endswith("?"):
            last = sentence.text
    return last


class OwnQuestions:
    r""":func:`question_before` for many offsets of one text, splitting its sentences once.

    Example:
        >>> text = "Who wrote it? Jonas Berg wrote it.\n\n## Later\n\nHe retired."
        >>> own = OwnQuestions(text)
        >>> own.before(text.index("Jonas")), own.before(text.index("He"))
        ('Who wrote it?', '')
    """

    def __init__(self, text: str) -> None:
        self._marks: list[tuple[int, int, str | None]] = []
        if "?" not in text:  # no question: nothing to find (headings only matter after one)
            return
        for sentence in split_sentences(text):
            stripped = sentence.text.strip()
            if stripped.startswith("#"):
                self._marks.append((sentence.start, sentence.end, None))  # a heading opens a section
            elif stripped.rstrip("*_)\"'").endswith("?"):
                self._marks.append((sentence.start, sentence.end, sentence.text))

    def before(self, start: int) -> str:
        """The last question line that ends by ``start``, in the section ``start`` is in."""
        last = ""
        for begin, end, question in self._marks:
            if begin >= start:
                break
            if question is None:
                last = ""
            elif end <= start:
                last = question
        return last


def same_question(own: str, asked: set[str]) -> bool:
    """Whether a document's own question ``own`` is the question asked (content words ``asked``).

    They share at least :data:`SAME_QUESTION` of the larger one's content words.
    """
    words = _content(own)
    return bool(words) and len(words & asked) / max(len(words), len(asked)) >= SAME_QUESTION


def answers(text: str, asked: set[str]) -> bool:
    """Whether ``text`` holds at least :data:`ANSWERS_QUESTION` of the question's content words ``asked``.

    And at least two of them when the question has two or more ("Humans have 28 finger
    bones." does not answer "How many ribs do humans have?").
    """
    return covers(_content(text), asked)


def covers(words: set[str], asked: set[str]) -> bool:
    """:func:`answers` for a text's content words ``words`` (:func:`question_words` of it).

    The words of two texts joined by a space are the union of their words, so a claim read
    with its neighbours is the union of their sets.
    """
    held = len(words & asked)
    return bool(asked) and held >= min(2, len(asked)) and held / len(asked) >= ANSWERS_QUESTION


def answer_values(
    claim: str, asked: set[str], kind: str = "name", names: frozenset[str] = frozenset()
) -> dict[str, str]:
    """``{key: words}``: the values of ``claim`` of a ``kind`` that the question does not hold.

    ``kind``: ``"name"`` (names), ``"time"`` (years, months, weekdays) or ``"quantity"``
    (other numbers, keyed by value: two == 2). ``names``: words known to be names in the
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
        if _is_date(folded):
            close()
            if kind == "time":
                out[folded] = original
        elif value is not None and folded not in _LOOSE_NUMBERS:
            close()
            if kind == "quantity":
                out[f"#{value:.15g}"] = original  # 1,234,567 and 1,234,568 stay two values
        elif kind == "name" and value is None and _is_entity(original, start, names):
            run.append((folded, original))
        else:
            close()
    close()
    if kind == "quantity" and out:
        # and each number with its unit, as the conflict diff reads it ("two to five years" is
        # one range, compared in days), for :func:`answer_conflict` and :func:`values_agree`
        for unit, low, high, phrase, written in _quantities(claim):
            first = _tokens(phrase)[0][0]
            number = _number(first)
            if stem(first) in asked or (number is not None and f"{number:g}" in asked):
                continue  # the question's own quantity ("season 4" / "its fourth season")
            out["|".join(("q", unit, repr(low), repr(high), written))] = phrase
    return out


def _mentions(text: str, words: str) -> bool:
    if words.lower() not in text.lower():  # the common case, without a pattern
        return False
    return re.search(rf"(?<!\w){re.escape(words)}(?!\w)", text, re.IGNORECASE) is not None


def _quantity(key: str) -> tuple[str, float, float, str, str] | None:
    """The quantity a ``quantity`` value's key holds (:func:`answer_values`), ``None`` for another key."""
    parts = key.split("|")
    if len(parts) != 5 or parts[0] != "q":
        return None
    return parts[1], float(parts[2]), float(parts[3]), "", parts[4]


def _units(values: Mapping[str, str]) -> dict[str, list[tuple[tuple[str, float, float, str, str], str]]]:
    """A claim's quantities by unit, each with its phrase."""
    out: dict[str, list[tuple[tuple[str, float, float, str, str], str]]] = {}
    for key, phrase in values.items():
        quantity = _quantity(key)
        if quantity is not None:
            out.setdefault(quantity[0], []).append((quantity, phrase))
    return out


def _overlapping(left: Mapping[str, str], right: Mapping[str, str]) -> bool:
    """Whether two claims give quantities of one unit that overlap (:func:`answer_values`)."""
    units_right = _units(right)
    return any(
        _overlap(a, b) for unit, mine in _units(left).items() for a, _ in mine for b, _ in units_right.get(unit, [])
    )


def _incomparable(left: Mapping[str, str], right: Mapping[str, str]) -> bool:
    """Whether two claims' quantities say they are not two answers to one quantity question.

    They agree on a quantity when two of one unit overlap ("two to five years" / "36
    months"), and a duration is not a count ("She lays up to 2,000 eggs a day." / "A queen
    bee lives about three weeks."): neither is a conflict of values.
    """
    if _overlapping(left, right):
        return True
    units_left, units_right = _units(left), _units(right)
    shared = units_left.keys() & units_right.keys()
    return bool(units_left and units_right and not shared and ("time" in units_left) != ("time" in units_right))


def _plain(values: Mapping[str, str]) -> dict[str, str]:
    """The values less the quantities' keys (:func:`answer_values`)."""
    return {k: v for k, v in values.items() if _quantity(k) is None}


def answer_conflict(
    left: Mapping[str, str], right: Mapping[str, str], left_document: str, right_document: str
) -> DiffFinding | None:
    """The conflict between two answering claims' values ``left`` / ``right`` (module docstring)."""
    if _incomparable(left, right):
        return None
    left, right = _plain(left), _plain(right)
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
    name two different people: no agreement. Quantities agree when two of one unit overlap
    ("two to five years" / "36 months").
    """
    if _overlapping(left, right):
        return True
    left, right = _plain(left), _plain(right)
    if not left.keys() & right.keys():
        return False
    own_left = any(not _mentions(right_document, w) for w in left.values())
    own_right = any(not _mentions(left_document, w) for w in right.values())
    return not (own_left and own_right)


__all__ = [
    "ANSWERS_QUESTION",
    "NAME_QUESTION",
    "QUANTITY_QUESTION",
    "SAME_QUESTION",
    "TIME_QUESTION",
    "answer_conflict",
    "answer_values",
    "OwnQuestions",
    "answers",
    "asks_for",
    "covers",
    "question_before",
    "question_words",
    "same_question",
    "values_agree",
]
