"""Sentence windows: the pieces of a document a sequence classifier reads one at a time.

A directive buried in a long benign document must still be found, so a classifier with a
short context (the injection model reads 128 word-pieces) never sees a whole 512-token
chunk at once: the text is cut into **sentence windows**. Sentences (and, inside them,
lines) are packed greedily into windows of at most ``max_words`` words; consecutive
windows share their boundary segment, so every pair of adjacent sentences is read together
at least once. A single segment longer than ``max_words`` is cut into word runs that
overlap by a quarter. Training (``ragtrust injection train``) and scoring use this one
function, so the model is trained on pieces of the shape it is asked about.

Example:
    >>> text = "One two three. Four five six. Seven eight nine."
    >>> [text[a:b] for a, b in sentence_windows(text, max_words=6)]
    ['One two three. Four five six.', 'Four five six. Seven eight nine.']
"""

from __future__ import annotations

import re

from ragtrust.text import split_sentences

_WORD = re.compile(r"\S+")


def _segments(text: str) -> list[tuple[int, int]]:
    """Sentence spans, further split at line breaks (blank segments dropped)."""
    out: list[tuple[int, int]] = []
    for sentence in split_sentences(text):
        pos = sentence.start
        for line in sentence.text.split("\n"):
            stripped = line.strip()
            if stripped:
                lead = len(line) - len(line.lstrip())
                out.append((pos + lead, pos + lead + len(stripped)))
            pos += len(line) + 1
    return out


def _word_runs(text: str, start: int, end: int, max_words: int, overlap: bool) -> list[tuple[int, int]]:
    """Cut one long segment into runs of ``max_words`` words (overlapping by a quarter)."""
    words = [(m.start() + start, m.end() + start) for m in _WORD.finditer(text[start:end])]
    step = max(1, max_words - max_words // 4) if overlap else max_words
    runs = []
    for first in range(0, len(words), step):
        chunk = words[first : first + max_words]
        runs.append((chunk[0][0], chunk[-1][1]))
        if first + max_words >= len(words):
            break
    return runs


def sentence_windows(text: str, max_words: int = 80, *, overlap: bool = True) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of the windows of ``text`` (see module docstring).

    Empty or blank text has no windows. ``overlap=False`` packs each segment into exactly
    one window and cuts a long segment into disjoint word runs: the windows are disjoint
    (about half the windows of a long document, at the price of reading a sentence only
    with the neighbours on one side when it ends a window).
    """
    if max_words < 1:
        raise ValueError(f"max_words must be >= 1, got {max_words}")
    pieces: list[tuple[int, int, int]] = []  # (start, end, words)
    for start, end in _segments(text):
        n = len(_WORD.findall(text[start:end]))
        if n > max_words:
            pieces.extend(
                (a, b, len(_WORD.findall(text[a:b]))) for a, b in _word_runs(text, start, end, max_words, overlap)
            )
        elif n:
            pieces.append((start, end, n))
    windows: list[tuple[int, int]] = []
    i = 0
    while i < len(pieces):
        j, words = i, pieces[i][2]
        while j + 1 < len(pieces) and words + pieces[j + 1][2] <= max_words:
            j += 1
            words += pieces[j][2]
        windows.append((pieces[i][0], pieces[j][1]))
        if j + 1 >= len(pieces):
            break
        # the next window starts at this window's last segment (shared boundary), unless
        # this window is that one segment alone
        i = j if overlap and j > i else j + 1
    return windows


__all__ = ["sentence_windows"]
