"""What the NLI, injection and embedder trainings share: length-bucketed batches, a resumable AdamW run, temperature.

Needs the optional ``[train]`` extra (``torch``; :func:`fit_temperature` needs ``scipy``),
imported when a training runs.

Example:
    >>> import random
    >>> batches = length_bucketed_batches([5, 1, 4, 2, 3, 6], batch_size=2, rng=random.Random(0))
    >>> sorted(i for batch in batches for i in batch)
    [0, 1, 2, 3, 4, 5]
"""

from __future__ import annotations

import json
import lzma
import random
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from ragtrust.errors import InputError, MissingDependencyError
from ragtrust.models.embedder import missing_model_folder
from ragtrust.models.nli_eval import expected_calibration_error


def length_bucketed_batches(
    lengths: list[int], batch_size: int, rng: random.Random, bucket_factor: int = 50
) -> list[list[int]]:
    """Group indices into batches of similar length, then shuffle the batches."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    span = batch_size * bucket_factor
    for start in range(0, len(order), span):
        chunk = sorted(order[start : start + span], key=lambda i: lengths[i])
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


class _BatchPlan(Protocol):
    """What the batch order depends on (the NLI and injection training configs both have it)."""

    seed: int
    batch_size: int


class _Schedule(Protocol):
    """The optimiser settings both training configs share."""

    lr: float
    weight_decay: float
    warmup_frac: float


class _StepPlan(_BatchPlan, _Schedule, Protocol):
    """What :meth:`_ResumableRun.run_steps` reads: batch order, schedule, budget, logging, checkpoints."""

    time_budget_min: float | None
    log_every: int
    checkpoint_every_min: float


#: steps between two re-fits of the step count to the wall-clock budget
BUDGET_EVERY = 100


class _ResumableRun:
    """AdamW (no decay on biases and LayerNorm), warm-up then linear decay, a resumable checkpoint.

    The NLI and injection trainings share it: ``state`` holds ``step``, ``total_steps`` and
    ``elapsed_s``; an existing checkpoint restores the model, optimiser and state.
    """

    def __init__(
        self, model: Any, cfg: _Schedule, planned: int, ckpt_path: Path, device: Any, log: Callable[[str], None]
    ) -> None:
        import torch

        no_decay = ("bias", "LayerNorm.weight")
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        decayed = [p for n, p in named if not any(k in n for k in no_decay)]
        plain = [p for n, p in named if any(k in n for k in no_decay)]
        self.optim = torch.optim.AdamW(
            [{"params": decayed, "weight_decay": cfg.weight_decay}, {"params": plain, "weight_decay": 0.0}], lr=cfg.lr
        )
        self.model, self.cfg, self.ckpt_path, self.planned = model, cfg, ckpt_path, planned
        frozen = sorted(n for n, p in model.named_parameters() if not p.requires_grad)
        self.state: dict[str, Any] = {"step": 0, "total_steps": planned, "elapsed_s": 0.0, "frozen": frozen}
        if ckpt_path.exists():
            ckpt = torch.load(ckpt_path, map_location=device, weights_only=False)
            stored = ckpt["state"].get("frozen", [])  # older checkpoints trained every weight
            if stored != frozen:
                was = "with " + ", ".join(stored) + " frozen" if stored else "with every weight trained"
                raise InputError(
                    f"{ckpt_path} was trained {was}; rerun with the same --freeze-word-embeddings choice "
                    "or use a new --out"
                )
            model.load_state_dict(ckpt["model"])
            try:
                self.optim.load_state_dict(ckpt["optim"])
            except ValueError as exc:
                raise InputError(f"{ckpt_path}: its optimiser state does not fit this model ({exc})") from exc
            self.state = {**ckpt["state"], "frozen": frozen}
            log(f"resumed from step {self.state['step']} of {self.state['total_steps']}")

    def bind_data(self, recipe: dict[str, Any], log: Callable[[str], None]) -> None:
        """Record the data recipe in the run, or refuse to resume with a different one.

        A resumed run replays the batch order of the data it started with; other data (say,
        a development family no longer left out) would silently change what it learns.
        ``data_dir`` is not compared (the same folder may be reached by another path). A
        checkpoint written before recipes were recorded adopts this one, with a warning.
        """
        current = json.loads(json.dumps({k: v for k, v in recipe.items() if k != "data_dir"}))
        stored = self.state.get("data")
        if stored is None:
            if self.state["step"]:
                log(f"warning: the checkpoint at step {self.state['step']} recorded no data recipe; assuming this one")
            self.state["data"] = current
            return
        changed = sorted(k for k in set(stored) | set(current) if stored.get(k) != current.get(k))
        if changed:
            detail = ", ".join(f"{k}: {stored.get(k)!r} -> {current.get(k)!r}" for k in changed)
            raise InputError(
                f"{self.ckpt_path} was trained on other data ({detail}); rerun with the same options or use a new --out"
            )

    def lr_at(self, step: int) -> float:
        """Linear warm-up over ``warmup_frac`` of the steps, then linear decay to 0."""
        total = int(self.state["total_steps"])
        warm = max(1, int(total * self.cfg.warmup_frac))
        if step < warm:
            return self.cfg.lr * (step + 1) / warm
        return float(self.cfg.lr * max(0.0, (total - step) / max(1, total - warm)))

    def set_lr(self) -> None:
        """Apply the learning rate of the current step."""
        for g in self.optim.param_groups:
            g["lr"] = self.lr_at(self.state["step"])

    def step(self, loss: Any) -> float:
        """One optimiser step on ``loss`` (learning rate of the step, gradients clipped at 1.0); its value."""
        import torch

        self.set_lr()
        self.optim.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optim.step()
        self.state["step"] += 1
        return float(loss.detach())

    def fit_budget(self, budget_min: float, planned: int, rate: float) -> None:
        """Re-fit ``total_steps`` to a wall-clock budget from the recent step rate (steps per second).

        The machine is shared, so the rate drifts; 6% of the budget is kept for validation
        and saving, and the count never exceeds ``planned``.
        """
        remaining = budget_min * 60 * 0.94 - self.state["elapsed_s"]
        fit = self.state["step"] + max(1, int(rate * remaining))
        self.state["total_steps"] = max(self.state["step"] + 1, min(planned, fit))

    def progress(self, mean_loss: float) -> str:
        """The progress line: step of total, mean loss since the last line, learning rate, minutes."""
        step = self.state["step"]
        return (
            f"step {step}/{self.state['total_steps']} loss {mean_loss:.4f} "
            f"lr {self.lr_at(step):.2e} elapsed {self.state['elapsed_s'] / 60:.1f} min"
        )

    def run_steps(
        self,
        lengths: list[int],
        cfg: _StepPlan,
        loss_of: Callable[[list[int]], Any],
        log: Callable[[str], None],
        stop_after_steps: int | None = None,
    ) -> bool:
        """Train until ``total_steps``: the loop the NLI, injection and embedder trainings share.

        Batches of indices come from :func:`_epoch_stream` over ``lengths`` (replayed up to the
        checkpoint's step, so a resumed run sees the batches an uninterrupted one would);
        ``loss_of(batch)`` is the batch's loss. Every :data:`BUDGET_EVERY` steps the step count
        is re-fitted to ``cfg.time_budget_min`` (if set); a progress line every
        ``cfg.log_every`` steps; a checkpoint every ``cfg.checkpoint_every_min`` minutes and at
        the end. ``stop_after_steps`` stops early, as an interruption would: True then.
        """
        state = self.state
        stream = _epoch_stream(lengths, cfg)
        for _ in range(state["step"]):
            next(stream)
        self.model.train()
        start = time.monotonic() - state["elapsed_s"]
        last_ckpt = window_start = time.monotonic()
        running, seen = 0.0, 0
        while state["step"] < state["total_steps"]:
            running += self.step(loss_of(next(stream)))
            seen += 1
            now = time.monotonic()
            state["elapsed_s"] = now - start
            if state["step"] % BUDGET_EVERY == 0:
                if cfg.time_budget_min:
                    rate = BUDGET_EVERY / max(1e-6, now - window_start)
                    self.fit_budget(cfg.time_budget_min, self.planned, rate)
                    log(f"{rate:.2f} steps/s -> total_steps {state['total_steps']}")
                window_start = now
            if state["step"] % cfg.log_every == 0:
                log(self.progress(running / max(1, seen)))
                running, seen = 0.0, 0
            if now - last_ckpt > cfg.checkpoint_every_min * 60:
                self.save()
                last_ckpt = now
            if stop_after_steps is not None and state["step"] >= stop_after_steps:
                self.save()
                return True
        self.save()
        return False

    def save(self) -> None:
        """Write the checkpoint atomically."""
        import torch

        tmp = self.ckpt_path.with_suffix(".tmp")
        torch.save({"model": self.model.state_dict(), "optim": self.optim.state_dict(), "state": self.state}, tmp)
        tmp.replace(self.ckpt_path)


#: the first line of a prepared data file names its format
PREPARED_FORMAT = "ragtrust-training-data/1"


def write_prepared(path: str | Path, kind: str, recipe: dict[str, Any], rows: Iterable[dict[str, Any]]) -> int:
    """Write a built training set as xz-compressed JSON lines: a header, then one row per example.

    The data is built once where the corpora are (``--save-data``) and trained on elsewhere,
    a GPU machine say (``--data-file``); the header keeps the recipe that built it, so the
    training report records it. Returns the number of rows written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    n = 0
    try:
        with lzma.open(tmp, "wt", encoding="utf-8") as handle:
            handle.write(json.dumps({"format": PREPARED_FORMAT, "kind": kind, "recipe": recipe}) + "\n")
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return n


def read_prepared(path: str | Path, kind: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The recipe and rows of a file written by :func:`write_prepared` for ``kind`` (InputError otherwise)."""
    source = Path(path)
    try:
        with lzma.open(source, "rt", encoding="utf-8") as handle:
            header = json.loads(handle.readline() or "null")
            if not isinstance(header, dict) or header.get("format") != PREPARED_FORMAT:
                raise InputError(f"{source}: not a prepared training-data file (write one with --save-data)")
            if header.get("kind") != kind:
                raise InputError(f"{source}: prepared for {header.get('kind')!r} training, not {kind!r}")
            rows = [json.loads(line) for line in handle if line.strip()]
    except (OSError, lzma.LZMAError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{source}: cannot read prepared training data ({exc})") from exc
    recipe = header.get("recipe")
    if not isinstance(recipe, dict) or not all(isinstance(r, dict) for r in rows):
        raise InputError(f"{source}: a prepared training-data file holds a recipe object and one object per row")
    return recipe, rows


def data_file_recipe(path: str | Path, recipe: dict[str, Any]) -> dict[str, Any]:
    """``recipe`` plus the sha256 of the data file: a resumed run must train on the same bytes."""
    import hashlib

    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {**recipe, "data_file_sha256": digest.hexdigest()}


def freeze_word_embeddings(model: Any) -> int:
    """Stop training the word-piece embedding matrix; the number of weights frozen.

    A frozen matrix stays the base model's, so a run's trained weights travel without it
    (about half of MiniLM's 22.7M weights), and rare word pieces do not drift.
    """
    weight = model.get_input_embeddings().weight
    weight.requires_grad_(False)
    return int(weight.numel())


def check_run_options(cfg: Any) -> None:
    """Reject a training run's impossible options before minutes of data building and model loading.

    ``cfg`` is an ``nli`` or ``injection`` training config: positive epochs, learning rate,
    batch size and threads, a step limit and budget above zero when given, and a base model
    and warm-start model that transformers can load (:func:`check_model_source`).

    Raises:
        InputError: the first bad option, named as on the command line.
    """
    positive = {"--epochs": cfg.epochs, "--lr": cfg.lr, "--threads": cfg.threads, "batch size": cfg.batch_size}
    optional = {"--max-steps": cfg.max_steps, "--budget-min": cfg.time_budget_min}
    for option, value in [*positive.items(), *((k, v) for k, v in optional.items() if v is not None)]:
        if not value > 0:
            raise InputError(f"{option} must be above 0, got {value}")
    for option, name in (("--base-model", cfg.base_model), ("--init-from", cfg.init_from)):
        if name:
            check_model_source(option, str(name))


def check_model_source(option: str, name: str) -> None:
    """``name`` (a folder or a Hugging Face id) has a model configuration transformers can read, here and now.

    Reads only the configuration (a folder's ``config.json``, or the id's in the local Hugging
    Face cache; the network when the user allows it), so a typo fails in a second, not after
    the data is built.
    """
    from transformers import AutoConfig

    if missing_model_folder(name):
        raise InputError(f"{option} {name}: no such model folder")
    try:
        AutoConfig.from_pretrained(name)
    except (OSError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{option} {name}: cannot load a model from it ({reason})") from None


def use_device(name: str) -> Any:
    """The torch device for ``name``; on CUDA, TF32 matrix products (the report's ``matmul_precision``)."""
    import torch

    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise InputError(f"--device {name}: not a torch device (cpu, cuda, cuda:1, ...)") from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(f"--device {name}: no CUDA device is visible to torch")
        torch.set_float32_matmul_precision("high")
    return device


def _epoch_stream(lengths: list[int], cfg: _BatchPlan) -> Iterator[list[int]]:
    epoch = 0
    while True:
        rng = random.Random(cfg.seed * 1000 + epoch)
        yield from length_bucketed_batches(lengths, cfg.batch_size, rng)
        epoch += 1


def predict_logits(model: Any, encode: Callable[[list[Any]], dict[str, Any]], items: list[Any], width: int) -> Any:
    """The model's logits over ``items`` in batches of 64, as a float numpy array (``width`` columns when empty)."""
    import numpy as np
    import torch

    model.eval()
    chunks = []
    with torch.inference_mode():
        for i in range(0, len(items), 64):
            chunks.append(model(**encode(items[i : i + 64])).logits.float().cpu().numpy())
    return np.concatenate(chunks) if chunks else np.zeros((0, width), dtype=np.float32)


def softmax(x: Any) -> Any:
    """Row-wise softmax of a numpy array."""
    import numpy as np

    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def save_final(model: Any, tokenizer: Any, out: Path, report: dict[str, Any]) -> None:
    """Write the trained model and tokenizer to ``out/final`` and the report to ``out/train_report.json``."""
    final = out / "final"
    model.save_pretrained(final)
    tokenizer.save_pretrained(final)
    (out / "train_report.json").write_text(json.dumps(report, indent=2))


def fit_temperature(logits: Any, labels: Any) -> float:
    """Temperature minimising the negative log-likelihood (bounded scalar search)."""
    import numpy as np

    try:
        from scipy.optimize import minimize_scalar
        from scipy.special import log_softmax
    except ImportError as exc:
        raise MissingDependencyError("temperature scaling (SciPy)", "pip install 'ragtrust[train]'") from exc

    def nll(t: float) -> float:
        lp = log_softmax(logits / t, axis=1)
        return float(-lp[np.arange(len(labels)), labels].mean())

    result = minimize_scalar(nll, bounds=(0.05, 10.0), method="bounded")
    return float(result.x)


__all__ = [
    "expected_calibration_error",
    "data_file_recipe",
    "fit_temperature",
    "freeze_word_embeddings",
    "length_bucketed_batches",
    "predict_logits",
    "read_prepared",
    "save_final",
    "softmax",
    "use_device",
    "write_prepared",
]
