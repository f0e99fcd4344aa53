r"""The report's blocks rendered as Markdown or as one self-contained HTML page.

A report is a list of blocks: ``("h1" | "h2" | "h3", text)``, ``("p", text)``,
``("ul", items)``, ``("code", text)``, ``("img", title, path)`` and
``("table", header, rows)``.

Example:
    >>> print(render_markdown([("h2", "Cost"), ("table", ["a", "b"], [[1, "x|y"]])], Path(".")))
    ## Cost
    <BLANKLINE>
    | a | b |
    |---|---|
    | 1 | x\|y |
    <BLANKLINE>
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: one element of a report (see the module docstring)
Block = tuple[Any, ...]


def _md_cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: Sequence[Block], base: Path) -> str:
    """Markdown text of the report blocks (images linked relative to ``base``)."""
    lines: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            lines += ["#" * int(kind[1]) + " " + block[1], ""]
        elif kind == "p":
            lines += [block[1], ""]
        elif kind == "ul":
            lines += [f"- {item}" for item in block[1]] + [""]
        elif kind == "code":
            lines += ["```json", block[1], "```", ""]
        elif kind == "img":
            lines += [f"![{block[1]}]({Path(block[2]).relative_to(base).as_posix()})", ""]
        elif kind == "table":
            header, body = block[1], block[2]
            lines.append("| " + " | ".join(_md_cell(h) for h in header) + " |")
            lines.append("|" + "---|" * len(header))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in body]
            lines.append("")
    return "\n".join(lines)


def render_html(blocks: Sequence[Block]) -> str:
    """A self-contained HTML page (images inlined as base64 PNG)."""
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>ragtrust benchmark report</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:1em 0;font-size:0.85em}td,th{border:1px solid #ccc;padding:3px 6px}"
        "th{background:#f3f3f3}pre{background:#f7f7f7;padding:1em;overflow:auto;font-size:0.8em}"
        "img{max-width:100%;border:1px solid #eee}</style></head><body>",
    ]
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            parts.append(f"<{kind}>{html.escape(block[1])}</{kind}>")
        elif kind == "p":
            parts.append(f"<p>{html.escape(block[1])}</p>")
        elif kind == "ul":
            parts.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in block[1]) + "</ul>")
        elif kind == "code":
            parts.append(f"<pre>{html.escape(block[1])}</pre>")
        elif kind == "img":
            data = base64.b64encode(Path(block[2]).read_bytes()).decode("ascii")
            parts.append(f"<figure><img alt='{html.escape(block[1])}' src='data:image/png;base64,{data}'>"
                         f"<figcaption>{html.escape(block[1])}</figcaption></figure>")  # fmt: skip
        elif kind == "table":
            head = "".join(f"<th>{html.escape(str(h))}</th>" for h in block[1])
            rows = "".join(
                "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in block[2]
            )
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts)


__all__ = ["Block", "render_html", "render_markdown"]
