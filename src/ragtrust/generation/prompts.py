"""Prompts of the LLM answer writer (the extraction prompt lives in ``ragtrust.evidence.extract``).

The answer prompt numbers the verified passages ``[1] .. [k]`` and requires a citation
``[n]`` at the end of every sentence; ``[n]`` always means the n-th passage of the prompt.

Example:
    >>> from ragtrust.documents import Passage
    >>> msgs = build_answer_messages("Why hash?", [Passage("p1", "Hashing protects.", url="u1")])
    >>> print(msgs[1]["content"].splitlines()[3])
    [1] (source: u1)
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtrust.documents import Passage

ANSWER_SYSTEM_PROMPT = """You answer questions using ONLY the numbered passages you are given.
Rules:
- Every sentence must end with the citation of the passage(s) it is based on, written as [n]
  (for example: "Use parameterised queries [2]."). Cite only the numbers of the passages given.
- Use only facts stated in the passages; do not add outside knowledge, links or sources.
- Prefer the passages' own wording. Keep the answer short: at most {max_sentences} sentences.
- If the passages do not answer the question, say "The documentation does not explicitly state"
  followed by what is missing, and cite the closest passage."""


def format_passages(passages: Sequence[Passage]) -> str:
    """``[n] (source: url)`` headers followed by each passage's text."""
    blocks = []
    for i, passage in enumerate(passages, start=1):
        source = passage.url or passage.doc_id or passage.passage_id
        blocks.append(f"[{i}] (source: {source})\n{passage.text.strip()}")
    return "\n\n".join(blocks)


def build_answer_messages(query: str, passages: Sequence[Passage], max_sentences: int = 4) -> list[dict[str, str]]:
    """Chat messages for the answer writer."""
    user = f"Question: {query}\n\nPassages:\n{format_passages(passages)}\n\nAnswer (every sentence ends with [n]):"
    return [
        {"role": "system", "content": ANSWER_SYSTEM_PROMPT.format(max_sentences=max_sentences)},
        {"role": "user", "content": user},
    ]


__all__ = ["ANSWER_SYSTEM_PROMPT", "build_answer_messages", "format_passages"]
