r"""Markup metadata: titles and headings of Markdown and HTML files, in linear time.

:func:`markdown_metadata` reads the ATX headings (``# ...``) outside fenced code blocks;
:func:`html_to_text` extracts an HTML page's visible text with its title and headings.
Both run in time linear in the text: the Markdown scan finds candidate lines with a
fixed-width pattern (no backtracking) and parses each line with string methods; the HTML
text is one iterative walk of the parsed tree, and its heading search has a scanning budget.
(The regular expression the Markdown scan replaces, ``^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$``,
backtracked cubically on a long run of blanks: a 2 KB line took 20 s; issue 19 item 5.)

Example:
    >>> markdown_metadata("# A\n\n```\n# not a heading\n```\n## B ##\n")
    {'headings': [[1, 'A', 0], [2, 'B', 29]], 'title': 'A'}
"""

from __future__ import annotations

import re
from typing import Any

#: a line that may start a heading or a code fence: fixed width, so finding every one is a
#: single linear pass
_CANDIDATE = re.compile(r"^(?:#|```|~~~)", re.MULTILINE)
#: the most ``#`` of an ATX heading (CommonMark: 1 to 6)
_MAX_LEVEL = 6
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


def parse_atx_heading(line: str) -> tuple[int, str] | None:
    r"""``(level, title)`` of an ATX heading line (without its newline), else ``None``.

    One to six ``#``, at least one blank, then the title; trailing blanks and a closing run
    of ``#`` are not part of it. Linear in the line's length.

    Example:
        >>> parse_atx_heading("## Work factor ##"), parse_atx_heading("#hashtag"), parse_atx_heading("####### x")
        ((2, 'Work factor'), None, None)
    """
    level = len(line) - len(line.lstrip("#"))
    if not 1 <= level <= _MAX_LEVEL:
        return None
    rest = line[level:]
    if not rest or rest[0] not in " \t":
        return None
    body = rest.lstrip(" \t")
    if not body:  # only blanks after the hashes: an empty title (two blanks at least)
        return (level, "") if len(rest) >= 2 else None
    # the shortest non-empty title whose remainder is blanks, a run of '#', blanks
    kept = len(body.rstrip(" \t").rstrip("#").rstrip(" \t"))
    return level, body[: max(kept, 1)].strip()


def markdown_metadata(text: str) -> dict[str, Any]:
    r"""``title`` and ``headings`` (``[level, title, offset]``) of a markdown text.

    Headings inside fenced code blocks are ignored (fences pair up in order: the first
    opens, the second closes...). Linear in the text's length.

    Example:
        >>> markdown_metadata("# A\n\ntext\n\n## B\n")["headings"]
        [[1, 'A', 0], [2, 'B', 11]]
    """
    fences: list[int] = []
    candidates: list[int] = []
    for m in _CANDIDATE.finditer(text):
        (candidates if text[m.start()] == "#" else fences).append(m.start())
    fenced = list(zip(fences[0::2], fences[1::2], strict=False))
    headings: list[list[Any]] = []
    pair = 0
    for start in candidates:  # both lists ascend: one merge pass
        while pair < len(fenced) and fenced[pair][1] <= start:
            pair += 1
        if pair < len(fenced) and fenced[pair][0] <= start:
            continue
        end = text.find("\n", start)
        parsed = parse_atx_heading(text[start : len(text) if end < 0 else end])
        if parsed is not None:
            headings.append([parsed[0], parsed[1], start])
    meta: dict[str, Any] = {"headings": headings}
    title = next((h[1] for h in headings if h[0] == 1), None)
    if title:
        meta["title"] = title
    return meta


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


__all__ = ["html_to_text", "markdown_metadata", "parse_atx_heading"]
