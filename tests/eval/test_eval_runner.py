"""Miniature end-to-end suite runs (5 queries) with fakes: fast enough for CI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragtrust.cli.main import app
from ragtrust.config import load_settings
from ragtrust.errors import ConfigError
from ragtrust.eval.analysis import load_run
from ragtrust.eval.report import build_report
from ragtrust.eval.runner import EvalRunner, parse_suite
from ragtrust.testing import HashingEmbedder, LexicalNLI

#: the default signals and one that skips every document of a retrieved set (fewer than 10)
SKIPPING = {"type": "semantic_outlier", "params": {"min_docs": 10}}


def _runner(tmp_path, factory, settings=None, **kw):
    return EvalRunner(
        settings=settings or load_settings(env={}),
        out_dir=tmp_path / "run",
        n=5,
        n_calib=5,
        nli=LexicalNLI(),
        embedder=HashingEmbedder(),
        gate_factory=factory,
        use_spacy=False,
        progress=False,
        command="pytest mini suite",
        **kw,
    )


def test_parse_suite():
    paper = parse_suite("paper")
    assert len(paper) == 5 + 1 + 5 + 1
    assert {s.dataset for s in paper} == {"truthfulqa", "fever", "secure_coding"}
    assert [s.key for s in parse_suite("kb", strategies=["mixed"])] == ["secure_coding/mixed/k5"]
    with pytest.raises(ConfigError):
        parse_suite("kb:bogus")
    with pytest.raises(ConfigError):
        parse_suite("kb", strategies=["nope"])
    with pytest.raises(ConfigError):
        parse_suite("kb", ks=[0])


def test_parse_suite_unknown_name_lists_suites_and_datasets():
    with pytest.raises(
        ConfigError, match=r"unknown suite or dataset 'papr'; suites: paper, quick, threats; datasets: "
    ):
        parse_suite("papr")
    with pytest.raises(ConfigError, match=r"^unknown dataset 'nope'"):  # inside a list: the item is a dataset
        parse_suite("kb:mixed,nope")


def test_mini_suite_records_reports_and_calibration(tmp_path, fake_gate_factory):
    specs = parse_suite("kb:instruction_injection,kb:entity_swap", ks=[3, 5])
    base = load_settings(env={})
    settings = base.with_overrides({"screening": {"signals": [*base.screening.signals, SKIPPING]}})
    summary = _runner(tmp_path, fake_gate_factory, settings).run(specs)
    out = tmp_path / "run"
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    # per K: Part A (5) + calib (5) once, Part B (5) per strategy
    assert summary.n_samples == len(rows) == 2 * (5 + 5 + 2 * 5)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"] == "pytest mini suite" and manifest["seed"] == 42
    assert manifest["settings"]["trust"]["alpha"] == 0.4
    assert len(manifest["data_files"]["ragtrust/data/secure_coding_kb.jsonl"]) == 64
    assert manifest["attacks"]["secure_coding-instruction_injection-r0"]["n_poisoned"] == 12
    truth = [json.loads(x) for x in (out / "attacks" / "secure_coding-entity_swap-r0.jsonl").read_text().splitlines()]
    poisoned_ids = {t["doc_id"] for t in truth}
    # the gate answered from the paired corpora: Part B gates saw the poisoned texts
    k5_gates = [g for g in fake_gate_factory.gates if g.settings.retrieval.top_k == 5]
    texts = {d.id: d.text for d in k5_gates[-1].documents}
    assert all(texts[t["doc_id"]] == t["poisoned"] for t in truth)
    assert all(not d.metadata for g in fake_gate_factory.gates for d in g.documents)  # no label leak
    for r in rows:
        assert r["part"] in {"A", "B", "calib"}
        assert len(r["retrieved"]) == r["k"]
        assert all("injection" in d["signals"] for d in r["retrieved"])
        assert all(d["signals"]["semantic_outlier"] is None for d in r["retrieved"])  # skipped stays None
        for key in ("F", "C", "P", "T", "s_max", "trusted", "timings_s", "latency_s"):
            assert key in r
        if r["part"] != "B":
            assert not r["label_doc"] and not r["label_retrieval"]
        elif r["strategy"] == "entity_swap":
            assert r["label_doc"] == (r["source_doc_id"] in poisoned_ids)
            assert r["label_retrieval"] == any(d["base_id"] in poisoned_ids for d in r["retrieved"])
    # attack success recorded both ways for exposed injection samples
    exposed = [
        r for r in rows if r["part"] == "B" and r["strategy"] == "instruction_injection" and r["label_retrieval"]
    ]
    assert exposed
    for r in exposed:
        a = r["attack"]
        assert a["false_statements"] and 0.0 <= a["entail_flag"] <= 1.0 and "adopted_gate" in a
        assert set(a["dropped_gate"]) <= set(r["poisoned_retrieved"]) | {d["base_id"] for d in r["retrieved"]}

    paths = build_report(out, bootstrap=200)
    md = paths.markdown.read_text()
    for heading in (
        "Detection (document-level label)",
        "Side by side",
        "Honest gaps",
        "Component ablation",
        "Weight sensitivity",
        "Calibration",
        "K = 3 vs K = 5",
        "Attack success",
        "Provenance",
    ):
        assert heading in md  # fmt: skip
    assert "pytest mini suite" in md and "99.0%" in md  # command and the paper's reference row
    html = paths.html.read_text()
    assert "data:image/png;base64," in html and "<img src='figures" not in html
    assert {p.name for p in paths.figures} >= {"roc_secure_coding.png", "hist_secure_coding.png", "strategies.png"}
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in paths.figures)
    data = json.loads(paths.json.read_text())
    assert len(data["detection_document"]) == 4
    assert len(data["k_comparison"]) == 4
    assert data["consistency_max_abs_diff"] == pytest.approx(0.0, abs=1e-9)

    cli = CliRunner()
    args = ["eval", "calibrate", str(out), "--out", str(tmp_path / "cal.json"), "--k", "5", "--min-samples", "5"]
    result = cli.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    cal = json.loads((tmp_path / "cal.json").read_text())
    calib_T = sorted(r["T"] for r in rows if r["part"] == "calib" and r["k"] == 5)
    import numpy as np

    assert cal["tau"] == pytest.approx(float(np.percentile(calib_T, 10)))
    assert cal["n"] == 5 and cal["percentile"] == 10.0
    loaded = load_run(out)
    assert len(loaded.samples) == len(rows)


def test_real_trustgate_with_fakes(tmp_path):
    """The default factory builds ragtrust.pipeline.TrustGate (shipped fakes for models)."""
    runner = _runner(tmp_path, None)
    summary = runner.run(parse_suite("kb:instruction_injection"))
    rows = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert summary.n_samples == 15
    assert all(r["retrieved"] for r in rows if not r["failed"])
    assert {r["part"] for r in rows} == {"A", "B", "calib"}


def test_an_interrupted_rerun_leaves_the_earlier_run_whole(tmp_path, fake_gate_factory):
    out = tmp_path / "run"
    _runner(tmp_path, fake_gate_factory).run(parse_suite("kb:instruction_injection,kb:entity_swap"))
    before = {p.name: p.read_bytes() for p in (out / "attacks").iterdir()}
    samples = (out / "samples.jsonl").read_bytes()

    built = []

    def interrupted(documents, settings, nli, embedder):
        if len(built) == 2:  # the clean gate, the first poisoned one, then Ctrl-C
            raise KeyboardInterrupt
        built.append(documents)
        return fake_gate_factory(documents, settings, nli, embedder)

    with pytest.raises(KeyboardInterrupt):
        _runner(tmp_path, interrupted, seed=7).run(parse_suite("kb:instruction_injection"))
    # the seed-7 attack was drawn before the interrupt; it must not sit beside the seed-42 samples
    assert {p.name: p.read_bytes() for p in (out / "attacks").iterdir()} == before
    assert (out / "samples.jsonl").read_bytes() == samples
    earlier = CliRunner().invoke(app, ["eval", "report", str(out), "--bootstrap", "100"])
    assert earlier.exit_code == 0, earlier.output
    assert "left by a later run that did not finish" in " ".join(earlier.stderr.split())

    (out / "samples.jsonl").unlink()  # an interrupted first run: only the partial samples
    result = CliRunner().invoke(app, ["eval", "report", str(out)])
    assert result.exit_code == 2
    assert "did not finish" in " ".join(result.stderr.split()) and "samples.jsonl.partial" in result.stderr


def test_a_run_replaces_the_attack_files_of_an_earlier_run(tmp_path, fake_gate_factory):
    out = tmp_path / "run"
    _runner(tmp_path, fake_gate_factory).run(parse_suite("kb:instruction_injection,kb:entity_swap"))
    _runner(tmp_path, fake_gate_factory).run(parse_suite("kb:contradiction"))
    assert sorted(p.name for p in (out / "attacks").iterdir()) == ["secure_coding-contradiction-r0.jsonl"]
    assert not (out / "attacks.partial").exists()


def test_cli_attack_and_errors(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(
            json.dumps({"id": f"d{i}", "text": f"Is {i} odd? The number {i} is not odd."}) + "\n" for i in range(10)
        ),
        encoding="utf-8",
    )
    cli = CliRunner()
    out = tmp_path / "attacked"
    result = cli.invoke(
        app, ["attack", "--docs", str(docs), "--strategy", "contradiction", "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    truth = [json.loads(x) for x in (out / "ground_truth.jsonl").read_text().splitlines()]
    assert len(truth) == 3 and all(t["strategy"] == "contradiction" for t in truth)
    poisoned = [json.loads(x) for x in (out / "poisoned.jsonl").read_text().splitlines()]
    assert (
        sum(
            p["text"] != c["text"]
            for p, c in zip(
                poisoned, [json.loads(x) for x in (out / "clean.jsonl").read_text().splitlines()], strict=True
            )
        )
        == 3
    )
    assert cli.invoke(app, ["attack", "--out", str(out)]).exit_code == 2  # neither --dataset nor --docs
    assert cli.invoke(app, ["attack", "--docs", str(docs), "--strategy", "x", "--out", str(out)]).exit_code == 2
    assert cli.invoke(app, ["eval", "report", str(tmp_path / "missing")]).exit_code == 2
    assert cli.invoke(app, ["eval", "run", "--suite", "kb:nope", "--out", str(tmp_path / "r")]).exit_code == 2


@pytest.mark.parametrize(
    ("command", "out"),
    [
        (["attack", "--docs", "docs.jsonl"], "in_file/attacked"),
        (["attack", "--docs", "docs.jsonl"], "a_file"),
        (["eval", "run", "--suite", "quick"], "in_file/run"),
        (["eval", "run", "--suite", "quick"], "a_file"),
        (["eval", "report", "run"], "a_file"),
        (["eval", "calibrate", "run"], "in_file/cal.json"),
        (["eval", "calibrate", "run"], "."),
        (["eval", "relevance", "--store", "store"], "in_file/relevance.json"),
        (["eval", "fusion", "--train", "run", "--eval", "run"], "in_file/fusion.json"),
        (["eval", "conflicts"], "in_file/conflicts.json"),
        (["eval", "evidence"], "in_file/evidence"),
    ],
)
def test_eval_commands_refuse_an_output_they_cannot_write_before_any_work(tmp_path, monkeypatch, command, out):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("x", encoding="utf-8")
    (tmp_path / "in_file").write_text("x", encoding="utf-8")
    result = CliRunner().invoke(app, [*command, "--out", out])
    message = " ".join(result.stderr.split())
    assert result.exit_code == 2, result.output
    assert message.startswith(f"error: --out {out}") and "internal error" not in message


def test_a_run_says_when_the_corpus_is_smaller_than_n(tmp_path, fake_gate_factory, monkeypatch):
    # --n 60 on the 40-rule knowledge base: 30 evaluation and 10 calibration queries, said aloud
    runner = _runner(tmp_path, fake_gate_factory, attack_success=False)
    runner.n, runner.n_calib = 60, None
    summary = runner.run(parse_suite("kb:instruction_injection"))
    assert summary.datasets == {"secure_coding": {"n_documents": 40, "n_eval": 30, "n_calib": 10}}
    monkeypatch.setattr(EvalRunner, "run", lambda self, specs: summary)
    result = CliRunner().invoke(app, ["eval", "run", "--suite", "kb", "--n", "60", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    message = " ".join(result.stderr.split())
    assert "note: secure_coding has 40 documents: 30 evaluation and 10 calibration queries, not 60 and 30" in message
    args = ["eval", "run", "--suite", "kb", "--n", "30", "--n-calib", "10", "--out", str(tmp_path / "r2")]
    quiet = CliRunner().invoke(app, args)
    assert quiet.exit_code == 0 and "note:" not in quiet.stderr
