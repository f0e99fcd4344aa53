"""The extractive answer writer: no LLM, the answer is made of verified passage sentences.

It splits the verified passages into sentences, ranks them by relevance to the question
(:func:`ragtrust.evidence.extract.relevance_scores`: lexical, plus embeddings when an
embedder is given), keeps the best ``max_sentences`` distinct ones (never headings, table
rows, questions or references: a link list item, "See ...", a lead-in ending with a colon),
groups them by source (the lead source first, the others in order of their best sentence,
sentences in passage order) and ends each with ``[n]``, the 1-based number of its source in
order of first use.

Focus: the passages arrive best first (the extractor ranks them with their document's
title, question and section heading, which a lone sentence does not repeat), so the source
of the first live passage is the *lead source*. A sentence is kept only when it scores at
least ``relative_cutoff`` times the best sentence's score, and a sentence from any other
source only when it scores at least ``focus_cutoff`` times that score: weakly related
sentences of other documents no longer pad the answer, while a second source that is as
relevant as the first still contributes. Every word of the answer is copied from a passage (Markdown ``**``
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
from ragtrust.registry import register, warm_up
from ragtrust.screening.claims import is_reference
from ragtrust.text import split_sentences, visible_words, words

_EMPHASIS = re.compile(r"\*\*|__")


@register("generator", "extractive")
@dataclass
class ExtractiveGenerator:
    """Compose an answer from the most query-relevant sentences of verified passages.

    Args:
        max_sentences: most sentences in the answer (SPEC: ``evidence.max_answer_sentences``).
        embedder: optional sentence embedder for semantic relevance.
        lexical_weight: weight of lexical relevance when an embedder is given.
        min_tokens: sentences with fewer words a reader sees (headings, fragments, a link alone:
            :func:`~ragtrust.text.visible_words`) are skipped.
        relative_cutoff: sentences scoring below this fraction of the best sentence's score
            are left out.
        focus_cutoff: sentences from a source other than the lead source (that of the first
            passage) need at least this fraction of the best score (0 disables the focus).
        skip_references: leave out sentences that point elsewhere instead of saying something
            (:func:`~ragtrust.screening.claims.is_reference`: a link list item, "See ...", a
            lead-in ending with a colon): a list of links is near a question in words, but
            answers nothing.
    """

    max_sentences: int = 4
    embedder: Embedder | None = None
    lexical_weight: float = 0.5
    min_tokens: int = 3
    relative_cutoff: float = 0.5
    focus_cutoff: float = 0.9
    skip_references: bool = True
    name: str = "extractive"

    def __post_init__(self) -> None:
        """Validate the parameters."""
        if self.max_sentences < 1:
            raise ConfigError(f"max_sentences must be >= 1, got {self.max_sentences}")
        for label in ("lexical_weight", "relative_cutoff", "focus_cutoff"):
            value = getattr(self, label)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{label} must be in [0, 1], got {value}")

    def warm_up(self) -> None:
        """Load the embedder's model when it has a ``warm_up``."""
        warm_up(self.embedder)

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
                if (
                    len(visible_words(text)) >= self.min_tokens
                    and is_evidence_sentence(text)
                    and not (self.skip_references and is_reference(text))
                ):
                    candidates.append((pi, si, text, source))
        scores = relevance_scores(query, [c[2] for c in candidates], self.embedder, self.lexical_weight)
        ranked = sorted(range(len(candidates)), key=lambda i: (-scores[i], candidates[i][0], candidates[i][1]))
        best = scores[ranked[0]] if ranked else 0.0
        lead = min(candidates, key=lambda c: c[0])[3] if candidates else None
        chosen: list[int] = []
        seen: set[tuple[str, ...]] = set()
        for i in ranked:
            if scores[i] <= 0.0 or scores[i] < self.relative_cutoff * best or len(chosen) == self.max_sentences:
                break
            if candidates[i][3] != lead and scores[i] < self.focus_cutoff * best:
                continue
            key = tuple(words(candidates[i][2]))
            if key not in seen:
                seen.add(key)
                chosen.append(i)
        # the lead source (the extractor's best passage) opens the answer; others follow their best sentence
        source_order = list(dict.fromkeys([lead, *(candidates[i][3] for i in chosen)]))
        source_order = [src for src in source_order if any(candidates[i][3] == src for i in chosen)]
        chosen.sort(key=lambda i: (source_order.index(candidates[i][3]), candidates[i][0], candidates[i][1]))
        sentences = tuple((candidates[i][2], (candidates[i][3],)) for i in chosen)
        text = " ".join(f"{s} [{source_order.index(src[0]) + 1}]" for s, src in sentences)
        return GeneratedAnswer(text=text, sentences=sentences, model=self.name)


__all__ = ["ExtractiveGenerator"]
