"""``ragtrust injection TEXT`` plus ``injection train``, ``export``, ``calibrate`` and ``eval``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ragtrust.cli.common import (
    BaseModelOption,
    BudgetOption,
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
    train_extra,
)
from ragtrust.errors import InputError
from ragtrust.eval.datasets import data_folder

DATA_HELP = (
    "The data folder (owasp-cheatsheets/, truthfulqa/, fever/, nli/); default RAGTRUST_DATA_DIR, then ../shared/data."
)
MODEL_HELP = "'builtin', an exported folder / manifest, or a Hugging Face id / local path."


_PredictByDefault = PredictByDefault  # the old name


injection_app = typer.Typer(
    cls=PredictByDefault,
    help="Prompt-injection classifier: score a text, train, export, calibrate its threshold, evaluate.",
    no_args_is_help=True,
)


def _signal(model: str, threshold: float | None = None) -> Any:
    from ragtrust.screening.injection import InjectionSignal

    return InjectionSignal(model_name=model, threshold=threshold)


@injection_app.command("predict")
@handle_errors
def predict(
    text: str = typer.Argument(..., help="The text to score (a document or a passage); '-' reads stdin."),
    model: str = typer.Option("builtin", "--model", help=MODEL_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """P(injection) of the strongest sentence window, the threshold and the verdict."""
    import sys

    from ragtrust.testing import retrieved

    if text == "-":
        text = sys.stdin.read()
    signal = _signal(model)
    (result,) = signal.score_batch(retrieved([text]))
    if result.skipped:
        raise InputError(f"nothing to score: {result.skip_reason}")
    details = dict(result.details)
    start, end = details["window"]
    out = {
        "injection": result.score > 0,
        "probability": details["probability"],
        "threshold": details["threshold"],
        "threshold_source": details["threshold_source"],
        "window": {"start": start, "end": end, "text": text[start:end]},
        "windows": details["windows"],
        "model": signal._model().model_id,
    }
    if "decoded" in details:  # the strongest window is the decoded text of an encoded run
        out["decoded"] = details["decoded"]
    if as_json:
        print_json(out)
        return
    verdict = "[red]INJECTION[/red]" if out["injection"] else "[green]benign[/green]"
    console.print(f"{verdict}  P = {out['probability']:.3f} (threshold {out['threshold']:.3f}, {out['model']})")
    console.print(f"strongest window of {out['windows']}: {' '.join(text[start:end].split())[:300]}", markup=False)
    if "decoded" in details:
        decoded = details["decoded"]
        console.print(f"decoded from {decoded['encoding']}: {decoded['text']}", markup=False)


@injection_app.command("train")
@handle_errors
def train_cmd(
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_HELP, show_default=False),
    out: Path = typer.Option(Path("runs/injection"), "--out", help="Output folder (checkpoint, final model, report)."),
    base_model: Path | None = BaseModelOption,
    budget_min: float | None = BudgetOption,
    max_steps: int | None = MaxStepsOption,
    epochs: float = typer.Option(2.0, "--epochs"),
    nli_premises: int = typer.Option(10000, "--nli-premises", help="Benign NLI premises among the negatives."),
    synthetic: int = typer.Option(9000, "--synthetic", help="Generated injections among the positives."),
    owasp_segments: int = typer.Option(0, "--owasp-segments", help="Stage 2: OWASP sentences as extra negatives."),
    owasp_glued: int = typer.Option(0, "--owasp-glued", help="Stage 2: injections glued to OWASP windows."),
    dev_family_owasp: int = typer.Option(0, "--dev-family-owasp", help="Stage 2: dev families on OWASP chunks."),
    tool_outputs: int = typer.Option(0, "--tool-outputs", help="Stage 3: tool/mail/page outputs, half injected."),
    as_read: bool = typer.Option(
        False,
        "--as-read",
        help="Stage 4: cut every example into the pieces the model reads (a payload past them is not a label).",
    ),
    exclude_dev_family: list[str] = typer.Option(
        [], "--exclude-dev-family", help="Keep this development family out of training (repeatable)."
    ),
    init_from: Path | None = typer.Option(None, "--init-from", help="Warm start from an earlier run's final/ folder."),
    lr: float = LrOption,
    device: str = DeviceOption,
    threads: int = ThreadsOption,
    seed: int = TrainSeedOption,
    save_data: Path | None = SaveDataOption,
    data_file: Path | None = DataFileOption,
    freeze_embeddings: bool = FreezeEmbeddingsOption,
) -> None:
    """Fine-tune the packaged MiniLM as an injection classifier (needs the "train" extra); resumes if interrupted."""
    from ragtrust.training.injection_data import DataConfig, check_excluded_families, save_training_set

    check_excluded_families(exclude_dev_family)  # before minutes of data building
    check_data_options(save_data, data_file)
    data = DataConfig(
        data_dir=str(data_folder(data_dir)) if data_file is None else "",
        nli_premises=nli_premises,
        synthetic=synthetic,
        owasp_segments=owasp_segments,
        owasp_glued=owasp_glued,
        dev_family_owasp_chunks=dev_family_owasp,
        tool_outputs=tool_outputs,
        exclude_dev_families=tuple(exclude_dev_family),
        as_read=as_read,
    )
    if save_data is not None:
        n = save_training_set(data, save_data, log=console.print)
        console.print(f"{n} examples written to {save_data}")
        return
    with train_extra():
        from ragtrust.training.injection import InjectionTrainConfig, train
    cfg = InjectionTrainConfig(
        out_dir=str(out),
        base_model=str(base_model_or_default(base_model)),
        data=data,
        data_file=str(data_file) if data_file else None,
        freeze_word_embeddings=freeze_embeddings,
        init_from=str(init_from) if init_from else None,
        lr=lr,
        epochs=epochs,
        time_budget_min=budget_min,
        max_steps=max_steps,
        device=device,
        threads=threads,
        seed=seed,
    )
    train(cfg, log=console.print)


@injection_app.command("export")
@handle_errors
def export_cmd(
    hf_dir: Path = typer.Argument(..., help="A trained HF checkpoint folder (runs/injection/final)."),
    out: Path = typer.Option(..., "--out", help="Folder for the ONNX file, tokenizer and manifest."),
    temperature: float | None = typer.Option(None, "--temperature", help="Default: from train_report.json."),
    no_quantize: bool = typer.Option(False, "--no-quantize", help="Keep fp32 instead of int8."),
    scripts: list[str] = typer.Option(
        ["LATIN"],
        "--scripts",
        help="Unicode scripts the model was trained and evaluated on (repeat the option); letters of "
        "other scripts make a window unscreened. 'all' trusts every script the vocabulary spells.",
    ),
) -> None:
    """Export to ONNX, quantise to int8, write the manifest OnnxInjection loads."""
    read_all = [s.strip().lower() for s in scripts] == ["all"]
    if not read_all and any(not s.strip().isalpha() for s in scripts):
        raise InputError(f"--scripts takes Unicode script names such as LATIN or CYRILLIC, or 'all'; got {scripts}")
    export_checkpoint(
        hf_dir,
        out,
        temperature,
        quantize=not no_quantize,
        max_length=128,
        model_id="ragtrust/injection-minilm-l6-int8",
        prefix="injection",
        extra=None if read_all else {"scripts": sorted({s.strip().upper() for s in scripts})},
    )


@injection_app.command("calibrate")
@handle_errors
def calibrate_cmd(
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_HELP, show_default=False),
    model: str = typer.Option("builtin", "--model", help="'builtin' or an exported folder / manifest."),
    fpr: float = typer.Option(0.01, "--fpr", help="False-positive budget per clean document."),
    per_corpus: bool = typer.Option(
        False, "--per-corpus", help="Keep each clean corpus within the budget (default: all of them together)."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the calibration report (JSON) here."),
    write_manifest: bool = typer.Option(
        False, "--write-manifest", help="Store the threshold in the model's manifest (keyed to its sha256)."
    ),
) -> None:
    """Set the signal's threshold to a false-positive budget on clean calibration documents."""
    from ragtrust.models.injection import MANIFEST_FILE, OnnxInjection
    from ragtrust.training.injection_eval import calibrate_injection, write_calibration

    signal = _signal(model, threshold=0.5)  # the threshold is what is being measured
    report = calibrate_injection(signal, data_folder(data_dir), fpr=fpr, per_corpus=per_corpus)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if write_manifest:
        onnx = signal._model()
        if not isinstance(onnx, OnnxInjection):
            raise InputError("--write-manifest needs an ONNX model with a manifest ('builtin' or an exported folder)")
        manifest = Path(onnx.manifest_path) if onnx.manifest_path else MANIFEST_FILE
        write_calibration(manifest, report)
        console.print(f"wrote the threshold into {manifest}")
    dev = report["development_families"]
    console.print(
        f"threshold {report['threshold']:.4f} at {fpr:.1%} FPR ({report['budget_scope']}) on "
        f"{report['clean_documents']} clean documents; "
        f"development families: recall {dev.get('recall_at_threshold', float('nan')):.1%}, AUC {dev.get('roc_auc')}"
    )
    by_source = ", ".join(
        f"{name} {part['fpr']:.1%} of {part['documents']}"
        for name, part in report["per_source"].items()
        if part["documents"]
    )
    console.print(f"clean documents flagged: {by_source}")
    by_family = ", ".join(f"{name} {value:.1%}" for name, value in report["recall_by_family"].items())
    console.print(f"recall by development family: {by_family}")


@injection_app.command("eval")
@handle_errors
def eval_cmd(
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_HELP, show_default=False),
    model: str = typer.Option("builtin", "--model", help=MODEL_HELP),
    out: Path | None = typer.Option(None, "--out", help="Write the report (JSON) here."),
    baselines: bool = typer.Option(True, "--baselines/--no-baselines", help="Also score the regex signals."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """ROC-AUC, recall and FPR on held-out families, the kept-aside public corpus and clean documents."""
    from ragtrust.screening.linguistic import LinguisticSignal
    from ragtrust.screening.structural import StructuralSignal
    from ragtrust.training.injection_eval import evaluate, injection_probabilities, signal_scores

    signal = _signal(model)
    threshold, _ = signal.resolved_threshold()
    detectors: dict[str, Any] = {"injection": (lambda docs: injection_probabilities(signal, docs), threshold)}
    if baselines:
        ling, struct = LinguisticSignal(), StructuralSignal()
        detectors["linguistic (regex)"] = (lambda docs: signal_scores([ling], docs), 0.7)
        detectors["linguistic + structural P_i"] = (lambda docs: signal_scores([ling, struct], docs), 0.7)
    report = evaluate(detectors, data_folder(data_dir))
    report["model"] = signal._model().model_id
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if as_json:
        print_json(report)
        return
    table = Table(title=f"Injection detection ({report['model']})")
    for col in ("detector", "set", "ROC-AUC", "recall @1% FPR", "recall @thr", "FPR @thr"):
        table.add_column(col)
    for name, r in report["detectors"].items():
        for key in ("held_out_families", "public_corpus", "agent_bench"):
            m = r[key]
            table.add_row(
                name,
                key,
                f"{m.get('roc_auc', float('nan')):.3f}",
                f"{m.get('recall_at_1pct_fpr', float('nan')):.1%}",
                f"{m.get('recall_at_threshold', float('nan')):.1%}",
                f"{m.get('fpr_at_threshold', float('nan')):.1%}",
            )
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add the ``injection`` command group."""
    app.add_typer(injection_app, name="injection")
