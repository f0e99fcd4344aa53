r"""Token-based chunking that respects headings and sentences (SPEC section 8: 512 / 50).

Tokens are counted with the embedding model's tokenizer (by default the packaged
all-MiniLM-L6-v2 WordPiece tokenizer), without special tokens. A chunk holds at most
``chunk_tokens`` tokens; consecutive chunks overlap by at most ``overlap_tokens``.

Where a chunk ends is chosen among the token positions in the second half of its window,
preferring (in this order) a heading, a paragraph break, a sentence start, and only when a
single sentence is longer than the window, any token. A chunk that ends at a heading is
not overlapped into the next section; otherwise the overlap starts at the first sentence
start inside the overlap window. When there is none, a chunk that ended on a sentence
boundary is followed without overlap (no sentence fragments), and one that had to end
mid-sentence overlaps by exactly ``overlap_tokens``.

Every chunk is a :class:`~ragtrust.documents.Document` with id ``<parent id>#<n>`` (stable
across re-ingestion of the same text), ``text == parent.text[start:end]`` and metadata
``parent_id``, ``parent_hash``, ``chunk_index``, ``start``, ``end``, ``tokens``,
``heading`` (the nearest heading at or before the chunk start, or ``None``) plus the
parent's metadata (without its heading list and a PDF's page list).

Headings come from the parent's ``metadata["headings"]`` (``[level, title, offset]``, as the
loaders record them; an empty list means the loader found none). A document without that
key (text sent to the API, a ``.txt`` or JSONL record) is read as Markdown with
:func:`~ragtrust.ingest.markup.markdown_metadata`, so a ``# comment`` line in fenced code is
not a heading, and its chunks are those of the same text loaded from a ``.md`` file.

Example:
    >>> from ragtrust.documents import Document
    >>> doc = Document(id="d", text="# Intro\\n\\nFirst sentence. Second sentence.")
    >>> [c.id for c in chunk_document(doc, chunk_tokens=64, overlap_tokens=8)]
    ['d#0']
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ragtrust.documents import Document
from ragtrust.errors import ConfigError, InputError
from ragtrust.ingest.markup import markdown_metadata
from ragtrust.text import split_sentences

TOKENIZER_PATH = Path(__file__).resolve().parent.parent / "models" / "assets" / "minilm_tokenizer.json"
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_PRIORITY_HEADING, _PRIORITY_PARAGRAPH, _PRIORITY_SENTENCE = 3, 2, 1


class TokenizerLike(Protocol):
    """Anything with ``encode(text)`` returning an object with character ``offsets``."""

    def encode(self, text: str) -> Any:
        """Encode a text (``tokenizers.Tokenizer`` returns an ``Encoding``)."""
        ...


@functools.lru_cache(maxsize=1)
def default_tokenizer() -> Any:
    """Load the packaged MiniLM tokenizer once, without truncation or padding."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - a declared dependency
        from ragtrust.errors import MissingDependencyError

        raise MissingDependencyError("token-based chunking", "pip install tokenizers") from exc
    tok = Tokenizer.from_file(str(TOKENIZER_PATH))
    tok.no_truncation()
    tok.no_padding()
    return tok


def _untruncated(tokenizer: Any) -> Any:
    """Copy a ``tokenizers.Tokenizer`` with truncation and padding off (others as-is)."""
    if getattr(tokenizer, "truncation", None) is None and getattr(tokenizer, "padding", None) is None:
        return tokenizer
    to_str = getattr(tokenizer, "to_str", None)
    if to_str is None:
        return tokenizer
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


#: id(original) -> (original, untruncated copy); the original is held so its id is not reused
_COPIES: dict[int, tuple[Any, Any]] = {}


def token_offsets(text: str, tokenizer: TokenizerLike | None = None) -> list[tuple[int, int]]:
    """Character offsets of the content tokens of ``text`` (special tokens dropped)."""
    tok: Any
    if tokenizer is None:
        tok = default_tokenizer()
    else:
        cached = _COPIES.get(id(tokenizer))
        if cached is None:
            if len(_COPIES) > 8:
                _COPIES.clear()
            cached = _COPIES[id(tokenizer)] = (tokenizer, _untruncated(tokenizer))
        tok = cached[1]
    try:
        encoding = tok.encode(text, add_special_tokens=False)
    except TypeError:
        encoding = tok.encode(text)
    return [(int(a), int(b)) for a, b in encoding.offsets if b > a]


@dataclass(frozen=True)
class _Bounds:
    """Per-token boundary priority and the heading active at each character."""

    priority: list[int]
    heading_starts: list[int]
    heading_titles: list[str]


def _headings(doc: Document) -> list[tuple[int, str]]:
    """``(offset, title)`` of the document's headings: its metadata's, else its Markdown's."""
    meta = doc.metadata.get("headings")
    if not isinstance(meta, list):
        meta = markdown_metadata(doc.text)["headings"]
    out = []
    for item in meta:
        if isinstance(item, (list, tuple)) and len(item) == 3 and isinstance(item[2], int):
            out.append((int(item[2]), str(item[1])))
    return sorted(out)


def _bounds(doc: Document, offsets: list[tuple[int, int]]) -> _Bounds:
    starts = [a for a, _ in offsets]
    priority = [0] * len(offsets)

    def mark(char: int, level: int) -> None:
        i = bisect.bisect_left(starts, char)
        if i < len(priority):
            priority[i] = max(priority[i], level)

    for sentence in split_sentences(doc.text):
        mark(sentence.start, _PRIORITY_SENTENCE)
    for m in _PARAGRAPH.finditer(doc.text):
        mark(m.end(), _PRIORITY_PARAGRAPH)
    heads = _headings(doc)
    previous_line_end = -1
    for char, _ in heads:
        # in a run of headings ("## Part" right before "### 1. Item") only the first is a
        # section start, so a chunk never ends with a dangling heading line
        if previous_line_end < 0 or doc.text[previous_line_end:char].strip():
            mark(char, _PRIORITY_HEADING)
        newline = doc.text.find("\n", char)
        previous_line_end = len(doc.text) if newline < 0 else newline
    return _Bounds(priority, [c for c, _ in heads], [t for _, t in heads])


def _best_end(priority: list[int], start: int, chunk_tokens: int) -> int:
    """Token index where the chunk starting at ``start`` should end (exclusive)."""
    hard_end = start + chunk_tokens
    low = start + max(1, chunk_tokens // 2)
    best, best_priority = hard_end, 0
    for i in range(hard_end, low, -1):  # later positions win ties
        if priority[i] > best_priority:
            best, best_priority = i, priority[i]
            if best_priority == _PRIORITY_HEADING:
                break
    return best


def _next_start(priority: list[int], start: int, end: int, overlap_tokens: int) -> int:
    if overlap_tokens == 0 or priority[end] == _PRIORITY_HEADING:
        return end
    lo = max(start + 1, end - overlap_tokens)
    for i in range(lo, end):
        if priority[i] >= _PRIORITY_SENTENCE:
            return i
    # no sentence starts inside the overlap window: a chunk that ended on a sentence
    # boundary is followed without overlap rather than by a sentence fragment
    return end if priority[end] >= _PRIORITY_SENTENCE else lo


def chunk_document(
    doc: Document,
    chunk_tokens: int = 512,
    overlap_tokens: int = 50,
    tokenizer: TokenizerLike | None = None,
    *,
    max_chunks: int | None = None,
) -> list[Document]:
    """Split a document into overlapping token windows aligned to its structure.

    Args:
        doc: the parent document.
        chunk_tokens: maximum tokens per chunk (SPEC: 512).
        overlap_tokens: maximum tokens shared by consecutive chunks (SPEC: 50).
        tokenizer: a ``tokenizers.Tokenizer`` (or anything with ``encode(text)`` whose result
            has character ``offsets``); the packaged MiniLM tokenizer when ``None``.
        max_chunks: the most chunks the document may become (``ingest.max_chunks_per_document``);
            ``None``: no bound.

    Returns:
        The chunks in document order; an empty list for a text without tokens.

    Raises:
        ConfigError: when the sizes are not ``0 <= overlap_tokens < chunk_tokens``.
        InputError: the document needs more than ``max_chunks`` chunks (raised before the
            structure scan when the token count alone shows it).

    Example:
        >>> from ragtrust.documents import Document
        >>> doc = Document(id="d", text=" ".join(f"Sentence number {i} is here." for i in range(60)))
        >>> chunks = chunk_document(doc, chunk_tokens=40, overlap_tokens=8)
        >>> all(c.text == doc.text[c.metadata["start"] : c.metadata["end"]] for c in chunks)
        True
    """
    if chunk_tokens < 1 or not 0 <= overlap_tokens < chunk_tokens:
        raise ConfigError(
            f"chunking needs 0 <= overlap_tokens < chunk_tokens, got chunk_tokens={chunk_tokens}, "
            f"overlap_tokens={overlap_tokens}"
        )
    offsets = token_offsets(doc.text, tokenizer)
    if not offsets:
        return []
    if max_chunks is not None and -(-len(offsets) // chunk_tokens) > max_chunks:
        raise _too_many_chunks(doc, max_chunks, len(offsets), chunk_tokens)
    bounds = _bounds(doc, offsets)
    priority = bounds.priority + [_PRIORITY_HEADING]  # the text end is the best boundary
    # a PDF's page list stays with the parent (documents_office.page_of maps an offset to its page)
    parent_meta = {k: v for k, v in doc.metadata.items() if k not in ("headings", "pages")}
    chunks: list[Document] = []
    start, n = 0, len(offsets)
    while start < n:
        end = n if n - start <= chunk_tokens else _best_end(priority, start, chunk_tokens)
        char_start, char_end = offsets[start][0], offsets[end - 1][1]
        h = bisect.bisect_right(bounds.heading_starts, char_start) - 1
        meta = {
            **parent_meta,
            "parent_id": doc.id,
            "parent_hash": doc.content_hash,
            "chunk_index": len(chunks),
            "start": char_start,
            "end": char_end,
            "tokens": end - start,
            "heading": bounds.heading_titles[h] if h >= 0 else None,
        }
        chunks.append(
            Document(
                id=f"{doc.id}#{len(chunks)}",
                text=doc.text[char_start:char_end],
                url=doc.url,
                source=doc.source,
                metadata=meta,
            )
        )
        if end >= n:
            break
        if max_chunks is not None and len(chunks) >= max_chunks:
            raise _too_many_chunks(doc, max_chunks, n, chunk_tokens)
        start = _next_start(priority, start, end, overlap_tokens)
    return chunks


def _too_many_chunks(doc: Document, max_chunks: int, tokens: int, chunk_tokens: int) -> InputError:
    return InputError(
        f"document {doc.id!r} needs more than ingest.max_chunks_per_document ({max_chunks}) chunks "
        f"({tokens} tokens, {chunk_tokens} a chunk); split it or raise the limit"
    )


def chunk_documents(
    docs: Sequence[Document],
    chunk_tokens: int = 512,
    overlap_tokens: int = 50,
    tokenizer: TokenizerLike | None = None,
) -> list[Document]:
    """:func:`chunk_document` over many documents, concatenated in order."""
    out: list[Document] = []
    for doc in docs:
        out.extend(chunk_document(doc, chunk_tokens, overlap_tokens, tokenizer))
    return out


__all__ = ["TOKENIZER_PATH", "TokenizerLike", "chunk_document", "chunk_documents", "default_tokenizer", "token_offsets"]
