"""The conflict diff of two aligned claims (issue 15): which words changed, and what kind.

:func:`diff_conflict` compares two aligned claims token by token.
Two kinds of finding, each with the differing words of both claims:

* *near-identical claims* (token similarity >= ``NEAR_IDENTICAL``, few tokens changed):
  a token that was replaced, inserted or deleted is a conflict when it is a number or a
  number word (``number``), a year, month or weekday (``date``), a negation (``negation``),
  a modal verb or a requirement word (``modal``: must -> may, required -> optional), a
  quantifier or bound (``quantifier``: always -> sometimes, "only some of the time" added),
  or a name (``entity``: capitalised mid-sentence, all capitals, or letters mixed with
  digits: Reed Hastings -> Marc Randolph, AES -> DES), or a word replaced by its antonym
  (``antonym``: disable -> enable, faster -> slower; WordNet's direct antonyms in
  ``ragtrust/data/antonyms.tsv``, any inflection; with a negation on one side the claims
  agree; off between two claims of one document, see ``antonyms``). A universal may stand
  for the other claim's negation ("Never log tokens" / "Always log tokens" is a
  ``negation``). An identifier's number (CWE-79 ->
  CWE-89, TLS 1.2 -> 1.0, 2048-bit -> 1024-bit) is a ``number``. Tokens that only moved
  ("In 1998 the company..." / "...founded in 1998") and numbers written two ways (two / 2)
  are no change; a kind needs changed words of that kind on both sides, except negations,
  weakening words and quantifiers, which change a claim by being added alone. A replaced
  ordinary word is a paraphrase, not a conflict.
* *quantities* in any two aligned claims: a number (or range) followed by the same unit
  ("23 episodes" / "24 episodes"), or by two units of time ("two to five years" / "three
  weeks", compared in days) or of information ("64 bits" / "64 bytes", compared in bits), or
  two frequencies ("once or twice a day" / "once a month", compared in times per day; not
  between two claims of one document, which gives how often for each of its cases),
  whose ranges do not overlap is a ``number`` conflict, unless either claim is
  *conditional* (:func:`conditional`: "if", "unless", "when", "for example", ...). A
  conditional claim's quantity holds in its case, which the other claim need not share: "If
  MFA is enabled passwords shorter than 8 characters are weak" / "If MFA is not enabled
  passwords shorter than 15 characters are weak", or "a session ID must be at least 16
  hexadecimal characters long to achieve the required 64 bits of entropy" / "For example, if
  half of a 16-character hexadecimal session ID is fixed, only ... 32 bits of entropy" (both
  pairs from one OWASP cheat sheet). Near-identical conditional claims with one value
  swapped still conflict (the first kind).

The tokens, stop words and light stemming here are also those of claim alignment
(:mod:`ragtrust.screening.claims`).

Example:
    >>> diff_conflict("Passwords must be hashed with bcrypt.", "Passwords may be hashed with bcrypt.").kind
    'modal'
    >>> diff_conflict("A queen bee lives two to five years.", "A queen bee lives about three weeks.").kind
    'number'
    >>> diff_conflict("Use parameterised queries.", "Use prepared statements.") is None
    True
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

from ragtrust.text import split_sentences

#: a token: a number (1.3 and 10,000 stay whole) or a run of letters
TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+|\d+", re.UNICODE)
#: function words: no content of their own
STOP_WORDS = frozenset(
    "a an the of to in on at is are was were be been by for with and or as that this it its from do does "
    "can may must should will would you your we our they their which when what than then there these those "
    "have has had but if into also more most any all each such only other not no".split()
)
NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000,
    "million": 10**6, "billion": 10**9, "dozen": 12, "half": 0.5, "once": 1, "twice": 2, "single": 1,
    "double": 2, "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10,
}  # fmt: skip
#: token similarity (difflib ratio) at which two claims count as near-identical
NEAR_IDENTICAL = 0.7
#: at most this many tokens may change (per side) between near-identical claims
MAX_CHANGED = 8
#: at most this many tokens may change (per side) for a swapped value (name, number, date)
MAX_SWAPPED = 4
SWAP_KINDS = frozenset({"number", "date", "entity", "modal"})

_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
NEGATIONS = frozenset("not no never none nothing neither nor cannot without nobody nowhere".split())
MODALS = frozenset(
    "must shall should may might can could will would need needs required require requires optional "
    "mandatory recommended necessary unnecessary forbidden prohibited allowed permitted".split()
)
QUANTIFIERS = frozenset(
    "all every each always never some sometimes often rarely seldom usually occasionally generally typically "
    "mostly most few many several least minimum maximum only more less fewer greater higher lower above below "
    "over under exactly approximately almost nearly majority minority".split()
)
#: modals that say the same (a modal conflict needs two classes: "must" / "may", not "can" / "may")
_MODAL_CLASS = {
    "must": "must", "shall": "must", "required": "must", "require": "must", "requires": "must",
    "mandatory": "must", "necessary": "must", "need": "must", "needs": "must",
    "should": "should", "recommended": "should",
    "may": "may", "might": "may", "can": "may", "could": "may", "optional": "may", "allowed": "may",
    "permitted": "may",
    "forbidden": "must not", "prohibited": "must not", "unnecessary": "need not",
    "will": "will", "would": "will",
}  # fmt: skip
#: quantifiers that a generic statement already implies ("Use HTTPS" / "Always use HTTPS")
UNIVERSAL = frozenset("all every each always".split())
#: the first half of a contraction ("don't" is tokenised don / t)
_CONTRACTED = frozenset(
    "don doesn didn isn aren wasn weren won shouldn mustn couldn wouldn haven hasn hadn needn mightn shan".split()
)
#: words that frame a claim's polarity or force, not its content (:func:`_polarity_flip`)
_FRAME_EXTRA = frozenset({"t"}) | _CONTRACTED
#: words that weaken a claim when they are added alone (a modal of possibility, a hedge)
WEAKENING = frozenset(
    "may might could optional optionally sometimes rarely seldom occasionally usually generally typically often "
    "mostly perhaps possibly arguably".split()
)
#: units of time, in days, so "two to five years" and "three weeks" compare
TIME_UNITS = {
    "second": 1 / 86400, "minute": 1 / 1440, "hour": 1 / 24, "day": 1.0, "week": 7.0, "month": 30.4,
    "year": 365.25, "decade": 3652.5, "century": 36525.0,
}  # fmt: skip
#: units of information, in bits, so "64 bits" and "8 bytes" compare (and "64 bytes" differs)
SIZE_UNITS = {
    "bit": 1.0, "byte": 8.0, "kilobit": 1e3, "kilobyte": 8e3, "megabit": 1e6, "megabyte": 8e6,
    "gigabit": 1e9, "gigabyte": 8e9, "terabyte": 8e12,
}  # fmt: skip
#: a quantity's dimension -> its units and their size in the dimension's base unit
_DIMENSIONS = {"time": TIME_UNITS, "size": SIZE_UNITS}
_RANGE_JOINERS = frozenset("to and or through".split())
#: a dash between two numbers makes a range ("5-10 days", "5–10 days")
_RANGE_DASHES = frozenset({"-", "\u2013", "\u2014"})
#: words that open a case or an example (:func:`conditional`)
_CONDITION = re.compile(
    r"\b(?:if|unless|when|whenever|assuming|provided\s+that|in\s+case(?!-)|for\s+(?:example|instance))\b|(?<!\w)e\.g\.",
    re.IGNORECASE,
)
#: words that give a thing a rank only one thing can hold ("the best", "the first"); also
#: "most" / "least" with the word after it
SUPERLATIVES = frozenset(
    "best worst largest biggest smallest highest lowest longest shortest oldest newest youngest fastest slowest "
    "strongest weakest safest greatest deepest richest poorest latest earliest cheapest easiest hardest heaviest "
    "lightest simplest closest nearest furthest farthest tallest only first last".split()
)
_COPULA = frozenset("is are was were remains remain".split())
#: at most this many words before the copula of a superlative claim
_MAX_SUBJECT = 6
_PRONOUNS = frozenset("it this that they these those he she we you i there which what who".split())
#: words that open a new clause after a shared superlative predicate
_NEW_CLAUSE = frozenset("and but which because so while whereas although though yet".split())
#: temperature scales: t in the scale is (t - offset) * factor degrees Celsius
_SCALES = {"celsius": (0.0, 1.0), "fahrenheit": (32.0, 5.0 / 9.0), "kelvin": (273.15, 1.0)}
_SCALE_NAMES = {
    "c": "celsius", "celsius": "celsius", "centigrade": "celsius", "f": "fahrenheit", "fahrenheit": "fahrenheit",
    "k": "kelvin", "kelvin": "kelvin",
}  # fmt: skip
#: two temperatures written in two scales may differ by this much (degrees Celsius) from rounding
TEMPERATURE_SLACK = 3.0
#: how many times a frequency says, beyond :data:`NUMBER_WORDS`
_FREQUENCY_WORDS = {"thrice": 3.0}
_COUNT = r"(?:\d+(?:,\d{3})*|once|twice|thrice|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_TIME_UNIT = r"(?:second|minute|hour|day|week|month|year|decade|century)"
_ONCE = r"(?<=once)|(?<=twice)|(?<=thrice)"
#: a frequency: "once or twice a day", "3 times per week", "every 90 days", "every other day";
#: a bare number needs "times" ("94 per year" counts something, "$550 a year" is a price)
_FREQUENCY = re.compile(
    rf"\b(?P<low>{_COUNT})(?:\s+(?:or|to)\s+(?P<high>{_COUNT}))?(?:\s+times|{_ONCE})"
    rf"\s+(?:a|an|per|each)\s+(?P<unit>{_TIME_UNIT})\b"
    rf"|\bevery\s+(?:(?P<step>other|{_COUNT})(?:(?:\s*[-\u2013\u2014]\s*|\s+(?:or|to)\s+)(?P<step_high>{_COUNT}))?\s+)?"
    rf"(?P<every_unit>{_TIME_UNIT})s?\b",
    re.IGNORECASE,
)
_HEDGE_FILLERS = frozenset("about around approximately roughly nearly almost only just up over some".split())
#: WordNet's direct antonyms of adjectives, verbs and adverbs (``scripts/wordnet_antonyms.py``)
ANTONYMS_FILE = "antonyms.tsv"
#: words with a kind of their own ("required" / "optional" is ``modal``, "more" / "less" ``quantifier``,
#: "first" / "second" ``number``)
_OTHER_KINDS = MODALS | QUANTIFIERS | NEGATIONS | WEAKENING | frozenset(NUMBER_WORDS)
#: function words still read against their antonym ("switched on" / "switched off")
_SWITCHES = frozenset({"on", "off"})
#: inflection endings, what replaces them, and the part of speech they inflect (WordNet's own
#: detachment rules, its "morphy", for verbs and adjectives, and "ied" / "ier" / "iest" -> "y"):
#: a verb ending is not stripped to reach an adjective ("pasted" is not "past", "news" not "new")
_DETACH = (
    ("ies", "y", "verb"), ("ied", "y", "verb"), ("es", "e", "verb"), ("es", "", "verb"), ("ed", "e", "verb"),
    ("ed", "", "verb"), ("ing", "e", "verb"), ("ing", "", "verb"), ("s", "", "verb"),
    ("ier", "y", "adj"), ("iest", "y", "adj"), ("er", "", "adj"), ("er", "e", "adj"), ("est", "", "adj"),
    ("est", "e", "adj"),
)  # fmt: skip
#: a stripped stem shorter than this is no word of the list ("upper" is not "up", "ones" not "on")
_MIN_STEM = 3


@functools.cache
def _antonym_table() -> tuple[Mapping[str, frozenset[str]], Mapping[str, frozenset[str]]]:
    """(word -> its antonyms, word -> its parts of speech), read once from the shipped list."""
    pairs: dict[str, set[str]] = {}
    parts: dict[str, set[str]] = {}
    text = resources.files("ragtrust.data").joinpath(ANTONYMS_FILE).read_text(encoding="utf-8")
    for line in text.splitlines():
        if line and not line.startswith("#"):
            left, right, pos = line.split("\t")
            pairs.setdefault(left, set()).add(right)
            pairs.setdefault(right, set()).add(left)
            # an adverb takes the adjective's endings ("faster", "longer")
            for word in (left, right):
                parts.setdefault(word, set()).add("adj" if pos == "adv" else pos)
    freeze = {word: frozenset(others) for word, others in pairs.items()}
    return MappingProxyType(freeze), MappingProxyType({w: frozenset(p) for w, p in parts.items()})


def antonyms() -> Mapping[str, frozenset[str]]:
    """Each word of the shipped antonym list and its antonyms (both directions; read-only)."""
    return _antonym_table()[0]


@functools.lru_cache(maxsize=65536)
def lemmas(word: str) -> frozenset[str]:
    """The words of the antonym list that ``word`` (folded) can be an inflection of.

    Example:
        >>> sorted(lemmas("disabled")), sorted(lemmas("slower")), sorted(lemmas("denied"))
        (['disable'], ['slow'], ['deny'])
        >>> sorted(lemmas("pasted")), sorted(lemmas("upper")), sorted(lemmas("news"))
        ([], [], [])
    """
    known, parts = _antonym_table()
    found = {word} & known.keys()
    for suffix, keep, pos in _DETACH:
        if not word.endswith(suffix):
            continue
        base = word[: len(word) - len(suffix)]
        for stem in (base + keep, base[:-1] if len(base) > 2 and base[-1] == base[-2] else ""):  # stopped, bigger
            if len(stem) >= _MIN_STEM and pos in parts.get(stem, ()):
                found.add(stem)
    return frozenset(found)


def antonymous(left: str, right: str) -> bool:
    """Whether two folded words are antonyms in the shipped list, in any inflection.

    Example:
        >>> antonymous("enabled", "disabled"), antonymous("faster", "slower"), antonymous("fast", "quick")
        (True, True, False)
    """
    known = antonyms()
    right_lemmas = lemmas(right)
    return any(known[lemma] & right_lemmas for lemma in lemmas(left))


def _antonym_candidate(folded: str) -> bool:
    """Whether a word may be read against its antonym.

    Not a word with a kind of its own, and no function word or auxiliary ("there" / "here",
    "have" / "lack"), except "on" / "off".
    """
    if folded in _OTHER_KINDS:
        return False
    return folded in _SWITCHES or (folded not in STOP_WORDS and folded not in _AUXILIARIES)


def _antonym_swap(
    left: Sequence[tuple[str, str, int]], right: Sequence[tuple[str, str, int]]
) -> tuple[str, str] | None:
    """The one word and its antonym that replace each other, all else function words, or ``None``."""

    def content(tokens: Sequence[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
        return [t for t in tokens if t[0] not in STOP_WORDS and t[0] not in _HEDGE_FILLERS]

    for a in left:
        for b in right:
            if _antonym_candidate(a[0]) and _antonym_candidate(b[0]) and antonymous(a[0], b[0]):
                rest = [t for t in content(left) if t is not a] + [t for t in content(right) if t is not b]
                return (a[1], b[1]) if not rest else None
    return None


@dataclass(frozen=True)
class DiffFinding:
    """What the conflict diff found between two claims.

    Attributes:
        kind: ``number`` / ``date`` / ``entity`` / ``negation`` / ``modal`` / ``quantifier`` /
            ``antonym`` / ``permission``.
        left / right: the differing words of each claim (may be empty for an insertion).
    """

    kind: str
    left: str
    right: str


def stem(word: str) -> str:
    """A light stem so that bee / bees and live / lives / lived align (numbers as digits)."""
    if word in NUMBER_WORDS:
        return f"{NUMBER_WORDS[word]:g}"
    for suffix, keep in (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ing", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: len(word) - len(suffix)] + keep
            break
    return word.rstrip("e") if len(word) > 3 else word


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """``(folded, original, start)`` tokens; decimals such as 1.3 and 10,000 stay whole."""
    return [(m.group(0).lower(), m.group(0), m.start()) for m in TOKEN.finditer(text)]


def _number(token: str) -> float | None:
    if token in NUMBER_WORDS:
        return float(NUMBER_WORDS[token])
    try:
        return float(token.replace(",", ""))
    except ValueError:
        return None


def _is_date(token: str) -> bool:
    # isdecimal, not isdigit: "²⁰²⁴" is digits that int() cannot read
    return token in _MONTHS or (token.isdecimal() and len(token) == 4 and 1500 <= int(token) <= 2099)


def _is_entity(original: str, start: int, names: frozenset[str] = frozenset()) -> bool:
    """A name or identifier: capitalised mid-sentence, letters and digits mixed, or a known name.

    A capitalised first word is a name when ``names`` has it (written capitalised mid-sentence
    in the documents, or followed by another capitalised word: "Gerald Ford said").
    """
    if any(c.isdigit() for c in original) and any(c.isalpha() for c in original):
        return True
    if original[:1].isupper() and (start > 0 or original.lower() in names):
        return True
    return len(original) >= 2 and original.isupper()


def names_in(*texts: str) -> frozenset[str]:
    """Lower-cased words written capitalised in the middle of a sentence: names, as the texts use them.

    Example:
        >>> sorted(names_in("What did Gandhi say? Gandhi said so."))
        ['gandhi']
    """
    found = set()
    for text in texts:
        for m in re.finditer(r"(?<=[^\s.!?\n\"'(\[])(\s+)([A-Z][\w'’-]*)", text):
            found.add(m.group(2).lower())
    return frozenset(found)


def _whole(tokens: Sequence[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """Changed tokens with the pieces of one word joined: "Argon", "2", "id" -> "Argon2id".

    :data:`TOKEN` cuts a word at each change between letters and digits; when every piece
    of a name with digits inside it changed ("Argon2id" -> "MD5"), the name was swapped, and
    read in pieces it would be letters and numbers changed together, which no kind explains.
    """
    out: list[tuple[str, str, int]] = []
    for token in tokens:
        if out and out[-1][2] + len(out[-1][1]) == token[2]:
            folded, original, start = out[-1]
            out[-1] = (folded + token[0], original + token[1], start)
        else:
            out.append(token)
    return out


def _key(token: tuple[str, str, int]) -> str:
    """What a token means for the diff: a number's value (two == 2), else its folded form."""
    value = _number(token[0])
    return f"#{value:g}" if value is not None and not _is_date(token[0]) else token[0]


def _classify(
    left: Sequence[tuple[str, str, int]],
    right: Sequence[tuple[str, str, int]],
    names: frozenset[str] = frozenset(),
    *,
    antonyms: bool = True,
) -> str | None:
    """The conflict kind of the tokens changed on each side (``None``: an ordinary rewording).

    Moved tokens were removed before. A kind needs evidence on *both* sides (a number
    replaced by a number, a name by a name, must by may), except negation and weakening
    words, which change a claim by being added or removed alone.
    """

    def has(tokens: Sequence[tuple[str, str, int]], test: Callable[[str, str, int], bool]) -> bool:
        return any(test(*t) for t in tokens)

    def negation(folded: str, original: str, start: int) -> bool:
        return folded in NEGATIONS or folded == "t"  # "don't" is tokenised don / t

    def date(folded: str, original: str, start: int) -> bool:
        return _is_date(folded) and not (folded == "may" and not original[:1].isupper())

    def number(folded: str, original: str, start: int) -> bool:  # a year is a number too (2048-bit / 1024-bit)
        return _number(folded) is not None

    def modal(folded: str, original: str, start: int) -> bool:
        return folded in MODALS and not (folded == "may" and original[:1].isupper())

    def weakening(folded: str, original: str, start: int) -> bool:
        return folded in WEAKENING

    def quantifier(folded: str, original: str, start: int) -> bool:
        return folded in QUANTIFIERS

    def entity(folded: str, original: str, start: int) -> bool:
        named = _is_entity(original, start, names)
        return named and not (modal(folded, original, start) or number(folded, original, start))

    left, right = _same_force_removed(left, right, modal)
    # "disable" / "enable", "faster" / "slower"; with a negation on one side they agree
    # ("is not enabled" / "is disabled")
    if antonyms and _antonym_swap(left, right) is not None:
        return "antonym" if has(left, negation) == has(right, negation) else None
    if has(left, negation) != has(right, negation):
        return "negation"
    if _universal_added(left, right):
        return None
    for kind, test in (("date", date), ("number", number), ("entity", entity), ("modal", modal)):
        if has(left, test) and has(right, test):
            return kind
    weakened = has(left, weakening) or has(right, weakening)
    if weakened and (has(left, modal) or has(right, modal)):
        return "modal"
    # a weakening word, or a quantifier ("only some of the time" added to a claim)
    return "quantifier" if weakened or has(left, quantifier) or has(right, quantifier) else None


def _frequencies(text: str) -> list[tuple[str, float, float, str, str]]:
    """``("frequency", low, high, phrase, written unit)`` per frequency, in times per day.

    "once or twice a day" (1-2), "three times per week" (3/7), "every 90 days" (1/90),
    "every 5-10 days" (1/10-1/5), "every other day" (1/2). Adverbs ("daily", "weekly") are not read: they name magazines
    and meetings as often as they say how often.

    Example:
        >>> [(round(lo, 3), round(hi, 3), p) for _, lo, hi, p, _ in _frequencies("Feed it once or twice a day.")]
        [(1.0, 2.0, 'once or twice a day')]
    """
    out = []
    for m in _FREQUENCY.finditer(text):
        unit = m.group("unit") or m.group("every_unit")
        days = TIME_UNITS[unit.lower()]
        if m.group("unit"):
            low, high = _count(m.group("low")), _count(m.group("high") or m.group("low"))
            low, high = min(low, high) / days, max(low, high) / days
        else:
            step, step_high = m.group("step"), m.group("step_high")
            n = 2.0 if step and step.lower() == "other" else _count(step) if step else 1.0
            longest = _count(step_high) if step_high else n  # "every 5-10 days": 1/10 to 1/5 a day
            if min(n, longest) <= 0:  # "every 0 days" says no frequency
                continue
            low, high = 1.0 / (max(n, longest) * days), 1.0 / (min(n, longest) * days)
        out.append(("frequency", low, high, m.group(0), unit.lower()))
    return out


def _count(word: str) -> float:
    folded = word.lower().replace(",", "")
    return float(NUMBER_WORDS.get(folded, _FREQUENCY_WORDS.get(folded, 0.0)) or folded)


def _quantities(text: str) -> list[tuple[str, float, float, str, str]]:
    """``(unit, low, high, phrase, written unit)`` per number or range followed by a unit word.

    Durations are in days (unit ``time``), sizes in bits (unit ``size``), frequencies in times
    per day (unit ``frequency``, :func:`_frequencies`; a number inside one is no duration),
    temperatures with a named scale in degrees Celsius (unit ``temperature``).
    """
    out = _frequencies(text)
    taken = [(m.start(), m.end()) for m in _FREQUENCY.finditer(text)] if out else []
    tokens = [t for t in _tokens(text) if not any(a <= t[2] < b for a, b in taken)]
    i = 0
    while i < len(tokens):
        value = _number(tokens[i][0])
        hyphenated = i + 1 < len(tokens) and text[tokens[i][2] + len(tokens[i][1]) : tokens[i + 1][2]] == "-"
        year = _is_date(tokens[i][0]) and not hyphenated  # "2048-bit" is a size, "in 2048" a year
        # digits inside a name ("Argon2id", "SHA256") are part of it, not a quantity
        glued = tokens[i][2] > 0 and text[tokens[i][2] - 1].isalpha()
        if value is None or year or glued or tokens[i][0] in ("first", "second", "once", "single"):
            i += 1
            continue
        low = high = value
        k = i + 1
        # "two to five years", "10 or 12 rounds", "5-10 days" (the dash is not a token; two years
        # joined by one, "2020-2021", stay two dates)
        while k < len(tokens):
            gap = text[tokens[k - 1][2] + len(tokens[k - 1][1]) : tokens[k][2]].strip()
            dashed = _number(tokens[k][0]) if gap in _RANGE_DASHES and not _is_date(tokens[k][0]) else None
            joined = _number(tokens[k + 1][0]) if k + 1 < len(tokens) and tokens[k][0] in _RANGE_JOINERS else None
            other = dashed if dashed is not None else joined
            if other is None:
                break
            low, high = min(low, other), max(high, other)
            k += 1 if dashed is not None else 2
        while k < len(tokens) and _number(tokens[k][0]) is not None and tokens[k][0] in NUMBER_WORDS:
            multiplier = _number(tokens[k][0])  # "two hundred", "3 million"
            assert multiplier is not None
            if multiplier >= 100:
                low, high = low * multiplier, high * multiplier
            k += 1
        # a unit is a lower-case word right after the number ("24 episodes", "2048-bit"), not a
        # name or a word across punctuation ("RFC 7515, JSON", "RFC2253) where")
        gap = text[tokens[k - 1][2] + len(tokens[k - 1][1]) : tokens[k][2]] if k < len(tokens) else ""
        scale, after = _temperature_scale(text, tokens, k, gap)
        if scale is not None:
            offset, factor = _SCALES[scale]
            phrase = text[tokens[i][2] : tokens[after - 1][2] + len(tokens[after - 1][1])]
            out.append(("temperature", (low - offset) * factor, (high - offset) * factor, phrase, scale))
            i = after
            continue
        unit_ok = k < len(tokens) and tokens[k][1].islower() and re.fullmatch(r"[\s-]*", gap) is not None
        if unit_ok and tokens[k][0].isalpha() and tokens[k][0] not in STOP_WORDS:
            unit = tokens[k][0]
            singular = unit[:-1] if unit.endswith("s") and len(unit) > 3 else unit
            phrase = text[tokens[i][2] : tokens[k][2] + len(tokens[k][1])]
            dimension = next((name for name, units in _DIMENSIONS.items() if singular in units), None)
            if dimension is not None:
                factor = _DIMENSIONS[dimension][singular]
                out.append((dimension, low * factor, high * factor, phrase, singular))
            else:
                out.append((singular, low, high, phrase, singular))
        i = k
    return out


def _temperature_scale(text: str, tokens: Sequence[tuple[str, str, int]], k: int, gap: str) -> tuple[str | None, int]:
    """The temperature scale that token ``k`` opens, and the index after it (``None``, ``k``: none).

    "230 degrees Celsius", "450 °F", "450°F", "300 kelvin"; a bare "degrees" names no scale (an
    angle, or a recipe's unstated one) and stays the unit ``degree``.
    """
    if k >= len(tokens):
        return None, k
    word = tokens[k][0]
    if re.fullmatch(r"\s*°\s*", gap) and word in _SCALE_NAMES:
        return _SCALE_NAMES[word], k + 1
    if not re.fullmatch(r"\s*", gap):
        return None, k
    if word in ("kelvin", "kelvins"):
        return "kelvin", k + 1
    if word in ("degree", "degrees") and k + 1 < len(tokens):
        between = text[tokens[k][2] + len(tokens[k][1]) : tokens[k + 1][2]]
        # a lone letter is a scale only as a capital ("30 degrees C", not "30 degrees c")
        named = tokens[k + 1][0] in _SCALE_NAMES and (len(tokens[k + 1][0]) > 1 or tokens[k + 1][1].isupper())
        if re.fullmatch(r"\s+", between) and named:
            return _SCALE_NAMES[tokens[k + 1][0]], k + 2
    return None, k


def quantity_conflict(left: str, right: str, *, frequencies: bool = True) -> DiffFinding | None:
    """Two quantities of the same unit (or two durations) whose ranges do not overlap.

    ``frequencies``: also compare frequencies ("once a day" / "once a month"); off for two
    claims of one document, which gives how often for each of its cases ("at room temperature
    once or twice a day", "in the refrigerator about once a week").

    Two claims that share a value of a unit do not conflict on that unit, whatever else they
    give: one of them names several ("Every month/quarter dependencies are updated. Every week
    important security vulnerabilities ..." beside "Every week important security
    vulnerabilities ...", two OWASP sheets).

    Example:
        >>> quantity_conflict("Season 4 has 23 episodes.", "The fourth season contains 24 episodes.")
        DiffFinding(kind='number', left='23 episodes', right='24 episodes')
    """
    a, b = _quantities(left), _quantities(right)
    if not frequencies:
        a = [qa for qa in a if qa[0] != "frequency"]
    shared = {qa[0] for qa in a for qb in b if qb[0] == qa[0] and _overlap(qa, qb)}
    for qa in a:
        same = [qb for qb in b if qb[0] == qa[0]]
        if same and qa[0] not in shared:
            return DiffFinding("number", qa[3], same[0][3])
    return None


def _overlap(a: tuple[str, float, float, str, str], b: tuple[str, float, float, str, str]) -> bool:
    """Whether two quantities of one unit (:func:`_quantities`) may be the same value.

    A shared value means the claims may be talking about different things. Durations (and
    sizes) in two units get 5% slack (a year is 12 months, 52 weeks or 365 days; a kilobyte
    1,000 or 1,024 bytes); in one unit none: "45 years" / "47 years" differ. Frequencies in two
    units get 15%: a month is about four weeks ("once a month" / "every four weeks").
    """
    if a[0] == "temperature" and a[4] != b[4]:  # 450 °F is 232 °C: a recipe says 230 °C
        return b[1] <= a[2] + TEMPERATURE_SLACK and a[1] <= b[2] + TEMPERATURE_SLACK
    slack = 1.0001  # one unit, as written: none
    if a[4] != b[4]:
        slack = 1.15 if a[0] == "frequency" else 1.05 if a[0] in _DIMENSIONS else 1.0001
    return b[1] <= a[2] * slack and a[1] <= b[2] * slack


def diff_conflict(
    left: str,
    right: str,
    names: frozenset[str] = frozenset(),
    *,
    cases: bool = True,
    frequencies: bool = True,
    antonyms: bool = True,
    permissions: bool = False,
) -> DiffFinding | None:
    """The conflict between two aligned claims that a token diff shows (see the module docstring).

    ``names``: words known to be names in the claims' documents (:func:`names_in`), so that a
    name that opens a sentence ("Gandhi said ..." / "Gerald Ford said ...") counts as one.
    ``cases``: a conditional claim's quantities are not compared (:func:`conditional`); off
    for an answer sentence read against its own evidence, which states the same case.
    ``frequencies``: see :func:`quantity_conflict`.
    ``antonyms``: whether a word replaced by its antonym is a conflict (``antonym``); off
    between two claims of one document, which lists cases ("Identify synchronous
    communications" / "Identify asynchronous communications" in one OWASP checklist).
    ``permissions``: whether a claim that forbids an action and one that permits it are a
    conflict (:func:`permission_conflict`); on only between two documents, as ``antonyms``.
    """
    a, b = _tokens(left), _tokens(right)
    if not a or not b:
        return None
    # "May" opening a claim is the modal ("May be used to ..."), not the month
    a, b = (_modal_opener(tokens) for tokens in (a, b))
    # a capitalised first word followed by another capitalised word opens a name ("Gerald Ford")
    for tokens in (a, b):
        if len(tokens) > 1 and tokens[0][1][:1].isupper() and tokens[1][1][:1].isupper():
            names = names | {tokens[0][0]}
    matcher = difflib.SequenceMatcher(None, [_key(t) for t in a], [_key(t) for t in b], autojunk=False)
    if matcher.ratio() >= NEAR_IDENTICAL:
        changed_a: list[tuple[str, str, int]] = []
        changed_b: list[tuple[str, str, int]] = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                changed_a.extend(_whole(a[i1:i2]))
                changed_b.extend(_whole(b[j1:j2]))
        # a token that changed place ("In 1998 the company..." / "...founded in 1998") is no change
        # (compared by stem: "That holds" / "That does not hold" changed "does not", not "holds")
        moved = {stem(_key(t)) for t in changed_a} & {stem(_key(t)) for t in changed_b}
        changed_a = [t for t in changed_a if stem(_key(t)) not in moved]
        changed_b = [t for t in changed_b if stem(_key(t)) not in moved]
        if (changed_a or changed_b) and max(len(changed_a), len(changed_b)) <= MAX_CHANGED:
            # a claim whose words moved ("Bcrypt is slower than MD5" / "MD5 is faster than bcrypt")
            # says the same thing from the other side: no antonym reading
            kind = _classify(changed_a, changed_b, names, antonyms=antonyms and not moved)
            # "2 to 5 years" / "3 years": the token diff sees a change, the ranges overlap
            # (two ranges whose bounds differ are two claims: "between 1 and 4 billion years" /
            # "between 1 and 8 billion years")
            if (
                kind == "number"
                and _comparable_quantities(left, right)
                and quantity_conflict(left, right) is None
                and not _bounds_changed(left, right)
            ):
                kind = None
            # a swapped name, number or date is a few words; more changed words around it make
            # two different statements ("LdapDistinguishedNameEncode ... RFC2253" / "LdapFilterEncode
            # ... RFC4515"), not one statement with a value changed
            if kind in SWAP_KINDS and max(len(changed_a), len(changed_b)) > MAX_SWAPPED:
                kind = None
            # a replacement (words changed on both sides) must be a value for a value: any other
            # changed word ("RFC 7515 ... Signature (JWS)" / "RFC 7516 ... Encryption (JWE)")
            # means two statements about two things
            if kind is not None and changed_a and changed_b and not _pure(kind, [*changed_a, *changed_b], names):
                kind = None
            if kind is not None and not _only_fillers(changed_a, changed_b):
                return DiffFinding(kind, " ".join(t[1] for t in changed_a), " ".join(t[1] for t in changed_b))
    return _beyond_swaps(
        left, right, a, b, cases=cases, frequencies=frequencies, antonyms=antonyms, permissions=permissions
    )


def _beyond_swaps(
    left: str,
    right: str,
    a: list[tuple[str, str, int]],
    b: list[tuple[str, str, int]],
    *,
    cases: bool,
    frequencies: bool,
    antonyms: bool,
    permissions: bool,
) -> DiffFinding | None:
    """:func:`diff_conflict`'s readings after the token swap: polarity, permission, superlative, quantity."""
    flip = _polarity_flip(a, b, antonyms=antonyms)
    if flip is not None:
        return flip
    if permissions:
        allowed = permission_conflict(left, right)
        if allowed is not None:
            return allowed
    # a superlative's case is read in its own clause ("X is the most secure; use Y only if ...")
    ranked = superlative_conflict(left, right)
    if ranked is not None:
        return ranked
    if cases and (conditional(left) or conditional(right)):
        return None
    return quantity_conflict(left, right, frequencies=frequencies)


#: who a rule is addressed to ("Developers should never ...", "You must ...")
_ADDRESSEE = r"\b(?:you|we|one|developers?|users?|teams?|applications?|apps?|administrators?|admins?)\s+"
#: what makes an action allowed ("It is fine to ...", "Disabling ... is acceptable")
_ALLOWED = (
    r"(?:(?:perfectly|generally|usually|totally|completely|quite|also)\s+)?"
    r"(?:fine|ok|okay|acceptable|safe|alright|all right|allowed|permissible|harmless|reasonable)"
)
#: a claim that forbids an action, and the action: "Never commit ...", "Do not log ...", "Avoid
#: storing ...", "Developers should never disable ...", "It is not safe to reuse ..."
_FORBID = re.compile(
    r"^[-*+>\d.)\s]*(?:never|do not|don't|avoid)\s+(?P<a>.+)$"
    r"|" + _ADDRESSEE + r"(?:should|must|shall)\s+(?:never|not)\s+(?P<b>.+)$"
    r"|\b(?:it is|it's)\s+(?:never|not)\s+(?:safe|ok|okay|fine|acceptable|a good idea|advisable)\s+to\s+(?P<c>.+)$",
    re.IGNORECASE | re.DOTALL,
)
#: a claim that permits an action, and the action: "It is fine to commit ...", "You can safely
#: disable ...", "Feel free to reuse ...", "There is no need to avoid storing ..."
_PERMIT = re.compile(
    r"\b(?:it is|it's)\s+" + _ALLOWED + r"\s+to\s+(?P<a>.+)$"
    r"|\byou\s+(?:can|may)\s+(?:(?:safely|freely|also|still|always)\s+)?(?P<b>.+)$"
    r"|\bfeel free to\s+(?P<c>.+)$"
    r"|\bthere is no (?:need|reason) to (?:avoid|worry about)\s+(?P<d>.+)$",
    re.IGNORECASE | re.DOTALL,
)
#: the same forces with the action as a gerund subject: "Disabling certificate checks in
#: production is acceptable ...", "Rotating API keys is optional", "Logging tokens is forbidden"
_GERUND_LEAD = r"^[-*+>\d.)\s]*(?P<g>[^\W\d_]{2,}ing\b[^.;:!?]*?)\s+(?:is|are)\s+"
_GERUND_FORCES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (force, re.compile(_GERUND_LEAD + f"(?:{predicate})" + r"\b", re.IGNORECASE | re.DOTALL))
    for force, predicate in (
        ("forbid", r"(?:never|not)\s+(?:allowed|acceptable|safe|ok|okay|fine|permitted)|forbidden|prohibited"),
        ("permit", _ALLOWED),
        ("waive", r"(?:(?:completely|generally|usually|totally|also)\s+)?"
         r"(?:optional|unnecessary|not (?:necessary|required|needed|mandatory|important))"),
    )
)  # fmt: skip
#: a claim that waives an action: "There is no need to rotate ...", "You don't have to rotate
#: ...", "It is optional to rotate ..."
_WAIVE = re.compile(
    r"\b(?:there is|there's) no (?:need|requirement) to\s+(?P<a>.+)$"
    r"|\byou\s+(?:do not|don't|never)\s+(?:need|have)\s+to\s+(?P<b>.+)$"
    r"|\byou need not\s+(?P<c>.+)$"
    r"|\b(?:it is|it's)\s+(?:not (?:necessary|required|needed|mandatory|important)|unnecessary|optional)"
    r"\s+to\s+(?P<d>.+)$",
    re.IGNORECASE | re.DOTALL,
)
#: a claim that requires an action with an explicit marker (never a bare imperative, which
#: a "Don't" list uses for what not to do): "You must rotate ...", "Developers should always
#: rotate ...", "It is essential to rotate ...", "Always rotate ..."
_REQUIRE = re.compile(
    _ADDRESSEE
    + r"(?:should|must|need to|have to|shall)\s+(?:(?:always|also|still)\s+)?(?P<a>(?!not\b|never\b|be\b).+)$"
    r"|\b(?:it is|it's)\s+(?:(?:generally|usually|always|also)\s+)?"
    r"(?:important|essential|necessary|required|mandatory|recommended)\s+to\s+(?P<b>.+)$"
    r"|^[-*+>\d.)\s]*always\s+(?P<c>.+)$",
    re.IGNORECASE | re.DOTALL,
)
#: the pairs of forces that conflict over one action, and in each the side whose action the
#: other claim must repeat: a permission (or a requirement) of a case of what is forbidden
#: ("It is fine to commit API keys ... while prototyping" / "Never commit API keys ..."), a
#: waiver of all of what is required ("There is no need to rotate API keys" / "Rotate API
#: keys every 90 days"; a waiver of one case is an exception)
_CONFLICTING = {
    frozenset({"forbid", "permit"}): "forbid",
    frozenset({"forbid", "require"}): "forbid",
    frozenset({"require", "waive"}): "waive",
}
#: a thing waived by its name: "Multi-factor authentication is optional for admin accounts."
_NOMINAL_WAIVER = re.compile(
    r"^[-*+>\d.)\s]*(?P<x>[^.;:!?]+?)\s+(?P<c>is|are)\s+(?:(?:completely|entirely|generally|usually)\s+)?"
    r"(?P<w>optional|unnecessary|not (?:required|mandatory|necessary|needed))"
    r"(?:\s+for\s+(?P<y>[^.;:!?,]+))?",
    re.IGNORECASE,
)
#: an obligation anywhere in a claim, not negated
_OBLIGATION = re.compile(
    r"\b(?:must|should|shall|needs? to|ha(?:ve|s) to|(?:is|are) required to)\b(?!\s+(?:not|never)\b)", re.IGNORECASE
)
#: words that make a prohibition or a permission a case of its own ("Never X unless ...",
#: "You can X only when ..."): such a pair states a rule and its exception, not a conflict
_EXCEPTION = frozenset("unless except excepting only if when whenever provided providing once after".split())
#: where the forbidden action ends: a clause break
_ACTION_END = re.compile(r"[,;:()\u2013\u2014]|\s-\s|\b(?:because|since|as|so|but|and then)\b", re.IGNORECASE)
#: the share of the forbidden action's content words that the permission must repeat
PERMISSION_COVERAGE = 0.75


def _word_key(word: str) -> str:
    """A verb-friendly light stem: commit / committing, use / using, log / logging align."""
    w = word.lower()
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 2:
            w = w[: -len(suffix)]
            break
    w = w.rstrip("e") or w
    return w[:-1] if len(w) > 2 and w[-1] == w[-2] else w


def _deontic(claim: str) -> tuple[str, str, str] | None:
    """``("forbid" | "permit" | "waive" | "require", the marker words, the action)`` of a claim, or ``None``.

    A typographic apostrophe reads as a plain one ("Don\u2019t", "It\u2019s fine to").
    """
    original = claim.strip()
    text = original.replace("\u2019", "'")  # one character for one: the offsets hold
    for force, pattern in (
        *_GERUND_FORCES,
        ("forbid", _FORBID),
        ("permit", _PERMIT),
        ("waive", _WAIVE),
        ("require", _REQUIRE),
    ):
        m = pattern.search(text)
        if m is None:
            continue
        group = next(g for g in m.groupdict() if m.group(g) is not None)
        # the marker: the words of the match around the action ("Never", "is acceptable")
        marker = f"{original[m.start() : m.start(group)]} {original[m.end(group) : m.end()]}"
        return force, " ".join(marker.split()), m.group(group).strip()
    return None


def permission_conflict(left: str, right: str) -> DiffFinding | None:
    """A claim that forbids an action against one that permits it (kind ``permission``).

    "Never commit API keys to a public repository." / "It is fine to commit API keys to a public
    repository while prototyping."; likewise a prohibition against an explicit requirement
    ("You must ...", "Always ...") and a requirement against a waiver ("There is no need to
    ...", "You don't have to ..."). The two actions must start with the same verb and the
    other claim must repeat at least :data:`PERMISSION_COVERAGE` of the forbidden (or waived)
    action's content words (up to its first clause break); a side with an exception word ("unless",
    "only", "if", "when", ...) is a rule and its exception, and a permission whose action is
    negated ("You can not ...") permits nothing. The finding's words are the two markers.

    Example:
        >>> permission_conflict("Never commit API keys to a public repository.",
        ...     "It is fine to commit API keys to a public repository while prototyping.")
        DiffFinding(kind='permission', left='Never', right='It is fine to')
        >>> permission_conflict("Never store passwords in plain text.",
        ...     "You can store passwords in a database.") is None
        True
    """
    for text in (left, right):
        if {t[0] for t in _tokens(text)} & _EXCEPTION:
            return None
    waived = _nominal_waiver(left, right)
    if waived is not None:
        return DiffFinding("permission", waived[0], waived[1])
    waived = _nominal_waiver(right, left)
    if waived is not None:
        return DiffFinding("permission", waived[1], waived[0])
    one, other = _deontic(left), _deontic(right)
    rule_force = _CONFLICTING.get(frozenset({one[0], other[0]})) if one and other else None
    if one is None or other is None or rule_force is None:
        return None
    forbid, permit = (one, other) if one[0] == rule_force else (other, one)
    cut = _ACTION_END.search(forbid[2])
    forbidden = [t[0] for t in _tokens(forbid[2][: cut.start()] if cut else forbid[2])]
    permitted = [t[0] for t in _tokens(permit[2])]
    if not forbidden or not permitted or permitted[0] in NEGATIONS:
        return None
    if _word_key(forbidden[0]) != _word_key(permitted[0]):
        return None
    content = [w for w in forbidden[1:] if w not in STOP_WORDS and w not in _HEDGE_FILLERS]
    said = {_word_key(w) for w in permitted}
    if content and sum(_word_key(w) in said for w in content) < PERMISSION_COVERAGE * len(content):
        return None
    return DiffFinding("permission", one[1], other[1])


def _nominal_waiver(waiver: str, rule: str) -> tuple[str, str] | None:
    """``(waiver's words, rule's words)`` when ``waiver`` names a thing as optional that ``rule`` requires.

    "Multi-factor authentication is optional for admin accounts." against "Admin accounts must
    use multi-factor authentication.": the rule holds an obligation (not negated) and every
    content word of the waived thing and of whom the waiver is for.
    """
    m = _NOMINAL_WAIVER.search(waiver.strip().replace("\u2019", "'"))
    obligation = _OBLIGATION.search(rule)
    if m is None or obligation is None:
        return None
    named = [t[0] for part in ("x", "y") if m.group(part) for t in _tokens(m.group(part))]
    if named and named[0].endswith("ing"):
        return None  # a gerund subject names an action: read by the forces of :func:`_deontic`
    needed = [w for w in named if w not in STOP_WORDS and w not in _HEDGE_FILLERS]
    said = {_word_key(t[0]) for t in _tokens(rule)}
    if not needed or not all(_word_key(w) in said for w in needed):
        return None
    return f"{m.group('c')} {m.group('w')}", obligation.group(0)


def _superlative(claim: str) -> tuple[list[tuple[str, str, int]], str, str, list[str], str] | None:
    """``(subject tokens, subject, superlative, predicate keys, predicate)`` of "X is the most ...".

    Read on the claim's first clause (up to ";" or ":"), with the subject at most
    :data:`_MAX_SUBJECT` words before a copula, then "the" and a superlative (:data:`SUPERLATIVES`,
    or "most" / "least" and the word after it), then the rest of the clause.
    """
    clause = re.split(r"[;:]", claim.lstrip(" -*\u2022>#\t"), maxsplit=1)[0]
    if conditional(clause):
        return None
    tokens = _tokens(clause)
    for c in range(1, min(len(tokens), _MAX_SUBJECT + 1)):
        if tokens[c][0] in _COPULA:
            break
    else:
        return None
    if c + 2 >= len(tokens) or tokens[c + 1][0] != "the":
        return None
    word = tokens[c + 2][0]
    if word in ("most", "least") and c + 3 < len(tokens):
        superlative, after = f"{word} {stem(tokens[c + 3][0])}", c + 4
    elif word in SUPERLATIVES:
        superlative, after = word, c + 3
    else:
        return None
    subject = [t for t in tokens[:c] if t[0] not in STOP_WORDS]
    if not subject or any(t[0] in _PRONOUNS for t in tokens[:c]):
        return None
    # the subject as written ("WPA3", not the tokens "WPA" "3")
    subject_text = clause[subject[0][2] : subject[-1][2] + len(subject[-1][1])]
    rest = [stem(_key(t)) for t in tokens[after:]]
    tail = clause[tokens[after][2] :] if after < len(tokens) else ""
    return subject, subject_text, superlative, rest, tail


def superlative_conflict(left: str, right: str) -> DiffFinding | None:
    """Two claims that give one superlative to two different subjects ("X is the most secure Y" / "Z is ...").

    Only one thing can be the most secure, the first or the only one of a kind: the same
    superlative and the same predicate (the shorter one's words all at the start of the
    longer, which may only go on with a new clause, "and should be preferred ...", not a
    qualifier, "... for web development") with two subjects, each with a word the other lacks
    ("The Antarctic Desert" / "The Sahara Desert"; not "The WPA3 protocol" / "WPA3"), is an
    ``entity`` conflict between the subjects.

    Example:
        >>> superlative_conflict("WPA3 is the most secure Wi-Fi encryption on home routers.",
        ...                      "WEP is the most secure Wi-Fi encryption on home routers and beats WPA3.")
        DiffFinding(kind='entity', left='WPA3', right='WEP')
        >>> superlative_conflict("Python is the most popular language.",
        ...                      "JavaScript is the most popular language for web development.") is None
        True
    """
    a, b = _superlative(left), _superlative(right)
    if a is None or b is None or a[2] != b[2]:
        return None
    short, long_ = (a, b) if len(a[3]) <= len(b[3]) else (b, a)
    n = len(short[3])
    if n < 2 or long_[3][:n] != short[3]:
        return None
    if len(long_[3]) > n:
        # what follows the shared predicate in the longer claim: a new clause, or a qualifier
        follows = _tokens(long_[4])[n]
        if follows[0] not in _NEW_CLAUSE and not long_[4][: follows[2]].rstrip().endswith((",", "(")):
            return None
    words_a, words_b = {stem(t[0]) for t in a[0]}, {stem(t[0]) for t in b[0]}
    if words_a <= words_b or words_b <= words_a:  # one subject, named more or less fully
        return None
    return DiffFinding("entity", a[1], b[1])


def _same_force_removed(
    left: Sequence[tuple[str, str, int]], right: Sequence[tuple[str, str, int]], modal: Callable[[str, str, int], bool]
) -> tuple[Sequence[tuple[str, str, int]], Sequence[tuple[str, str, int]]]:
    """Both sides without their modals when those say the same ("can" / "may", "must" / "required")."""
    modals_left = {_MODAL_CLASS.get(t[0], t[0]) for t in left if modal(*t)}
    modals_right = {_MODAL_CLASS.get(t[0], t[0]) for t in right if modal(*t)}
    if modals_left and modals_left == modals_right:
        return [t for t in left if not modal(*t)], [t for t in right if not modal(*t)]
    return left, right


def _universal_added(left: Sequence[tuple[str, str, int]], right: Sequence[tuple[str, str, int]]) -> bool:
    """Whether one side only added "all" / "always" (and function words) to a generic statement.

    "All alphanumeric characters remain unencoded" says what "Alphanumeric characters remain
    unencoded" says.
    """
    for mine, theirs in ((left, right), (right, left)):
        if not theirs and any(t[0] in UNIVERSAL for t in mine) and all(t[0] in UNIVERSAL | STOP_WORDS for t in mine):
            return True
    return False


def _modal_opener(tokens: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    if tokens and tokens[0][0] == "may":
        return [("may", "may", tokens[0][2]), *tokens[1:]]
    return tokens


def _polarity_flip(
    a: Sequence[tuple[str, str, int]], b: Sequence[tuple[str, str, int]], *, antonyms: bool = True
) -> DiffFinding | None:
    """Two claims with the same content words, one negated or with another modal's force.

    Short claims change too many of their few words for the near-identical test ("Passwords
    must not be logged." / "Passwords may be logged.": ratio 0.67): here the claims' words
    without function words, modals, auxiliaries and negations must be the same sequence (at
    least two words), and then a negation on one side only is a ``negation`` conflict, two
    modals of two classes (must / may, not can / may) a ``modal`` one.

    Example:
        >>> _polarity_flip(_tokens("Passwords must not be logged."), _tokens("Passwords may be logged."))
        DiffFinding(kind='negation', left='must not', right='may')
    """

    def frame(t: tuple[str, str, int]) -> bool:
        return (
            t[0] in STOP_WORDS
            or t[0] in MODALS
            or t[0] in NEGATIONS
            or t[0] in UNIVERSAL  # "Tokens never expire." / "Tokens always expire."
            or t[0] in _AUXILIARIES
            or t[0] in _FRAME_EXTRA
        )

    content_a = [stem(_key(t)) for t in a if not frame(t)]
    content_b = [stem(_key(t)) for t in b if not frame(t)]
    if len(content_a) < 2 or len(content_a) != len(content_b):
        return None
    changed = [i for i, (x, y) in enumerate(zip(content_a, content_b, strict=True)) if x != y]
    if len(changed) == 1 and antonyms:  # "Disable WPS." / "Enable WPS.": one word and its antonym
        swapped_a, swapped_b = ([t for t in tokens if not frame(t)][changed[0]] for tokens in (a, b))
        candidates = _antonym_candidate(swapped_a[0]) and _antonym_candidate(swapped_b[0])
        if not candidates or not antonymous(swapped_a[0], swapped_b[0]):
            return None
        negated_a, negated_b = _negated(a), _negated(b)
        return DiffFinding("antonym", swapped_a[1], swapped_b[1]) if negated_a == negated_b else None
    if changed:
        return None

    def force(tokens: Sequence[tuple[str, str, int]]) -> tuple[bool, set[str], str]:
        negated = _negated(tokens)
        modals = {_MODAL_CLASS.get(t[0], t[0]) for t in tokens if t[0] in MODALS}
        marked = MODALS | NEGATIONS | UNIVERSAL | {"t"}
        words = " ".join(t[1] for t in tokens if t[0] in marked)
        return negated, modals, words

    (neg_a, modals_a, words_a), (neg_b, modals_b, words_b) = force(a), force(b)
    if neg_a != neg_b:
        return DiffFinding("negation", words_a, words_b)
    if modals_a and modals_b and modals_a != modals_b:
        return DiffFinding("modal", words_a, words_b)
    return None


def _negated(tokens: Sequence[tuple[str, str, int]]) -> bool:
    """Whether a claim is negated: an odd number of negations ("neither ... nor" is one)."""
    return sum((t[0] in NEGATIONS and t[0] != "nor") or t[0] == "t" for t in tokens) % 2 == 1


def conditional(claim: str) -> bool:
    """Whether ``claim`` states a case or an example: its quantities hold in that case only.

    Example:
        >>> conditional("If MFA is enabled passwords shorter than 8 characters are weak.")
        True
        >>> conditional("A queen bee lives two to five years.")
        False
    """
    return _CONDITION.search(claim) is not None


def evidence_change(sentence: str, evidence: str) -> tuple[str, DiffFinding] | None:
    """The change an answer sentence makes to the evidence that grounds it, with the evidence's sentence.

    ``evidence`` (a document or the window the NLI model read) is split into sentences; the
    one nearest ``sentence`` by token similarity is compared with it by :func:`diff_conflict`
    (thresholds unchanged). An NLI model entails "at least 12 characters" from "at least 8
    characters", "may" from "must", "MD5" from "Argon2id, bcrypt or scrypt"; the diff does not.

    Example:
        >>> evidence_change("Passwords may be hashed with bcrypt.", "Use a salt. Passwords must be hashed with bcrypt.")
        ('Passwords must be hashed with bcrypt.', DiffFinding(kind='modal', left='must', right='may'))
    """
    mine = [_key(t) for t in _tokens(sentence)]
    if not mine:
        return None
    best, best_ratio = "", 0.0
    for part in split_sentences(evidence) or ():
        theirs = [_key(t) for t in _tokens(part.text)]
        ratio = difflib.SequenceMatcher(None, theirs, mine, autojunk=False).ratio() if theirs else 0.0
        if ratio > best_ratio:
            best, best_ratio = part.text, ratio
    if not best:
        return None
    finding = diff_conflict(best, sentence, names_in(evidence, sentence), cases=False)
    return None if finding is None else (best, finding)


_AUXILIARIES = frozenset("do does did is are was were be been has have had can could will would".split())


def _pure(kind: str, tokens: Sequence[tuple[str, str, int]], names: frozenset[str] = frozenset()) -> bool:
    """Whether every changed word belongs to ``kind`` (or is a function word)."""

    def fits(folded: str, original: str, start: int) -> bool:
        if folded in STOP_WORDS or folded in _HEDGE_FILLERS:
            return True
        if kind in ("number", "date"):
            return _number(folded) is not None or _is_date(folded)
        if kind == "entity":
            return _is_entity(original, start, names)
        if kind == "negation":  # "Never log tokens" / "Always log tokens": a universal for its negation
            return folded in NEGATIONS or folded == "t" or folded in _AUXILIARIES or folded in UNIVERSAL
        if kind == "antonym":  # _antonym_swap checked that the rest are function words
            return True
        return folded in MODALS or folded in WEAKENING or folded in QUANTIFIERS

    return all(fits(*t) for t in tokens)


def _bounds_changed(left: str, right: str) -> bool:
    """Whether both claims give a range of one unit, written alike, with different bounds."""
    ranges_a = {(q[0], q[4]): (q[1], q[2]) for q in _quantities(left) if q[1] < q[2]}
    ranges_b = {(q[0], q[4]): (q[1], q[2]) for q in _quantities(right) if q[1] < q[2]}
    return any(unit in ranges_b and ranges_b[unit] != bounds for unit, bounds in ranges_a.items())


def _comparable_quantities(left: str, right: str) -> bool:
    units = {q[0] for q in _quantities(left)}
    return any(q[0] in units for q in _quantities(right))


def _only_fillers(a: Sequence[tuple[str, str, int]], b: Sequence[tuple[str, str, int]]) -> bool:
    return all(t[0] in _HEDGE_FILLERS for t in (*a, *b)) and not any(t[0] == "only" for t in (*a, *b))


__all__ = [
    "NUMBER_WORDS",
    "STOP_WORDS",
    "TOKEN",
    "DiffFinding",
    "conditional",
    "diff_conflict",
    "evidence_change",
    "names_in",
    "quantity_conflict",
    "stem",
    "superlative_conflict",
]
