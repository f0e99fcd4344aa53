from __future__ import annotations

import sys

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

from ragtrust.errors import InputError, MissingDependencyError
from ragtrust.eval.metrics import (
    bootstrap_metric,
    confusion,
    evaluate,
    mean_sd,
    naive_baseline,
    pr_auc,
    roc_auc,
    trust_separation,
    wilson_interval,
)


def test_confusion_hand_computed():
    y = [1, 1, 1, 0, 0, 0, 0, 0]
    p = [1, 1, 0, 1, 0, 0, 0, 0]
    c = confusion(y, p)
    assert (c.tp, c.fp, c.tn, c.fn) == (2, 1, 4, 1)
    assert c.accuracy == pytest.approx(6 / 8)
    assert c.precision == pytest.approx(2 / 3)
    assert c.recall == pytest.approx(2 / 3)
    assert c.f1 == pytest.approx(2 / 3)
    assert c.false_positive_rate == pytest.approx(1 / 5)


def test_undefined_precision_is_none_not_zero():
    c = confusion([1, 1, 0], [0, 0, 0])
    assert c.precision is None
    assert c.recall == 0.0
    assert c.f1 == 0.0
    assert naive_baseline([1, 0, 0, 0]).accuracy == 0.75


def test_against_scikit_learn():
    rng = np.random.default_rng(0)
    y = rng.random(200) < 0.3
    trust = np.clip(0.7 - 0.3 * y + rng.normal(0, 0.2, 200), 0, 1)
    flagged = trust < 0.5
    c = confusion(y, flagged)
    assert c.accuracy == pytest.approx(accuracy_score(y, flagged))
    assert c.precision == pytest.approx(precision_score(y, flagged))
    assert c.recall == pytest.approx(recall_score(y, flagged))
    assert c.f1 == pytest.approx(f1_score(y, flagged))
    assert roc_auc(y, 1 - trust) == pytest.approx(roc_auc_score(y, 1 - trust))
    assert pr_auc(y, 1 - trust) == pytest.approx(average_precision_score(y, 1 - trust))
    assert trust_separation(y, trust) == pytest.approx(trust[~y].mean() - trust[y].mean())


def test_auc_undefined_with_one_class():
    assert roc_auc([0, 0, 0], [0.1, 0.2, 0.3]) is None
    assert pr_auc([1, 1], [0.1, 0.2]) is None
    assert trust_separation([0, 0], [0.5, 0.6]) is None


def test_wilson_known_values():
    lo, hi = wilson_interval(8, 10)
    assert (lo, hi) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    lo, hi = wilson_interval(0, 20)
    assert lo == 0.0 and hi == pytest.approx(0.1611, abs=1e-4)
    lo, hi = wilson_interval(50, 100)
    assert (lo, hi) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    assert wilson_interval(0, 0) is None
    with pytest.raises(InputError):
        wilson_interval(5, 3)


def test_bootstrap_known_cases():
    # perfect predictions: every resample with a positive has F1 = 1
    y = [1] * 10 + [0] * 40
    assert bootstrap_metric(y, y, "f1", b=2000) == (1.0, 1.0)
    # accuracy of a constant 80% correct vector: interval brackets 0.8 and is seeded
    y = np.array([1] * 50 + [0] * 50)
    p = y.copy()
    p[:20] = 1 - p[:20]
    a = bootstrap_metric(y, p, "accuracy", b=20_000, seed=1)
    b = bootstrap_metric(y, p, "accuracy", b=20_000, seed=1)
    assert a == b
    assert a[0] < 0.8 < a[1]
    # the normal approximation of a proportion's sd: sqrt(0.8 * 0.2 / 100) = 0.04
    assert a[1] - a[0] == pytest.approx(2 * 1.96 * 0.04, abs=0.02)
    # resampling per-sample outcomes: fewer samples, wider intervals
    small = bootstrap_metric(y[::5], p[::5], "f1", b=5000)
    large = bootstrap_metric(y, p, "f1", b=5000)
    assert small[1] - small[0] > large[1] - large[0]
    assert bootstrap_metric([], [], "f1") is None
    with pytest.raises(InputError):
        bootstrap_metric([1], [1], "auc")


def test_evaluate_report_and_mean_sd():
    r = evaluate([0, 0, 0, 1, 1], [0.9, 0.8, 0.7, 0.2, 0.6], [0, 0, 0, 1, 0], bootstrap=500)
    d = r.to_dict()
    assert d["tp"] == 1 and d["fn"] == 1 and d["precision"] == 1.0 and d["recall"] == 0.5
    assert d["delta"] == pytest.approx(0.8 - 0.4)
    assert d["roc_auc"] == 1.0
    assert d["baseline"]["accuracy"] == 0.6
    assert d["n_positive"] == 2
    m, s = mean_sd([0.5, 0.7, None])
    assert m == pytest.approx(0.6) and s == pytest.approx(np.std([0.5, 0.7], ddof=1))
    assert mean_sd([None]) is None
    with pytest.raises(InputError):
        evaluate([0, 1], [0.5], [0, 1])


def test_without_scikit_learn_the_error_names_the_eval_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)  # what `import` sees when it is not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragtrust\[eval\]'"):
        roc_auc([0, 1, 1], [0.1, 0.8, 0.9])


def test_without_scipy_the_error_names_the_eval_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragtrust\[eval\]'"):
        wilson_interval(3, 10)
