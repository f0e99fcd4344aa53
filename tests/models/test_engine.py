"""NLIEngine: batching, dedup, LRU + persisted cache, windowing; the fakes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtrust.errors import InputError, ModelError
from ragtrust.models.nli import NLIEngine
from ragtrust.testing import LexicalNLI, RaisingNLI


def test_engine_dedups_and_caches_across_calls() -> None:
    fake = LexicalNLI()
    engine = NLIEngine(fake)
    pairs = [("The cat sat on the mat.", "The cat sat on the mat."), ("A dog barks.", "The cat sat.")]
    first = engine.predict(pairs + pairs)
    assert first.shape == (4, 3)
    assert fake.pairs_seen == 2 and fake.calls == 1  # duplicates sent once, one batched call
    np.testing.assert_allclose(first[:2], first[2:])
    engine.predict(pairs)
    assert fake.calls == 1 and engine.cache_hits >= 2


def test_engine_persists_cache(tmp_path: Path) -> None:
    path = tmp_path / "nli.sqlite"
    fake = LexicalNLI()
    NLIEngine(fake, cache_path=str(path)).predict([("Paris is in France.", "Paris is in France.")])
    again = LexicalNLI()
    NLIEngine(again, cache_path=str(path)).predict([("Paris is in France.", "Paris is in France.")])
    assert again.calls == 0


def test_engine_windows_and_picks_entailing_window() -> None:
    filler = " ".join(f"Filler sentence number {i} is about gardening and weather." for i in range(40))
    premise = filler + " Argon2id is the recommended password hashing algorithm."
    engine = NLIEngine(LexicalNLI(), max_premise_tokens=60)
    (pred,) = engine.predict_windows([(premise, "Argon2id is the recommended password hashing algorithm.")])
    assert len(pred.windows) > 3
    start, end = pred.windows[pred.best]
    assert "Argon2id" in premise[start:end]
    assert pred.row[0] > 0.8


def test_engine_propagates_model_errors_and_rejects_bad_pairs() -> None:
    with pytest.raises(ModelError):
        NLIEngine(RaisingNLI()).predict([("a", "b")])
    with pytest.raises(InputError):
        NLIEngine(LexicalNLI()).predict([("a", None)])  # type: ignore[list-item]
    assert NLIEngine(LexicalNLI()).predict([]).shape == (0, 3)


def test_lexical_fake_behaves_like_nli() -> None:
    nli = LexicalNLI()
    probs = nli.predict(
        [
            ("The cat sat on the mat.", "The cat sat on the mat."),
            ("Use keys of 2048 bits.", "Use keys of 1024 bits."),
            ("The cat sat on the mat.", "Quantum chromodynamics explains quarks."),
        ]
    )
    assert probs[0].argmax() == 0 and probs[1].argmax() == 2 and probs[2].argmax() == 1
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-6)
