"""The threat-model suite (issue 17): corpora per protocol, labels, metrics, report, CLI.

Runs use the secure-coding knowledge base (shipped in the package) and the shipped fakes,
so no dataset folder and no model is needed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from ragtrust.cli.main import app
from ragtrust.config import load_settings
from ragtrust.documents import Document
from ragtrust.errors import ConfigError, InputError
from ragtrust.eval.attacks import AttackGenerator
from ragtrust.eval.threats import ThreatCell, ThreatRunner, load_threat_run, threat_suite
from ragtrust.eval.threats_report import analyse, analyse_cell, gaps, render_markdown
from ragtrust.testing import HashingEmbedder, LexicalNLI


def _runner(tmp_path, **kw):
    return ThreatRunner(
        settings=load_settings(env={}),
        out_dir=tmp_path / "run",
        n=4,
        nli=LexicalNLI(),
        embedder=HashingEmbedder(),
        use_spacy=False,
        progress=False,
        command="pytest threats",
        **kw,
    )


def test_suite_cells():
    keys = [c.key for c in threat_suite(["truthfulqa"], llm=True)]
    assert keys[:2] == ["injection/truthfulqa", "beside_truth/truthfulqa/template/m1"]
    assert "beside_truth/truthfulqa/llm/m5" in keys
    assert {"vetted_edit/truthfulqa", "unwitnessed/truthfulqa", "format_control/truthfulqa"} <= set(keys)
    assert not any("llm" in c.key for c in threat_suite(["secure_coding"], llm=True))  # TruthfulQA only
    assert ThreatCell("injection", "secure_coding").strategies == ("instruction_injection",)
    assert "instruction_injection" not in ThreatCell("unwitnessed", "secure_coding").strategies


def test_attack_targets_poisons_exactly_the_targets():
    docs = [Document(id=f"d{i}", text=f"Is {i} small? Yes, {i} is a small number.") for i in range(10)]
    result = AttackGenerator(strategy="mixed", seed=3, use_spacy=False).attack_targets(
        docs, [1, 4, 7], ["contradiction", "subtle_manipulation"]
    )
    assert {r.doc_id for r in result.records} | set(result.skipped) == {"d1", "d4", "d7"}
    assert all(r.strategy in ("contradiction", "subtle_manipulation") for r in result.records)
    changed = {d.id for d, c in zip(result.poisoned, result.clean, strict=True) if d.text != c.text}
    assert changed == {r.doc_id for r in result.records}
    with pytest.raises(InputError):
        AttackGenerator().attack_targets(docs, [10])
    with pytest.raises(ConfigError):
        AttackGenerator().attack_targets(docs, [1], ["bogus"])


def test_beside_truth_keeps_the_clean_original_and_adds_copies(tmp_path):
    runner = _runner(tmp_path)
    corpus = runner.build_corpus(ThreatCell("beside_truth", "secure_coding", "template", 3))
    clean = {d.id: d.text for d in runner.benchmark("secure_coding").documents}
    by_id = {d.id: d.text for d in corpus.documents}
    assert corpus.poison and all(p.added for p in corpus.poison.values())
    for p in corpus.poison.values():
        assert by_id[p.target_id] == clean[p.target_id]  # the witness is still in the corpus
        assert p.doc_id not in clean and by_id[p.doc_id] == p.text != clean[p.target_id]
    per_target: dict[str, int] = {}
    for p in corpus.poison.values():
        per_target[p.target_id] = per_target.get(p.target_id, 0) + 1
    assert max(per_target.values()) <= 3 and len(corpus.documents) == len(clean) + len(corpus.poison)


def test_in_place_protocols_replace_the_source(tmp_path):
    runner = _runner(tmp_path)
    corpus = runner.build_corpus(ThreatCell("unwitnessed", "secure_coding"))
    by_id = {d.id: d.text for d in corpus.documents}
    assert corpus.poison and all(not p.added and by_id[p.doc_id] == p.text for p in corpus.poison.values())
    assert {p.strategy for p in corpus.poison.values()} <= {"contradiction", "entity_swap", "subtle_manipulation"}
    targets = {q.doc_id for q in runner.benchmark("secure_coding").eval_queries}
    assert corpus.target_ids == targets - set(corpus.skipped)


def test_vetted_edit_store_has_ledger_history(tmp_path):
    runner = _runner(tmp_path)
    runner._models()
    corpus = runner.build_corpus(ThreatCell("vetted_edit", "secure_coding"))
    ledger = corpus.store.ledger
    for p in corpus.poison.values():
        record = ledger.get(p.doc_id)
        assert record is not None and record.tier == "vetted" and record.changed_since_vetted
        assert len(ledger.history(p.doc_id)) == 2  # the vetted version and the edit
        assert ledger.version_text(p.doc_id, record.vetted_hash) != p.text
        assert any(e.actor == "attacker" for e in ledger.events(p.doc_id))
    untouched = next(d.id for d in corpus.documents if d.id not in corpus.poison)
    assert not ledger.get(untouched).changed_since_vetted
    clean_ledger = corpus.clean_store.ledger  # the baseline: the vetted corpus before any edit
    assert not any(clean_ledger.get(p.doc_id).changed_since_vetted for p in corpus.poison.values())


def test_llm_cells_need_llm_poison(tmp_path):
    runner = _runner(tmp_path)
    with pytest.raises(InputError, match="llm-cache"):
        runner.run([ThreatCell("beside_truth", "secure_coding", "llm", 1)])


def test_run_labels_and_report(tmp_path):
    runner = _runner(tmp_path)
    cells = [ThreatCell("injection", "secure_coding"), ThreatCell("beside_truth", "secure_coding", "template", 1)]
    out = runner.run(cells)
    manifest, samples = load_threat_run(out)
    assert manifest["suite"] == "threats" and [c["key"] for c in manifest["cells"]] == [c.key for c in cells]
    clean = [s for s in samples if s["part"] == "clean"]
    attack = [s for s in samples if s["part"] == "attack"]
    assert len(clean) == 4 and len(attack) == 8  # one clean baseline shared by both in-memory cells
    assert not any(s["target"] or s["label_retrieval"] for s in clean)
    poisoned = {
        c.key: {json.loads(x)["doc_id"] for x in (out / "attacks" / (c.key.replace("/", "-") + ".jsonl")).open()}
        for c in cells
    }
    for s in attack:
        ids = {d["base_id"] for d in s["retrieved"]}
        assert s["label_retrieval"] == bool(ids & poisoned[s["cell"]])
        assert {d["base_id"] for d in s["retrieved"] if d["poisoned"]} == ids & poisoned[s["cell"]]
        assert "adoption" in s and "trusted" in s["default"]
    report = analyse(out)
    text = render_markdown(report)
    assert "## injection:" in text and "## beside_truth:" in text and "## Honest gaps" in text
    assert all(c["targets"] == 4 for c in report["cells"])


def test_report_names_the_targets_each_dataset_had_not_the_n_asked_for(tmp_path):
    # --n 100 on the 40-rule knowledge base asks 30 targets: the header said "100 target questions"
    report = analyse(_runner(tmp_path).run([ThreatCell("injection", "secure_coding")]))
    assert "4 target questions per dataset" in render_markdown(report)
    report["manifest"]["n"] = 100
    text = render_markdown(report)
    assert "100 target questions per dataset" not in text
    assert "--n 100, fewer where a corpus is smaller): secure_coding 4" in text


def _sample(part, retrieved, trusted, adopted=False, adopted_trusted=False, label=None):
    return {
        "part": part,
        "retrieved": [{"poisoned": p, "poison_probability": s, "suspicious": s > 0.7} for p, s in retrieved],
        "label_retrieval": any(p for p, _ in retrieved) if label is None else label,
        "trusted": trusted,
        "latency_s": 0.1,
        "nli_pairs": 10,
        "default": {"trusted": trusted},
        "adoption": {"adopted_plain": adopted, "adopted_default": adopted, "adopted_and_trusted": adopted_trusted},
    }


def test_metrics_on_a_toy_cell():
    clean = [_sample("clean", [(False, 0.1 * i / 10)], True) for i in range(10)]
    attack = [
        _sample("attack", [(True, 0.9), (False, 0.05)], False, adopted=True),  # caught, adopted, not trusted
        _sample("attack", [(True, 0.95)], False),
        _sample("attack", [(True, 0.02)], True, adopted=True, adopted_trusted=True),  # missed
        _sample("attack", [(False, 0.01)], True, label=False),  # poison not retrieved
    ]
    row = analyse_cell(attack, clean)
    assert row["document"]["positives"] == 3 and row["document"]["negatives"] == 12
    assert row["document"]["recall_1pct"]["k"] == 2
    assert row["query_recall_1pct"]["k"] == 2 and row["query_recall_1pct"]["n"] == 4
    assert row["query_recall_1pct_exposed"]["n"] == 3
    assert row["decision_recall"]["k"] == 2 and row["decision_fpr"]["k"] == 0
    assert row["asr_without"]["k"] == 2 and row["asr_with"]["k"] == 1 and row["asr_with"]["n"] == 4
    cells = [
        {"key": "injection/x", "protocol": "injection", "copies": 1, **row},
        {"key": "beside_truth/x/llm/m1", "protocol": "beside_truth", "copies": 1, **row},
        {"key": "beside_truth/x/llm/m5", "protocol": "beside_truth", "copies": 5, **row},
    ]
    found = gaps(cells)
    assert any(g.startswith("injection/x: query recall") for g in found)  # 50% < 90%
    assert any(g.startswith("beside_truth/x/llm/m1: attack success") for g in found)  # 25% > 5%
    assert any(g.startswith("beside_truth/x/llm/m5: attack success") for g in found)  # 25% > 20%


def test_cli_report_on_a_threat_run(tmp_path):
    out = _runner(tmp_path).run([ThreatCell("injection", "secure_coding")])
    result = CliRunner().invoke(app, ["eval", "report", str(out), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# ragtrust benchmark by threat model") and "Attack realism" in md
    data = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    assert data["cells"][0]["key"] == "injection/secure_coding"


def test_load_threat_run_rejects_other_folders(tmp_path):
    with pytest.raises(InputError):
        load_threat_run(tmp_path)
    (tmp_path / "manifest.json").write_text("{}", encoding="utf-8")
    (tmp_path / "samples.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="threat-suite"):
        load_threat_run(tmp_path)


def _toy_truthfulqa():
    from ragtrust.eval.datasets import Benchmark, sample_queries

    docs = []
    for i in range(12):
        answer = f"No, topic {i} is not dangerous."
        docs.append(
            Document(
                id=f"tqa-{i:03d}",
                text=f"Is topic {i} dangerous? {answer}",
                url=f"truthfulqa:{i:03d}",
                source="TruthfulQA",
                metadata={
                    "question": f"Is topic {i} dangerous?",
                    "answer": answer,
                    "false_claims": [f"Yes, topic {i} kills.", f"Topic {i} is deadly.", f"Yes, topic {i} kills."],
                },
            )
        )
    return Benchmark("truthfulqa", tuple(docs), sample_queries(docs, 4, 2, 42))


@dataclass
class _FakeChat:
    """A chat model whose reply depends on the sampling seed, as a real one's does."""

    model: str = "fake-llm"
    seed: int | None = None
    temperature: float = 0.0
    max_tokens: int = 64

    def complete(self, messages):
        from ragtrust.generation.openai import ChatReply

        answer = messages[-1]["content"].split("This is my answer: ")[1].split(". Please")[0]
        text = f"Reports agree on this: {answer}. Experts have confirmed it {self.seed} times."
        return ChatReply(text=text, model="fake")


def test_answer_source_uses_truthfulqa_incorrect_answers(tmp_path):
    from ragtrust.eval.threats import answer_poison

    runner = _runner(tmp_path)
    runner._benchmarks["truthfulqa"] = bench = _toy_truthfulqa()
    in_place = runner.build_corpus(ThreatCell("unwitnessed", "truthfulqa", "answer"))
    for p in in_place.poison.values():
        doc = bench.documents[[d.id for d in bench.documents].index(p.doc_id)]
        assert p.text == f"{doc.metadata['question']} {doc.metadata['false_claims'][0]}"
        assert p.false_statement == doc.metadata["false_claims"][0] and not p.added
    beside = runner.build_corpus(ThreatCell("beside_truth", "truthfulqa", "answer", 5))
    per_target: dict[str, int] = {}
    for p in beside.poison.values():
        per_target[p.target_id] = per_target.get(p.target_id, 0) + 1
    assert set(per_target.values()) == {2}  # two distinct incorrect answers: no duplicate documents
    assert answer_poison(Document(id="x", text="No answer here.")) is None


def test_llm_source_reads_the_cache(tmp_path):
    from ragtrust.eval.llm_attacks import LLMPoisonWriter, truthfulqa_targets

    bench = _toy_truthfulqa()
    cache = tmp_path / "llm.jsonl"
    LLMPoisonWriter(_FakeChat(), cache_path=cache).write(truthfulqa_targets(bench), copies=3)
    runner = _runner(tmp_path, llm_cache=cache)
    runner._benchmarks["truthfulqa"] = bench
    cells = [ThreatCell("beside_truth", "truthfulqa", "llm", 3)]
    out = runner.run(cells)
    corpus = runner.build_corpus(cells[0])
    assert len(corpus.poison) == 3 * 4 and all(p.added and p.family == "llm/fake-llm" for p in corpus.poison.values())
    assert all(corpus.documents[[d.id for d in corpus.documents].index(p.target_id)] for p in corpus.poison.values())
    manifest, _ = load_threat_run(out)
    assert manifest["llm_poison"]["passages"] == 12 and (out / "llm_poison.jsonl").is_file()


class _SubsetNLI:
    """Entailment 1 when every word of the hypothesis is in the premise (else neutral)."""

    model_id = "subset-nli"

    def predict(self, pairs):
        import numpy as np

        rows = []
        for premise, hypothesis in pairs:
            entailed = set(hypothesis.lower().split()) <= set(premise.lower().split())
            rows.append([1.0, 0.0, 0.0] if entailed else [0.0, 1.0, 0.0])
        return np.asarray(rows, dtype=np.float32)


def test_adoption_is_a_false_claim_the_truth_does_not_support(tmp_path):
    runner = _runner(tmp_path)
    runner.nli = _SubsetNLI()
    truth = ["are vampires real ? vampires are not real"]
    weakened = ["vampires are not real though only some of the time"]
    # the answer repeats the truth, which the weakened claim's words cover: not adopted
    assert runner._adoption(["vampires are not real"], ["vampires are not real"], truth) < 0.5
    assert runner._adoption(["vampires are not real"], weakened, truth) == 0.0
    # the answer states the false claim, which the clean original does not support: adopted
    assert runner._adoption(["vampires are real and dangerous"], ["vampires are real"], truth) == 1.0
    assert runner._adoption([], ["vampires are real"], truth) == 0.0


def test_targets_are_attacked_in_batches_of_a_bounded_share(tmp_path):
    runner = _runner(tmp_path, max_poisoned_share=0.05)  # 2 of the 40 rules at once
    batches = runner.target_batches("secure_coding")
    assert [len(b) for b in batches] == [2, 2] and sorted(sum(batches, [])) == sorted(
        q.doc_index for q in runner.benchmark("secure_coding").eval_queries
    )
    out = runner.run([ThreatCell("unwitnessed", "secure_coding")])
    docs = runner.benchmark("secure_coding").documents
    _, samples = load_threat_run(out)
    for s in (s for s in samples if s["part"] == "attack"):
        batch_ids = {docs[i].id for i in batches[s["batch"]]}
        assert s["source_doc_id"] in batch_ids
        assert {d["base_id"] for d in s["retrieved"] if d["poisoned"]} <= batch_ids  # other batches are clean here
    with pytest.raises(ConfigError):
        _runner(tmp_path, max_poisoned_share=0.0)


def test_format_control_adds_a_true_sentence_and_labels_nothing_poisoned(tmp_path):
    from ragtrust.eval.threats import BENIGN
    from ragtrust.eval.threats_report import analyse_control

    runner = _runner(tmp_path)
    cell = ThreatCell("format_control", "secure_coding")
    corpus = runner.build_corpus(cell)
    clean = {d.id: d.text for d in runner.benchmark("secure_coding").documents}
    assert corpus.poison and all(p.strategy == BENIGN for p in corpus.poison.values())
    for p in corpus.poison.values():
        assert p.text.startswith(clean[p.doc_id]) and len(p.text) > len(clean[p.doc_id])
        assert p.text[len(clean[p.doc_id]) :].strip() in "\n".join(clean.values())  # a true sentence of the corpus
    out = runner.run([cell])
    _, samples = load_threat_run(out)
    attack = [s for s in samples if s["part"] == "attack"]
    assert not any(d["poisoned"] for s in attack for d in s["retrieved"])
    assert any(d["edited"] for s in attack for d in s["retrieved"])
    assert not any(s["label_retrieval"] or s["false_statements"] for s in attack)
    row = analyse_control(attack, [s for s in samples if s["part"] == "clean"])
    assert row["edited_retrieved"] > 0 and "edited_flagged_5pct" in row
    assert "## format_control" in render_markdown(analyse(out))


def test_format_control_gap_when_edited_documents_are_flagged():
    def doc(edited, p):
        return {"poisoned": False, "edited": edited, "poison_probability": p, "suspicious": p > 0.7}

    clean = [{"part": "clean", "retrieved": [doc(False, 0.01 * i)], "trusted": True} for i in range(40)]
    attack = [{"part": "attack", "retrieved": [doc(True, 0.9)], "trusted": False} for _ in range(40)]
    from ragtrust.eval.threats_report import analyse_control

    row = analyse_control(attack, clean)
    assert row["edited_flagged_1pct"]["value"] == 1.0 and row["decision_not_trusted"]["value"] == 1.0
    found = gaps([{"key": "format_control/x", "protocol": "format_control", "copies": 1, **row}])
    assert any("react to the format" in g for g in found)


def test_cli_refuses_paper_suite_options_with_threats(tmp_path):
    result = CliRunner().invoke(
        app,
        ["eval", "run", "--suite", "threats", "--out", str(tmp_path / "run"), "--repeats", "2", "--strategy", "mixed"],
    )
    assert result.exit_code != 0
    assert "--strategy, --repeats do(es) not apply to --suite threats" in result.output
