r"""Markup metadata: titles and headings of Markdown and HTML files, in linear time.

:func:`markdown_metadata` reads the headings of a Markdown text with markdown-it-py's
CommonMark block parser (ATX ``# ...`` and setext ``Title`` / ``=====`` headings; nothing in
fenced, indented or HTML blocks); :func:`markdown_code_ranges` gives the character ranges of
its code blocks. Only the block structure is parsed (no emphasis, links...), and the token
stream's source line ranges (``Token.map``) are turned into character offsets into the raw
text. :func:`html_to_text` extracts an HTML page's visible text with its title and headings.
All run in time linear in the text: markdown-it-py's block rules scan each line a bounded
number of times, and the HTML text is one iterative walk of the parsed tree whose heading
search has a scanning budget. (A regular expression for headings,
``^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$``, backtracked cubically on a long run of blanks: a 2 KB
line took 20 s; issue 19 item 5.)

Example:
    >>> markdown_metadata("# A\n\n```\n# not a heading\n```\n## B ##\n")
    {'headings': [[1, 'A', 0], [2, 'B', 29]], 'title': 'A'}
"""

from __future__ import annotations

import functools
import re
from typing import Any

from markdown_it import MarkdownIt

from ragtrust.text import front_matter_end

#: the line breaks markdown-it-py splits lines at (it normalises all three to ``\n``)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: a front-matter block's title (``title: X``, ``title = "X"``); a block scalar (``title: >``) is not read
_FRONT_MATTER_TITLE = re.compile(r"^title[ \t]*[:=][ \t]*(?![|>])(.+?)[ \t]*\r?$", re.MULTILINE)
#: block tokens whose lines are code
_CODE_TOKENS = ("fence", "code_block")
#: characters of the text the HTML heading search may scan, per character of text: enough
#: for every heading found in order, plus a few that are not found (each scans to the end)
_HTML_SCAN_BUDGET = 8
_HTML_DROP = ("script", "style", "noscript", "template", "svg", "head")
_HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")
#: headings nested in headings (invalid HTML) collect text this deep at most: each string
#: goes to every open heading, so an unbounded depth would make nesting quadratic again
_MAX_OPEN_HEADINGS = 6
_HTML_BLOCKS = (
    "p",
    "div",
    "section",
    "article",
    "li",
    "tr",
    "br",
    "pre",
    "blockquote",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "ul",
    "ol",
    "dt",
    "dd",
    "header",
    "footer",
    "main",
    "nav",
    "aside",
)


@functools.lru_cache(maxsize=1)
def _block_parser() -> MarkdownIt:
    """CommonMark's block rules only: inline parsing (emphasis, links) is not needed for structure."""
    return MarkdownIt("commonmark").disable(["inline", "text_join"])


def _parse(text: str) -> tuple[list[Any], list[int]]:
    """markdown-it-py's block tokens of ``text`` and the character offset of each line's start.

    A front-matter block at the start (:func:`~ragtrust.text.front_matter_end`) is parsed as
    blank lines: it is metadata, not Markdown (its closing ``---`` made it a setext heading).
    """
    starts = [0, *(m.end() for m in _LINE_BREAK.finditer(text))]
    end = front_matter_end(text)
    if end:  # as many line breaks as it holds, so the lines after it keep their numbers
        text = "\n" * len(_LINE_BREAK.findall(text, 0, end)) + text[end:]
    return _block_parser().parse(text), starts


def markdown_metadata(text: str) -> dict[str, Any]:
    r"""``title`` (the first level-1 heading) and ``headings`` (``[level, title, offset]``) of a Markdown text.

    The headings CommonMark sees (ATX and setext; none inside code or HTML blocks or front
    matter); a heading's offset is that of its ``#`` (ATX) or of its first character (setext),
    its title the raw text between the markers. Without a level-1 heading, the ``title`` of
    a front-matter block is the title. Linear in the text's length.

    Example:
        >>> markdown_metadata("# A\n\ntext\n\nB\n---\n    # code\n")["headings"]
        [[1, 'A', 0], [2, 'B', 11]]
        >>> markdown_metadata("---\ntitle: 'Salts'\n---\n## Why\n")
        {'headings': [[2, 'Why', 23]], 'title': 'Salts'}
    """
    tokens, starts = _parse(text)
    headings: list[list[Any]] = []
    for i, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        line = token.map[0]
        begin = starts[line]
        end = starts[line + 1] if line + 1 < len(starts) else len(text)
        if token.markup.startswith("#"):  # ATX: at its first '#' (after indentation or a container's marker)
            offset = text.find("#", begin, end)
        else:  # setext: at the first character of its text
            offset = begin + len(text[begin:end]) - len(text[begin:end].lstrip(" \t"))
        inline = tokens[i + 1] if i + 1 < len(tokens) else None
        title = inline.content.strip() if inline is not None and inline.type == "inline" else ""
        headings.append([int(token.tag[1]), title, max(offset, begin)])
    meta: dict[str, Any] = {"headings": headings}
    title = next((h[1] for h in headings if h[0] == 1), None) or _front_matter_title(text)
    if title:
        meta["title"] = title
    return meta


def _front_matter_title(text: str) -> str | None:
    """The ``title`` key of the text's front-matter block, unquoted; None without one."""
    found = _FRONT_MATTER_TITLE.search(text, 0, front_matter_end(text))
    if found is None:
        return None
    value = found.group(1)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return value.strip() or None


def markdown_code_ranges(text: str, *, labelled_only: bool = False) -> list[tuple[int, int]]:
    r"""``(start, end)`` character ranges of the fenced and indented code blocks of a Markdown text.

    A fence left open runs to the end of the text (CommonMark). ``labelled_only``: only the
    fences whose opening line names a language (```` ```python ````); such a line never closes
    a block, so its range is code even in a chunk cut out of a longer document, where a bare
    fence may be the closing one of a block that began before the chunk. Linear in the text's
    length.

    Example:
        >>> text = "Use bcrypt.\n\n```python\nhash = bcrypt(pw)\n```\n\n    indented code\n"
        >>> [text[a:b] for a, b in markdown_code_ranges(text)]
        ['```python\nhash = bcrypt(pw)\n```\n', '    indented code\n']
        >>> len(markdown_code_ranges(text, labelled_only=True))
        1
    """
    tokens, starts = _parse(text)
    ranges: list[tuple[int, int]] = []
    for token in tokens:
        if token.type not in _CODE_TOKENS or token.map is None:
            continue
        if labelled_only and not (token.type == "fence" and token.info.strip()):
            continue
        first, last = token.map
        ranges.append((starts[first], starts[last] if last < len(starts) else len(text)))
    return ranges


def html_to_text(html: str) -> tuple[str, dict[str, Any]]:
    r"""Visible text of an HTML page, with ``title`` and ``headings`` metadata.

    Scripts, styles, templates, SVG and the head are left out; block elements stand on
    their own lines. One iterative walk of the parsed tree: linear in the page's size
    however deep its nesting (inserting line breaks into the tree, as this did before, cost
    the depth at each element: 20,000 nested ``div`` took 57 s; issue 19 item 5).

    Example:
        >>> text, meta = html_to_text("<html><body><h1>Hi</h1><p>Body.</p><script>x()</script></body></html>")
        >>> text, meta["headings"]
        ('Hi\nBody.', [[1, 'Hi', 0]])
    """
    try:
        from bs4 import BeautifulSoup, Tag
    except ImportError as exc:  # pragma: no cover - a declared dependency
        from ragtrust.errors import MissingDependencyError

        raise MissingDependencyError("HTML loading", "pip install beautifulsoup4") from exc
    soup = BeautifulSoup(html, "html.parser")
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag else ""
    text, found = _visible_text(soup, Tag)
    headings = _place_headings(text, [h for h in found if h is not None])
    meta: dict[str, Any] = {"headings": headings}
    first_h1 = next((h[1] for h in headings if h[0] == 1), None)
    if title or first_h1:
        meta["title"] = title or first_h1
    return text, meta


def _visible_text(soup: Any, tag_type: Any) -> tuple[str, list[tuple[int, str] | None]]:
    """The page's text (blocks on their own lines) and its headings' texts, in one walk."""
    text_types = soup.interesting_string_types or ()  # what get_text() reads: no comments, doctype...
    parts: list[str] = []
    found: list[tuple[int, str] | None] = []  # headings in document order, filled as each closes
    open_headings: list[tuple[Any, int, list[str]]] = []  # (tag, index in found, its strings)
    stack: list[tuple[Any, Any]] = [(iter(soup.contents), None)]
    while stack:
        children, owner = stack[-1]
        child: Any = next(children, None)
        if child is None:
            stack.pop()
            if owner is None:
                continue
            if owner.name in _HTML_BLOCKS:
                parts.append("\n")
            if open_headings and open_headings[-1][0] is owner:
                _, index, strings = open_headings.pop()
                heading_text = " ".join(" ".join(strings).split())
                found[index] = (int(owner.name[1]), heading_text) if heading_text else None
            continue
        if isinstance(child, tag_type):
            if child.name in _HTML_DROP:
                continue
            if child.name in _HTML_BLOCKS:
                parts.append("\n")
            if child.name in _HEADING_TAGS and len(open_headings) < _MAX_OPEN_HEADINGS:
                found.append(None)
                open_headings.append((child, len(found) - 1, []))
            stack.append((iter(child.contents), child))
        elif type(child) in text_types:
            parts.append(str(child))
            for _, _, strings in open_headings:
                strings.append(str(child))
    lines = [" ".join(line.split()) for line in "".join(parts).splitlines()]
    return "\n".join(line for line in lines if line), found


def _place_headings(text: str, found: list[tuple[int, str]]) -> list[list[Any]]:
    """``[level, title, offset]`` of each heading found in ``text`` in order (a budgeted search)."""
    headings: list[list[Any]] = []
    cursor, budget = 0, _HTML_SCAN_BUDGET * (len(text) + 1)
    for level, heading_text in found:
        at = text.find(heading_text, cursor)
        # a heading not found scans to the end: the budget keeps many of them linear
        budget -= (len(text) if at < 0 else at) - cursor
        if budget < 0:
            break
        if at < 0:
            continue
        headings.append([level, heading_text, at])
        cursor = at + len(heading_text)
    return headings


__all__ = ["html_to_text", "markdown_code_ranges", "markdown_metadata"]
