r"""Markup metadata: titles and headings of Markdown and HTML files, in linear time.

:func:`markdown_metadata` reads the ATX headings (``# ...``) outside fenced code blocks;
:func:`html_to_text` extracts an HTML page's visible text with its title and headings.
Both run in time linear in the text: the Markdown scan finds candidate lines with a
fixed-width pattern (no backtracking) and parses each line with string methods, and the HTML
heading search is given a scanning budget. (The regular expression the Markdown scan replaces,
``^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$``, backtracked cubically on a long run of blanks: a 2 KB
line took 20 s; issue 19 item 5.)

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

    Example:
        >>> text, meta = html_to_text("<html><body><h1>Hi</h1><p>Body.</p><script>x()</script></body></html>")
        >>> text, meta["headings"]
        ('Hi\nBody.', [[1, 'Hi', 0]])
    """
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:  # pragma: no cover - a declared dependency
        from ragtrust.errors import MissingDependencyError

        raise MissingDependencyError("HTML loading", "pip install beautifulsoup4") from exc
    soup = BeautifulSoup(html, "html.parser")
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag else ""
    for tag in soup.find_all(_HTML_DROP):
        tag.decompose()
    heading_texts: list[tuple[int, str]] = []
    for tag in soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6"]):
        heading_text = " ".join(tag.get_text(" ").split())
        if heading_text:
            heading_texts.append((int(tag.name[1]), heading_text))
    for tag in soup.find_all(_HTML_BLOCKS):
        tag.insert_before("\n")
        tag.insert_after("\n")
    lines = [" ".join(line.split()) for line in soup.get_text().splitlines()]
    text = "\n".join(line for line in lines if line)
    headings: list[list[Any]] = []
    cursor, budget = 0, _HTML_SCAN_BUDGET * (len(text) + 1)
    for level, heading_text in heading_texts:
        at = text.find(heading_text, cursor)
        # a heading not found scans to the end: the budget keeps many of them linear
        budget -= (len(text) if at < 0 else at) - cursor
        if budget < 0:
            break
        if at < 0:
            continue
        headings.append([level, heading_text, at])
        cursor = at + len(heading_text)
    meta: dict[str, Any] = {"headings": headings}
    first_h1 = next((h[1] for h in headings if h[0] == 1), None)
    if title or first_h1:
        meta["title"] = title or first_h1
    return text, meta


__all__ = ["html_to_text", "markdown_metadata", "parse_atx_heading"]
