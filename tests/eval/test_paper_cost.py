"""The paper's NLI passes per query, and the timer that runs them on a model of BART's shape."""

from __future__ import annotations

import pytest

from ragtrust.errors import InputError
from ragtrust.eval.paper_cost import BART_LARGE_MNLI, PaperPass, ShapeTimer, paper_passes

LONG = (
    "Use parameterised queries for every database call. "
    "Never build SQL by concatenating strings from the request. "
    "Escape output for the context it is written to. "
    "Log failed logins with the account name and time."
)
SHORT = "Rotate keys."


def _tokens(text: str) -> int:
    return len(text.split())


def test_five_documents_cost_the_papers_twenty_five_passes() -> None:
    docs = [f"{LONG} Rule {i} applies to every service we run." for i in range(5)]
    passes = paper_passes("Use parameterised queries.", docs)
    kinds = [p.kind for p in passes]
    assert kinds.count("intra") == 5
    assert kinds.count("cross") == 10  # the 10 pairs of 5 documents, the paper's cap
    assert kinds.count("answer") == 10  # scored twice: poison and consistency
    assert len(passes) == 25
    first = passes[0]
    assert first.premise.startswith("Use parameterised") and "Escape output" in first.hypothesis
    assert passes[5] == PaperPass("cross", docs[0], docs[1])
    assert passes[-1] == PaperPass("answer", docs[4], "Use parameterised queries.")


def test_the_cross_cap_the_short_halves_and_a_missing_answer() -> None:
    docs = [LONG] * 6 + [SHORT]
    passes = paper_passes("", docs, max_cross=10, answer_twice=False)
    kinds = [p.kind for p in passes]
    assert kinds.count("intra") == 6  # the one-sentence document has no halves
    assert kinds.count("cross") == 10  # 21 pairs, capped
    assert kinds.count("answer") == 0  # no answer, nothing to check
    once = paper_passes("An answer.", [LONG, LONG], answer_twice=False)
    assert [p.kind for p in once].count("answer") == 2


@pytest.mark.parametrize(
    ("answer", "docs", "kwargs"),
    [(None, [LONG], {}), ("a", LONG, {}), ("a", [LONG, 3], {}), ("a", [LONG], {"max_cross": -1})],
)
def test_bad_input_is_one_input_error(answer: object, docs: object, kwargs: dict[str, int]) -> None:
    with pytest.raises(InputError):
        paper_passes(answer, docs, **kwargs)  # type: ignore[arg-type]


def test_lengths_count_both_texts_and_bart_special_tokens_truncated_at_the_model_maximum() -> None:
    timer = ShapeTimer(count_tokens=_tokens)
    assert timer.max_length == BART_LARGE_MNLI["max_position_embeddings"] == 1024
    assert timer.length(PaperPass("answer", "a b c", "d e")) == 3 + 2 + 4
    assert timer.length(PaperPass("cross", "w " * 900, "w " * 900)) == 1024


def test_a_tiny_bart_runs_every_pass_once_at_its_length() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    tiny = {
        **BART_LARGE_MNLI,
        "vocab_size": 64,
        "d_model": 16,
        "encoder_layers": 1,
        "decoder_layers": 1,
        "encoder_attention_heads": 2,
        "decoder_attention_heads": 2,
        "encoder_ffn_dim": 32,
        "decoder_ffn_dim": 32,
        "max_position_embeddings": 40,
    }
    timer = ShapeTimer(count_tokens=_tokens, config=tiny, threads=1)
    seen: list[int] = []
    timer.warm_up()
    forward = timer._forward
    timer._forward = lambda length: (seen.append(length), forward(length))  # type: ignore[method-assign]
    passes = paper_passes("Use parameterised queries.", [LONG, LONG + " " + LONG])
    cost = timer.time(passes)
    assert cost.passes == len(passes) == 2 + 1 + 4
    assert seen == list(cost.tokens)
    assert max(cost.tokens) == 40  # the long cross pair is truncated at the model's maximum
    assert cost.seconds > 0 and set(cost.seconds_by_kind) == {"intra", "cross", "answer"}
    assert cost.seconds == pytest.approx(sum(cost.seconds_by_kind.values()))
