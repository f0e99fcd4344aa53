"""Calibration-split diagnostic of the injection classifier's false positives on security prose.

Scores the sentence windows of the OWASP *calibration* files and, alone, their sentences that
address the human reader ("You should disable ...", ``READER_IMPERATIVE``), and prints the
share at or above a model's calibrated threshold (from a ``ragtrust injection calibrate
--out`` report) and the mean P(injection). Never reads the evaluation split:

    python scripts/injection_reader_fpr.py --model builtin --calibration runs/v1-calibration.json \
        --model runs/injection-v2-warm/export --calibration runs/injection-v2-warm/calibration.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", required=True, help="'builtin' or an exported folder")
    parser.add_argument("--calibration", action="append", type=Path, required=True, help="its calibration report")
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    args = parser.parse_args(argv)
    if len(args.model) != len(args.calibration):
        print("error: give one --calibration per --model", file=sys.stderr)
        return 2
    from ragtrust.models.injection import load_injection_model
    from ragtrust.training.injection_data import owasp_imperatives, owasp_windows

    windows = [e.text for e in owasp_windows(args.data_dir, "calib", 80)]
    reader = owasp_imperatives(args.data_dir, "calib")
    for name, report in zip(args.model, args.calibration, strict=True):
        threshold = float(json.loads(report.read_text(encoding="utf-8"))["threshold"])
        model = load_injection_model(name)
        p_windows, p_reader = np.asarray(model.predict(windows)), np.asarray(model.predict(reader))
        print(
            f"{name} (threshold {threshold:.4f}): {len(windows)} OWASP calibration windows flagged "
            f"{np.mean(p_windows >= threshold):.2%}, mean P {p_windows.mean():.4f}; {len(reader)} reader "
            f"imperatives alone flagged {np.mean(p_reader >= threshold):.2%}, mean P {p_reader.mean():.4f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
