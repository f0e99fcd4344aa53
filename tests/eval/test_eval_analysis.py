from __future__ import annotations

import json

import numpy as np
import pytest

from ragtrust.config import TrustConfig
from ragtrust.errors import InputError
from ragtrust.eval import analysis
from ragtrust.trust import compute_trust


def _sample(part, i, F, C, P, s_max=0.8, label=False, retrieval=None, strategy=None, k=5, calib=False, failed=False):
    cfg = TrustConfig()
    r = compute_trust(F, C, P, s_max, cfg, failed=failed)
    return {
        "run": "x",
        "dataset": "toy",
        "strategy": strategy or "clean",
        "k": k,
        "repeat": 0 if part == "B" else None,
        "part": "calib" if calib else part,
        "query_index": i,
        "query": f"q{i}",
        "label_doc": label,
        "label_retrieval": label if retrieval is None else retrieval,
        "F": F,
        "C": C,
        "P": P,
        "s_max": s_max,
        "T": r.trust_score,
        "trusted": r.trusted,
        "failed": failed,
        "latency_s": 0.1,
        "timings_s": {"screen": 0.05},
    }


@pytest.fixture
def run_dir(tmp_path):
    rows = []
    # Part A: clean, mostly trusted
    for i, (f, c, p) in enumerate(
        [(0.9, 0.9, 0.1), (0.8, 0.9, 0.2), (0.5, 0.8, 0.1), (0.3, 0.6, 0.3), (0.9, 1.0, 0.0)]
    ):
        rows.append(_sample("A", i, f, c, p))
    # Part B: two poisoned sources with high P, one poisoned with low P, two clean sources
    spec = [(0.9, 0.9, 0.1, False), (0.2, 0.4, 0.95, True), (0.4, 0.5, 0.8, True), (0.8, 0.9, 0.2, True),
            (0.9, 0.9, 0.1, False)]  # fmt: skip
    for i, (f, c, p, lab) in enumerate(spec):
        rows.append(_sample("B", i, f, c, p, label=lab, strategy="contradiction"))
    rows.append(_sample("B", 5, 0.5, 0.5, 0.5, label=True, strategy="contradiction", failed=True))
    for i, t in enumerate(np.linspace(0.2, 1.0, 11)):
        rows.append(_sample("A", i, float(t), float(t), 1 - float(t), calib=True))
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    manifest = {"seed": 42, "generator": "extractive", "settings": {"trust": TrustConfig().model_dump()}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return tmp_path


def test_cells_and_failed_samples_are_not_detections(run_dir):
    run = analysis.load_run(run_dir)
    (cell,) = analysis.cells(run)
    assert cell.key == "toy/contradiction/k5/r0"
    assert len(cell.clean) == 5 and len(cell.poisoned) == 6
    assert cell.n_failed == 1 and len(cell.valid) == 10
    (row,) = analysis.strategy_table(run, bootstrap=500)
    assert row["n"] == 10 and row["n_failed"] == 1 and row["n_positive"] == 3


def test_ablation_recomputed_from_stored_components(run_dir):
    run = analysis.load_run(run_dir)
    rows = {r["variant"]: r for r in analysis.ablation(run)}
    assert set(rows) == set(analysis.ABLATIONS)
    a = analysis.arrays(analysis.cells(run)[0].valid)
    y = a.y_doc
    # poison only: flagged iff 1 - P < 0.5, i.e. P > 0.5: samples 1, 2 of part B -> 2 TP, 0 FP
    assert rows["poison_only"]["recall"] == pytest.approx(2 / 3)
    assert rows["poison_only"]["precision"] == 1.0
    # NLI only: flagged iff F < 0.5: A3 (0.3), B1 (0.2), B2 (0.4)
    assert rows["nli_only"]["recall"] == pytest.approx(2 / 3)
    assert rows["nli_only"]["precision"] == pytest.approx(2 / 3)
    # full + dampener reproduces the stored T exactly
    scores, _ = analysis._variant_scores(a, "full_dampener", TrustConfig())
    assert np.allclose(scores, a.T)
    # no dampener: T for P = 0.95 is higher than with it
    nodamp, _ = analysis._variant_scores(a, "full", TrustConfig())
    assert nodamp[np.argmax(a.P)] > scores[np.argmax(a.P)]
    manual = (0.4 * a.F + 0.35 * a.C) / 0.75
    assert rows["nli_consistency"]["delta"] == pytest.approx(manual[~y].mean() - manual[y].mean())
    assert analysis.consistency_check(run) == pytest.approx(0.0, abs=1e-12)


def test_weight_grid_and_sensitivity(run_dir):
    grid = analysis.weight_grid(TrustConfig())
    assert len(grid) == 125 and len(set(grid)) > 100
    assert all(abs(sum(w) - 1) < 1e-9 and min(w) >= 0 for w in grid)
    assert (0.4, 0.35, 0.25) in grid
    (row,) = analysis.weight_sensitivity(analysis.load_run(run_dir))
    assert row["n_settings"] == 125
    lo, hi = row["accuracy"]
    assert 0 <= lo <= hi <= 1
    baseline = analysis.strategy_table(analysis.load_run(run_dir), bootstrap=1)[0]["accuracy"]
    assert lo <= baseline <= hi


def test_calibration_picks_the_10th_percentile(run_dir, tmp_path):
    run = analysis.load_run(run_dir)
    calib_T = [s["T"] for s in run.samples if s["part"] == "calib"]
    result = analysis.calibrate(run)
    assert result.tau == pytest.approx(float(np.percentile(calib_T, 10)))
    assert result.n == 11 and result.percentile == 10.0 and result.tau_before == 0.5
    assert analysis.percentile_tau([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 10) == pytest.approx(2.0)
    (row,) = result.before_after
    assert row["after"]["n"] == row["before"]["n"] == 10
    path = tmp_path / "cal.json"
    data = analysis.write_calibration(result, path)
    saved = json.loads(path.read_text())
    assert saved == data
    assert set(saved) >= {"tau", "generator", "n", "percentile", "created"}
    assert saved["generator"] == "extractive"
    from ragtrust.pipeline import load_calibration

    assert load_calibration(path)["tau"] == pytest.approx(result.tau)
    with pytest.raises(InputError):
        analysis.calibrate(run, dataset="missing")


def test_calibration_after_keeps_the_decisions_other_conditions(tmp_path):
    # a verdict flagged above its tau failed another condition of the decision (a suspicious
    # document used, an ungrounded answer): a lower tau must not count it as trusted "after"
    rows = [_sample("A", i, 0.9, 0.9, 0.0) for i in range(4)]
    rows += [_sample("B", i, 0.9, 0.9, 0.0, label=i < 2, strategy="instruction_injection") for i in range(4)]
    for row in rows[4:6]:
        row.update(trusted=False, tau=0.5)  # T about 0.93, flagged for the injection it used
    rows += [_sample("A", i, 0.6, 0.6, 0.0, calib=True) for i in range(10)]
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    manifest = {"seed": 42, "generator": "extractive", "settings": {"trust": TrustConfig().model_dump()}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = analysis.calibrate(analysis.load_run(tmp_path))
    assert result.tau < 0.9
    (row,) = result.before_after
    assert row["before"]["recall"] == 1.0
    assert row["after"] == row["before"]


def test_a_run_whose_verdicts_all_failed_still_reports_and_says_why_calibration_cannot(run_dir, tmp_path):
    # e.g. --generator openai with no server: every verdict errored; the report showed nothing,
    # it stopped at "no calibration samples" though 11 were there
    rows = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    text = "".join(json.dumps({**r, "failed": True, "T": None}) + "\n" for r in rows)
    (run_dir / "samples.jsonl").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=r"no calibration samples .* \(11 failed: their verdicts errored\)"):
        analysis.calibrate(analysis.load_run(run_dir), force=True)
    from ragtrust.eval.report import build_report

    paths = build_report(run_dir, tmp_path / "report", bootstrap=100)
    assert "11 sample(s) failed internally" in paths.markdown.read_text()


def _cli_calibrate(run_dir, out, *args):
    from typer.testing import CliRunner

    from ragtrust.cli.main import app

    return CliRunner().invoke(app, ["eval", "calibrate", str(run_dir), "--out", str(out), *args])


def test_calibration_refuses_below_the_minimum(run_dir, tmp_path):
    run = analysis.load_run(run_dir)  # 11 clean calibration samples
    assert analysis.MIN_CALIBRATION_SAMPLES == 50
    with pytest.raises(InputError, match=r"only 11 clean calibration samples .* fewer than the minimum 12 .*--force"):
        analysis.calibrate(run, min_samples=12)
    assert analysis.calibrate(run, min_samples=11).below_minimum is False

    out = tmp_path / "cal.json"
    result = _cli_calibrate(run_dir, out)
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "only 11 clean calibration samples" in message and "fewer than the minimum 50" in message
    assert "--force" in message and "--min-samples" in message
    assert message.count("error:") == 1 and "Traceback" not in result.output
    assert not out.exists()
    ok = _cli_calibrate(run_dir, out, "--min-samples", "11", "--json")
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["below_minimum"] is False and "WARNING" not in ok.stderr


def test_forced_calibration_warns_and_is_recorded_in_the_file(run_dir, tmp_path):
    out = tmp_path / "cal.json"
    result = _cli_calibrate(run_dir, out, "--force")
    assert result.exit_code == 0, result.output
    warning = " ".join(result.stderr.split())
    assert "WARNING" in warning and "only 11 clean samples, below the minimum 50" in warning
    saved = json.loads(out.read_text())
    assert saved["below_minimum"] is True and saved["min_samples"] == 50 and saved["n"] == 11
    from ragtrust.pipeline import load_calibration

    # TrustGate reads tau and keeps the extra keys
    assert load_calibration(out)["below_minimum"] is True
    as_json = _cli_calibrate(run_dir, tmp_path / "cal2.json", "--force", "--json")
    assert as_json.exit_code == 0
    assert json.loads(as_json.stdout)["below_minimum"] is True  # the warning went to stderr
    assert "WARNING" in as_json.stderr


def test_calibrate_prints_the_levels_of_the_new_tau(run_dir, tmp_path):
    # the 50th percentile of the calibration scores is T = 0.6 (F = C = 0.6, P = 0.4)
    result = _cli_calibrate(run_dir, tmp_path / "cal.json", "--force", "--percentile", "50")
    assert result.exit_code == 0, result.output
    rows = [" ".join(line.strip("│┃ ").split()) for line in result.stdout.splitlines()]
    for row in ("HIGH │ T >= 0.800", "MEDIUM │ 0.600 <= T < 0.800", "LOW │ 0.300 <= T < 0.600", "VERY LOW │ T < 0.300"):
        assert row in rows, result.stdout
    text = " ".join(result.stdout.split())
    assert "trusted needs T >= 0.600 and the decision's other conditions" in text

    # --json carries the bands; tau = 0.2725 < level_low 0.3 widens level_low: LOW is empty
    data = json.loads(_cli_calibrate(run_dir, tmp_path / "cal.json", "--force", "--json").stdout)
    tau = data["tau"]
    assert tau == pytest.approx(0.2725, abs=1e-4)
    assert [(b["level"], b["low"], b["high"], b["text"]) for b in data["levels"]] == [
        ("HIGH", 0.8, None, "T >= 0.800"),
        ("MEDIUM", tau, 0.8, f"{tau:.3f} <= T < 0.800"),
        ("LOW", tau, tau, "(empty)"),
        ("VERY LOW", None, tau, f"T < {tau:.3f}"),
    ]
    assert "levels" not in json.loads((tmp_path / "cal.json").read_text())  # TrustGate's own cut points decide


def test_load_run_errors(tmp_path):
    with pytest.raises(InputError, match="no such run directory"):
        analysis.load_run(tmp_path / "nope")
    with pytest.raises(InputError, match="samples.jsonl"):
        analysis.load_run(tmp_path)
    (tmp_path / "samples.jsonl").write_text("{bad\n", encoding="utf-8")
    with pytest.raises(InputError, match="invalid JSON"):
        analysis.load_run(tmp_path)
