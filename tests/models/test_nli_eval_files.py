"""``ragtrust nli eval`` input files: every bad file is a one-line InputError, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtrust.errors import InputError
from ragtrust.models.nli_eval import read_labelled


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("list.jsonl", b"[1, 2]\n", r"list\.jsonl:1: expected an object with text premise and hypothesis and a label"),
        ("null.jsonl", b'{"premise": null, "hypothesis": "b", "label": "neutral"}\n', r":1: expected an object"),
        (
            "bad.jsonl",
            b'{"premise": "a", "hypothesis": "b", "label": "neutral"}\nnot json\n',
            r"bad\.jsonl:2: invalid JSON",
        ),
        ("binary.jsonl", b"\x00\xba\xff" * 20, r"looks binary"),
        ("latin1.jsonl", b'{"premise": "caf\xe9", "hypothesis": "b", "label": "neutral"}\n', r"not valid UTF-8"),
        ("header.tsv", b"premise\thyp\nA\tB\n", r"the TSV header lacks hypothesis, label"),
        ("short.tsv", b"premise\thypothesis\tlabel\nA cat.\n", r"short\.tsv:2: expected an object"),
        ("empty.jsonl", b"", r"no labelled pairs"),
    ],
)
def test_bad_files_are_one_line_input_errors(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        read_labelled(path)


def test_a_folder_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        read_labelled(tmp_path)


def test_jsonl_and_tsv_rows(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('\ufeff{"premise": "A", "hypothesis": "B", "label": "Entailment "}\n\n')
    (tmp_path / "a.tsv").write_text("premise\thypothesis\tlabel\nA\tB\tneutral\n")
    assert read_labelled(tmp_path / "a.jsonl") == [("A", "B", "entailment")]
    assert read_labelled(tmp_path / "a.tsv") == [("A", "B", "neutral")]
