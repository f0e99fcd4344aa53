"""The extractive answer writer: no LLM, the answer is made of verified passage sentences.

It splits the verified passages into sentences, ranks them by relevance to the question
(:func:`ragtrust.evidence.extract.relevance_scores`: lexical, plus embeddings when an
embedder is given), keeps the best ``max_sentences`` distinct ones (never headings, table
rows or questions), groups them by source (sources in order of their best sentence,
sentences in passage order) and ends each with ``[n]``, the 1-based number of its source in
order of first use. Every word of the answer is copied from a passage (Markdown ``**``
emphasis aside), so it can only cite the passages it was given.

Example:
    >>> from ragtrust.documents import Passage
    >>> p = [Passage("p1", "Use parameterised queries. Cats purr loudly at night.", url="https://kb/sql")]
    >>> ExtractiveGenerator().generate("How do I use parameterised queries?", p).text
    'Use parameterised queries. [1]'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragtrust.documents import Passage
from ragtrust.errors import ConfigError
from ragtrust.evidence.align import TRUNCATION_JOINER
from ragtrust.evidence.extract import is_evidence_sentence, relevance_scores
from ragtrust.generation.base import GeneratedAnswer
from ragtrust.models.base import Embedder
from ragtrust.registry import register
from ragtrust.text import split_sentences, words

_EMPHASIS = re.compile(r"\*\*|__")


@register("generator", "extractive")
@dataclass
class ExtractiveGenerator:
    """Compose an answer from the most query-relevant sentences of verified passages.

    Args:
        max_sentences: most sentences in the answer (SPEC: ``evidence.max_answer_sentences``).
        embedder: optional sentence embedder for semantic relevance.
        lexical_weight: weight of lexical relevance when an embedder is given.
        min_tokens: sentences with fewer word tokens (headings, fragments) are skipped.
    """

    max_sentences: int = 4
    embedder: Embedder | None = None
    lexical_weight: float = 0.5
    min_tokens: int = 3
    name: str = "extractive"

    def __post_init__(self) -> None:
        """Validate the parameters."""
        if self.max_sentences < 1:
            raise ConfigError(f"max_sentences must be >= 1, got {self.max_sentences}")

    def warm_up(self) -> None:
        """Load the embedder's model when it has a ``warm_up``."""
        warm = getattr(self.embedder, "warm_up", None)
        if callable(warm):
            warm()

    def generate(self, query: str, passages: Sequence[Passage]) -> GeneratedAnswer:
        """Write the answer; empty text when no passage sentence is relevant to the question."""
        candidates: list[tuple[int, int, str, str]] = []  # passage index, sentence index, text, source
        for pi, passage in enumerate(passages):
            if passage.status == "dropped":
                continue
            source = passage.url or passage.doc_id or passage.passage_id
            parts = [s for part in passage.text.split(TRUNCATION_JOINER) for s in split_sentences(part)]
            for si, sentence in enumerate(parts):
                # Markdown emphasis is dropped (it carries no tokens, so spans still align)
                text = " ".join(_EMPHASIS.sub("", sentence.text).split())
                if len(words(text)) >= self.min_tokens and is_evidence_sentence(text):
                    candidates.append((pi, si, text, source))
        scores = relevance_scores(query, [c[2] for c in candidates], self.embedder, self.lexical_weight)
        ranked = sorted(range(len(candidates)), key=lambda i: (-scores[i], candidates[i][0], candidates[i][1]))
        chosen: list[int] = []
        seen: set[tuple[str, ...]] = set()
        for i in ranked:
            if scores[i] <= 0.0 or len(chosen) == self.max_sentences:
                break
            key = tuple(words(candidates[i][2]))
            if key not in seen:
                seen.add(key)
                chosen.append(i)
        source_order = list(dict.fromkeys(candidates[i][3] for i in chosen))
        chosen.sort(key=lambda i: (source_order.index(candidates[i][3]), candidates[i][0], candidates[i][1]))
        sentences = tuple((candidates[i][2], (candidates[i][3],)) for i in chosen)
        text = " ".join(f"{s} [{source_order.index(src[0]) + 1}]" for s, src in sentences)
        return GeneratedAnswer(text=text, sentences=sentences, model=self.name)


__all__ = ["ExtractiveGenerator"]
