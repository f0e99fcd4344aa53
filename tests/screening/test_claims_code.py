"""Claims leave fenced code out (issue 21): markdown-it-py finds the fenced blocks that name their
language; their lines, however prose-like, are not claims. A bare fence may close a block that
began before a chunk, so the prose after it stays a claim."""

from __future__ import annotations

from ragtrust.screening.claims import extract_claims

PROSE = "Session tokens must expire after thirty minutes of inactivity."
CODE_LINE = "Session tokens expire after ninety minutes of inactivity."


def _claims(text: str) -> list[str]:
    return [c.text for c in extract_claims(0, text)]


def test_prose_like_lines_of_a_labelled_fence_are_not_claims() -> None:
    text = f"{PROSE}\n\n```text\nWARNING: idle session.\n\n{CODE_LINE}\n```\n\nRotate the signing keys every year.\n"
    assert _claims(text) == [PROSE, "Rotate the signing keys every year."]


def test_a_chunk_that_starts_inside_code_keeps_its_prose() -> None:
    chunk = f"    return token\n```\n\n{PROSE}\n\n```python\nlog('idle session.')\n\n{CODE_LINE}\n```\n"
    # the bare fence is read as an opening one, so the parse puts PROSE in code: only fences that
    # name their language count (this one then swallows the python block, which stays as before)
    assert _claims(chunk)[0] == PROSE
