"""``ragtrust eval evidence``: the EvidenT evidence report on a folder of documents.

The command attaches to the ``eval`` group when one is registered (``ragtrust.cli.evaluation``
creates it, so list this module after that one in ``COMMAND_MODULES``); without that group
it is added as the top-level command ``ragtrust evidence-report``.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer
from rich.progress import Progress

if TYPE_CHECKING:
    from ragtrust.generation.local import LocalLLM

from ragtrust.cli.common import ConfigOption, console, handle_errors, print_json, settings_from
from ragtrust.eval.datasets import data_folder
from ragtrust.io import check_output_file


@handle_errors
def evidence(
    data_dir: Path | None = typer.Option(
        None,
        "--data-dir",
        help="Folder of Markdown documents (default: owasp-cheatsheets/ of RAGTRUST_DATA_DIR, then ../shared/data).",
        show_default=False,
    ),
    questions: Path | None = typer.Option(
        None, "--questions", help="JSONL of {question, gold: list of file names} (default: the shipped OWASP set)."
    ),
    out: Path = typer.Option(
        Path("docs/results/evidence_owasp"), "--out", "-o", help="Output prefix: writes OUT.md and OUT.json."
    ),
    top_k: int | None = typer.Option(None, "--top-k", min=1, help="Documents retrieved per question (default 5)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the stress set (default 42)."),
    index_cache: Path | None = typer.Option(
        None, "--index-cache", help="Folder to keep the chunk embeddings in; re-runs then skip embedding."
    ),
    extractor: Literal["extractive", "llm"] | None = typer.Option(
        None, "--extractor", help="Passage extractor (default: the configuration's, extractive)."
    ),
    generator: Literal["extractive", "openai"] | None = typer.Option(
        None, "--generator", help="Answer writer (default: the configuration's, extractive)."
    ),
    local_llm: bool = typer.Option(
        False,
        "--local-llm",
        help="Start the packaged local model (ragtrust llm serve) for the run and point the LLM stages at it.",
    ),
    max_tokens: int | None = typer.Option(None, "--max-tokens", min=1, help="LLM reply limit (default 512)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    config: Path | None = ConfigOption,
) -> None:
    """Ingest the documents, answer the questions and report EvidenT's evidence metrics."""
    from ragtrust.eval.evidence_render import evidence_report_paths
    from ragtrust.eval.evidence_report import load_questions, run_evidence_report, write_evidence_report

    for path in evidence_report_paths(out):
        check_output_file(path, f"--out {out} ({path.name})")
    overrides: dict[str, Any] = {
        "seed": seed,
        "retrieval": {"top_k": top_k} if top_k is not None else None,
        "evidence": {"extractor": extractor} if extractor else None,
        "generator": {k: v for k, v in (("type", generator), ("max_tokens", max_tokens)) if v is not None} or None,
    }
    items = load_questions(questions)
    command = "ragtrust " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    with contextlib.ExitStack() as stack:
        llm: dict[str, Any] | None = None
        if local_llm:
            server = stack.enter_context(_local_server())
            # a local server answers one request at a time: a retry after a timeout only queues
            # more work behind the abandoned one, so wait long and do not retry
            local = {**server.settings()["generator"], "timeout_s": 600, "max_retries": 0}
            overrides["generator"] = {**local, **(overrides["generator"] or {})}
            llm = server.describe()
        settings = settings_from(config, {k: v for k, v in overrides.items() if v is not None})
        with Progress(console=console, transient=True, disable=as_json) as bar:
            task = bar.add_task("answering", total=len(items))
            report = run_evidence_report(
                data_dir if data_dir is not None else data_folder() / "owasp-cheatsheets",
                items,
                settings=settings,
                command=command,
                index_cache=index_cache,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                llm=llm,
            )
    md, js = write_evidence_report(report, out)
    s = report.summary
    if as_json:
        print_json({**{k: v for k, v in s.items() if k != "alignment"}, "markdown": str(md), "json": str(js)})
        return
    console.print(
        f"{s['questions']} questions, {s['chunks']} chunks: {s['out_of_set_citations']} out-of-set citations, "
        f"groundedness {100 * s['groundedness']:.1f}%, Cov@10 {s['cov_at_10']:.3f}, "
        f"retention {100 * s['retention']:.1f}%, AnsCov {s['ans_cov']:.3f} -> {md}, {js}",
        highlight=False,
    )


def _local_server() -> LocalLLM:
    """The packaged local model on a free loopback port (stopped when the run ends)."""
    import socket

    from ragtrust.errors import ConfigError
    from ragtrust.generation.local import LocalLLM, default_model_path, runtime_missing

    missing = runtime_missing()
    if missing is not None:
        raise ConfigError(missing)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return LocalLLM(default_model_path(), port=port)


def register(app: typer.Typer) -> None:
    """Add ``evidence`` to the ``eval`` group, or ``evidence-report`` to ``app`` when there is none."""
    for group in app.registered_groups:
        if group.name == "eval" and group.typer_instance is not None:
            group.typer_instance.command(name="evidence")(evidence)
            return
    app.command(name="evidence-report")(evidence)


__all__ = ["evidence", "register"]
