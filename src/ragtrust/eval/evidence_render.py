"""The evidence report rendered: Markdown (``<out>.md``) and JSON (``<out>.json``) written with portable paths."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtrust.eval.evidence_data import ANSCOV_NS, STRESS_EXPECTED, EvidenceReport
from ragtrust.io import atomic_write_text


def _fmt(value: Any, pct: bool = False) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if pct:
        return f"{100 * float(value):.1f}%"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def render_markdown(report: EvidenceReport) -> str:
    """The report as Markdown (what ``<out>.md`` holds)."""
    s, p = report.summary, report.provenance
    a = s["alignment"]
    lines = [
        "# EvidenT evidence report",
        "",
        f"{s['questions']} questions over {s['documents']} documents ({s['chunks']} chunks), "
        f"top-K = {s['top_k']}; extractor `{p['models']['extractor']}`, answer writer `{p['models']['generator']}`"
        + (f" (model `{p['models']['generator_model']}`)" if p["models"].get("generator_model") else "")
        + ".",
        "",
        "## Provenance",
        "",
        f"- command: `{p.get('command') or 'library call'}`",
        f"- date (UTC): {p.get('date_utc')}; seed: {p.get('seed')}",
        f"- data: `{p.get('data_dir')}` (corpus sha256 `{str(p.get('corpus_sha256'))[:16]}…`, "
        f"questions sha256 `{str(p.get('questions_sha256'))[:16]}…`)",
        f"- models: embedder `{p['models']['embedder']}`; SemMax/SemRecall scorer: {p['models']['sem_scorer']}",
        f"- stages: {p.get('stages')}",
        f"- extractor: `{json.dumps(p['components']['extractor'], sort_keys=True)}`",
        f"- generator: `{json.dumps(p['components']['generator'], sort_keys=True)}`",
        f"- aligner: n = {p['components']['aligner']['n']}, t = {p['components']['aligner']['threshold']}; "
        f"chunking {p['config']['chunking']['chunk_tokens']}/{p['config']['chunking']['overlap_tokens']} tokens",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in p.get("versions", {}).items()),
        f"- platform: {p.get('platform')}; time: " + ", ".join(f"{k} {v} s" for k, v in p.get("timings_s", {}).items()),
        "",
        "The full configuration is in the JSON file next to this one (`provenance.config`).",
        "",
        *_llm_lines(report),
        "## Headline numbers",
        "",
        "| metric | value |",
        "|---|---|",
        f"| citations outside the retrieved set (final answers) | {s['out_of_set_citations']} |",
        f"| citations the writer made that the guard removed | {s.get('removed_citations', 0)} |",
        f"| %hallucinated citations (answers) | {_fmt(s['pct_hallucinated_citations'], True)} |",
        f"| %groundedness vs gold cheat sheets | {_fmt(s['groundedness'], True)} |",
        f"| gold cheat sheet in the top-K (retrieval) | {_fmt(s['gold_in_top_k'], True)} |",
        f"| answers with >= 1 sentence / with the not-stated preface | {s['answered']} / {s['preface']} |",
        f"| mean answer sentences; sentences without verbatim support | {_fmt(s['mean_sentences'])}; "
        f"{s['unsupported_sentences']} ({_fmt(s.get('pct_unsupported_sentences'), True)}) |",
        f"| %hallucinated passage tokens before / after alignment | {_fmt(s.get('hallucination_before'), True)} / "
        f"{_fmt(s.get('hallucination_after'), True)} |",
        f"| Cov@10 (kept passages) | {_fmt(s['cov_at_10'])} |",
        f"| retention after filtering | {_fmt(s['retention'], True)} |",
        f"| AnsCov / DocFocus (words) | {_fmt(s['ans_cov'])} / {_fmt(s['doc_focus'])} |",
        f"| SemMax / SemRecall | {_fmt(s['sem_max'])} / {_fmt(s['sem_recall'])} |",
        "",
        "AnsCov, DocFocus and their n-gram versions compare the answer (its sentences, without the "
        "preface or citation markers) with D, the concatenated text of the retrieved chunks it cites. "
        "SemMax/SemRecall use 256-token windows with stride 50, scored by NLI entailment "
        "(premise = document window, hypothesis = answer window).",
        "",
        "| n | AnsCov@n | DocFocus@n |",
        "|---|---|---|",
    ]
    for n in map(str, ANSCOV_NS):
        lines.append(f"| {n} | {_fmt(s['ans_cov_at'][n])} | {_fmt(s['doc_focus_at'][n])} |")
    lines += [
        "",
        "## Alignment diagnostics (the extractor's passages, n = "
        f"{p['components']['aligner']['n']}, t = {p['components']['aligner']['threshold']})",
        "",
        f"{int(a['n_in'])} passages: {int(a['kept'])} kept, {int(a['truncated'])} truncated, "
        f"{int(a['reattributed'])} re-attributed, {int(a['dropped'])} dropped; "
        f"%hallucinated {_fmt(a['pct_hallucinated'], True)}, %URL drift corrected "
        f"{_fmt(a['pct_url_drift_corrected'], True)}, %partially hallucinated {_fmt(a['pct_partial'], True)}.",
        "",
        "The extractive extractor copies document slices, so on its own output the aligner should keep "
        "everything: the tables below show that it does, and then what it does with the errors an LLM "
        "extractor makes.",
        "",
        "## (n, t) ablation: the extractor's passages",
        "",
        *_ablation_lines(report.ablation),
        "",
        "## (n, t) ablation: stress set (seeded synthetic extraction errors)",
        "",
        f"{s['stress']['passages']} passages built from the extractive ones, round-robin: "
        + ", ".join(f"{k} {v}" for k, v in s["stress"]["by_kind"].items())
        + " (exact copy; wrong URL; copy plus a fabricated sentence from a non-retrieved chunk; every third "
        "word removed; a sentence of a non-retrieved chunk claiming a retrieved one).",
        "",
        *_ablation_lines(report.stress_ablation),
        "",
        f"What the aligner (n = {p['components']['aligner']['n']}, t = {p['components']['aligner']['threshold']}) "
        f"did with each kind (expected in bold); agreement {_fmt(s['stress']['aligner_accuracy'], True)}:",
        "",
        "| kind | kept | truncated | reattributed | dropped |",
        "|---|---|---|---|---|",
    ]
    for kind, row in report.stress_confusion.items():
        cells = []
        for status in ("kept", "truncated", "reattributed", "dropped"):
            value = str(row.get(status, 0))
            cells.append(f"**{value}**" if STRESS_EXPECTED[kind] == status else value)
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Reading the table: a *partial* passage is kept whole (not truncated) when its fabricated tail "
        "holds less than 1 - t of its n-grams: that is SPEC 6.3's rule, and the residual is what the "
        "'halluc. after' column measures. A *drift* passage is kept or truncated instead of re-attributed "
        "when the wrongly claimed chunk holds all or part of its text too (consecutive chunks overlap by up "
        "to 50 tokens, and cheat sheets repeat boilerplate); a *fabricated* or *reworded* passage is "
        "truncated when a 5-gram of it happens to occur in the claimed chunk.",
        "",
        "## Per question",
        "",
        "| id | question | gold in top-K | grounded | preface | sentences | AnsCov | out-of-set |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report.questions:
        lines.append(
            f"| {r.id} | {r.question} | {'yes' if r.gold_retrieved else 'no'} | {'yes' if r.grounded else 'no'} | "
            f"{'yes' if r.preface else 'no'} | {r.sentences} | {r.ans_cov:.2f} | {r.out_of_set_citations} |"
        )
    return "\n".join(lines) + "\n"


def _llm_lines(report: EvidenceReport) -> list[str]:
    """The LLM's part of the report: model, prompts, failures, warnings, time per call."""
    s, models = report.summary, report.provenance["models"]
    if not any(k.endswith("_model") for k in models):
        return []
    llm = models.get("llm", {})
    t = report.provenance.get("mean_stage_s", {})
    failures = s.get("extraction_failures", [])
    writer = s.get("writer_failures", [])

    def listed(items: Sequence[str]) -> str:
        shown = "; ".join(f[:120] for f in items[:3]) + ("; …" if len(items) > 3 else "")
        return f" ({shown})" if items else ""

    return [
        "## The LLM",
        "",
        f"- model: `{models.get('generator_model') or models.get('extractor_model')}`"
        + (f", file `{llm['file']}` (sha256 `{llm['sha256']}`)" if llm.get("file") else "")
        + (f", served by {llm['server']} with a {llm['context_tokens']}-token window" if llm.get("server") else ""),
        "- prompts: " + ", ".join(f"{k} `{v}`" for k, v in models.items() if k.endswith("_prompt")),
        f"- mean seconds per question: extract {_fmt(t.get('extract'))}, align {_fmt(t.get('align'))}, "
        f"write {_fmt(t.get('generate'))}",
        f"- extractions that failed (a reply unusable after one repair, or no reply): {len(failures)} of "
        f"{s['questions']}{listed(failures)}",
        f"- answers the writer failed to return (timeout, server error): {len(writer)} of "
        f"{s['questions']}{listed(writer)}",
        "- warnings: " + (", ".join(f"{k} ({v})" for k, v in s.get("llm_warnings", {}).items()) or "none"),
        "",
    ]


def _ablation_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [
        "| n | t | retention | halluc. before | halluc. after | Cov@10 | truncated | re-attributed | dropped |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['t']:g} | {_fmt(r['retention'], True)} | {_fmt(r['hallucination_before'], True)} | "
            f"{_fmt(r['hallucination_after'], True)} | {r['cov_at_10']:.3f} | {_fmt(r['pct_truncated'], True)} | "
            f"{_fmt(r['pct_reattributed'], True)} | {_fmt(r['pct_dropped'], True)} |"
        )
    return lines


def _portable_paths(data_dir: str | None) -> Callable[[str], str]:
    """Rewrite the data folder's absolute path (and its file URL) as the path given on the command line.

    Document URLs of a folder ingest are absolute ``file://`` URLs; a committed report must
    not name the machine it ran on. The folders above the data folder named in the given
    path are rewritten too (longest first), so that a URL an LLM copied into its answer and
    cut short (``file:///…/shared/data/owasp-cheats``) is rewritten as well.
    """
    if not data_dir or Path(data_dir).is_absolute():
        return lambda text: text
    relative, absolute = Path(data_dir), Path(data_dir).resolve()
    pairs: list[tuple[str, str]] = []
    while relative.name not in ("", "..", "."):
        pairs += [(absolute.as_uri(), relative.as_posix()), (str(absolute), relative.as_posix())]
        relative, absolute = relative.parent, absolute.parent

    def rewrite(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    return rewrite


def evidence_report_paths(out: str | Path) -> tuple[Path, Path]:
    """``<out>.md`` and ``<out>.json`` (a ``.md``/``.json`` suffix on ``out`` is dropped).

    Example:
        >>> [p.name for p in evidence_report_paths("results/evidence.json")]
        ['evidence.md', 'evidence.json']
    """
    base = Path(out)
    if base.suffix in (".md", ".json"):
        base = base.with_suffix("")
    return base.with_name(base.name + ".md"), base.with_name(base.name + ".json")


def write_evidence_report(report: EvidenceReport, out: str | Path) -> tuple[Path, Path]:
    """Write ``<out>.md`` and ``<out>.json`` (:func:`evidence_report_paths`)."""
    md, js = evidence_report_paths(out)
    md.parent.mkdir(parents=True, exist_ok=True)
    portable = _portable_paths(report.provenance.get("data_dir"))
    atomic_write_text(md, portable(render_markdown(report)))
    atomic_write_text(js, portable(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"))
    return md, js


__all__ = ["evidence_report_paths", "render_markdown", "write_evidence_report"]
