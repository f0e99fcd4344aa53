r"""Text utilities shared by every stage: sentence splitting with offsets, word tokens.

Tokenisation (documented once, used everywhere n-grams are counted): text is NFKC-folded,
lower-cased, and tokens are maximal runs of letters/digits (``\\w`` minus ``_``); each
token keeps its character offsets in the *original* text so spans can be mapped back.

Example:
    >>> [s.text for s in split_sentences("First one. Second one? Third")]
    ['First one.', 'Second one?', 'Third']
    >>> [t.text for t in word_tokens("Don't use MD5!")]
    ['don', 't', 'use', 'md5']
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# A sentence ends at . ! ? (optionally followed by quotes/brackets) before whitespace and an
# uppercase letter, digit, quote or bracket — or at a blank line / list item boundary. The
# closing quotes / brackets stay with the sentence they close ('He said "Stop."').
_BOUNDARY = re.compile(
    r"""(?<=[.!?])(?P<close>["')\]]*)\s+(?=["'(\[]?[A-Z0-9])|\n\s*\n|(?P<item>\n(?=\s*(?:[-*+]|\d+[.)])\s))"""
)
# A list item that starts lower-case after an item cut on "," ";" or a conjunction continues
# that item's sentence ("- Can have `Domain` attributes and\n- can be overwritten by ..."):
# alone it would be a claim without a subject (issue 21).
_ITEM_START = re.compile(r"\s*(?:[-*+]|\d+[.)])\s+[\"'(\[*_]*(?=[a-z])")
_DANGLING = re.compile(r"(?:[,;]|\b(?:and|or|but|nor))$")
_BLANK_LINE = re.compile(r"\n\s*\n")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d+[.)])\s")
# "2. Backups." / "## 1.4. Scope": the number of a list item or heading, not a sentence
_NUMBER_MARK = re.compile(r"[ \t]*(?:#{1,6}[ \t]+)?(?:\d+\.)+")
#: the opening line of a front-matter block (Jekyll, MkDocs, Docusaurus: YAML between ``---``
#: lines; Hugo also TOML between ``+++`` lines) and, per opening, the lines that close it
_FRONT_MATTER_OPEN = re.compile(r"(---|\+\+\+)[ \t]*\r?\n")
_FRONT_MATTER_CLOSE = {
    "---": re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE),
    "+++": re.compile(r"^\+\+\+[ \t]*\r?$", re.MULTILINE),
}
#: a line of a front-matter block: a key (``title:``, ``title =``), a table (``[params]``), a
#: comment, a list item, an indented or bracketed continuation, or blank. A line of prose is
#: none of these: ``---`` lines around prose are thematic breaks, not front matter.
_FRONT_MATTER_LINE = re.compile(
    r"""[ \t]*|[ \t].*|#.*|-(?:[ \t].*)?|[\[\]{}"'].*|(?:"[^"\n]*"|'[^'\n]*'|\w[\w.:/-]*)[ \t]*[:=](?:[ \t].*)?"""
)
_ABBREVIATIONS = frozenset("e.g i.e etc vs mr mrs ms dr prof st no fig al approx inc ltd jr sr cf resp".split())


@dataclass(frozen=True)
class Token:
    """A normalised token with its character offsets in the original text."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Sentence:
    """A sentence with its character offsets (``source[start:end] == text``)."""

    text: str
    start: int
    end: int


def fold(text: str) -> str:
    """NFKC + casefold (length-changing characters are rare; offsets use word_tokens)."""
    if text.isascii():  # both are the identity on ASCII but for the case: the common case, 5x cheaper
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold()


def word_tokens(text: str) -> list[Token]:
    """Normalised word tokens with offsets into ``text``."""
    out: list[Token] = []
    for m in _TOKEN.finditer(text):
        out.append(Token(fold(m.group(0)), m.start(), m.end()))
    return out


def words(text: str) -> list[str]:
    """Just the normalised token strings."""
    return [t.text for t in word_tokens(text)]


def distinct_words(texts: Iterable[str]) -> set[str]:
    """The distinct normalised words of ``texts`` (:func:`words` as one set, without per-token objects).

    ASCII texts are read in one pass (case folding is then lower-casing); the others are
    folded one by one (NFKC + casefold).

    Example:
        >>> sorted(distinct_words(["Hash it.", "HASH it again!", "Straße"]))
        ['again', 'hash', 'it', 'strasse']
    """
    plain: list[str] = []
    found: set[str] = set()
    for text in texts:
        if text.isascii():
            plain.append(text)
        else:
            found.update(_TOKEN.findall(fold(text)))
    found.update(_TOKEN.findall("\n".join(plain).lower()))
    return found


#: what a reader does not see of a Markdown link (its target) and bare URLs
_LINK_TARGET = re.compile(r"(?<=\])\(\s*[^)\s]+[^)\n]*\)")
_BARE_URL = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.)\S+", re.IGNORECASE)


def visible_words(text: str) -> list[str]:
    """The normalised words of ``text`` that a reader sees: a link's text, not its target.

    Example:
        >>> visible_words("- [Java RegEx](https://docs.oracle.com/javase/8/docs/api/Pattern.html)")
        ['java', 'regex']
        >>> len(visible_words("See https://owasp.org/www-project-top-ten/ for the list."))
        4
    """
    return words(_BARE_URL.sub(" ", _LINK_TARGET.sub(" ", text)))


#: a space left before punctuation that ends a word ("bcrypt ." -> "bcrypt."), not before
#: punctuation that starts a name (".NET", ".env", ":root", "!important")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?]+)(?=\s|$|[)\]}\"'])")


def one_line(text: str) -> str:
    r"""Whitespace collapsed to single spaces and spaces left before closing punctuation removed.

    Example:
        >>> one_line("Use  bcrypt .  In .NET Core ,\n use :root and .env files .")
        'Use bcrypt. In .NET Core, use :root and .env files.'
    """
    return _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(text.split()))


def front_matter_end(text: str) -> int:
    r"""The end of the front-matter block that ``text`` starts with (its closing line's end), else 0.

    A front-matter block (Jekyll, Hugo, MkDocs, Docusaurus) opens on the very first line with
    ``---`` (YAML, closed by ``---`` or ``...``) or ``+++`` (TOML, closed by ``+++``), and
    every line of it reads as one of keys, comments, list items or continuations; a block
    that holds a line of prose is thematic breaks around prose. Linear in the text's length.

    Example:
        >>> text = "---\ntitle: Salts\n---\n# Salts\n"
        >>> text[: front_matter_end(text)], front_matter_end("---\n\nProse here.\n\n---\n")
        ('---\ntitle: Salts\n---', 0)
    """
    opening = _FRONT_MATTER_OPEN.match(text)
    if opening is None:
        return 0
    closing = _FRONT_MATTER_CLOSE[opening.group(1)].search(text, opening.end())
    if closing is None:
        return 0
    body = text[opening.end() : closing.start()]
    if not all(_FRONT_MATTER_LINE.fullmatch(line.rstrip("\r")) for line in body.split("\n")[:-1]):
        return 0
    return closing.end() - (1 if text[closing.end() - 1 : closing.end()] == "\r" else 0)


def is_front_matter(sentence: str) -> bool:
    r"""Whether ``sentence`` is a front-matter block (see :func:`front_matter_end`): metadata, not prose.

    Example:
        >>> is_front_matter("---\ntitle: Salts\n---"), is_front_matter("---\ntitle: Salts\n---\nUse salts.")
        (True, False)
    """
    end = front_matter_end(sentence)
    return end > 0 and not sentence[end:].strip()


def split_sentences(text: str) -> list[Sentence]:
    r"""Split into sentences with offsets; abbreviations like "e.g." do not end a sentence.

    Blank lines and list items are boundaries (Markdown), except a list item that starts
    lower-case after an item left dangling on "," ";" "and" "or" "but" "nor": it is the rest
    of that item's sentence. A front-matter block at the very start of the text
    (:func:`front_matter_end`) is a sentence of its own (:func:`is_front_matter` tells it), and
    so is a Markdown heading line joined to text by a single line break ("# API keys\nNever
    commit keys."), outside code fences.

    Example:
        >>> [s.text for s in split_sentences("They\n- Can have attributes and\n- can be overwritten.")]
        ['They', '- Can have attributes and\n- can be overwritten.']
        >>> [s.text for s in split_sentences("---\ntitle: Salts\n---\nUse salts. Always.")]
        ['---\ntitle: Salts\n---', 'Use salts.', 'Always.']
        >>> [s.text for s in split_sentences("# API keys\nNever commit keys. Rotate them.")]
        ['# API keys', 'Never commit keys.', 'Rotate them.']
    """
    sentences: list[Sentence] = []
    start = front_matter_end(text)
    if start:
        _append(text, 0, start, sentences)
    for m in _BOUNDARY.finditer(text, start):
        before = text[start : m.start()].rstrip()
        full_stop = m.group("close") is not None
        # a full stop after "e.g." / "J." / a list number is no boundary, unless a blank line or
        # a list item follows it (Markdown structure: "etc.\n\nNext" still ends there)
        if full_stop and (_abbreviated(before) or _numbered(text, m.start())) and not _structural(text, m):
            continue
        if m.group("item") and _DANGLING.search(before) and _ITEM_START.match(text, m.end()):
            continue
        _append(text, start, m.end("close") if full_stop else m.start(), sentences)
        start = m.end()
    _append(text, start, len(text), sentences)
    return [part for sentence in sentences for part in _heading_lines_apart(text, sentence)]


def _heading_lines_apart(text: str, sentence: Sentence) -> list[Sentence]:
    """``sentence`` with each Markdown heading line in it as a sentence of its own."""
    if "```" in sentence.text or "#" not in sentence.text or is_front_matter(sentence.text):
        return [sentence]
    parts: list[Sentence] = []
    run = line = sentence.start  # the start of the current run of body lines, of the current line
    while line < sentence.end:
        line_end = text.find("\n", line, sentence.end)
        line_end = sentence.end if line_end < 0 else line_end
        if is_heading(text[line:line_end]):
            _append(text, run, line, parts)
            _append(text, line, line_end, parts)
            run = line_end + 1
        line = line_end + 1
    _append(text, run, sentence.end, parts)
    return parts


_HEADING = re.compile(r"\s*#{1,6}(\s|$)")


def is_question(sentence: str) -> bool:
    """A sentence that asks rather than asserts (ends with a question mark)."""
    return sentence.rstrip(" \t\"')]").endswith("?")


def is_heading(sentence: str) -> bool:
    """A Markdown ATX heading (``## Title``): a title, not a claim."""
    return _HEADING.match(sentence) is not None


def assertions(text: str) -> list[Sentence]:
    r"""The sentences of ``text`` that assert something: questions, headings and front matter removed.

    NLI contradiction is only meaningful between claims; a question ("What happens if ...?")
    or a heading ("#### Never transmit secrets to the client") asserts nothing, and small NLI
    models read question-vs-answer and heading-vs-body pairs as contradictions.

    A heading joined to its text by a single line break is cut off, not the text with it.

    Example:
        >>> [s.text for s in assertions("## Storage\n\nWhy salt? Salts defeat rainbow tables.")]
        ['Salts defeat rainbow tables.']
        >>> [s.text for s in assertions("### Hashing\nUse Argon2id. Then pepper.\n## Next")]
        ['Use Argon2id.', 'Then pepper.']
    """
    out: list[Sentence] = []
    for sentence in split_sentences(text):
        if is_question(sentence.text) or is_front_matter(sentence.text):
            continue
        claim = _without_headings(sentence)
        if claim is not None:
            out.append(claim)
    return out


def _without_headings(sentence: Sentence) -> Sentence | None:
    """The sentence without leading / trailing heading lines (a heading joined to its text)."""
    lines = sentence.text.split("\n")
    start, end = sentence.start, sentence.end
    while lines and (is_heading(lines[0]) or not lines[0].strip()):
        start += len(lines.pop(0)) + 1
    while lines and (is_heading(lines[-1]) or not lines[-1].strip()):
        end -= len(lines.pop()) + 1
    if not lines:
        return None
    body = "\n".join(lines)
    lead = len(body) - len(body.lstrip())
    body = body.strip()
    return Sentence(body, start + lead, start + lead + len(body))


def _abbreviated(before: str) -> bool:
    """Whether ``before`` ends with an abbreviation or an initial ("e.g.", "(i.e.", "J.")."""
    if not before.split():
        return False
    # "(e.g." and "\"i.e." are abbreviations too: brackets and quotes before the word do not count
    last_word = before.rsplit(None, 1)[-1].rstrip(".").lstrip("([{\"'").lower()
    return last_word in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isalpha())


def _numbered(text: str, stop: int) -> bool:
    """Whether the full stop ending at ``stop`` closes a line's leading item / section number."""
    return _NUMBER_MARK.fullmatch(text, text.rfind("\n", 0, stop) + 1, stop) is not None


def _structural(text: str, boundary: re.Match[str]) -> bool:
    """Whether a full-stop boundary is also a blank line or the start of a list item."""
    gap = boundary.group(0)
    return _BLANK_LINE.search(gap) is not None or ("\n" in gap and _LIST_ITEM.match(text, boundary.end()) is not None)


def _append(text: str, start: int, end: int, out: list[Sentence]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        out.append(Sentence(text[start:end], start, end))


__all__ = [
    "Sentence",
    "Token",
    "assertions",
    "fold",
    "front_matter_end",
    "is_front_matter",
    "is_heading",
    "is_question",
    "one_line",
    "split_sentences",
    "visible_words",
    "word_tokens",
    "words",
]
