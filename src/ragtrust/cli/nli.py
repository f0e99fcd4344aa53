"""``ragtrust nli PREMISE HYPOTHESIS`` plus ``nli eval``, ``train``, ``export`` and ``calibrate``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ragtrust.cli.common import (
    BaseModelOption,
    BudgetOption,
    ConfigOption,
    DataFileOption,
    DeviceOption,
    FreezeEmbeddingsOption,
    LrOption,
    MaxStepsOption,
    PredictByDefault,
    SaveDataOption,
    ThreadsOption,
    TrainSeedOption,
    base_model_or_default,
    check_data_options,
    console,
    export_checkpoint,
    handle_errors,
    print_json,
    settings_from,
    train_extra,
)
from ragtrust.errors import InputError
from ragtrust.eval.datasets import data_folder
from ragtrust.record import cli_command

_PredictByDefault = PredictByDefault  # the old name


nli_app = typer.Typer(
    cls=PredictByDefault,
    help="NLI model: predict a pair, evaluate on labelled data, train, export, calibrate screening thresholds.",
    no_args_is_help=True,
)


def _model(model: str | None, config: Path | None) -> Any:
    from ragtrust.models.nli import default_nli

    settings = settings_from(config, {"models": {"nli": model}} if model else None)
    return default_nli(settings)


@nli_app.command("predict")
@handle_errors
def predict(
    premise: str = typer.Argument(..., help="The premise (e.g. a document)."),
    hypothesis: str = typer.Argument(..., help="The hypothesis (e.g. an answer sentence)."),
    model: str | None = typer.Option(None, "--model", help="'builtin' or an HF model id / local path."),
    as_json: bool = typer.Option(False, "--json"),
    config: Path | None = ConfigOption,
) -> None:
    """Entailment / neutral / contradiction probabilities of one pair."""
    if not premise.strip() or not hypothesis.strip():
        raise InputError("premise and hypothesis must both be non-empty")
    engine = _model(model, config)
    (pred,) = engine.predict_windows([(premise, hypothesis)])
    row = pred.row
    result = {
        "entailment": float(row[0]),
        "neutral": float(row[1]),
        "contradiction": float(row[2]),
        "label": ("entailment", "neutral", "contradiction")[int(row.argmax())],
        "window": {"index": pred.best, "start": pred.windows[pred.best][0], "end": pred.windows[pred.best][1]},
        "windows": len(pred.windows),
        "model": engine.model_id,
    }
    if as_json:
        print_json(result)
        return
    table = Table(title=f"NLI ({engine.model_id})")
    for col in ("entailment", "neutral", "contradiction", "label"):
        table.add_column(col)
    table.add_row(f"{row[0]:.3f}", f"{row[1]:.3f}", f"{row[2]:.3f}", str(result["label"]))
    console.print(table)


@nli_app.command("eval")
@handle_errors
def evaluate_cmd(
    files: list[Path] = typer.Argument(..., help="Labelled JSONL/TSV files (premise, hypothesis, label)."),
    model: str | None = typer.Option(None, "--model", help="'builtin' or an HF model id / local path."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Use only the first N pairs of each file."),
    as_json: bool = typer.Option(False, "--json"),
    config: Path | None = ConfigOption,
) -> None:
    """Accuracy, macro-F1, per-class F1, confusion matrix and ECE per file."""
    from ragtrust.models.nli_eval import evaluate, read_labelled

    engine = _model(model, config)
    engine.cache_size = 0  # measure the model, not the cache
    results = {str(f): evaluate(engine, read_labelled(f, limit)) for f in files}
    if as_json:
        print_json(results)
        return
    table = Table(title=f"NLI evaluation ({engine.model_id})")
    for col in ("file", "n", "mode", "accuracy", "macro-F1", "ECE", "per-class F1", "pairs/s"):
        table.add_column(col)
    for name, r in results.items():
        per = " ".join(f"{k[:4]}={v:.2f}" for k, v in r["per_class_f1"].items())
        table.add_row(
            Path(name).name,
            str(r["n"]),
            r["mode"],
            f"{r['accuracy']:.3f}",
            f"{r['macro_f1']:.3f}",
            f"{r['ece']:.3f}",
            per,
            f"{r['pairs_per_s']:.0f}" if r["pairs_per_s"] else "-",
        )
    console.print(table)


@nli_app.command("train")
@handle_errors
def train_cmd(
    data_dir: Path | None = typer.Option(
        None,
        "--data-dir",
        help="The NLI data folder (train/, test/); default: nli/ of RAGTRUST_DATA_DIR, then ../shared/data/nli.",
        show_default=False,
    ),
    out: Path = typer.Option(Path("runs/nli"), "--out", help="Output folder (checkpoints, final model, report)."),
    base_model: Path | None = BaseModelOption,
    halueval_dir: Path | None = typer.Option(
        None, "--halueval-dir", help="HaluEval dialogue/summarisation JSONL folder."
    ),
    budget_min: float | None = BudgetOption,
    max_steps: int | None = MaxStepsOption,
    epochs: float = typer.Option(3.0, "--epochs"),
    device: str = DeviceOption,
    threads: int = ThreadsOption,
    seed: int = TrainSeedOption,
    lr: float = LrOption,
    init_from: Path | None = typer.Option(
        None, "--init-from", help="Warm start from an earlier run's final/ folder (fresh optimizer and schedule)."
    ),
    derived_unrelated: int = typer.Option(8000, "--derived-unrelated", help="Passage vs another pair's hypothesis."),
    derived_negation: int = typer.Option(5000, "--derived-negation", help="Sentence vs its negation."),
    derived_clause: int = typer.Option(8000, "--derived-clause", help="Passage vs one of its sentences."),
    derived_exception: int = typer.Option(
        8000, "--derived-exception", help='"A; not N" premises vs A-, N- and not-N-hypotheses.'
    ),
    keep_scene_contradictions: bool = typer.Option(
        False, "--keep-scene-contradictions", help="Keep SNLI contradictions whose sides share no content word."
    ),
    save_data: Path | None = SaveDataOption,
    data_file: Path | None = DataFileOption,
    freeze_embeddings: bool = FreezeEmbeddingsOption,
) -> None:
    """Fine-tune the packaged MiniLM as a 3-way NLI cross-encoder (needs the "train" extra)."""
    from ragtrust.training.nli_data import TrainConfig, save_dataset

    check_data_options(save_data, data_file)
    # data built elsewhere (--data-file) needs no corpus here
    folder = "" if data_file is not None else str(data_dir if data_dir is not None else data_folder() / "nli")
    cfg = TrainConfig(
        data_dir=folder,
        out_dir=str(out),
        # the base model is needed to train, not to build data
        base_model="" if save_data is not None else str(base_model_or_default(base_model)),
        halueval_dir=str(halueval_dir) if halueval_dir else None,
        time_budget_min=budget_min,
        max_steps=max_steps,
        epochs=epochs,
        device=device,
        threads=threads,
        seed=seed,
        lr=lr,
        init_from=str(init_from) if init_from else None,
        derived_unrelated=derived_unrelated,
        derived_negation=derived_negation,
        derived_clause=derived_clause,
        derived_exception=derived_exception,
        drop_scene_contradictions=not keep_scene_contradictions,
        data_file=str(data_file) if data_file else None,
        freeze_word_embeddings=freeze_embeddings,
    )
    if save_data is not None:
        sizes = save_dataset(cfg, save_data)
        console.print(f"{sizes['train']} training and {sizes['val']} validation pairs written to {save_data}")
        return
    with train_extra():
        from ragtrust.training.nli import train
    train(cfg, log=console.print)


@nli_app.command("export")
@handle_errors
def export_cmd(
    hf_dir: Path = typer.Argument(..., help="A trained HF checkpoint folder (runs/nli/final)."),
    out: Path = typer.Option(..., "--out", help="Folder for the ONNX file, tokenizer and manifest."),
    temperature: float | None = typer.Option(None, "--temperature", help="Default: from train_report.json."),
    no_quantize: bool = typer.Option(False, "--no-quantize", help="Keep fp32 instead of int8."),
) -> None:
    """Export to ONNX, quantise to int8, write the manifest OnnxNLI loads."""
    export_checkpoint(hf_dir, out, temperature, quantize=not no_quantize)


@nli_app.command("calibrate")
@handle_errors
def calibrate_cmd(
    data: Path = typer.Option(..., "--data", help="Development documents (e.g. ../shared/data/owasp-cheatsheets)."),
    model: str | None = typer.Option(None, "--model", help="'builtin', an exported ONNX folder, or an HF id / path."),
    benchmarks: list[str] = typer.Option(
        ["truthfulqa", "fever"], "--benchmark", help="Benchmark whose calibration split joins the corpus (repeat)."
    ),
    no_benchmarks: bool = typer.Option(False, "--no-benchmarks", help="Use the --data documents only."),
    bench_data: Path | None = typer.Option(None, "--bench-data", help="Benchmark data folder (default: resolved)."),
    bench_calib: int = typer.Option(200, "--bench-calib", min=1, help="Calibration-split documents per benchmark."),
    n: int = typer.Option(240, "--n", min=2, help="Development chunks sampled from --data."),
    seed: int = typer.Option(0, "--seed"),
    fpr: float = typer.Option(0.05, "--fpr", min=0.001, max=0.5, help="False-alarm budget per retrieved set."),
    k: int = typer.Option(5, "--k", min=2, help="Retrieved-set size."),
    out: Path | None = typer.Option(None, "--out", help="Write the full report (JSON) here."),
    write_manifest: bool = typer.Option(
        False, "--write-manifest", help="Store the thresholds in the ONNX model's manifest (keyed to its sha256)."
    ),
    as_json: bool = typer.Option(False, "--json"),
    config: Path | None = ConfigOption,
) -> None:
    """Calibrate the intra/cross-document signals' contradiction thresholds for an NLI model.

    See ragtrust.eval.calibration: a false-alarm budget per retrieved set on clean
    development text; the direction rule is chosen on the development attack families.
    """
    import json
    import platform

    import numpy as np
    import onnxruntime

    from ragtrust import __version__
    from ragtrust.eval.calibration import calibrate_model, write_to_manifest
    from ragtrust.io import atomic_write_text
    from ragtrust.models.embedder import default_embedder
    from ragtrust.models.nli import MANIFEST_FILE, OnnxNLI, read_manifest

    if not data.exists():
        raise InputError(f"--data {data} does not exist")
    engine = _model(model, config)
    model_obj = getattr(engine, "model", engine)
    manifest_file = None
    if isinstance(model_obj, OnnxNLI):
        manifest_file = Path(model_obj.manifest_path) if model_obj.manifest_path else MANIFEST_FILE
    if write_manifest and manifest_file is None:
        raise InputError("--write-manifest needs an ONNX model with a manifest; use the report's suggested_spec")
    core = calibrate_model(
        engine,
        default_embedder(settings_from(config, None)),
        data,
        benchmarks=[] if no_benchmarks else benchmarks,
        bench_data=bench_data,
        bench_calib=bench_calib,
        n=n,
        seed=seed,
        fpr=fpr,
        k=k,
    )
    report = {
        "command": cli_command(),
        "nli_sha256": read_manifest(manifest_file)["sha256"] if manifest_file else None,
        **core,
        "versions": {
            "ragtrust": __version__,
            "onnxruntime": onnxruntime.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
    }
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out, json.dumps(report, indent=2) + "\n")
    if write_manifest and manifest_file is not None:
        write_to_manifest(manifest_file, report, str(out) if out else None)
    if as_json:
        print_json(report)
        return
    table = Table(title=f"Signal calibration ({engine.model_id}, budget {fpr:.0%} of clean retrieved sets)")
    for col in ("signal", "low", "high", "direction", "clean sets > low", "dev contradictions > low"):
        table.add_column(col)
    intra, cross = report["intra_consistency"], report["cross_consistency"]
    chosen = intra["directions"][intra["direction"]]
    table.add_row(
        "intra_consistency",
        f"{intra['low']:.3f}",
        f"{intra['high']:.3f}",
        intra["direction"],
        f"{chosen['clean_sets_above_low']:.1%}",
        f"{chosen['poisoned_above_low']:.1%}",
    )
    table.add_row(
        "cross_consistency",
        f"{cross['low']:.3f}",
        f"{cross['high']:.3f}",
        "-",
        f"{cross['clean_sets_above_low']:.1%}",
        f"{cross['anchor_poisoned_above_low']:.1%}",
    )
    witness = report["witness"]
    table.add_row(
        "witness (scan)",
        f"{witness['low']:.3f}",
        f"{witness['high']:.3f}",
        "-",
        f"{witness['clean_above_low']:.1%} of documents",
        f"{witness['poisoned_above_low']:.1%}",
    )
    console.print(table)
    if write_manifest:
        console.print(f"wrote the thresholds into {manifest_file}")
    else:
        console.print(f"screening.signals entries: {json.dumps(report['suggested_spec'])}")


def register(app: typer.Typer) -> None:
    """Add the ``nli`` command group."""
    app.add_typer(nli_app, name="nli")
