"""Issue 16: a learned, calibrated fusion of the Stage-1 signals, evaluated on another run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragtrust.cli.main import app
from ragtrust.errors import InputError
from ragtrust.eval.analysis import fpr_threshold
from ragtrust.eval.fusion import (
    LEARNED,
    NOISY_OR,
    SKIPPED_SUFFIX,
    FusionModel,
    document_examples,
    evaluate,
    expected_calibration_error,
    fusion_report,
    train_fusion,
)


def _doc(doc_id, poisoned, signals, p=None):
    p = max((v or 0.0) for v in signals.values()) if p is None else p
    return {"id": doc_id, "base_id": doc_id, "poisoned": poisoned, "poison_probability": p, "signals": signals}


def _sample(part, docs, strategy="clean", dataset="toy", query="q"):
    return {
        "dataset": dataset,
        "part": part,
        "k": 5,
        "strategy": strategy,
        "repeat": 0 if part == "B" else None,
        "query": query,
        "retrieved": docs,
    }


def _write(path: Path, samples, families="development", attacks=None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    (path / "manifest.json").write_text(json.dumps({"seed": 1, "families": families}), encoding="utf-8")
    for name, rows in (attacks or {}).items():
        (path / "attacks").mkdir(exist_ok=True)
        (path / "attacks" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(path, *, seed, n_clean=300, n_poisoned=120, prefix="c", families="development", clean_shift=0.0):
    """A run where ``inj`` separates, ``noise`` is noise, ``anti`` is higher on clean documents
    and ``intra`` is skipped on every poisoned and every other clean document (a format leak)."""
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n_clean):
        signals = {
            "inj": float(min(1.0, rng.uniform(0.0, 0.55) + clean_shift)),
            "noise": float(rng.uniform()),
            "anti": float(rng.uniform(0.3, 1.0)),
            "intra": None if i % 2 else float(rng.uniform(0.0, 0.3)),
        }
        docs.append(_doc(f"{prefix}{i}", False, signals))
    for i in range(n_poisoned):
        signals = {
            "inj": float(rng.uniform(0.35, 1.0)),
            "noise": float(rng.uniform()),
            "anti": float(rng.uniform(0.0, 0.7)),
            "intra": None,
        }
        docs.append(_doc(f"p{seed}-{i}", True, signals))
    samples = [
        _sample(part, docs[i : i + 5], strategy="contradiction", query=f"q{seed}-{i}")
        for i in range(0, len(docs), 5)
        for part in ["B" if any(d["poisoned"] for d in docs[i : i + 5]) else "A"]
    ]
    return _write(path, samples, families=families)


@pytest.fixture
def runs(tmp_path):
    return _run(tmp_path / "dev", seed=1), _run(tmp_path / "heldout", seed=2, prefix="h", families="held_out")


# ------------------------------------------------------------------ examples
def test_examples_deduplicate_documents_and_poisoned_texts(tmp_path):
    clean = _doc("d1", False, {"a": 0.1, "b": None})
    attacks = {
        "toy-contradiction-r0": [{"doc_id": "d1", "poisoned": "text one", "strategy": "contradiction", "family": "f"}],
        "toy-mixed-r0": [{"doc_id": "d1", "poisoned": "text one", "strategy": "contradiction", "family": "f"}],
        "toy-entity_swap-r0": [{"doc_id": "d1", "poisoned": "text two", "strategy": "entity_swap", "family": "g"}],
    }
    run = _write(
        tmp_path,
        [
            _sample("A", [clean, _doc("d2", False, {"a": 0.2, "b": 0.3})]),
            _sample("calib", [clean]),  # the same clean document again
            _sample("B", [_doc("d1", True, {"a": 0.9, "b": None}), clean], strategy="contradiction"),
            _sample("B", [_doc("d1", True, {"a": 0.8, "b": None})], strategy="mixed"),  # same poisoned text
            _sample("B", [_doc("d1", True, {"a": 0.7, "b": 0.5})], strategy="entity_swap"),  # another text
        ],
        attacks=attacks,
    )
    X, y, meta = document_examples(run)
    assert meta.feature_names == ("a", "b")
    assert meta.n_occurrences == 7
    assert y.tolist() == [False, False, True, True]
    assert [r.occurrences for r in meta.records] == [3, 1, 2, 1]
    assert X[:, 0].tolist() == [0.1, 0.2, 0.9, 0.7]  # first occurrence kept
    assert X[0, 1] == 0.0  # skipped reads 0
    assert [r.attack_strategy for r in meta.records] == [None, None, "contradiction", "entity_swap"]
    assert meta.records[2].text_hash != meta.records[3].text_hash


def test_skipped_flag_ablation_changes_the_feature_list(runs):
    dev, _ = runs
    plain = document_examples(dev)
    flagged = document_examples(dev, skipped_flags=True)
    assert plain.meta.feature_names == ("anti", "inj", "intra", "noise")
    assert flagged.meta.feature_names == ("anti", "inj", "intra", "noise", "intra" + SKIPPED_SUFFIX)
    assert flagged.X[:, -1].tolist() == [1.0 if r.signals["intra"] is None else 0.0 for r in flagged.meta.records]
    report, model = fusion_report(dev, runs[1], skipped_flags=True)
    assert "intra:skipped" in report["model"]["feature_names"]
    assert model.coefficients[model.feature_names.index("intra:skipped")] > 0  # the leak is learned when offered
    plain_report, _ = fusion_report(dev, runs[1])
    assert "intra:skipped" not in plain_report["model"]["feature_names"]


def test_features_of_another_run_follow_the_model(tmp_path, runs):
    other = _write(tmp_path / "o", [_sample("A", [_doc("x", False, {"inj": 0.2})])])
    ex = document_examples(other, features=("anti", "inj", "intra:skipped"))
    assert ex.X.tolist() == [[0.0, 0.2, 1.0]]
    assert ex.meta.missing_signals == ("anti",)


# ------------------------------------------------------------------ model
@pytest.fixture
def trained(runs):
    ex = document_examples(runs[0])
    return ex, train_fusion(ex.X, ex.y, ex.meta.feature_names)


def test_negative_coefficient_feature_is_dropped(trained):
    _, model = trained
    assert "anti" in model.dropped and model.dropped["anti"] < 0
    assert model.coefficients[model.feature_names.index("anti")] == 0.0
    assert "anti" not in model.kept and "inj" in model.kept
    assert all(c >= 0 for c in model.coefficients)
    assert model.calibration.method == "sigmoid"  # 420 examples < 1000


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
def test_monotone_in_every_kept_signal(trained, method):
    ex, _ = trained
    model = train_fusion(ex.X, ex.y, ex.meta.feature_names, method=method)
    base = ex.X[:50]
    for j, name in enumerate(model.feature_names):
        previous = model.predict_proba(base)
        for value in np.linspace(0.0, 1.0, 11):
            raised = base.copy()
            raised[:, j] = np.maximum(base[:, j], value)
            now = model.predict_proba(raised)
            assert (now >= previous - 1e-12).all(), name
            previous = now


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
def test_json_round_trip_gives_identical_probabilities(tmp_path, trained, method):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    ex, _ = trained
    model = train_fusion(ex.X, ex.y, ex.meta.feature_names, method=method, training={"run": "dev"})
    loaded = FusionModel.load(model.save(tmp_path / "fusion.json"))
    assert loaded == model
    assert np.array_equal(loaded.predict_proba(ex.X), model.predict_proba(ex.X))
    assert "pickle" not in (tmp_path / "fusion.json").read_text()
    # and the JSON math is scikit-learn's
    kept = [model.feature_names.index(f) for f in model.kept]
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    reference = CalibratedClassifierCV(
        LogisticRegression(C=1.0, max_iter=2000), method=method, cv=folds, ensemble=False
    )
    expected = reference.fit(ex.X[:, kept], ex.y).predict_proba(ex.X[:, kept])[:, 1]
    np.testing.assert_allclose(loaded.predict_proba(ex.X), expected, atol=1e-9)


def test_load_refuses_other_files(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(InputError, match="not a fusion model"):
        FusionModel.load(tmp_path / "x.json")


def test_train_refuses_one_class():
    with pytest.raises(InputError, match="poisoned and clean"):
        train_fusion(np.zeros((10, 1)), np.zeros(10, dtype=bool), ("a",))


# ------------------------------------------------------------------ evaluation
def test_learned_beats_noise_and_thresholds_come_from_training(runs, tmp_path):
    dev, heldout = runs
    report, model = fusion_report(dev, heldout)
    overall = report["overall"]
    assert overall[LEARNED]["roc_auc"] > 0.85 > 0.6 > overall["noise"]["roc_auc"]
    assert report["best_single_signal"] == "inj"
    train = document_examples(dev)
    assert report["thresholds"][LEARNED] == model.threshold
    assert model.threshold == fpr_threshold(model.predict_proba(train.X[~train.y]), 0.02)
    assert report["thresholds"][NOISY_OR] == fpr_threshold(train.meta.baseline()[~train.y], 0.02)
    # held-out clean documents scored far higher move the realised FPR, never the threshold
    shifted = _run(tmp_path / "shifted", seed=2, prefix="h", families="held_out", clean_shift=0.4)
    moved, _ = fusion_report(dev, shifted)
    assert moved["thresholds"] == report["thresholds"]
    assert moved["overall"][LEARNED]["fpr"] > report["overall"][LEARNED]["fpr"]
    assert report["warnings"] == []


def test_shared_clean_documents_are_excluded_from_the_evaluation(tmp_path, runs):
    dev, _ = runs
    heldout = _run(tmp_path / "overlapping", seed=3, prefix="c", n_clean=320, families="held_out")  # c0..c319
    report, _ = fusion_report(dev, heldout)
    assert report["overlap"]["heldout_clean_shared"] == 300  # c0..c299 are in the training run
    assert report["heldout"]["n_excluded_shared"] == 300
    assert report["heldout"]["n_documents"] == 20 + 120
    assert report["overall"][LEARNED]["n_negative"] == 20
    assert report["overall_with_shared"][LEARNED]["n_negative"] == 320
    kept, _ = fusion_report(dev, heldout, exclude_shared=False)
    assert kept["overall"][LEARNED]["n_negative"] == 320


def test_evaluate_rejects_mismatched_features(runs, trained):
    _, model = trained
    flagged = document_examples(runs[1], skipped_flags=True)
    with pytest.raises(InputError, match="feature names"):
        evaluate(model, flagged, document_examples(runs[0]))


def test_per_dataset_and_strategy_breakdown(runs):
    report, _ = fusion_report(*runs)
    assert set(report["per_dataset"]) == {"toy"}
    assert report["per_attack_strategy"]["contradiction"][LEARNED]["n_positive"] == 120


def test_expected_calibration_error():
    y = np.array([True] * 8 + [False] * 2)
    assert expected_calibration_error(y, np.full(10, 0.8)) == pytest.approx(0.0)
    assert expected_calibration_error(y, np.full(10, 0.3)) == pytest.approx(0.5)
    assert expected_calibration_error(np.array([], dtype=bool), np.array([])) is None


def test_cli_writes_report_and_model(runs, tmp_path):
    dev, heldout = runs
    out, model_out = tmp_path / "report.json", tmp_path / "fusion.json"
    args = f"eval fusion --train {dev} --eval {heldout} --out {out} --model-out {model_out} --with-skipped-flags"
    result = CliRunner().invoke(app, args.split())
    assert result.exit_code == 0, result.output
    assert "learned" in result.output and "noisy_or" in result.output
    report = json.loads(out.read_text())
    assert report["skipped_flags"] is True
    assert FusionModel.load(model_out).feature_names == tuple(report["model"]["feature_names"])
    bad = CliRunner().invoke(app, f"eval fusion --train {tmp_path / 'nope'} --eval {heldout} --out {out}".split())
    assert bad.exit_code == 2
