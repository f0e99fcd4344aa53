"""Evaluate an NLI model on labelled pairs: accuracy, macro-F1, per-class F1, confusion, ECE.

Files are JSONL ``{"premise", "hypothesis", "label"}`` (labels entailment / neutral /
contradiction, or entailment / not_entailment for 2-way files) or TSV with the columns
premise, hypothesis, label. 2-way files are scored entailment-vs-not (neutral and
contradiction merged), as the data README prescribes.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.errors import InputError, MissingDependencyError
from ragtrust.io import iter_jsonl, read_text_file
from ragtrust.models.base import NLI_LABELS, NLIModel

_RULE = (
    "Store user passwords with a slow, salted, adaptive hashing algorithm such as Argon2id, "
    "bcrypt or scrypt; never store them with a fast hash such as MD5 or SHA-1."
)
#: The NLI issue's sanity cases, (premise, hypothesis, expected label): the shipped model's
#: tests and its model card both read them from here.
SANITY_CASES: tuple[tuple[str, str, str], ...] = (
    ("The cat sat on the mat.", "A cat is on a mat.", "entailment"),
    ("Paris is the capital of France.", "Berlin is the capital of France.", "contradiction"),
    ("The cat sat on the mat.", "The dog is hungry.", "neutral"),
    (_RULE, "Passwords should be stored with a slow salted hash such as Argon2id or bcrypt.", "entailment"),
    (_RULE, "Passwords should be stored with a fast hash such as MD5.", "contradiction"),
    (
        "SQL injection is tracked as CWE-89 and is prevented with parameterised queries.",
        "SQL injection is tracked as CWE-79.",
        "contradiction",
    ),
    ("RSA keys must be at least 2048 bits long.", "RSA keys must be at least 512 bits long.", "contradiction"),
)


def sanity_check(model: NLIModel) -> list[dict[str, Any]]:
    """Each sanity case with the model's probabilities, its label and whether it is right."""
    probs = np.asarray(model.predict([(p, h) for p, h, _ in SANITY_CASES]))
    rows = []
    for (premise, hypothesis, expected), row in zip(SANITY_CASES, probs, strict=True):
        got = NLI_LABELS[int(row.argmax())]
        rows.append(
            {
                "premise": premise,
                "hypothesis": hypothesis,
                "expected": expected,
                "predicted": got,
                "ok": got == expected,
                "probs": dict(zip(NLI_LABELS, [round(float(x), 3) for x in row], strict=True)),
            }
        )
    return rows


def read_labelled(path: str | Path, limit: int | None = None) -> list[tuple[str, str, str]]:
    """(premise, hypothesis, label) rows of a JSONL or TSV file.

    Raises:
        InputError: a missing, binary or non-UTF-8 file, a row that is not an object with text
            ``premise`` and ``hypothesis`` and a ``label``, a TSV without those columns.
    """
    file = Path(path)
    text = read_text_file(file)
    rows: list[tuple[str, str, str]] = []
    records: Iterable[tuple[int, Any]]
    if file.suffix == ".tsv":
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t")
        missing = [c for c in ("premise", "hypothesis", "label") if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{file}: the TSV header lacks {', '.join(missing)} (columns: premise, hypothesis, label)")
        records = ((n, rec) for n, rec in enumerate(reader, start=2))
    else:
        records = iter_jsonl(text.splitlines(), file)
    for lineno, rec in records:
        if not (
            isinstance(rec, dict)
            and isinstance(rec.get("premise"), str)
            and isinstance(rec.get("hypothesis"), str)
            and rec.get("label") is not None
        ):
            raise InputError(f"{file}:{lineno}: expected an object with text premise and hypothesis and a label")
        rows.append((rec["premise"], rec["hypothesis"], str(rec["label"]).strip().lower()))
    if limit is not None:
        rows = rows[:limit]
    if not rows:
        raise InputError(f"{file}: no labelled pairs")
    known = set(NLI_LABELS) | {"not_entailment"}
    bad = {r[2] for r in rows} - known
    if bad:
        raise InputError(f"{file}: unknown labels {sorted(bad)}; expected {sorted(known)}")
    return rows


def expected_calibration_error(probs: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> float:
    """Top-label ECE with equal-width confidence bins."""
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(float)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        mask = (conf > lo) & (conf <= hi)
        if mask.any():
            ece += float(mask.mean()) * abs(float(correct[mask].mean()) - float(conf[mask].mean()))
    return ece


def evaluate(model: NLIModel, rows: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    """Metrics of ``model`` on ``rows`` (3-way, or 2-way when any label is not_entailment)."""
    try:
        from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, roc_auc_score
    except ImportError as exc:
        raise MissingDependencyError("NLI model evaluation (scikit-learn)", "pip install 'ragtrust[eval]'") from exc

    start = time.perf_counter()
    probs = np.asarray(model.predict([(p, h) for p, h, _ in rows]), dtype=np.float64)
    seconds = time.perf_counter() - start
    two_way = any(r[2] == "not_entailment" for r in rows)
    if two_way:
        names = ["entailment", "not_entailment"]
        y = np.array([0 if r[2] == "entailment" else 1 for r in rows])
        p2 = np.stack([probs[:, 0], probs[:, 1] + probs[:, 2]], axis=1)
        pred = p2.argmax(axis=1)
        extra = {"roc_auc_entailment": float(roc_auc_score(1 - y, p2[:, 0])) if len(set(y)) > 1 else None}
        calib = p2
    else:
        names = list(NLI_LABELS)
        y = np.array([NLI_LABELS.index(r[2]) for r in rows])
        pred = probs.argmax(axis=1)
        extra = {}
        calib = probs
    labels = list(range(len(names)))
    per_class = f1_score(y, pred, labels=labels, average=None, zero_division=0)
    return {
        "n": len(rows),
        "mode": "2-way" if two_way else "3-way",
        "accuracy": float(accuracy_score(y, pred)),
        "macro_f1": float(f1_score(y, pred, labels=labels, average="macro", zero_division=0)),
        "per_class_f1": {n: float(f) for n, f in zip(names, per_class, strict=True)},
        "confusion": {"labels": names, "matrix": confusion_matrix(y, pred, labels=labels).tolist()},
        "ece": expected_calibration_error(calib, y),
        "pairs_per_s": len(rows) / seconds if seconds > 0 else None,
        "model": str(getattr(model, "model_id", type(model).__name__)),
        **extra,
    }


__all__ = ["evaluate", "expected_calibration_error", "read_labelled"]
