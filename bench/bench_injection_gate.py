"""Would a cheap n-gram gate in front of the injection classifier buy speed without recall?

Usage (numbers go to docs/benchmarks.md, "Injection classifier"):
    python bench/bench_injection_gate.py --data ../shared/data

The idea measured: a hashed word (1-2) + character (3-5) n-gram logistic regression
(scikit-learn, under 1 ms per window) scores every sentence window first, and only windows at
or above a gate threshold ``g`` go to the transformer; the others count as benign. The cost
of the signal then scales with the share of windows that pass.

To estimate what the gate does on an injection style it never saw, it is trained on the
classifier's training set **without the development families** (leave-family-out), then
scored on the calibration split: the clean calibration documents and the same documents
poisoned with the development families. Reported per ``g``: document recall and FPR of
"gate passes and the classifier flags" at the classifier's calibrated threshold (against the
classifier alone), and the share of clean OWASP / all clean windows that pass the gate (the
share of the transformer's cost left). Nothing here touches the held-out sets.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np


def main() -> None:
    """Print one JSON object (see module docstring)."""
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.linear_model import LogisticRegression

    from ragtrust.models.windows import sentence_windows
    from ragtrust.screening.injection import InjectionSignal, normalize_for_model
    from ragtrust.training.injection_data import DataConfig, build_training_set
    from ragtrust.training.injection_eval import _poison, calibration_documents

    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="the shared data folder")
    ap.add_argument("--model", default="builtin", help="the injection model ('builtin' or an exported folder)")
    ap.add_argument("--gates", type=float, nargs="+", default=[0.01, 0.02, 0.05, 0.1, 0.2])
    a = ap.parse_args()
    started = time.perf_counter()
    cfg = DataConfig(data_dir=a.data, owasp_segments=2000, owasp_glued=1500, dev_family_owasp_chunks=400)
    rows = [e for e in build_training_set(cfg, log=lambda _: None) if not e.source.startswith("dev_family")]
    words = HashingVectorizer(n_features=2**20, ngram_range=(1, 2), alternate_sign=False, norm="l2")
    chars = HashingVectorizer(n_features=2**20, analyzer="char_wb", ngram_range=(3, 5), alternate_sign=False, norm="l2")

    def features(texts: list[str]) -> object:
        return hstack([words.transform(texts), chars.transform(texts)]).tocsr()

    gate = LogisticRegression(C=4.0, max_iter=2000, class_weight="balanced")
    gate.fit(features([e.text for e in rows]), np.array([e.label for e in rows]))
    sources = calibration_documents(Path(a.data))
    clean = [d for docs in sources.values() for d in docs]
    poisoned = _poison(clean, "development", 0)
    signal = InjectionSignal(model_name=a.model)
    model = signal._model()
    threshold, _ = signal.resolved_threshold()

    def windows(docs: list[object]) -> list[list[str]]:
        out = []
        for d in docs:
            text, _ = normalize_for_model(d.text)  # type: ignore[attr-defined]
            out.append([text[s:e] for s, e in sentence_windows(text, signal.max_words)])
        return out

    def per_doc(values: np.ndarray, shape: list[list[str]]) -> list[np.ndarray]:
        out, i = [], 0
        for ws in shape:
            out.append(values[i : i + len(ws)])
            i += len(ws)
        return out

    scored = {}
    for name, docs in (("clean", clean), ("poisoned", poisoned)):
        ws = windows(docs)
        flat = [w for doc in ws for w in doc]
        t0 = time.perf_counter()
        g = gate.predict_proba(features(flat))[:, 1]
        gate_ms = 1000 * (time.perf_counter() - t0) / max(1, len(flat))
        scored[name] = (per_doc(np.asarray(model.predict(flat)), ws), per_doc(g, ws), gate_ms)
    (mc, gc, gate_ms), (mp, gp, _) = scored["clean"], scored["poisoned"]
    n_owasp = len(sources["owasp"])
    result: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}",
        "load_average_at_start": os.getloadavg(),
        "model": getattr(model, "model_id", a.model),
        "threshold": threshold,
        "gate_training_examples": len(rows),
        "gate_ms_per_window": round(gate_ms, 3),
        "classifier_alone": {
            "recall": round(float(np.mean([x.max() >= threshold for x in mp])), 4),
            "fpr": round(float(np.mean([x.max() >= threshold for x in mc])), 4),
        },
        "gates": {},
    }

    def fired(model_scores: list[np.ndarray], gate_scores: list[np.ndarray], g: float) -> float:
        pairs = zip(model_scores, gate_scores, strict=True)
        return round(float(np.mean([((m >= threshold) & (q >= g)).any() for m, q in pairs])), 4)

    for g in a.gates:
        result["gates"][str(g)] = {  # type: ignore[index]
            "recall": fired(mp, gp, g),
            "fpr": fired(mc, gc, g),
            "owasp_windows_passing": round(float(np.mean(np.concatenate(gc[:n_owasp]) >= g)), 4),
            "clean_windows_passing": round(float(np.mean(np.concatenate(gc) >= g)), 4),
        }
    result["elapsed_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
