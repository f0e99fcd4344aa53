"""``ragtrust attack`` and ``ragtrust eval run | report | calibrate`` (SPEC sections 7-8)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Literal

import typer
from rich.table import Table

from ragtrust.cli.common import ConfigOption, console, err_console, handle_errors, print_json, settings_from
from ragtrust.errors import ConfigError
from ragtrust.io import check_output_file, check_output_folder
from ragtrust.record import cli_command

DataDirOption = typer.Option(
    None, "--data-dir", help="Folder with truthfulqa/ and fever/ (default: RAGTRUST_DATA_DIR, then ../shared/data)."
)


_command_line = cli_command  # the old name


@handle_errors
def attack(
    out: Path = typer.Option(..., "--out", "-o", help="Folder for clean.jsonl, poisoned.jsonl, ground_truth.jsonl."),
    dataset: str | None = typer.Option(None, "--dataset", help="truthfulqa | fever | secure_coding."),
    docs: Path | None = typer.Option(None, "--docs", help="Attack your own documents (JSONL with id, text)."),
    strategy: Literal["contradiction", "instruction_injection", "entity_swap", "subtle_manipulation", "mixed"] = (
        typer.Option("mixed", "--strategy", help="Attack strategy; mixed draws from the four.")
    ),
    rate: float | None = typer.Option(None, "--rate", help="Fraction of documents to poison (default 0.30)."),
    seed: int | None = typer.Option(None, "--seed", help="Random seed (default 42)."),
    families: Literal["held_out", "development", "all"] = typer.Option(
        "held_out", "--families", help="Attack families to draw from."
    ),
    no_spacy: bool = typer.Option(False, "--no-spacy", help="Rule-based entity swaps only (no spaCy NER)."),
    data_dir: Path | None = DataDirOption,
    as_json: bool = typer.Option(False, "--json", help="Print the attack summary as JSON."),
    config: Path | None = ConfigOption,
) -> None:
    """Poison a corpus with a seeded attack and write the paired corpora and ground truth."""
    from ragtrust.eval.attacks import AttackGenerator
    from ragtrust.eval.datasets import load_benchmark
    from ragtrust.io import read_documents_jsonl, write_jsonl

    if (dataset is None) == (docs is None):
        raise ConfigError("pass exactly one of --dataset NAME or --docs FILE.jsonl")
    check_output_folder(out, f"--out {out}")
    settings = settings_from(config)
    if docs is not None:
        documents = [d.document for d in read_documents_jsonl(docs)]
    else:
        documents = list(load_benchmark(str(dataset), data_dir, seed=settings.seed).documents)
    generator = AttackGenerator(
        strategy=strategy,
        rate=settings.eval.attack_rate if rate is None else rate,
        seed=settings.seed if seed is None else seed,
        families=families,
        use_spacy=not no_spacy,
    )
    result = generator.attack(documents)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "clean.jsonl", [{"id": d.id, "text": d.text, "url": d.url} for d in result.clean])
    write_jsonl(out / "poisoned.jsonl", [{"id": d.id, "text": d.text, "url": d.url} for d in result.poisoned])
    write_jsonl(out / "ground_truth.jsonl", [r.to_dict() for r in result.records])
    summary = {**result.summary(), "out": str(out), "command": _command_line()}
    (out / "attack.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if as_json:
        print_json(summary)
        return
    table = Table(title=f"{len(result.records)} of {len(result.clean)} documents poisoned ({strategy})")
    table.add_column("family")
    table.add_column("documents", justify="right")
    for family, count in summary["by_family"].items():
        table.add_row(family, str(count))
    console.print(table)
    console.print(f"wrote clean.jsonl, poisoned.jsonl, ground_truth.jsonl to {out}")


@handle_errors
def run(
    suite: str = typer.Option("quick", "--suite", help="paper | quick | threats | DATASET | DATASET:STRATEGY[,...]."),
    out: Path = typer.Option(..., "--out", "-o", help="Run directory to write."),
    k: list[int] = typer.Option([], "--k", help="Top-K (repeatable: --k 3 --k 5); default: the suite's."),
    strategy: list[str] = typer.Option([], "--strategy", help="Keep only these strategies (repeatable)."),
    n: int | None = typer.Option(
        None, "--n", min=1, help="Evaluation queries per dataset (default 50; threats: 100 targets)."
    ),
    n_calib: int | None = typer.Option(None, "--n-calib", min=0, help="Calibration queries (default n // 2)."),
    repeats: int = typer.Option(1, "--repeats", min=1, help="Attack repeats (seeds seed, seed+1, ...)."),
    generator: Literal["extractive", "openai"] = typer.Option("extractive", "--generator", help="Answer writer."),
    families: Literal["held_out", "development", "all"] = typer.Option(
        "held_out", "--families", help="Attack families to draw from."
    ),
    no_attack_success: bool = typer.Option(False, "--no-attack-success", help="Skip the end-to-end adoption check."),
    seed: int | None = typer.Option(None, "--seed", help="Seed (default 42)."),
    dataset: list[str] = typer.Option(
        [], "--dataset", help="threats: datasets (repeatable; default truthfulqa and secure_coding)."
    ),
    llm_cache: Path | None = typer.Option(
        None, "--llm-cache", help="threats: LLM-written poison (JSONL, e.g. docs/results/threats/llm_poison.jsonl)."
    ),
    llm_generate: bool = typer.Option(
        False, "--llm-generate", help="threats: write missing LLM poison with the packaged local LLM."
    ),
    no_llm: bool = typer.Option(False, "--no-llm", help="threats: leave out the LLM-written poison cells."),
    data_dir: Path | None = DataDirOption,
    config: Path | None = ConfigOption,
) -> None:
    """Run the Part A + Part B protocol (or the threat-model suite) and store every sample under --out."""
    from ragtrust.eval.runner import EvalRunner, parse_suite

    check_output_folder(out, f"--out {out}")
    settings = settings_from(config, {"seed": seed})
    if suite.strip() == "threats":
        from ragtrust.eval.threats import ThreatRunner, threat_suite

        ignored = [
            flag
            for flag, given in (
                ("--strategy", bool(strategy)),
                ("--n-calib", n_calib is not None),
                ("--repeats", repeats != 1),
                ("--families", families != "held_out"),
                ("--no-attack-success", no_attack_success),
                ("--k with more than one value", len(k) > 1),
            )
            if given
        ]
        if ignored:
            raise ConfigError(f"{', '.join(ignored)} do(es) not apply to --suite threats (it fixes its own protocols)")
        cells = threat_suite(dataset or ("truthfulqa", "secure_coding"), llm=not no_llm)
        threat_runner = ThreatRunner(
            settings=settings.with_overrides({"generator": {"type": generator}}),
            out_dir=out,
            data_dir=data_dir,
            n=n or 100,
            seed=settings.seed,
            k=(k or [5])[0],
            llm_cache=llm_cache,
            llm_generate=llm_generate,
            command=_command_line(),
        )
        started = time.perf_counter()
        folder = threat_runner.run(cells)
        console.print(
            f"{len(cells)} threat cells in {time.perf_counter() - started:.0f} s -> {folder}\n"
            f"next: ragtrust eval report {folder}"
        )
        return
    specs = parse_suite(suite, strategies=strategy or None, ks=k or None)
    runner = EvalRunner(
        settings=settings,
        out_dir=out,
        data_dir=data_dir,
        n=n or settings.eval.n_queries,
        n_calib=n_calib,
        seed=settings.seed,
        repeats=repeats,
        families=families,
        generator=generator,
        attack_success=not no_attack_success,
        command=_command_line(),
    )
    summary = runner.run(specs)
    asked_calib = runner.n // 2 if n_calib is None else n_calib
    for name, sizes in summary.datasets.items():
        if sizes["n_eval"] < runner.n or sizes["n_calib"] < asked_calib:
            err_console.print(
                f"note: {name} has {sizes['n_documents']} documents: {sizes['n_eval']} evaluation and "
                f"{sizes['n_calib']} calibration queries, not {runner.n} and {asked_calib}",
                highlight=False,
            )
    console.print(
        f"{summary.n_samples} samples ({summary.n_errors} failed) in {summary.elapsed_s:.0f} s -> {summary.out_dir}\n"
        f"next: ragtrust eval report {summary.out_dir}"
    )


def _is_threat_run(run_dir: Path) -> bool:
    try:
        manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("suite") == "threats"


@handle_errors
def report(
    run_dir: Path = typer.Argument(..., help="A directory written by `ragtrust eval run`."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Report folder (default RUN_DIR/report)."),
    bootstrap: int | None = typer.Option(None, "--bootstrap", min=100, help="Bootstrap resamples (default 20000)."),
) -> None:
    """Render Markdown, JSON, PNG figures and a self-contained HTML page for a run (Markdown + JSON for threats)."""
    from ragtrust.eval.report import build_report
    from ragtrust.eval.runner import SAMPLES_FILE

    if out is not None:
        check_output_folder(out, f"--out {out}")
    if _is_threat_run(run_dir):
        from ragtrust.eval.threats_report import build_threat_report

        written = build_threat_report(run_dir, out)
        console.print(f"wrote {written.markdown} and {written.json}")
        return

    paths = build_report(run_dir, out, bootstrap=bootstrap)
    if (run_dir / (SAMPLES_FILE + ".partial")).is_file():
        err_console.print(
            f"note: {run_dir} also holds {SAMPLES_FILE}.partial, left by a later run that did not finish; "
            "this report is of the earlier, finished run",
            highlight=False,
        )
    console.print(f"wrote {paths.markdown}, {paths.json}, {paths.html} and {len(paths.figures)} figure(s)")


@handle_errors
def calibrate(
    run_dir: Path = typer.Argument(..., help="A directory written by `ragtrust eval run`."),
    out: Path = typer.Option(..., "--out", "-o", help="Calibration JSON to write (TrustGate loads it)."),
    dataset: str | None = typer.Option(None, "--dataset", help="Calibrate on one dataset (default: all)."),
    k: int | None = typer.Option(None, "--k", help="Use samples of this K only."),
    percentile: float | None = typer.Option(None, "--percentile", help="Percentile of clean scores (default 10)."),
    min_samples: int | None = typer.Option(
        None, "--min-samples", min=1, help="Refuse with fewer clean calibration samples (default 50)."
    ),
    force: bool = typer.Option(False, "--force", help="Calibrate below --min-samples anyway (recorded in the file)."),
    as_json: bool = typer.Option(False, "--json", help="Print the calibration and before/after as JSON."),
) -> None:
    """Fit tau as the 10th percentile of held-out clean scores and write it to --out."""
    from ragtrust.eval.analysis import MIN_CALIBRATION_SAMPLES, load_run, write_calibration
    from ragtrust.eval.analysis import calibrate as fit
    from ragtrust.eval.datasets import canonical_dataset

    check_output_file(out, f"--out {out}")
    min_samples = MIN_CALIBRATION_SAMPLES if min_samples is None else min_samples
    run_data = load_run(run_dir)
    result = fit(
        run_data,
        dataset=canonical_dataset(dataset) if dataset else None,
        k=k,
        percentile=percentile,
        min_samples=min_samples,
        force=force,
    )
    data = write_calibration(result, out)
    if result.below_minimum:
        # stderr, so that --json stays parseable; the file says "below_minimum": true too
        err_console.print(
            f"[bold red]WARNING: tau fitted on only {result.n} clean samples, below the minimum {min_samples} "
            f"(--force): it is noise, not a calibration.[/] {out} records below_minimum = true.",
            highlight=False,
            soft_wrap=True,
        )
    levels = result.levels()
    if as_json:
        print_json({**data, "levels": levels, "before_after": list(result.before_after)})
        return
    console.print(f"tau {result.tau_before:.3f} -> {result.tau:.3f} (from {result.n} clean samples) -> {out}")
    table = Table(title="before -> after (disjoint evaluation samples)")
    for column in ("cell", "accuracy", "recall", "false positive rate"):
        table.add_column(column)
    for row in result.before_after:
        b, a = row["before"], row["after"]

        def pct(x: float | None) -> str:
            return "n/a" if x is None else f"{100 * x:.1f}%"

        table.add_row(
            row["key"],
            f"{pct(b['accuracy'])} -> {pct(a['accuracy'])}",
            f"{pct(b['recall'])} -> {pct(a['recall'])}",
            f"{pct(b['false_positive_rate'])} -> {pct(a['false_positive_rate'])}",
        )
    console.print(table)
    bands = Table(title=f"levels with tau {result.tau:.3f}")
    bands.add_column("level")
    bands.add_column("trust score T")
    for band in levels:
        bands.add_row(band["level"], band["text"])
    console.print(bands)
    console.print(
        f"trusted needs T >= {result.tau:.3f} and the decision's other conditions (an answer grounded in "
        "the documents, no suspicious document used, relevant evidence, no internal failure); a verdict "
        "flagged on any of those reads at most LOW whatever its T. Level cut points: the run's "
        f"(level_low {result.level_low:.3f}, level_high {result.level_high:.3f}), widened to admit tau.",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    """Add ``attack`` and the ``eval`` group to ``app``."""
    eval_app = typer.Typer(
        name="eval",
        help="Benchmark harness: run the Part A / Part B protocol, report, calibrate.",
        no_args_is_help=True,
    )
    app.command(name="attack")(attack)
    eval_app.command(name="run")(run)
    eval_app.command(name="report")(report)
    eval_app.command(name="calibrate")(calibrate)
    app.add_typer(eval_app, name="eval")


__all__ = ["attack", "calibrate", "register", "report", "run"]
