"""The generator contract: write an answer from verified passages, one citation per sentence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ragtrust.documents import Passage


@dataclass(frozen=True)
class GeneratedAnswer:
    """A generator's raw output.

    ``text`` carries citations inline as ``[n]`` or ``[url]``; ``sentences`` holds, when the
    generator knows them, each sentence with its citation targets; ``warnings`` what the
    user should know about how it was written (a prompt trimmed to fit the model's window).
    ``cut_off`` says the writer stopped at its token limit, not at the end of its answer: the
    last sentence may be unfinished ("Passwords should not be stored using"), and what is
    left out may change what the rest means, so the pipeline never trusts such an answer.
    """

    text: str
    sentences: tuple[tuple[str, tuple[str, ...]], ...] = ()
    model: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    cut_off: bool = False


@runtime_checkable
class Generator(Protocol):
    """Anything that writes an answer from passages."""

    name: str

    def generate(self, query: str, passages: Sequence[Passage]) -> GeneratedAnswer:
        """An answer whose every sentence cites the passages it uses."""
        ...


__all__ = ["GeneratedAnswer", "Generator"]
