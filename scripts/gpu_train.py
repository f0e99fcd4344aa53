"""Train the NLI and injection models on a borrowed GPU machine, and bring the weights home.

The machine that lends the GPU takes a small working tree (64 MiB) and gives back a few small
files (16 MiB each), so the run is split in three steps:

1. here, where the corpora are: build each data set once (``ragtrust nli train --save-data``,
   ``ragtrust injection train --save-data``) and write the base model in half precision:

       python scripts/gpu_train.py half-base --out .gpu/base

2. there: widen the base back to fp32, train with the word-piece embeddings frozen (they are
   half the weights and stay the base's), and pack the trained weights (fp16, without the
   frozen matrix) into parts:

       python scripts/gpu_train.py widen .gpu/base /tmp/base
       python scripts/gpu_train.py train nli --data-file .gpu/nli.jsonl.xz --base /tmp/base \\
           --out /tmp/nli --device cuda --epochs 5 --budget-min 6 --lr 5e-5
       python scripts/gpu_train.py pack /tmp/nli --base /tmp/base --dest $OUT --name nli

3. here again: rebuild the Hugging Face folder from the parts and the same half-precision
   base, as a run folder that ``ragtrust nli export`` / ``scripts/nli_release.py`` read:

       python scripts/gpu_train.py unpack --parts DIR --name nli --base .gpu/base --out runs/nli-gpu

Both models are fine-tuned by the project's own training loops (``ragtrust.training``); this
script only moves weights. The base weights are rounded to fp16 once, on both sides alike, so
the frozen embeddings the model trained with are exactly the ones it is rebuilt with.
"""

from __future__ import annotations

import argparse
import json
import lzma
import platform
import shutil
import sys
from pathlib import Path
from typing import Any, NoReturn

#: the files of the packaged base model that a Hugging Face folder needs besides the weights
BASE_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
#: the largest part written by ``pack`` (the lender returns files of at most 16 MiB)
PART_BYTES = 15 * 1024 * 1024
WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"


def _fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)  # noqa: T201 - a script's one-line error
    raise SystemExit(1)


def _copy_base_files(src: Path, out: Path) -> None:
    if not (src / "config.json").exists():
        _fail(f"{src}: not a Hugging Face model folder (no config.json)")
    out.mkdir(parents=True, exist_ok=True)
    for name in BASE_FILES:
        if (src / name).exists():
            shutil.copyfile(src / name, out / name)


def _cast(tensor: Any, kind: str) -> Any:
    """A floating tensor in half or single precision; any other (position ids) unchanged."""
    if not tensor.is_floating_point():
        return tensor.contiguous()
    return (tensor.half() if kind == "half" else tensor.float()).contiguous()


def half_base(out: Path, base: Path | None = None) -> None:
    """Write ``base`` (default: the packaged all-MiniLM-L6-v2) with its weights rounded to fp16."""
    from safetensors.torch import load_file, save_file

    from ragtrust.cli.common import base_model_or_default

    base = base_model_or_default(base)
    _copy_base_files(base, out)
    weights = load_file(str(base / "model.safetensors"))
    tmp = out / "model.safetensors"
    save_file({k: _cast(v, "half") for k, v in weights.items()}, str(tmp))
    with tmp.open("rb") as src, lzma.open(out / "model.safetensors.xz", "wb", preset=6) as dst:
        shutil.copyfileobj(src, dst)
    tmp.unlink()


def widen(half: Path, out: Path) -> None:
    """The fp16 base of ``half-base`` as an fp32 Hugging Face folder (what training loads)."""
    from safetensors.torch import load, save_file

    _copy_base_files(half, out)
    with lzma.open(half / "model.safetensors.xz", "rb") as src:
        weights = load(src.read())
    save_file({k: _cast(v, "float") for k, v in weights.items()}, str(out / "model.safetensors"))


def _log(line: str) -> None:
    print(line, flush=True)  # noqa: T201 - the run's log


def train(kind: str, a: argparse.Namespace) -> None:
    """One training run by the project's loop, from a prepared data file."""
    common: dict[str, Any] = {
        "out_dir": a.out,
        "base_model": a.base,
        "data_file": a.data_file,
        "freeze_word_embeddings": True,
        "epochs": a.epochs,
        "max_steps": a.max_steps,
        "time_budget_min": a.budget_min,
        "lr": a.lr,
        "seed": a.seed,
        "device": a.device,
        "threads": a.threads,
    }
    if kind == "nli":
        from ragtrust.training.nli import TrainConfig
        from ragtrust.training.nli import train as run_nli

        run_nli(TrainConfig(data_dir="", **common), log=_log)
    else:
        from ragtrust.training.injection import InjectionTrainConfig
        from ragtrust.training.injection import train as run_injection
        from ragtrust.training.injection_data import DataConfig

        run_injection(InjectionTrainConfig(data=DataConfig(data_dir=""), **common), log=_log)


def pack(run: Path, base: Path, dest: Path, name: str) -> None:
    """The trained weights that differ from the base's frozen matrix, as fp16 parts, and the report."""
    import torch
    from safetensors.torch import load_file, save_file

    weights = load_file(str(run / "final" / "model.safetensors"))
    base_weights = load_file(str(base / "model.safetensors"))
    frozen = [k for k in weights if k.endswith(WORD_EMBEDDINGS)]
    base_keys = [k for k in base_weights if k.endswith(WORD_EMBEDDINGS)]
    if len(frozen) != 1 or len(base_keys) != 1:
        _fail(f"{run} / {base}: expected one word-embedding matrix each, found {frozen} / {base_keys}")
    trained, original = weights[frozen[0]], base_weights[base_keys[0]]
    if trained.shape != original.shape:
        _fail(f"{run}: word embeddings of shape {tuple(trained.shape)}, the base's {tuple(original.shape)}")
    if not torch.equal(trained, original):
        _fail(f"{run}: the word embeddings changed in training; they were meant to be frozen")
    dest.mkdir(parents=True, exist_ok=True)
    parts: list[dict[str, Any]] = [{}]
    size = 0
    for key in sorted(k for k in weights if k != frozen[0]):
        tensor = weights[key].half().contiguous()
        nbytes = tensor.numel() * 2
        if size + nbytes > PART_BYTES and parts[-1]:
            parts.append({})
            size = 0
        parts[-1][key] = tensor
        size += nbytes
    for i, part in enumerate(parts):
        save_file(part, str(dest / f"{name}.w{i}.safetensors"))
    report = json.loads((run / "train_report.json").read_text())
    report["packed"] = {
        "parts": len(parts),
        "frozen": frozen[0],
        "config": json.loads((run / "final" / "config.json").read_text()),
        "torch": torch.__version__,
        "device_name": torch.cuda.get_device_name(0) if torch.cuda.is_available() else platform.processor(),
        "python": platform.python_version(),
    }
    try:
        import transformers

        report["packed"]["transformers"] = transformers.__version__
    except ImportError:  # pragma: no cover - training needed it
        pass
    (dest / f"{name}.report.json").write_text(json.dumps(report, indent=2))


def unpack(parts_dir: Path, name: str, base: Path, out: Path) -> None:
    """Rebuild ``out/final`` (HF folder) and ``out/train_report.json`` from packed parts and the fp16 base."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    report = json.loads((parts_dir / f"{name}.report.json").read_text())
    packed = report["packed"]
    config = packed["config"]
    wide = out / "base-fp32"
    try:
        widen(base, wide)
        model = AutoModelForSequenceClassification.from_pretrained(
            str(wide),
            num_labels=len(config["id2label"]),
            id2label={int(k): v for k, v in config["id2label"].items()},
            label2id=config["label2id"],
            dtype=torch.float32,
        )
        state: dict[str, Any] = {}
        for i in range(int(packed["parts"])):
            state.update({k: v.float() for k, v in load_file(str(parts_dir / f"{name}.w{i}.safetensors")).items()})
        missing, unexpected = model.load_state_dict(state, strict=False)
        if unexpected or [k for k in missing if not k.endswith(WORD_EMBEDDINGS)]:
            _fail(f"{parts_dir}: weights do not fit the base model (missing {missing}, unexpected {unexpected})")
        final = out / "final"
        model.save_pretrained(final)
        AutoTokenizer.from_pretrained(str(wide)).save_pretrained(final)
    finally:
        shutil.rmtree(wide, ignore_errors=True)
    (out / "train_report.json").write_text(json.dumps(report, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("half-base")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--base", type=Path, help="default: the packaged all-MiniLM-L6-v2")
    p = sub.add_parser("widen")
    p.add_argument("half", type=Path)
    p.add_argument("out", type=Path)
    p = sub.add_parser("train")
    p.add_argument("kind", choices=("nli", "injection"))
    p.add_argument("--data-file", required=True)
    p.add_argument("--base", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--epochs", type=float, required=True)
    p.add_argument("--budget-min", type=float)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--max-steps", type=int)
    p = sub.add_parser("pack")
    p.add_argument("run", type=Path)
    p.add_argument("--base", type=Path, required=True)
    p.add_argument("--dest", type=Path, required=True)
    p.add_argument("--name", required=True)
    p = sub.add_parser("unpack")
    p.add_argument("--parts", type=Path, required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--base", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    if a.cmd == "half-base":
        half_base(a.out, a.base)
    elif a.cmd == "widen":
        widen(a.half, a.out)
    elif a.cmd == "train":
        train(a.kind, a)
    elif a.cmd == "pack":
        pack(a.run, a.base, a.dest, a.name)
    else:
        unpack(a.parts, a.name, a.base, a.out)


if __name__ == "__main__":
    main()
