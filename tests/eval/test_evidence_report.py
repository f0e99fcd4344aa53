"""The evidence report on a tiny fixture corpus (deterministic fakes, no model files)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ragtrust.config import load_settings
from ragtrust.documents import Passage
from ragtrust.errors import InputError
from ragtrust.eval.evidence_report import (
    SEM_NOT_COMPUTED,
    EvidenceQuestion,
    load_questions,
    run_evidence_report,
    source_name,
    stress_passages,
    write_evidence_report,
)
from ragtrust.models.nli import NLIEngine
from ragtrust.testing import HashingEmbedder, LexicalNLI, retrieved

SHEETS = {
    "SQL_Injection_Cheat_Sheet.md": "# SQL Injection Prevention\n\n## Prepared statements\n\n"
    "Bind every user value with a prepared statement so that input never becomes SQL code. "
    "Check table and column names against an allow-list because they cannot be bound. "
    "Escaping input by hand is a fragile last resort that differs between databases.\n",
    "Password_Storage_Cheat_Sheet.md": "# Password Storage\n\n## Hashing algorithms\n\n"
    "Store passwords with Argon2id using at least 19 MiB of memory and two iterations. "
    "Never store passwords with a fast digest such as MD5 or SHA-256 alone. "
    "Use a unique random salt for every password so equal passwords hash differently.\n",
    "Session_Management_Cheat_Sheet.md": "# Session Management\n\n## Session identifiers\n\n"
    "Session identifiers need at least 64 bits of entropy from a secure random generator. "
    "Issue a new session identifier after every login to prevent session fixation attacks. "
    "Mark session cookies Secure, HttpOnly and SameSite so scripts and other sites cannot use them.\n",
    "LICENSE.md": "# License\n\nCC BY-SA 4.0 applies to every cheat sheet in this folder.\n",
}
QUESTIONS = [
    EvidenceQuestion(
        "q1", "How do I prevent SQL injection with prepared statements?", ("SQL_Injection_Cheat_Sheet.md",)
    ),
    EvidenceQuestion("q2", "Which algorithm should store passwords?", ("Password_Storage_Cheat_Sheet.md",)),
    EvidenceQuestion("q3", "How much entropy do session identifiers need?", ("Session_Management_Cheat_Sheet.md",)),
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "sheets"
    folder.mkdir()
    for name, text in SHEETS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _settings():  # type: ignore[no-untyped-def]
    return load_settings(env={}, overrides={"retrieval": {"top_k": 2}})


def _run(corpus: Path, **kwargs):  # type: ignore[no-untyped-def]
    return run_evidence_report(
        corpus,
        QUESTIONS,
        settings=_settings(),
        embedder=HashingEmbedder(),
        nli=NLIEngine(LexicalNLI()),
        sem_scorer=kwargs.pop("sem_scorer", None),
        ablation_ns=(3, 5),
        ablation_ts=(0.5, 0.7),
        command="pytest",
        **kwargs,
    )


def test_report_metrics_on_a_fixture_corpus(corpus: Path) -> None:
    report = _run(corpus)
    s = report.summary
    assert s["questions"] == 3 and s["documents"] == 3  # LICENSE.md is left out
    assert s["chunks"] == 3 and s["top_k"] == 2
    assert s["out_of_set_citations"] == 0 and s["pct_hallucinated_citations"] == 0.0
    # each question's gold sheet is retrieved and cited first
    assert s["gold_in_top_k"] == 1.0 and s["groundedness"] == 1.0
    for r in report.questions:
        assert r.sentences >= 1 and source_name(r.cited[0]) == r.gold[0]
        assert r.cited[0].endswith("#chunk-0")  # citations name the exact chunk
        # extractive answers are copied from the cited chunks: every answer word is in D
        assert r.ans_cov == pytest.approx(1.0) and r.ans_cov_at["5"] == pytest.approx(1.0)
        assert 0.0 < r.doc_focus < 1.0
    # verbatim passages: everything kept, fully covered
    assert s["retention"] == 1.0 and s["cov_at_10"] == pytest.approx(1.0)
    assert s["alignment"]["dropped"] == 0 and s["alignment"]["n_in"] >= 3
    assert s["sem_max"] == SEM_NOT_COMPUTED and s["sem_recall"] == SEM_NOT_COMPUTED
    assert [(r["n"], r["t"]) for r in report.ablation] == [(3, 0.5), (3, 0.7), (5, 0.5), (5, 0.7)]
    assert all(r["retention"] == 1.0 and r["hallucination_before"] == 0.0 for r in report.ablation)
    # the stress set gives the ablation something to filter
    assert any(r["hallucination_before"] > 0.0 for r in report.stress_ablation)
    assert all(r["hallucination_after"] < r["hallucination_before"] for r in report.stress_ablation)
    assert report.stress_confusion["exact"] == {"kept": report.stress_confusion["exact"]["kept"]}
    p = report.provenance
    assert p["command"] == "pytest" and p["seed"] == 42 and p["models"]["embedder"] == "hashing-embedder"
    assert p["config"]["retrieval"]["top_k"] == 2 and p["versions"]["ragtrust"]


def test_report_is_deterministic_and_written(corpus: Path, tmp_path: Path) -> None:
    cache = tmp_path / "index-cache"
    first, second = _run(corpus, index_cache=cache), _run(corpus, index_cache=cache)
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k != "provenance"}  # noqa: E731
    assert strip(first) == strip(second)
    # the second run read the chunk embeddings from the cache
    assert first.provenance["index_cache"]["hit"] is False and second.provenance["index_cache"]["hit"] is True
    assert len(list(cache.glob("vectors-*.npy"))) == 1
    md, js = write_evidence_report(first, tmp_path / "out" / "evidence.md")
    assert (md.name, js.name) == ("evidence.md", "evidence.json")
    text = md.read_text(encoding="utf-8")
    assert "citations outside the retrieved set (final answers) | 0 |" in text and "`pytest`" in text
    assert "(n, t) ablation: stress set" in text and SEM_NOT_COMPUTED in text
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["summary"]["questions"] == 3 and len(data["questions"]) == 3


def test_sem_scores_use_the_given_scorer(corpus: Path) -> None:
    calls: list[int] = []

    def scorer(pairs: Sequence[tuple[str, str]]) -> list[float]:
        calls.append(len(pairs))
        return [1.0 if hyp.split()[0] in prem else 0.0 for prem, hyp in pairs]

    report = _run(corpus, sem_scorer=scorer)
    assert calls and report.summary["sem_max"] == 1.0 and report.summary["sem_recall"] == 1.0


def test_stress_passages_kinds() -> None:
    docs = retrieved(["Alpha beta gamma delta epsilon zeta eta theta iota kappa.", "Other text here for drift."])
    passage = Passage("p", docs[0].document.text, url=docs[0].document.url, doc_id="doc-0")
    out = stress_passages([passage] * 5, docs, ["Invented sentence about nothing at all today."])
    assert [k for _, k in out] == ["exact", "drift", "partial", "reworded", "fabricated"]
    assert out[0][0].text == passage.text and out[1][0].doc_id == "doc-1"
    assert out[2][0].text.endswith("today.") and len(out[3][0].text.split()) < len(passage.text.split())
    assert out[4][0].text.startswith("Invented") and out[4][0].doc_id == "doc-0"
    # nothing to draw from: the kinds that need foreign text stay exact
    assert [k for _, k in stress_passages([passage] * 5, docs[:1], [])] == [
        "exact",
        "exact",
        "exact",
        "reworded",
        "exact",
    ]


def test_load_questions_and_errors(tmp_path: Path, corpus: Path) -> None:
    shipped = load_questions()
    assert len(shipped) >= 30 and all(q.gold for q in shipped)
    assert all(g.endswith("_Cheat_Sheet.md") for q in shipped for g in q.gold)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"gold": []}\n', encoding="utf-8")
    with pytest.raises(InputError, match="question"):
        load_questions(bad)
    bad.write_text('{"question": "q?", "gold": [1]}\n', encoding="utf-8")
    with pytest.raises(InputError, match="gold"):
        load_questions(bad)
    with pytest.raises(InputError, match="not a folder"):
        _run(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not markdown", encoding="utf-8")
    with pytest.raises(InputError, match="no documents"):
        _run(empty)


def test_a_gold_source_outside_the_corpus_is_refused_before_any_answer(corpus: Path) -> None:
    # a misspelt gold file would count every answer to its question as ungrounded (0%)
    typo = EvidenceQuestion("q1", QUESTIONS[0].question, ("SQL_Injection_Cheatsheet.md",))
    with pytest.raises(InputError, match=r"question q1: gold source 'SQL_Injection_Cheatsheet.md' is not a document "
                       r".*did you mean SQL_Injection_Cheat_Sheet.md"):  # fmt: skip
        run_evidence_report(corpus, [typo, *QUESTIONS[1:]], settings=_settings(), embedder=HashingEmbedder())
    no_gold = EvidenceQuestion("q9", "Which algorithm should store passwords?")
    with pytest.raises(InputError, match="question q9: no gold source"):
        run_evidence_report(corpus, [no_gold], settings=_settings(), embedder=HashingEmbedder())


def test_cli_attaches_to_the_eval_group_or_stands_alone(corpus: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from ragtrust.cli import evidence_report as cli

    with_eval = typer.Typer()
    group = typer.Typer()
    group.command("run")(lambda: None)
    with_eval.add_typer(group, name="eval")
    cli.register(with_eval)
    assert "evidence" in [c.name for c in group.registered_commands]

    alone = typer.Typer()
    alone.command("other")(lambda: None)
    cli.register(alone)
    assert "evidence-report" in [c.name for c in alone.registered_commands]

    import ragtrust.eval.evidence_report as lib

    real = lib.run_evidence_report

    def fake_run(data_dir, items, **kwargs):  # type: ignore[no-untyped-def]
        kwargs.update(embedder=HashingEmbedder(), nli=NLIEngine(LexicalNLI()), sem_scorer=None)
        kwargs.update(ablation_ns=(5,), ablation_ts=(0.7,))
        return real(data_dir, items, **kwargs)

    monkeypatch.setattr(lib, "run_evidence_report", fake_run)
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        "\n".join(json.dumps(q.__dict__ | {"gold": list(q.gold)}) for q in QUESTIONS), encoding="utf-8"
    )
    out = tmp_path / "res" / "ev"
    args = ["evidence-report", "--data-dir", str(corpus), "--questions", str(questions), "--out", str(out)]
    result = CliRunner().invoke(alone, [*args, "--top-k", "2", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output[result.output.index("{") :])
    assert summary["out_of_set_citations"] == 0 and summary["questions"] == 3 and summary["top_k"] == 2
    assert (tmp_path / "res" / "ev.md").is_file() and (tmp_path / "res" / "ev.json").is_file()
    bad = CliRunner().invoke(alone, ["evidence-report", "--data-dir", str(tmp_path / "nope"), "--out", str(out)])
    assert bad.exit_code == 2 and "not a folder" in bad.output


def test_written_reports_name_the_data_folder_as_given_not_the_machine_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtrust.eval.evidence_report import _portable_paths

    (tmp_path / "data" / "sheets").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    absolute = (tmp_path / "data" / "sheets").resolve()
    rewrite = _portable_paths("data/sheets")
    text = f"cited {absolute.as_uri()}/A.md#chunk-1 and {absolute}/B.md"
    assert rewrite(text) == "cited data/sheets/A.md#chunk-1 and data/sheets/B.md"
    assert str(tmp_path) not in rewrite(text)
    assert _portable_paths(str(absolute))(text) == text  # given absolute: nothing to hide
    cut_short = f"an LLM wrote ({(tmp_path / 'data').resolve().as_uri()}/she"
    assert rewrite(cut_short) == "an LLM wrote (data/she"
