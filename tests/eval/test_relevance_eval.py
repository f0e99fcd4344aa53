"""Calibrating relevance: threshold fitting, leave-one-out, the shipped question sets, the run."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from ragtrust.config import load_settings
from ragtrust.documents import Document
from ragtrust.errors import InputError
from ragtrust.eval.relevance import (
    Row,
    auc,
    calibrate,
    combine_reports,
    decide,
    fit,
    fit_threshold,
    load_relevance_questions,
    run_relevance_eval,
    write_relevance_report,
)
from ragtrust.pipeline import TrustGate
from ragtrust.testing import HashingEmbedder, LexicalNLI

SIGNALS = ["linguistic", "structural", "intra_consistency", "cross_consistency", "semantic_outlier", "provenance"]


def row(on: bool, context: float | None, answer: float | None = None, trusted: bool = True, id: str = "q") -> Row:
    return Row(
        id, "?", on, "", context, context if answer is None else answer, None, 0.8, "HIGH", trusted, (), False, 0.0
    )


def test_fit_threshold_separable_is_the_middle_of_the_gap() -> None:
    assert fit_threshold([0.6, 0.7, 0.9], [0.1, 0.3]) == 0.45


def test_fit_threshold_overlap_maximises_youden_j() -> None:
    # one off-topic score among the on-topic ones: the cut that keeps every on-topic one wins
    pos, neg = [0.5, 0.6, 0.7, 0.8], [0.1, 0.2, 0.65]
    cut = fit_threshold(pos, neg)
    assert cut == 0.35
    j = sum(p >= cut for p in pos) / 4 - sum(n >= cut for n in neg) / 3
    for other in (0.15, 0.55, 0.675, 0.75, 0.9):
        assert j >= sum(p >= other for p in pos) / 4 - sum(n >= other for n in neg) / 3


def test_fit_threshold_one_sided_and_empty() -> None:
    assert fit_threshold([0.5, 0.6], []) == 0.49
    assert fit_threshold([], [0.2]) == 0.21
    assert fit_threshold([], []) == 0.0


def test_fit_threshold_keeps_the_exact_cut_when_rounding_would_change_a_decision() -> None:
    cut = fit_threshold([0.40010], [0.40000])
    assert 0.40000 < cut <= 0.40010


def test_decide_needs_both_parts_and_the_other_conditions() -> None:
    assert decide(row(True, 0.5, 0.5), 0.4, 0.4)
    assert not decide(row(True, 0.3, 0.5), 0.4, 0.4)
    assert not decide(row(True, 0.5, 0.3), 0.4, 0.4)
    assert not decide(row(True, 0.9, trusted=False), 0.4, 0.4)
    assert decide(row(True, None, None), 0.4, 0.4)  # not measured: passes


def test_auc() -> None:
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.5], [0.5]) == 0.5
    assert auc([], [0.1]) is None


def test_calibrate_reports_in_sample_and_leave_one_out() -> None:
    rows = [row(True, v, id=f"on{i}") for i, v in enumerate((0.55, 0.6, 0.65, 0.7, 0.75))]
    rows += [row(False, v, id=f"off{i}") for i, v in enumerate((0.1, 0.15, 0.2, 0.25, 0.58))]
    out = calibrate(rows, configured=(0.3, 0.3))
    # both measures are equal here: among the pairs with the best J, context relevance does
    # the work (the lowest answer cut first, then the most permissive pair)
    assert out["thresholds"] == {"context_threshold": 0.4, "answer_threshold": 0.0}
    assert out["in_sample"]["on_topic_trusted"] == 5 and out["in_sample"]["off_topic_trusted_ids"] == ["off4"]
    # held out, off4 (0.58) still clears the refit cut; on0 (0.55) does not: without it the
    # cut just above 0.58 separates everything else
    loo = out["leave_one_out"]
    assert loo["off_topic_trusted_ids"] == ["off4"] and loo["on_topic_flagged_ids"] == ["on0"]
    assert loo["context_threshold_range"] == [0.4, 0.59] and loo["answer_threshold_range"] == [0.0, 0.0]
    assert out["configured"]["context_threshold"] == 0.3 and out["configured"]["off_topic_trusted"] == 1
    assert out["separation"]["context"]["auc"] == pytest.approx(0.96)
    with pytest.raises(InputError, match="on-topic and off-topic"):
        calibrate(rows[:5])


def test_leave_one_out_is_not_the_in_sample_figure() -> None:
    # the lowest on-topic question sets the in-sample cut; held out, the refit cut rises past it
    rows = [row(True, v, id=f"on{i}") for i, v in enumerate((0.35, 0.7, 0.75, 0.8))]
    rows += [row(False, v, id=f"off{i}") for i, v in enumerate((0.1, 0.2, 0.3))]
    out = calibrate(rows)
    assert out["in_sample"]["on_topic_trusted"] == 4
    assert out["leave_one_out"]["on_topic_flagged_ids"] == ["on0"]


def test_shipped_question_sets() -> None:
    on = load_relevance_questions(None, on_topic=True)
    off = load_relevance_questions(None, on_topic=False)
    assert len(on) == 36 and all(q.on_topic for q in on)
    assert len(off) >= 20 and not any(q.on_topic for q in off)
    assert len({q.id for q in [*on, *off]}) == len(on) + len(off)
    assert "What is the capital of France?" in {q.question for q in off}
    shipped = Path(__file__).resolve().parents[2] / "src" / "ragtrust" / "data" / "offtopic_questions.jsonl"
    lines = [json.loads(line) for line in shipped.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert all(line["source"] == "written by the ragtrust project" and line["category"] for line in lines)


def test_question_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"question": "ok?"}\n{"nope": 1}\n')
    with pytest.raises(InputError, match="q.jsonl:2"):
        load_relevance_questions(bad, on_topic=False)
    bad.write_text("\n")
    with pytest.raises(InputError, match="no questions"):
        load_relevance_questions(bad, on_topic=True)


def test_run_relevance_eval_with_fakes(tmp_path: Path) -> None:
    docs = [
        Document("pw", "Store passwords with Argon2id hashing. Argon2id hashing slows password cracking."),
        Document("tls", "Servers should accept TLS 1.3 connections only. Disable old SSL protocols on servers."),
    ]
    on = tmp_path / "on.jsonl"
    on.write_text(
        '{"id": "a", "question": "Which hashing should store passwords?"}\n'
        '{"id": "b", "question": "Which TLS connections should servers accept?"}\n'
    )
    off = tmp_path / "off.jsonl"
    off.write_text('{"id": "x", "question": "What is the capital of France?"}\n{"id": "y", "question": "Who won?"}\n')
    cfg = load_settings(env={}, overrides={"screening": {"signals": SIGNALS}})
    measuring = cfg.with_overrides({"relevance": {"context_threshold": 0.0, "answer_threshold": 0.0}})
    gate = TrustGate.from_documents(docs, measuring, nli=LexicalNLI(), embedder=HashingEmbedder())
    seen: list[Any] = []
    report = run_relevance_eval(
        tmp_path / "store",
        cfg,
        on_topic=load_relevance_questions(on, on_topic=True),
        off_topic=load_relevance_questions(off, on_topic=False),
        command="ragtrust eval relevance",
        progress=lambda done, total: seen.append((done, total)),
        gate=gate,
    )
    assert seen[-1] == (4, 4)
    assert report["questions"] == {"on_topic": 2, "off_topic": 2}
    assert report["in_sample"]["on_topic_trusted"] == 2 and report["in_sample"]["off_topic_trusted"] == 0
    assert report["models"]["embedder"] == "hashing-embedder"
    assert report["configured"]["context_threshold"] == cfg.relevance.context_threshold
    rows = {r["id"]: r for r in report["rows"]}
    assert rows["a"]["context"] > 0.3 and rows["x"]["context"] is None and rows["x"]["prefaced"]
    path = write_relevance_report(report, tmp_path / "out" / "relevance.json")
    assert json.loads(path.read_text(encoding="utf-8"))["thresholds"] == report["thresholds"]


def _report(store: str, rows: list[Row]) -> dict[str, Any]:
    return {
        "store": store,
        "command": "c",
        "thresholds": calibrate(rows)["thresholds"],
        "rows": [asdict(r) for r in rows],
    }


def test_combined_thresholds_hold_across_stores_where_one_store_s_fit_does_not() -> None:
    # store A's on-topic questions score high, B's lower: A's own cut would reject B's questions
    a = [row(True, v, id=f"a-on{i}") for i, v in enumerate((0.7, 0.75, 0.8))]
    a += [row(False, v, id=f"a-off{i}") for i, v in enumerate((0.1, 0.2, 0.3))]
    b = [row(True, v, id=f"b-on{i}") for i, v in enumerate((0.45, 0.5, 0.55))]
    b += [row(False, v, id=f"b-off{i}") for i, v in enumerate((0.05, 0.15, 0.25))]
    own_a = calibrate(a)["thresholds"]
    assert own_a == {"context_threshold": 0.5, "answer_threshold": 0.0}
    assert not all(decide(r, *own_a.values()) for r in b if r.on_topic)
    out = combine_reports([_report("A", a), _report("B", b)], command="ragtrust eval relevance --combine ...")
    assert out["thresholds"]["answer_threshold"] == 0.0 and 0.3 < out["thresholds"]["context_threshold"] <= 0.45
    assert out["per_store"]["A"]["own_fit"] == own_a
    for store in ("A", "B"):
        f = out["per_store"][store]["in_sample"]
        assert (f["on_topic_trusted"], f["off_topic_trusted"]) == (3, 0)
    assert out["in_sample"]["on_topic"] == 6 and out["leave_one_out"]["off_topic"] == 6
    assert [s["store"] for s in out["combined"]] == ["A", "B"]


def test_combine_refuses_nothing_or_a_report_without_rows() -> None:
    with pytest.raises(InputError, match="nothing to combine"):
        combine_reports([])
    with pytest.raises(InputError, match="no rows"):
        combine_reports([{"store": "A", "rows": []}])


def test_combine_refuses_two_reports_of_one_store() -> None:
    # the same report twice doubled every row, and each question's twin stayed in its own
    # leave-one-out fit: "leave-one-out 6/6" measured nothing
    rows = [row(True, 0.7, id="on"), row(True, 0.6, id="on2"), row(False, 0.2, id="off"), row(False, 0.65, id="off2")]
    with pytest.raises(InputError, match="two reports of store A"):
        combine_reports([_report("A", rows), _report("A", rows)])


def test_fit_is_joint_on_the_decision() -> None:
    # answer relevance alone would cut above on0's 0.15 and reject it, though context relevance
    # separates every question; fitted on the decision, context does the work and all pass
    rows = [row(True, 0.6, 0.15, id="on0"), row(True, 0.5, 0.6, id="on1"), row(True, 0.7, 0.7, id="on2")]
    rows += [row(False, 0.2, 0.2, id="off0"), row(False, 0.1, 0.25, id="off1")]
    assert fit_threshold([0.15, 0.6, 0.7], [0.2, 0.25]) > 0.15
    c, a = fit(rows)
    assert all(decide(r, c, a) for r in rows if r.on_topic)
    assert not any(decide(r, c, a) for r in rows if not r.on_topic)
    assert a == 0.0
    # a question already not trusted for another reason does not pull the thresholds
    rows.append(row(False, 0.9, 0.9, trusted=False, id="off2"))
    assert fit(rows) == (c, a)
