"""Issue 16: query-level recall at <= 2% FPR on clean queries, thresholds fitted on calib."""

from __future__ import annotations

import json

import pytest

from ragtrust.config import TrustConfig
from ragtrust.errors import InputError
from ragtrust.eval import analysis
from ragtrust.eval.report import build_report


def _doc(p=0.1, poisoned=False, **signals):
    return {"poisoned": poisoned, "poison_probability": p, "suspicious": p > 0.5, "action": "kept", "signals": signals}


def _sample(part, i, docs, *, T=0.8, trusted=None, k=5, strategy=None, label_doc=False, label_retrieval=None,
            failed=False):  # fmt: skip
    retrieved = label_doc if label_retrieval is None else label_retrieval
    return {
        "run": "x",
        "dataset": "toy",
        "strategy": strategy or ("contradiction" if part == "B" else "clean"),
        "k": k,
        "repeat": 0 if part == "B" else None,
        "part": part,
        "query_index": i,
        "query": f"q{i}",
        "label_doc": label_doc,
        "label_retrieval": retrieved,
        "retrieved": docs,
        "F": T,
        "C": T,
        "P": max(d["poison_probability"] for d in docs) if docs else 0.0,
        "s_max": 0.8,
        "T": None if failed else T,
        "trusted": T >= 0.5 if trusted is None else trusted,
        "failed": failed,
        "latency_s": 0.1,
        "timings_s": {"screen": 0.05},
    }


def _write(tmp_path, rows, families="held_out"):
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    manifest = {"seed": 42, "families": families, "settings": {"trust": TrustConfig().model_dump()}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return analysis.load_run(tmp_path)


def _rows(run, label="document", **kwargs):
    return {r["detector"]: r for r in analysis.query_recall_at_fpr(run, label=label, **kwargs)}


@pytest.fixture
def separable(tmp_path):
    """100 calib + 100 Part A clean queries, 20 poisoned: injection separates, linguistic is noise."""
    rows = []
    for part in ("calib", "A"):
        for i in range(100):
            rows.append(_sample(part, i, [_doc(0.1, injection=0.05 * (i % 3), linguistic=i / 100)], T=0.9))
    for i in range(20):
        docs = [_doc(0.9, poisoned=True, injection=0.95, linguistic=(5 * i) / 100), _doc(0.1, injection=0.0)]
        rows.append(_sample("B", i, docs, T=0.2, label_doc=True))
    return _write(tmp_path, rows)


def test_a_perfect_separator_and_a_useless_signal(separable):
    rows = _rows(separable)
    assert list(rows)[:3] == ["decision", "T", "max P_i"]
    assert set(rows) == {"decision", "T", "max P_i", "injection", "linguistic"}
    inj = rows["injection"]
    assert inj["n_positive"] == 20 and inj["n_negative"] == 100 and inj["n_calib"] == 100
    # 2% of 100 calibration queries = 2 may lie above: the 98th smallest score, 0.1
    assert inj["threshold"] == pytest.approx(0.1)
    assert inj["recall"] == 1.0 and inj["fpr"] == 0.0 and inj["within_budget"] is True
    assert inj["roc_auc"] == 1.0 and inj["oracle_recall"] == 1.0
    # linguistic: the same 0.00..0.99 grid for calib and Part A; threshold 0.97 flags 0.98, 0.99
    noise = rows["linguistic"]
    assert noise["threshold"] == pytest.approx(0.97)
    assert noise["fpr"] == pytest.approx(0.02) and noise["within_budget"] is True
    assert noise["recall"] <= 0.05  # positives spread over 0.00..0.95: none above 0.97
    assert noise["oracle_fpr"] <= 0.02
    # max P_i over the top-K: 0.9 poisoned vs 0.1 clean
    assert rows["max P_i"]["recall"] == 1.0 and rows["max P_i"]["fpr"] == 0.0
    # T: lower is more suspicious, threshold on -T
    t = rows["T"]
    assert t["threshold"] == pytest.approx(-0.9) and t["recall"] == 1.0 and t["roc_auc"] == 1.0


def test_threshold_comes_from_calibration_not_from_the_evaluation_queries(tmp_path):
    rows = []
    for i in range(25):  # calibration scores 0.00..0.24; 2% of 25 allows none above
        rows.append(_sample("calib", i, [_doc(injection=i / 100)]))
    for i in range(25):  # Part A clean scores reach 0.50: the eval distribution is shifted up
        rows.append(_sample("A", i, [_doc(injection=0.26 + i / 100)]))
    for i in range(10):
        rows.append(_sample("B", i, [_doc(poisoned=True, injection=0.40)], label_doc=True))
    r = _rows(_write(tmp_path, rows), detectors=["injection"])["injection"]
    assert r["threshold"] == pytest.approx(0.24)  # max of calib, not of Part A (0.50)
    assert r["recall"] == 1.0
    assert r["fpr"] == 1.0 and r["within_budget"] is False  # honest: calib did not transfer
    assert r["oracle_threshold"] == pytest.approx(0.50)  # in-sample threshold would differ
    assert r["oracle_recall"] == 0.0 and r["oracle_fpr"] == 0.0


def test_no_calibration_queries_means_no_calibrated_recall(tmp_path):
    rows = [_sample("A", i, [_doc(injection=0.0)]) for i in range(5)]
    rows += [_sample("B", i, [_doc(poisoned=True, injection=0.9)], label_doc=True) for i in range(5)]
    rows += [_sample("calib", i, [_doc(injection=0.0)], k=3) for i in range(5)]  # other K: not used
    r = _rows(_write(tmp_path, rows), detectors=["injection", "decision"])
    assert r["injection"]["n_calib"] == 0 and r["injection"]["threshold"] is None
    assert r["injection"]["recall"] is None and r["injection"]["fpr"] is None
    assert r["injection"]["oracle_recall"] == 1.0 and r["injection"]["roc_auc"] == 1.0
    assert r["decision"]["recall"] is not None  # the shipped decision needs no threshold


def test_decision_is_reported_as_is(tmp_path):
    rows = [_sample("calib", i, [_doc()]) for i in range(10)]
    rows += [_sample("A", i, [_doc()], T=0.9, trusted=i != 0) for i in range(20)]  # one false positive
    rows += [_sample("B", i, [_doc(poisoned=True)], T=0.3, trusted=i >= 3, label_doc=True) for i in range(4)]
    r = _rows(_write(tmp_path, rows), detectors=["decision"])["decision"]
    assert r["recall"] == pytest.approx(3 / 4) and r["fpr"] == pytest.approx(1 / 20)
    assert r["within_budget"] is False and r["threshold"] is None and r["oracle_recall"] is None
    assert r["recall_ci"] is not None and r["recall_ci"][0] < 0.75 < r["recall_ci"][1]


def test_retrieval_label_differs_from_document_label(tmp_path):
    rows = [_sample("calib", i, [_doc(injection=0.0)]) for i in range(10)]
    rows += [_sample("A", i, [_doc(injection=0.0)]) for i in range(10)]
    # source poisoned but the poisoned document was not retrieved: nothing to see in the top-K
    rows += [_sample("B", i, [_doc(injection=0.0)], label_doc=True, label_retrieval=False) for i in range(2)]
    # retrieved: a poisoned document in the top-K (the injection signal fires)
    rows += [_sample("B", 2 + i, [_doc(poisoned=True, injection=0.9)], label_doc=True) for i in range(2)]
    # a poisoned document answered someone else's query: retrieval-positive, document-negative
    rows += [_sample("B", 4, [_doc(poisoned=True, injection=0.9)], label_doc=False, label_retrieval=True)]
    rows += [_sample("B", 5, [_doc(injection=0.0)], T=0.5, failed=True, label_doc=True)]  # excluded
    run = _write(tmp_path, rows)
    doc = _rows(run, label="document", detectors=["injection"])["injection"]
    ret = _rows(run, label="retrieval", detectors=["injection"])["injection"]
    assert (doc["n_positive"], doc["n_other"]) == (4, 1)
    assert (ret["n_positive"], ret["n_other"]) == (3, 2)
    assert doc["recall"] == pytest.approx(2 / 4)
    assert ret["recall"] == 1.0
    assert doc["n_negative"] == ret["n_negative"] == 10 and doc["fpr"] == ret["fpr"] == 0.0


def test_fpr_threshold_and_errors(separable):
    assert analysis.fpr_threshold([0.3, 0.1, 0.2], 0.02) == 0.3
    assert analysis.fpr_threshold([float(i) for i in range(50)], 0.02) == 48.0  # 49 lies above: 1 of 50
    assert analysis.fpr_threshold([float(i) for i in range(49)], 0.02) == 48.0  # 2% of 49 < 1: none above
    assert analysis.fpr_threshold([1.0, 1.0, 1.0], 0.5) == 1.0  # ties: nothing strictly above
    with pytest.raises(InputError):
        analysis.fpr_threshold([], 0.02)
    with pytest.raises(InputError):
        analysis.fpr_threshold([0.1], 1.0)
    with pytest.raises(InputError, match="label"):
        analysis.query_recall_at_fpr(separable, label="answer")
    assert analysis.signal_names(separable) == ["injection", "linguistic"]


def test_report_has_the_issue_16_section(separable, tmp_path):
    paths = build_report(separable.path, tmp_path / "report", bootstrap=50)
    md = paths.markdown.read_text()
    assert "Query-level recall at <= 2% FPR (issue 16)" in md
    assert "Query-level recall, document-level label" in md
    assert "Query-level recall, retrieval label: a poisoned document was in the top-K" in md
    assert "optimistic" in md and "`held_out`" in md
    assert "| toy/contradiction/k5/r0 | injection | score > 0.100 | 100.0% [" in md
    assert "| toy/contradiction/k5/r0 | T | T < 0.900 |" in md
    data = json.loads(paths.json.read_text())["query_recall"]
    assert data["fpr"] == 0.02
    assert {(r["label"], r["detector"]) for r in data["rows"]} == {
        (label, d)
        for label in ("document", "retrieval")
        for d in ("decision", "T", "max P_i", "injection", "linguistic")
    }
