"""``ragtrust eval conflicts``: placements, metrics, the report and its gaps (issue 15)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtrust.cli.main import app
from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import InputError
from ragtrust.eval import conflicts as ec
from ragtrust.screening.conflicts import ClaimConflictSignal
from ragtrust.testing import HashingEmbedder, LexicalNLI


def _top(ids: list[str]) -> list[RetrievedDoc]:
    return [RetrievedDoc(Document(id=i, text=f"Text of {i}."), 0.9, rank) for rank, i in enumerate(ids, 1)]


SOURCE = Document(id="s", text="Use a 2048-bit key.")
POISONED = Document(id="s~poisoned", text="Use a 512-bit key.")


def test_witness_placement_puts_the_poisoned_copy_beside_its_original_and_keeps_k() -> None:
    docs = ec._place("witness", _top(["a", "s", "b", "c", "d"]), SOURCE, POISONED, 5)
    assert [d.id for d in docs] == ["a", "s", "s~poisoned", "b", "c"]
    # the original missed by retrieval is put in, still beside its copy
    docs = ec._place("witness", _top(["a", "b", "c", "d", "e"]), SOURCE, POISONED, 5)
    assert [d.id for d in docs] == ["a", "b", "c", "s", "s~poisoned"]
    docs = ec._place("witness", _top(["a", "b", "c", "d", "s"]), SOURCE, POISONED, 5)  # retrieved last
    assert [d.id for d in docs] == ["a", "b", "c", "s", "s~poisoned"]


def test_in_place_placements_replace_the_original_under_its_own_id() -> None:
    docs = ec._place("no_witness", _top(["a", "s", "b"]), SOURCE, POISONED, 3)
    assert [d.id for d in docs] == ["a", "s", "b"]
    assert docs[1].document.text == POISONED.text


def test_metrics_rank_and_recall_at_the_fpr_budget() -> None:
    y = [1] * 10 + [0] * 100
    s = [0.9] * 10 + [0.0] * 99 + [0.95]
    m = ec.metrics(y, s)
    assert m["positives"] == 10 and m["negatives"] == 100
    assert 0.98 < m["roc_auc"] < 1.0
    # one clean score above the positives: 1% FPR allows it, so every positive above the threshold counts
    assert m["recall_at_2pct_fpr"] == 1.0
    assert ec.metrics([0, 0], [0.1, 0.2]) == {"positives": 0, "negatives": 2}


def _report(auc: float, clean: float) -> dict:
    cell = {"roc_auc": auc, "recall_at_2pct_fpr": 0.5, "blamed": 0.5, "contested": 0.1, "missed": 0.4,
            "clean_document_blamed": 0.0}  # fmt: skip
    return {
        "command": "ragtrust eval conflicts", "models": {"nli": "n", "embedder": "e"}, "ragtrust": "0", "seed": 1,
        "k": 5, "witnesses": 5, "n": 10, "signal": {"nli_ramp": [0.9, 0.95], "nli_ramp_source": "configured",
        "min_cosine": 0.6, "min_overlap": 0.3, "max_pairs": 48, "diff_strength": {}},
        "datasets": {"kb": {"cells": {"entity_swap/witness": cell, "entity_swap/no_witness": {**cell, "roc_auc": 0.5}},
                            "clean": {"sets": 10, "sets_with_conflict": clean, "sets_with_blame": 0.0,
                                      "nli_pairs_median": 2}}},
    }  # fmt: skip


def test_the_markdown_names_each_cell_below_target_and_only_those() -> None:
    bad = ec.render_markdown(_report(0.7, 0.05))
    assert "kb entity_swap with a witness: ROC-AUC 0.700 < 0.9" in bad
    assert "kb: 5.0% of clean sets have a conflict" in bad
    assert "no_witness" not in bad.split("## Honest gaps")[1]  # no target without a witness
    good = ec.render_markdown(_report(0.95, 0.0))
    assert good.split("## Honest gaps (cells below target)")[1].strip() == "- none"


def test_a_small_run_on_the_knowledge_base_fills_every_cell(tmp_path: Path) -> None:
    signal = ClaimConflictSignal(nli=LexicalNLI(), embedder=HashingEmbedder(), min_cosine=0.3)
    result = ec.evaluate_dataset(
        "secure_coding", signal, HashingEmbedder(), data_dir=None, n=6, k=3, witnesses=2, seed=1,
        strategies=("subtle_manipulation",),
    )  # fmt: skip
    assert set(result["cells"]) == {f"subtle_manipulation/{p}" for p in ec.PLACEMENTS}
    for cell in result["cells"].values():
        assert cell["sets"] == cell["positives"] > 0
        assert cell["blamed"] + cell["contested"] + cell["missed"] == pytest.approx(1.0, abs=1e-3)
    assert result["clean"]["sets"] == 6


def test_write_manifest_needs_a_calibration(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--calibrate"):
        ec.write_manifest_entry({"signal": {}})
    result = CliRunner().invoke(app, ["eval", "conflicts", "--out", str(tmp_path / "r.json"), "--write-manifest"])
    assert result.exit_code == 2 and "--write-manifest needs --calibrate" in result.output
    assert not (tmp_path / "r.json").exists()


def test_calibrating_a_check_that_is_off_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["eval", "conflicts", "--out", str(out), "--calibrate", "0.01", "--no-nli-check"])
    assert result.exit_code == 2 and "cannot be combined with --no-nli-check" in result.output
    assert not out.exists()


def test_the_markdown_says_when_the_nli_check_was_off() -> None:
    report = _report(0.95, 0.0)
    assert "NLI ramp" in ec.render_markdown(report)
    report["signal"]["nli_contradiction"] = False
    text = ec.render_markdown(report)
    assert "NLI contradiction check off" in text and "NLI ramp" not in text


def test_the_nli_budget_option_reaches_the_signal() -> None:
    from ragtrust.cli.conflicts import _budget

    assert _budget(None) == {}
    assert _budget("all") == {"max_nli_pairs": None} == _budget(" ALL ")
    assert _budget("5") == {"max_nli_pairs": 5}
    signal = ClaimConflictSignal(nli=LexicalNLI(), embedder=HashingEmbedder(), **_budget("all"))
    assert signal.max_nli_pairs is None


@pytest.mark.parametrize("value", ["x", "-1", "2.5"])
def test_a_bad_nli_budget_is_one_clear_error(tmp_path: Path, value: str) -> None:
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["eval", "conflicts", "--out", str(out), "--max-nli-pairs", value])
    assert result.exit_code == 2 and "--max-nli-pairs must be a whole number >= 0 or 'all'" in result.output
    assert not out.exists()


def test_the_markdown_says_how_many_pairs_nli_read_first() -> None:
    report = _report(0.95, 0.0)
    assert "nearest the question" not in ec.render_markdown(report)  # a report from before the budget
    report["signal"]["max_nli_pairs"] = 10
    assert "NLI on the 10 nearest the question first" in ec.render_markdown(report)
    report["signal"]["max_nli_pairs"] = None
    assert "NLI on every aligned pair" in ec.render_markdown(report)


def test_the_evaluation_passes_the_question_to_the_signal() -> None:
    seen: list[str | None] = []

    class Recording(ClaimConflictSignal):
        def score_batch(self, docs, query=None, witnesses=()):  # type: ignore[no-untyped-def]
            seen.append(query)
            return super().score_batch(docs, query, witnesses)

    signal = Recording(nli=LexicalNLI(), embedder=HashingEmbedder(), min_cosine=0.3)
    ec.evaluate_dataset(
        "secure_coding", signal, HashingEmbedder(), data_dir=None, n=3, k=3, witnesses=1, seed=1,
        strategies=("entity_swap",), placements=("witness",),
    )  # fmt: skip
    assert seen and all(isinstance(q, str) and q.strip() for q in seen)


def test_the_report_is_written_as_json_and_markdown(tmp_path: Path) -> None:
    ec.write_report(_report(0.95, 0.0), tmp_path / "c.json")
    assert json.loads((tmp_path / "c.json").read_text())["k"] == 5
    assert (tmp_path / "c.md").read_text().startswith("# Knowledge conflicts")


def test_an_out_ending_in_md_is_refused_before_the_json_is_lost(tmp_path: Path) -> None:
    # the JSON went to c.md and the Markdown twin (c.md too) then replaced it
    with pytest.raises(InputError, match=r"ends in \.md.*use .*c\.json"):
        ec.write_report(_report(0.95, 0.0), tmp_path / "c.md")
    assert not (tmp_path / "c.md").exists()
    result = CliRunner().invoke(app, ["eval", "conflicts", "--out", str(tmp_path / "c.md")])
    assert result.exit_code == 2 and "ends in .md" in " ".join(result.stderr.split())


def test_a_cell_the_attack_left_empty_reports_no_rates_not_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    # an attack that poisons none of the sources (e.g. no entity to swap) has nothing blamed or
    # missed: n/a, never "0.0% blamed, 0.0% missed"
    from ragtrust.eval.attacks import AttackGenerator, AttackResult

    def nothing(self: AttackGenerator, documents: list[Document]) -> AttackResult:
        docs = tuple(documents)
        return AttackResult(docs, docs, (), self.strategy, self.rate, self.seed, self.families)

    monkeypatch.setattr(AttackGenerator, "attack", nothing)
    signal = ClaimConflictSignal(nli=LexicalNLI(), embedder=HashingEmbedder(), min_cosine=0.3)
    result = ec.evaluate_dataset(
        "secure_coding", signal, HashingEmbedder(), data_dir=None, n=6, k=3, witnesses=2, seed=1,
        strategies=("entity_swap",), placements=("witness",),
    )  # fmt: skip
    cell = result["cells"]["entity_swap/witness"]
    assert cell["sets"] == cell["positives"] == 0
    assert cell["blamed"] is cell["contested"] is cell["missed"] is cell["clean_document_blamed"] is None
    report = {**_report(0.95, 0.0), "datasets": {"kb": {**result, "cells": {"entity_swap/witness": cell}}}}
    text = ec.render_markdown(report)
    assert "| kb | entity_swap | witness | n/a | n/a | n/a | n/a | n/a | n/a |" in text
    assert "kb entity_swap with a witness: not measured (the attack poisoned no source)" in text


def test_datasets_that_name_no_benchmark_are_refused_before_any_model_loads(tmp_path: Path) -> None:
    # --datasets "," wrote a report of nothing whose gaps read "none"
    out = tmp_path / "c.json"
    result = CliRunner().invoke(app, ["eval", "conflicts", "--datasets", ",", "--out", str(out)])
    assert result.exit_code == 2 and "no benchmark to evaluate" in " ".join(result.stderr.split())
    assert not out.exists()
    assert ec.benchmark_names(["tqa", "truthfulqa", " kb "]) == ["truthfulqa", "secure_coding"]


def test_the_conflicts_found_in_clean_benchmark_sets_are_quoted_with_their_question() -> None:
    # FEVER's 6% of clean sets with a conflict could not be read: only the OWASP check quoted its
    # examples (they turned out to be the corpus's own SUPPORTS / REFUTES claim pairs)
    report = _report(0.95, 0.1)
    example = {"query": "Did Harold Macmillan die in 1986?", "kind": "nli", "blamed": None, "strength": 0.9,
               "left": "Harold Macmillan died on December 29, 1986.",
               "right": "Harold Macmillan died on December 29, 1886."}  # fmt: skip
    report["datasets"]["kb"]["clean"]["examples"] = [example]
    text = ec.render_markdown(report)
    assert "Examples of conflicts on clean kb sets (false alarms):" in text
    assert (
        '- nli: "Harold Macmillan died on December 29, 1986." vs "Harold Macmillan died on December 29, 1886."' in text
    )
    assert '(question: "Did Harold Macmillan die in 1986?")' in text
    assert "Examples of conflicts" not in ec.render_markdown(_report(0.95, 0.0))
