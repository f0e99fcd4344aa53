"""Bounded input on the way in (issue 19 item 5).

Every bound of ``settings.ingest`` skips the one file, record, folder or document that breaks
it, with a one-line reason naming the setting, and the rest of the batch is still loaded.
Markdown headings are found in linear time. No test here times anything: the pathological
inputs below did not finish at all before (a 2 KB line of blanks took 20 s, cubic; 64 KB of
fenced headings 2.7 s, quadratic); speed figures are in bench/bench_ingest.py, the growth of
markdown-it-py's parse in tests/ingest/test_markdown_structure.py.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtrust.config import IngestConfig, Settings, load_settings
from ragtrust.documents import Document
from ragtrust.errors import InputError
from ragtrust.ingest.chunker import chunk_document
from ragtrust.ingest.loaders import load_paths
from ragtrust.ingest.markup import html_to_text, markdown_metadata
from ragtrust.ingest.store import Store
from ragtrust.testing import HashingEmbedder

_LINE_END = re.compile(r"\r\n|\r|\n|$")


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(["#", "##", "#######", " ", "\t", "a", "b c", "\n", "```", "~~~", "\r", "#x", "=", "-"]))
)
def test_every_heading_found_points_at_its_line(parts: list[str]) -> None:
    """Offsets come from markdown-it-py's line map: each points at its heading's marker or text."""
    from markdown_it import MarkdownIt

    text = "".join(parts)
    headings = markdown_metadata(text)["headings"]
    full = [t for t in MarkdownIt("commonmark").parse(text) if t.type == "heading_open"]  # inline parsing on
    assert [h[0] for h in headings] == [int(t.tag[1]) for t in full]
    for (level, title, offset), token in zip(headings, full, strict=True):
        line = text[offset : _LINE_END.search(text, offset).start()]  # type: ignore[union-attr]
        if token.markup.startswith("#"):  # ATX: the level's run of '#', then a blank or the end, then the title
            assert line[:level] == "#" * level and line[level : level + 1] in ("", " ", "\t"), (line, level)
            assert title in line[level:]
        else:  # setext: the title starts the line
            assert level in (1, 2) and line.startswith(title.split("\n")[0]), (line, title)


def test_pathological_markdown_of_5_mb_loads_with_its_headings(tmp_path: Path) -> None:
    blanks = "# Title" + " \t" * 1_500_000 + "x ##\n"  # a 3 MB heading line: cubic backtracking before
    fenced = "```\n# in code\n```\n## Real\n" * 80_000  # 2 MB of fences and headings: quadratic before
    file = tmp_path / "big.md"
    file.write_text(blanks + fenced, encoding="utf-8")
    assert file.stat().st_size > 5_000_000
    report = load_paths([file])
    assert report.skipped == []
    headings = report.documents[0].metadata["headings"]
    assert len(headings) == 1 + 80_000
    assert headings[0][0] == 1 and headings[0][1] == "Title" + " \t" * 1_500_000 + "x"
    assert all(h[:2] == [2, "Real"] for h in headings[1:])


_DROP = ("script", "style", "noscript", "template", "svg", "head")
_BLOCKS = ("p", "div", "li", "tr", "br", "pre", "h1", "h2", "table", "ul")


def _reference_html(html: str) -> tuple[str, dict[str, Any]]:
    """html_to_text as it was: correct, but each tree insertion walked the subtree (quadratic nesting)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag else ""
    for tag in soup.find_all(_DROP):
        tag.decompose()
    found = []
    for tag in soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6"]):
        if heading := " ".join(tag.get_text(" ").split()):
            found.append((int(tag.name[1]), heading))
    for tag in soup.find_all(_BLOCKS):
        tag.insert_before("\n")
        tag.insert_after("\n")
    text = "\n".join(x for x in (" ".join(line.split()) for line in soup.get_text().splitlines()) if x)
    headings, cursor = [], 0
    for level, heading in found:
        if (at := text.find(heading, cursor)) >= 0:
            headings.append([level, heading, at])
            cursor = at + len(heading)
    meta: dict[str, Any] = {"headings": headings}
    first_h1 = next((h[1] for h in headings if h[0] == 1), None)
    if title or first_h1:
        meta["title"] = title or first_h1
    return text, meta


_TAGS = ("div", "p", "h1", "h2", "span", "b", "script", "style", "head", "title", "br", "svg", "li", "ul", "pre")
_HTML_TOKENS = [f"<{t}>" for t in _TAGS] + [f"</{t}>" for t in _TAGS] + ["<br/>", "text", " two words ", "\n"]
_HTML_TOKENS += ["&amp;", "<!-- note -->", "<!DOCTYPE html>", "<![CDATA[cd]]>", "<rt>ruby</rt>", "<img src=x>"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_HTML_TOKENS), max_size=40))
def test_the_one_walk_html_text_is_what_the_tree_insertions_gave(tokens: list[str]) -> None:
    html = "".join(tokens)
    assert html_to_text(html) == _reference_html(html)


def test_deeply_nested_html_is_read_without_changing_the_parse_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    from bs4.element import Tag

    def mutation(*args: object, **kwargs: object) -> None:
        raise AssertionError("the parse tree is changed (each change walks the subtree: quadratic nesting)")

    for name in ("insert_before", "insert_after", "decompose", "extract"):
        monkeypatch.setattr(Tag, name, mutation)
    text, meta = html_to_text("<div>" * 20_000 + "<h2>" * 100 + "deep" + "</h2>" * 100 + "</div>" * 20_000)
    assert text == "deep" and meta["headings"][0] == [2, "deep", 0]
    text, _ = html_to_text("<p>Keep</p><script>" + "<b>" * 1_000 + "drop</script><svg><text>drop</text></svg>")
    assert text == "Keep"


def test_a_file_over_max_file_bytes_is_skipped_and_the_rest_loads(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "big.txt").write_text("word " * 400, encoding="utf-8")  # 2,000 bytes
    (tmp_path / "kb" / "small.txt").write_text("Use TLS.", encoding="utf-8")
    report = load_paths([tmp_path / "kb"], limits=IngestConfig(max_file_bytes=1_000))
    assert [d.id for d in report.documents] == ["kb/small.txt"]
    [(path, reason)] = report.skipped
    assert path.endswith("big.txt")
    assert reason == "file of 2 KB is larger than ingest.max_file_bytes (1 KB)"


def test_a_jsonl_line_over_max_line_bytes_is_skipped_and_the_other_lines_load(tmp_path: Path) -> None:
    lines = [{"id": "a", "text": "Use TLS."}, {"id": "long", "text": "x" * 500}, {"id": "b", "text": "Use argon2id."}]
    file = tmp_path / "records.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    report = load_paths([file], limits=IngestConfig(max_line_bytes=200))
    assert [d.id for d in report.documents] == ["a", "b"]
    [(where, reason)] = report.skipped
    assert where.endswith("records.jsonl:2")
    assert "larger than ingest.max_line_bytes (200 bytes)" in reason


def test_jsonl_records_are_split_at_newlines_only_and_deep_nesting_is_one_bad_line(tmp_path: Path) -> None:
    file = tmp_path / "records.jsonl"
    separator = json.dumps({"id": "sep", "text": "one\u2028record"}, ensure_ascii=False)  # raw U+2028 is valid JSON
    file.write_text(separator + "\n" + "[" * 100_000 + "\n" + json.dumps({"id": "b", "text": "ok"}) + "\n")
    report = load_paths([file])
    assert [d.id for d in report.documents] == ["sep", "b"]
    assert report.documents[0].text == "one\u2028record"
    assert report.skipped == [(f"{file}:2", "invalid JSON (nested too deeply)")]


def test_csv_records_are_bounded_by_max_line_bytes_not_by_the_csv_modules_128_kb(tmp_path: Path) -> None:
    file = tmp_path / "rows.csv"
    file.write_text(f"id,text\nbig,{'y' * 200_000}\nsmall,Use TLS.\n", encoding="utf-8")
    assert [d.id for d in load_paths([file]).documents] == ["big", "small"]  # the 200 KB field was an error
    report = load_paths([file], limits=IngestConfig(max_line_bytes=150_000))
    assert [d.id for d in report.documents] == ["small"]
    assert len(report.skipped) == 1 and "ingest.max_line_bytes (150 KB)" in report.skipped[0][1]


def _nest(root: Path, depth: int) -> Path:
    folder = root
    for _ in range(depth):  # one mkdir at a time: os.makedirs itself recurses
        folder = folder / "d"
        folder.mkdir()
    return folder


def _remove_nested(root: Path, depth: int) -> None:
    """Remove what :func:`_nest` made, deepest first (shutil.rmtree, and pytest's clean-up, recurse)."""
    folders = [root / Path(*("d",) * n) for n in range(depth, 0, -1)]
    for folder in folders:
        for entry in folder.iterdir():
            if not entry.is_dir():
                entry.unlink()
        folder.rmdir()


@pytest.fixture
def deep_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "deep"
    root.mkdir()
    yield root
    _remove_nested(root, 1_200)


def test_a_folder_1200_deep_is_cut_at_max_depth_without_recursion_error(deep_root: Path) -> None:
    root = deep_root
    (_nest(root, 1_200) / "bottom.txt").write_text("At the bottom.", encoding="utf-8")
    (root / "top.txt").write_text("At the top.", encoding="utf-8")
    (_nest(root / "d", 0) / "level1.txt").write_text("One level down.", encoding="utf-8")
    report = load_paths([root])
    assert [d.id for d in report.documents] == ["deep/d/level1.txt", "deep/top.txt"]
    [(path, reason)] = report.skipped
    assert reason == "folder more than ingest.max_depth (32) levels deep; not read"
    assert Path(path).relative_to(root).parts == ("d",) * 33
    # no recursion at all: a bound above the interpreter's recursion limit walks to the bottom
    deep = load_paths([root], limits=IngestConfig(max_depth=5_000))
    assert "deep/" + "d/" * 1_200 + "bottom.txt" in [d.id for d in deep.documents]


def test_a_link_loop_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.txt").write_text("Use TLS.", encoding="utf-8")
    os.symlink(root, root / "loop")
    report = load_paths([root])
    assert [d.id for d in report.documents] == ["kb/a.txt"]


def test_bounds_are_settings() -> None:
    s = load_settings(env={"RAGTRUST_INGEST__MAX_FILE_BYTES": "1000", "RAGTRUST_INGEST__MAX_DEPTH": "3"})
    assert (s.ingest.max_file_bytes, s.ingest.max_depth) == (1000, 3)
    defaults = Settings().ingest
    assert (defaults.max_file_bytes, defaults.max_line_bytes, defaults.max_depth, defaults.max_chunks_per_document) == (
        20_000_000,
        2_000_000,
        32,
        2_000,
    )


LONG = Document(id="long", text=" ".join(f"Sentence number {i} says something." for i in range(200)))
SHORT = Document(id="short", text="Use parameterised queries against SQL injection.")


def test_chunk_document_refuses_more_than_max_chunks() -> None:
    assert len(chunk_document(LONG, chunk_tokens=32, overlap_tokens=4)) > 3
    with pytest.raises(InputError, match=r"ingest\.max_chunks_per_document \(3\)"):
        chunk_document(LONG, chunk_tokens=32, overlap_tokens=4, max_chunks=3)


def test_a_document_over_max_chunks_is_left_out_and_the_rest_is_ingested(tmp_path: Path) -> None:
    config = Settings().with_overrides(
        {"chunking": {"chunk_tokens": 32, "overlap_tokens": 4}, "ingest": {"max_chunks_per_document": 3}}
    )
    store = Store.open(tmp_path / "store", HashingEmbedder(), create=True, settings=config)
    report = store.add([LONG, SHORT])
    assert report.added == 1 and [i for i, _ in report.skipped] == ["long"]
    assert "ingest.max_chunks_per_document (3)" in report.skipped[0][1]
    assert [d.id for d in store.parents()] == ["short"]
    assert store.ledger.get("long") is None  # nothing recorded for what was not stored
