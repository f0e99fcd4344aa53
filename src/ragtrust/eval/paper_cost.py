"""What the paper's Evaluation Agent spends on NLI per query, timed on this machine (issue 20).

The paper's verifier (SPEC appendix) runs ``facebook/bart-large-mnli`` at batch size 1 with no
cache, over whole texts:

* **intra**: each retrieved document's first half against its second half (by sentence
  count), skipped when either half has fewer than 5 words;
* **cross**: at most 10 pairs of retrieved documents, in retrieval order;
* **answer**: the answer against each retrieved document, twice (once for the poison
  check, once for consistency: the same pairs scored twice).

At K = 5 that is up to 5 + 10 + 10 = 25 passes; SPEC quotes "up to ~20-30".
:func:`paper_passes` lists them for one query and :class:`ShapeTimer` runs them on a model of
the reference model's *shape* (its published ``BartConfig``: 12 + 12 layers, d_model 1024,
16 heads, FFN 4096, 407M parameters) with random weights, built locally: the hub is not
reachable here, and a dense transformer's cost depends on its shape and the sequence length,
not on its weights. Sequence lengths are counted with the caller's tokenizer (the benchmarks
pass the shipped NLI model's WordPiece counter, a stand-in for BART's byte-level BPE, which
gives a similar count on English prose) plus BART's four special tokens, truncated at 1,024
like the model. The result is a measured per-query cost of the paper's configuration on the
same documents, answers and host as ragtrust's, for the side-by-side ratio in
``bench/bench_pipeline.py --paper``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtrust.errors import InputError, MissingDependencyError
from ragtrust.text import split_sentences, words

#: facebook/bart-large-mnli's architecture (its config.json), the paper's reference NLI model
BART_LARGE_MNLI: Mapping[str, Any] = {
    "vocab_size": 50265,
    "d_model": 1024,
    "encoder_layers": 12,
    "decoder_layers": 12,
    "encoder_attention_heads": 16,
    "decoder_attention_heads": 16,
    "encoder_ffn_dim": 4096,
    "decoder_ffn_dim": 4096,
    "max_position_embeddings": 1024,
    "num_labels": 3,
}
#: BART's special tokens around a pair: <s> premise </s></s> hypothesis </s>
PAIR_SPECIAL_TOKENS = 4
MIN_HALF_WORDS = 5
MAX_CROSS_PAIRS = 10


@dataclass(frozen=True)
class PaperPass:
    """One NLI forward pass of the paper's verifier: which check, premise, hypothesis."""

    kind: str
    premise: str
    hypothesis: str


def _halves(text: str) -> tuple[str, str] | None:
    """First and second half of ``text`` by sentence count, or ``None`` when a half is too short."""
    sentences = [s.text for s in split_sentences(text)]
    if len(sentences) < 2:
        return None
    middle = len(sentences) // 2
    first, second = " ".join(sentences[:middle]), " ".join(sentences[middle:])
    if len(words(first)) < MIN_HALF_WORDS or len(words(second)) < MIN_HALF_WORDS:
        return None
    return first, second


def paper_passes(
    answer: str, documents: Sequence[str], *, max_cross: int = MAX_CROSS_PAIRS, answer_twice: bool = True
) -> list[PaperPass]:
    """The NLI passes the paper's verifier runs for one query (module docstring).

    Raises:
        InputError: ``answer`` or a document is not a string, or ``max_cross`` is negative.
    """
    if not isinstance(answer, str):
        raise InputError(f"answer must be a string, got {type(answer).__name__}")
    if isinstance(documents, str) or not all(isinstance(d, str) for d in documents):
        raise InputError("documents must be a sequence of strings")
    if isinstance(max_cross, bool) or max_cross < 0:
        raise InputError(f"max_cross must be a non-negative integer, got {max_cross!r}")
    passes = [PaperPass("intra", *halves) for d in documents if (halves := _halves(d)) is not None]
    pairs = [(a, b) for i, a in enumerate(documents) for b in documents[i + 1 :]][:max_cross]
    passes.extend(PaperPass("cross", a, b) for a, b in pairs)
    for _ in range(2 if answer_twice else 1):
        passes.extend(PaperPass("answer", d, answer) for d in documents if answer)
    return passes


@dataclass(frozen=True)
class PaperCost:
    """Seconds the passes of one query took, with their token lengths."""

    seconds: float
    passes: int
    tokens: tuple[int, ...]
    seconds_by_kind: Mapping[str, float] = field(default_factory=dict)


@dataclass
class ShapeTimer:
    """Times passes on a randomly initialised BART of ``config``'s shape (torch, CPU, batch 1).

    Args:
        count_tokens: tokens of one text (the benchmarks pass the shipped NLI model's counter).
        config: ``transformers.BartConfig`` fields (default: bart-large-mnli's).
        threads: torch intra-op threads.
        seed: for the weights and the token ids.
    """

    count_tokens: Callable[[str], int]
    config: Mapping[str, Any] = field(default_factory=lambda: dict(BART_LARGE_MNLI))
    threads: int = 2
    seed: int = 0
    _model: Any = field(default=None, init=False, repr=False)

    @property
    def max_length(self) -> int:
        """The longest input the model reads (1,024 for BART)."""
        return int(self.config.get("max_position_embeddings", 1024))

    def warm_up(self) -> None:
        """Build the model (seconds for bart-large; not counted in any pass)."""
        if self._model is not None:
            return
        try:
            import torch
            from transformers import BartConfig, BartForSequenceClassification
        except ImportError as exc:
            raise MissingDependencyError(
                "timing the paper's configuration (torch, transformers)", "pip install 'ragtrust[train]'"
            ) from exc
        torch.manual_seed(self.seed)
        torch.set_num_threads(self.threads)
        model: Any = BartForSequenceClassification(BartConfig(**self.config))
        self._model = model.eval()
        self._forward(8)  # first-call allocations out of the measured passes

    def length(self, item: PaperPass) -> int:
        """Tokens the model reads for ``item``, truncated at its maximum."""
        total = self.count_tokens(item.premise) + self.count_tokens(item.hypothesis) + PAIR_SPECIAL_TOKENS
        return min(self.max_length, total)

    def _forward(self, length: int) -> None:
        import torch

        generator = torch.Generator().manual_seed(self.seed + length)
        vocab = int(self.config.get("vocab_size", 50265))
        ids = torch.randint(4, vocab, (1, length), generator=generator)
        ids[0, -1] = int(self.config.get("eos_token_id", 2))  # BART classifies at the final </s>
        with torch.inference_mode():
            self._model(input_ids=ids)

    def time(self, passes: Sequence[PaperPass]) -> PaperCost:
        """Run every pass once, one at a time, and return the wall time (no cache, as in the paper)."""
        self.warm_up()
        lengths = tuple(self.length(p) for p in passes)
        by_kind: dict[str, float] = {}
        total = 0.0
        for item, length in zip(passes, lengths, strict=True):
            t0 = time.perf_counter()
            self._forward(length)
            spent = time.perf_counter() - t0
            total += spent
            by_kind[item.kind] = by_kind.get(item.kind, 0.0) + spent
        return PaperCost(seconds=total, passes=len(passes), tokens=lengths, seconds_by_kind=by_kind)


__all__ = ["BART_LARGE_MNLI", "PaperCost", "PaperPass", "ShapeTimer", "paper_passes"]
