"""The knowledge-conflict report: every cell, clean false alarms, the gaps against the targets.

:func:`render_markdown` turns the JSON report of :func:`ragtrust.eval.conflicts.run` into
Markdown; :func:`write_report` writes both, side by side.

Example:
    >>> _pct(0.125), _num(None)
    ('12.5%', 'n/a')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragtrust.errors import InputError

#: the issue's targets with a witness (per-document ROC-AUC) and for clean false alarms
TARGETS = {"entity_swap": 0.90, "contradiction": 0.90, "subtle_manipulation": 0.75}
CLEAN_TARGET = 0.02


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{100 * float(value):.1f}%"


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.3f}"


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: the command, every cell, clean false alarms, the gaps against the targets."""
    lines = [
        "# Knowledge conflicts: claim-level checks with and without a witness (issue 15)",
        "",
        f"Command: `{report.get('command', 'ragtrust eval conflicts')}`",
        "",
        f"Models: NLI `{report['models']['nli']}`, embedder `{report['models']['embedder']}`; "
        f"ragtrust {report['ragtrust']}; seed {report['seed']}; K = {report['k']}; store witnesses "
        f"{report['witnesses']}; {report['n']} evaluation questions per benchmark (held-out attack families "
        f"only); run time {report.get('elapsed_s')} s on the machine that wrote it.",
        "",
        (
            f"Signal: NLI ramp {report['signal']['nli_ramp']} ({report['signal']['nli_ramp_source']}), "
            if report["signal"].get("nli_contradiction", True)
            else "Signal: NLI contradiction check off (NLI only hears agreement), "
        )
        + f"alignment cosine >= {report['signal']['min_cosine']}, overlap >= {report['signal']['min_overlap']}, "
        f"at most {report['signal']['max_pairs']} aligned pairs{_budget_words(report['signal'])}; "
        f"diff strengths {report['signal']['diff_strength']}; answer check "
        f"{'on' if report['signal'].get('answer_check', False) else 'off'} (claims that answer a question asking "
        "for one value with different names or numbers).",
        "",
    ]
    cal = report.get("calibration")
    if cal:
        lines += [
            f"NLI ramp fitted in this run: low {cal['low']} = the {1 - cal['fpr']:.0%} quantile of the strongest "
            f"aligned-pair contradiction over {cal['sets']} clean retrieved sets the evaluation does not use "
            f"(TruthfulQA and FEVER calibration splits, OWASP chunk neighbourhoods); quantiles {cal['quantiles']}.",
            "",
        ]
    lines += [
        "Placements: **witness** = the poisoned copy added beside its clean original; **no_witness** = "
        "the in-place edit, the clean original nowhere; **vetted_history** = the in-place edit of a vetted "
        "corpus (the ledger keeps the vetted text). Per-document scores; negatives = every other document of "
        "the poisoned sets and every document of the clean sets. *blamed* / *contested* / *missed* = what "
        "happened to the poisoned document; *clean blamed* = sets where a clean document was blamed.",
        "",
        "| dataset | attack | placement | ROC-AUC | recall @ <= 2% FPR | blamed | contested | missed | clean blamed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    gaps: list[str] = []
    for name, d in report["datasets"].items():
        for cell, m in d["cells"].items():
            strategy, placement = cell.split("/")
            lines.append(
                f"| {name} | {strategy} | {placement} | {_num(m.get('roc_auc'))} | {_pct(m.get('recall_at_2pct_fpr'))} "
                f"| {_pct(m.get('blamed'))} | {_pct(m.get('contested'))} | {_pct(m.get('missed'))} "
                f"| {_pct(m.get('clean_document_blamed'))} |"
            )
            target = TARGETS.get(strategy)
            if placement == "witness" and target is not None and m.get("positives") == 0:
                gaps.append(f"{name} {strategy} with a witness: not measured (the attack poisoned no source)")
            elif placement == "witness" and target is not None and (m.get("roc_auc") or 0.0) < target:
                gaps.append(f"{name} {strategy} with a witness: ROC-AUC {_num(m.get('roc_auc'))} < {target}")
    lines += ["", "**Clean false alarms** (share of clean retrieved sets):", ""]
    lines += [
        "| clean sets | sets | with a conflict | with a document blamed | NLI pairs (median) |",
        "|---|---|---|---|---|",
    ]
    for name, d in report["datasets"].items():
        c = d["clean"]
        lines.append(
            f"| {name} | {c['sets']} | {_pct(c['sets_with_conflict'])} | {_pct(c['sets_with_blame'])} "
            f"| {c['nli_pairs_median']:g} |"
        )
        if c["sets_with_conflict"] > CLEAN_TARGET:
            gaps.append(f"{name}: {_pct(c['sets_with_conflict'])} of clean sets have a conflict (target <= 2%)")
    owasp = report.get("owasp_clean")
    if owasp:
        lines.append(
            f"| OWASP chunks + 4 nearest | {owasp['sets']} | {_pct(owasp['sets_with_conflict'])} "
            f"| {_pct(owasp['sets_with_blame'])} | {owasp['nli_pairs_median']:g} |"
        )
        if owasp["sets_with_conflict"] > CLEAN_TARGET:
            gaps.append(f"OWASP: {_pct(owasp['sets_with_conflict'])} of clean sets have a conflict (target <= 2%)")
    quoted = [(name, d["clean"].get("examples") or []) for name, d in report["datasets"].items()]
    quoted += [("OWASP", owasp.get("examples") or [])] if owasp else []
    for name, examples in quoted:
        if examples:
            lines += ["", f"Examples of conflicts on clean {name} sets (false alarms):", ""]
            for e in examples:
                asked = f' (question: "{e["query"][:100]}")' if e.get("query") else ""
                lines.append(
                    f'- {e["kind"]}: "{e["left"][:140]}" vs "{e["right"][:140]}" (blamed: {e["blamed"]}){asked}'
                )
    lines += _question_lines(report.get("owasp_questions", {}))
    lines += _poisonedrag_lines(report.get("poisonedrag", {}), gaps)
    lines += ["", "## Honest gaps (cells below target)", ""]
    lines += [f"- {g}" for g in gaps] or ["- none"]
    return "\n".join(lines) + "\n"


def _question_lines(questions: Mapping[str, Any]) -> list[str]:
    """The clean OWASP sets retrieved for the bundled factoid questions (answer-check false alarms)."""
    if not questions:
        return []
    lines = [
        "",
        "**Clean OWASP chunks retrieved for factoid questions** (`ragtrust/data/owasp_factoid_questions.jsonl`: "
        "who / when / how many ... questions about the cheat sheets; every conflict is a false alarm or the "
        "guides disagreeing):",
        "",
        "| questions | sets | asking for one value | with a conflict | with an `answer` conflict "
        "| with a document blamed |",
        "|---|---|---|---|---|---|",
    ]
    for split in ("held_out", "development"):
        m = questions.get(split)
        if m:
            lines.append(
                f"| {split.replace('_', ' ')} | {m['sets']} | {m['asking_for_a_value']} | {m['with_conflict']} "
                f"| {m['with_answer_conflict']} | {m['with_blame']} |"
            )
    return lines


def _poisonedrag_lines(prag: Mapping[str, Any], gaps: list[str]) -> list[str]:
    """The LLM-written poison table (held-out, development and all items); its gap goes to ``gaps``."""
    if "two_clean_witnesses" not in prag:
        return []
    lines: list[str] = []
    dev = prag.get("development_items")
    lines += [
        "",
        "**LLM-written poison (PoisonedRAG NQ, GPT-4)**: one adversarial passage, clean passages in the same "
        "style (other adversarial passages of the item with the correct answer put back), unrelated clean "
        "passages."
        + (
            f" The first {dev} items of the file were read while building the answer check (development); "
            "the others are held out."
            if dev
            else ""
        ),
        "",
        "| items | variant | sets | ROC-AUC | blamed | contested | missed | clean blamed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [(name, prag.get("splits", {}).get(name, {})) for name in ("held_out", "development")]
    for label, part in [*rows, ("all", prag)]:
        for variant in ("two_clean_witnesses", "one_clean_witness"):
            m = part.get(variant)
            if m:
                lines.append(
                    f"| {label.replace('_', ' ')} | {variant} | {m['sets']} | {_num(m.get('roc_auc'))} "
                    f"| {_pct(m['blamed'])} | {_pct(m['contested'])} | {_pct(m['missed'])} "
                    f"| {_pct(m['clean_document_blamed'])} |"
                )
    held_out = prag.get("splits", {}).get("held_out", {}).get("two_clean_witnesses")
    headline = held_out or prag["two_clean_witnesses"]
    if headline["blamed"] < 0.5:
        gaps.append(
            f"PoisonedRAG, one poisoned passage beside two clean ones: blamed in "
            f"{_pct(headline['blamed'])} of {'held-out ' if held_out else ''}items"
        )
    return lines


def report_paths(path: str | Path) -> tuple[Path, Path]:
    """The JSON report ``path`` and its Markdown twin beside it (``.md`` for the suffix).

    Raises:
        InputError: ``path`` ends in ``.md``: the JSON would be written there and then
            replaced by the Markdown.

    Example:
        >>> [p.name for p in report_paths("results/conflicts.json")]
        ['conflicts.json', 'conflicts.md']
    """
    file = Path(path)
    if file.suffix.lower() == ".md":
        raise InputError(
            f"--out {file} ends in .md: it names the JSON report, and the Markdown is written beside it "
            f"as .md; use {file.with_suffix('.json')}"
        )
    return file, file.with_suffix(".md")


def write_report(report: Mapping[str, Any], path: str | Path) -> None:
    """Write the report as indented JSON and, beside it, as Markdown (atomic; :func:`report_paths`)."""
    from ragtrust.io import atomic_write_text

    json_path, md_path = report_paths(path)
    atomic_write_text(json_path, json.dumps(report, indent=2) + "\n")
    atomic_write_text(md_path, render_markdown(report))


__all__ = ["CLEAN_TARGET", "TARGETS", "render_markdown", "report_paths", "write_report"]


def _budget_words(signal: dict[str, Any]) -> str:
    """How many aligned pairs the NLI check read up front (reports written before the budget say nothing)."""
    if "max_nli_pairs" not in signal or not signal.get("nli_contradiction", True):
        return ""
    budget = signal["max_nli_pairs"]
    if budget is None:
        return ", NLI on every aligned pair"
    return f", NLI on the {budget} nearest the question first (the rest when a conflict was found)"
