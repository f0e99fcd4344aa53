"""NLI training: derived pairs, batching, calibration, and a tiny resumable run."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from ragtrust.training.loop import expected_calibration_error, fit_temperature, length_bucketed_batches
from ragtrust.training.nli_data import (
    LABEL_TO_ID,
    NOT_ENTAILMENT,
    Pair,
    TrainConfig,
    _clauses,
    _exception_pairs,
    build_dataset,
    derive_rag_pairs,
    is_scene_contradiction,
    negate,
)

ROWS = [
    ("Port 443 carries HTTPS traffic for 12 services; the firewall is open to it.", "HTTPS uses port 443."),
    ("The museum opened in 1931 and holds 4000 paintings. It is closed on Mondays.", "The museum is old."),
    ("Three children are playing football in a park near the river bank.", "Kids are outside."),
    ("A woman is reading a long novel on the train to work every morning.", "A man is sleeping."),
    ("The bridge was built in 1890 and spans 520 metres across the bay.", "The bridge is new."),
    ("Tokens must be rotated every 90 days by the platform team.", "Tokens are rotated."),
]


def _write_data(root: Path) -> Path:
    train = root / "train"
    train.mkdir(parents=True)
    labels = ["entailment", "neutral", "contradiction"]
    with (train / "toy.jsonl").open("w") as f:
        for i, (p, h) in enumerate(ROWS * 6):
            f.write(json.dumps({"premise": p, "hypothesis": h, "label": labels[i % 3], "source": "toy"}) + "\n")
        f.write(json.dumps({"premise": "x", "hypothesis": "y", "label": "not_entailment"}) + "\n")
        f.write(json.dumps({"premise": "x", "hypothesis": "y", "label": "weird"}) + "\n")  # skipped
    return root


def test_negate_flips_polarity_both_ways() -> None:
    assert negate("Passwords must be hashed.") == "Passwords must not be hashed."
    assert negate("Passwords must not be hashed.") == "Passwords must be hashed."
    assert negate("Keys should never be stored in code.") == "Keys should always be stored in code."
    assert negate("You cannot disable TLS.") == "You can disable TLS."
    assert negate("Cats sleep.") is None


def test_clauses_split_sentences_and_semicolons_not_abbreviations() -> None:
    text = (
        "Todd S. Purdum wrote the long piece about it. "
        "Use a slow hash for passwords; never use a fast hash such as MD5."
    )
    assert _clauses(text) == [
        "Todd S. Purdum wrote the long piece about it.",
        "Use a slow hash for passwords.",
        "Never use a fast hash such as MD5.",
    ]


def test_derived_pairs_carry_the_labels_their_construction_implies() -> None:
    base = [Pair(p, h, LABEL_TO_ID["neutral"], "toy") for p, h in ROWS]
    cfg = TrainConfig(data_dir="", out_dir="", derived_context=20, derived_numbers=20, derived_unrelated=20)
    derived = derive_rag_pairs(base, cfg, random.Random(0))
    by_source: dict[str, list[Pair]] = {}
    for p in derived:
        by_source.setdefault(p.source, []).append(p)
    assert set(by_source) >= {"derived_context", "derived_number", "derived_unrelated", "derived_negation"}
    for p in by_source["derived_number"]:
        expected = "entailment" if p.premise == p.hypothesis else "contradiction"
        assert p.label == LABEL_TO_ID[expected]
    assert all(p.label == LABEL_TO_ID["neutral"] for p in by_source["derived_unrelated"])
    assert all(p.label == LABEL_TO_ID["contradiction"] for p in by_source["derived_negation"])
    assert all(p.premise != p.hypothesis for p in by_source["derived_negation"])
    for p in by_source.get("derived_clause", []):
        assert p.label == LABEL_TO_ID["entailment"]
        assert p.hypothesis.rstrip(".").lower() in p.premise.lower()


def test_exception_pairs_deny_one_hypothesis_and_keep_the_others() -> None:
    e, n, c = (LABEL_TO_ID[x] for x in ("entailment", "neutral", "contradiction"))
    premise = "A woman is reading a long novel on the train."
    base = [
        Pair(premise, "A woman is reading.", e, "toy"),
        Pair(premise, "The novel is a thriller.", n, "toy"),
        Pair(premise, "The woman is asleep.", c, "toy"),
    ]
    pairs = _exception_pairs(base, 300, random.Random(0))
    assert len(pairs) == 300
    for p in pairs:
        assert p.premise.lower().count("woman") >= 1 and " not " in p.premise
        denied_n = "novel is not a thriller" in p.premise
        denied_c = "woman is not asleep" in p.premise
        assert denied_n != denied_c  # exactly one hypothesis is denied
        if p.hypothesis == "A woman is reading.":
            assert p.label == e
        elif p.hypothesis == "The novel is a thriller.":
            assert p.label == (c if denied_n else n)
        elif p.hypothesis == "The woman is asleep.":
            assert p.label == c
        else:  # the denied clause itself
            assert p.label == e and p.hypothesis.rstrip(".").lower() in p.premise.lower()
    assert {p.label for p in pairs} == {e, n, c}


def test_scene_contradictions_are_only_snli_pairs_without_shared_words() -> None:
    c = LABEL_TO_ID["contradiction"]
    assert is_scene_contradiction(Pair("The cat sat on the mat.", "A dog is hungry.", c, "snli_dev"))
    assert not is_scene_contradiction(Pair("The cat sat on the mat.", "The cat is standing.", c, "snli_dev"))
    assert not is_scene_contradiction(Pair("The cat sat on the mat.", "A dog is hungry.", c, "lingnli"))
    assert not is_scene_contradiction(
        Pair("The cat sat on the mat.", "A dog is hungry.", LABEL_TO_ID["neutral"], "cad_snli")
    )


def test_length_buckets_cover_every_index_once() -> None:
    lengths = [random.Random(i).randint(5, 300) for i in range(1000)]
    batches = length_bucketed_batches(lengths, 32, random.Random(1), bucket_factor=4)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(1000))
    spread = np.mean([max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches])
    assert spread < 100  # similar lengths inside a batch (random batches spread ~290)


def test_temperature_scaling_reduces_ece_of_overconfident_logits() -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 3000)
    logits = rng.normal(0, 1, (3000, 3))
    logits[np.arange(3000), labels] += 1.0
    logits *= 6.0  # overconfident
    t = fit_temperature(logits, labels)
    assert t > 2.0

    def softmax(x: np.ndarray) -> np.ndarray:
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    assert expected_calibration_error(softmax(logits / t), labels) < expected_calibration_error(softmax(logits), labels)


def test_build_dataset_reads_three_way_and_two_way_labels(tmp_path: Path) -> None:
    data = _write_data(tmp_path / "data")
    cfg = TrainConfig(data_dir=str(data), out_dir="", train_files=("toy.jsonl",), val_frac=0.1)
    train, val, counts = build_dataset(cfg)
    assert len(train) + len(val) == len(ROWS) * 6 + 1 + sum(
        v for k, v in counts.items() if k.startswith("derived")
    ) + sum(1 for p in val if p.source.startswith("derived"))
    assert any(p.label == NOT_ENTAILMENT for p in train + val)
    assert counts["toy"] > 0


def test_tiny_training_run_writes_a_model_and_resumes(tiny_nli_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from ragtrust.training.nli import train

    data = _write_data(tmp_path / "data")
    out = tmp_path / "run"
    cfg = TrainConfig(
        data_dir=str(data),
        out_dir=str(out),
        base_model=str(tiny_nli_dir),
        train_files=("toy.jsonl",),
        max_steps=4,
        batch_size=8,
        max_len=64,
        log_every=2,
        checkpoint_every_min=0.0,  # checkpoint after every step
        derived_context=8,
        derived_numbers=8,
        derived_unrelated=8,
        derived_negation=8,
        derived_clause=8,
    )

    class Stop(Exception):
        pass

    def crash_at_step_2(line: str) -> None:
        if line.startswith("step 2/"):
            raise Stop

    with pytest.raises(Stop):
        train(cfg, log=crash_at_step_2)
    assert (out / "checkpoint.pt").exists() and not (out / "final").exists()
    lines: list[str] = []
    report = train(cfg, log=lines.append)
    assert any(line.startswith("resumed from step 1 of 4") for line in lines)
    assert report["steps"] == 4
    assert 0.0 <= report["val_accuracy"] <= 1.0 and report["temperature"] > 0
    config = json.loads((out / "final" / "config.json").read_text())
    assert config["id2label"] == {"0": "entailment", "1": "neutral", "2": "contradiction"}
    assert json.loads((out / "train_report.json").read_text())["steps"] == 4
