"""The 3-layer embedder distillation (issue 20's fewer-layer variant), on a tiny BERT."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ragtrust.errors import InputError
from ragtrust.training.embedder import DistillConfig, nli_sentences, passages

WORDS = "the key must rotate every year while old tokens expire after one hour unless revoked".split()


def _texts(n: int) -> list[str]:
    return [" ".join(WORDS[(i * 3 + k) % len(WORDS)] for k in range(4 + i % 9)) + "." for i in range(n)]


def test_passages_use_each_sentence_once_and_are_seeded() -> None:
    sentences = [f"sentence {i}." for i in range(200)]
    made = passages(sentences, n=1000, seed=3, max_sentences=6)
    used = [s for p in made for s in p.split(". ") if s]
    assert len(used) == 200 and len(set(used)) == 200  # every sentence once, none twice
    assert max(len(p.split(". ")) for p in made) <= 6
    assert passages(sentences, n=1000, seed=3, max_sentences=6) == made
    assert passages(sentences, n=1000, seed=4, max_sentences=6) != made
    assert len(passages(sentences, n=5, seed=3)) == 5


def test_nli_sentences_are_distinct_and_a_missing_file_is_named(tmp_path: Path) -> None:
    row = {"premise": "A  man rides.", "hypothesis": "A man rides.", "label": "entailment"}
    for name in ("vitaminc.jsonl", "lingnli.jsonl", "cad_snli.jsonl"):
        (tmp_path / name).write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError, match=r"snli_dev\.jsonl: not found"):
        nli_sentences(tmp_path)
    (tmp_path / "snli_dev.jsonl").write_text(json.dumps({**row, "hypothesis": "Nobody rides."}) + "\n")
    assert nli_sentences(tmp_path) == ["A man rides.", "Nobody rides."]


def test_a_tiny_student_learns_the_teacher_and_resumes(tiny_injection_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from transformers import AutoConfig

    from ragtrust.training.embedder import distill

    out = tmp_path / "run"
    cfg = DistillConfig(
        out_dir=str(out),
        base_model=str(tiny_injection_dir),
        data_dir="unused",
        keep_layers=(1,),
        val_passages=16,
        batch_size=8,
        max_steps=24,
        lr=5e-3,
        warmup_frac=0.0,
        log_every=1,
        checkpoint_every_min=0.0,
    )
    texts = _texts(80)
    untrained = distill(replace(cfg, out_dir=str(tmp_path / "zero"), max_steps=1, lr=0.0), texts=texts)
    assert distill(cfg, texts=texts, stop_after_steps=10) == {"interrupted_at": 10}
    assert (out / "checkpoint.pt").exists() and (out / "teacher.npy").exists() and not (out / "final").exists()
    lines: list[str] = []
    report = distill(cfg, log=lines.append, texts=texts)
    assert any(line.startswith("resumed from step 10 of 24") for line in lines), lines[:3]
    assert report["steps"] == 24
    assert report["val_cosine_to_teacher"]["mean"] > untrained["val_cosine_to_teacher"]["mean"] + 0.05
    assert AutoConfig.from_pretrained(out / "final").num_hidden_layers == 1
    # each passage's vector is nearest its own teacher vector, not merely the teachers' mean
    import numpy as np
    from transformers import AutoModel, AutoTokenizer

    from ragtrust.training.embedder import _vectors

    tok = AutoTokenizer.from_pretrained(out / "final")
    student = _vectors(
        AutoModel.from_pretrained(out / "final"), lambda b: dict(tok(b, padding=True, return_tensors="pt")), texts
    )
    teacher = np.load(out / "teacher.npy")
    own = (student * teacher).sum(1).mean()
    assert own > (student * np.roll(teacher, 7, axis=0)).sum(1).mean() + 0.02


def test_kept_teacher_vectors_are_reused_only_for_the_same_passages(tiny_injection_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from ragtrust.training.embedder import distill

    cfg = DistillConfig(
        out_dir=str(tmp_path / "run"),
        base_model=str(tiny_injection_dir),
        data_dir="unused",
        keep_layers=(1,),
        val_passages=4,
        max_steps=1,
    )
    lines: list[str] = []
    distill(cfg, log=lines.append, texts=_texts(12))
    assert sum("teacher vectors:" in line for line in lines) == 1
    lines.clear()
    distill(replace(cfg, out_dir=str(tmp_path / "run")), log=lines.append, texts=_texts(12))
    assert not any("teacher vectors:" in line for line in lines)  # kept, same passages
    other = replace(cfg, out_dir=str(tmp_path / "other"))
    distill(other, texts=_texts(12))
    with pytest.raises(InputError, match="trained on other data"):
        distill(other, log=lines.append, texts=list(reversed(_texts(12))))  # a resume on other passages


def test_keep_layers_must_be_increasing_indices_of_the_base(tiny_injection_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from ragtrust.training.embedder import distill

    for keep in ((2,), (1, 0), ()):
        cfg = DistillConfig(
            out_dir=str(tmp_path / f"run{len(keep)}{keep[:1]}"),
            base_model=str(tiny_injection_dir),
            data_dir="unused",
            keep_layers=keep,
            val_passages=4,
            max_steps=1,
        )
        with pytest.raises(InputError, match="keep_layers"):
            distill(cfg, texts=_texts(12))
