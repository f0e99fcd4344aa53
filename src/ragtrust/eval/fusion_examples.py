"""The examples of the learned fusion: one per de-duplicated document of a stored run (issue 16).

:func:`document_examples` reads a ``ragtrust eval run`` directory into ``(X, y, meta)``:
features = the per-signal scores, label = the document was poisoned. A document retrieved by
several queries counts once: clean documents by (dataset, id), poisoned ones by (dataset,
id, sha256 of the poisoned text from ``attacks/``; strategy and repeat when the attack file
is missing); the first occurrence in sample order is kept. Skipped signals read 0; the
optional ``<signal>:skipped`` indicators are the format-leak ablation (see
:mod:`ragtrust.eval.fusion`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ragtrust.errors import InputError
from ragtrust.eval.runner import ATTACKS_DIR, SAMPLES_FILE
from ragtrust.eval.stored_run import StoredRun, load_run, signal_names
from ragtrust.io import read_text_file

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Suffix of a skipped-indicator feature (``intra_consistency:skipped``).
SKIPPED_SUFFIX = ":skipped"


@dataclass(frozen=True)
class DocumentRecord:
    """One de-duplicated document of a run.

    Attributes:
        dataset / doc_id: where it comes from.
        key: the de-duplication key (``dataset|id`` or ``dataset|id|text-hash``).
        poisoned: the label.
        strategy: the sample's strategy (``clean`` for Part A and calibration samples).
        attack_strategy / family: the poison record's strategy and template family
            (``mixed`` draws from every strategy), ``None`` for clean documents.
        text_hash: sha256 prefix of the poisoned text (``None`` for clean documents).
        poison_probability: the noisy-OR ``P_i`` the run stored.
        signals: name -> score, ``None`` when skipped or absent.
        occurrences: how many retrieved slots of the run held this document.
        query: the first query that retrieved it.
    """

    dataset: str
    doc_id: str
    key: str
    poisoned: bool
    strategy: str
    attack_strategy: str | None
    family: str | None
    text_hash: str | None
    poison_probability: float
    signals: Mapping[str, float | None]
    occurrences: int = 1
    query: str = ""


@dataclass(frozen=True)
class ExampleMeta:
    """What the rows of ``X`` are: the run, the feature names and one record per row."""

    run: str
    run_info: Mapping[str, Any]
    feature_names: tuple[str, ...]
    records: tuple[DocumentRecord, ...]
    missing_signals: tuple[str, ...] = ()
    n_occurrences: int = 0

    @property
    def signal_names(self) -> tuple[str, ...]:
        """The signal features (skipped indicators left out)."""
        return tuple(f for f in self.feature_names if not f.endswith(SKIPPED_SUFFIX))

    def baseline(self) -> FloatArray:
        """The stored noisy-OR ``P_i`` per row."""
        return np.array([r.poison_probability for r in self.records], dtype=float)

    def signal(self, name: str) -> FloatArray:
        """One signal's score per row (skipped or absent = 0)."""
        return np.array([_score(r.signals.get(name)) for r in self.records], dtype=float)

    def column(self, attribute: str) -> npt.NDArray[np.str_]:
        """A string attribute of every record (``dataset``, ``strategy``, ...), ``""`` for ``None``."""
        return np.array([str(getattr(r, attribute) or "") for r in self.records], dtype=str)

    def subset(self, mask: BoolArray) -> ExampleMeta:
        """The rows where ``mask`` is true."""
        kept = tuple(r for r, m in zip(self.records, mask, strict=True) if m)
        return ExampleMeta(self.run, self.run_info, self.feature_names, kept, self.missing_signals, self.n_occurrences)


class Examples(NamedTuple):
    """Document-level examples of a run: ``X`` (features), ``y`` (poisoned), ``meta``."""

    X: FloatArray
    y: BoolArray
    meta: ExampleMeta

    def subset(self, mask: BoolArray) -> Examples:
        """The rows where ``mask`` is true."""
        return Examples(self.X[mask], self.y[mask], self.meta.subset(mask))


def _score(value: Any) -> float:
    # skipped (None) or absent reads 0, "nothing suspicious", as in the noisy-OR
    return 0.0 if value is None else float(value)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _attack_records(path: Path) -> dict[tuple[str, str, int, str], dict[str, Any]]:
    """(dataset, strategy, repeat, doc id) -> {hash, strategy, family} from ``attacks/``."""
    out: dict[tuple[str, str, int, str], dict[str, Any]] = {}
    folder = path / ATTACKS_DIR
    if not folder.is_dir():
        return out
    for file in sorted(folder.glob("*.jsonl")):
        dataset, _, rest = file.stem.partition("-")
        strategy, _, repeat = rest.rpartition("-r")
        if not (dataset and strategy and repeat.isdigit()):
            continue
        for line in read_text_file(file).splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            out[(dataset, strategy, int(repeat), str(row["doc_id"]))] = {
                "hash": _sha256(str(row.get("poisoned", "")))[:16],
                "strategy": row.get("strategy"),
                "family": row.get("family"),
            }
    return out


def _run_info(run: StoredRun) -> dict[str, Any]:
    m = run.manifest
    samples = run.path / SAMPLES_FILE
    return {
        "run": str(run.path),
        "command": m.get("command"),
        "created": m.get("created"),
        "finished": m.get("finished"),
        "seed": m.get("seed"),
        "families": m.get("families"),
        "n": m.get("n"),
        "samples_sha256": hashlib.sha256(samples.read_bytes()).hexdigest() if samples.is_file() else None,
        "versions": {k: v for k, v in (m.get("versions") or {}).items() if k in ("ragtrust", "scikit-learn")},
    }


def _collect(run: StoredRun) -> tuple[dict[str, DocumentRecord], int]:
    attacks = _attack_records(run.path)
    records: dict[str, DocumentRecord] = {}
    occurrences: Counter[str] = Counter()
    total = 0
    for s in run.samples:
        if s.get("failed"):
            continue
        dataset, strategy, repeat = str(s["dataset"]), str(s.get("strategy") or "clean"), s.get("repeat")
        for d in s.get("retrieved") or ():
            total += 1
            doc_id, poisoned = str(d["id"]), bool(d.get("poisoned"))
            truth = attacks.get((dataset, strategy, int(repeat or 0), str(d.get("base_id") or doc_id)))
            if not poisoned:
                key, truth = f"{dataset}|{doc_id}", None
            elif truth is not None:
                key = f"{dataset}|{doc_id}|{truth['hash']}"
            else:
                key = f"{dataset}|{doc_id}|{strategy}/r{repeat}"
            occurrences[key] += 1
            if key in records:
                continue
            records[key] = DocumentRecord(
                dataset=dataset,
                doc_id=doc_id,
                key=key,
                poisoned=poisoned,
                strategy=strategy,
                attack_strategy=(truth or {}).get("strategy") or (strategy if poisoned else None),
                family=(truth or {}).get("family"),
                text_hash=(truth or {}).get("hash"),
                poison_probability=_score(d.get("poison_probability")),
                signals=dict(d.get("signals") or {}),
                query=str(s.get("query", "")),
            )
    out = {k: replace(r, occurrences=occurrences[k]) for k, r in records.items()}
    return out, total


def document_examples(
    run_dir: str | Path,
    *,
    features: Sequence[str] | None = None,
    skipped_flags: bool = False,
) -> Examples:
    r"""Document-level examples ``(X, y, meta)`` of a stored run.

    Args:
        run_dir: a ``ragtrust eval run`` directory (``samples.jsonl``; ``attacks/`` gives
            the poisoned texts' hashes; the manifest is optional).
        features: exact feature names (a model's, to score another run the same way); a
            signal the run lacks reads 0 and is listed in ``meta.missing_signals``.
        skipped_flags: without ``features``, add ``<signal>:skipped`` for every signal the
            run ever skipped (the format-leak ablation; off by default).

    Raises:
        InputError: no run there, or no retrieved documents in it.

    Example:
        >>> import json, tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> doc = {"id": "x", "poisoned": False, "poison_probability": 0.1, "signals": {"a": 0.2, "b": None}}
        >>> row = {"dataset": "toy", "part": "A", "k": 5, "strategy": "clean", "retrieved": [doc, doc]}
        >>> _ = (d / "samples.jsonl").write_text(json.dumps(row) + "\n")
        >>> X, y, meta = document_examples(d, skipped_flags=True)
        >>> meta.feature_names, X.tolist(), y.tolist(), meta.records[0].occurrences
        (('a', 'b', 'b:skipped'), [[0.2, 0.0, 1.0]], [False], 2)
    """
    run = load_run(run_dir)
    by_key, total = _collect(run)
    if not by_key:
        raise InputError(f"{run.path}: no retrieved documents in {SAMPLES_FILE}")
    records = tuple(by_key.values())
    present = set(signal_names(run))
    if features is None:
        names = sorted(present)
        flags = [f"{n}{SKIPPED_SUFFIX}" for n in names if any(r.signals.get(n) is None for r in records)]
        feature_names = tuple(names + (flags if skipped_flags else []))
    else:
        feature_names = tuple(features)
    missing = tuple(f for f in feature_names if not f.endswith(SKIPPED_SUFFIX) and f not in present)
    X = np.zeros((len(records), len(feature_names)), dtype=float)
    for j, name in enumerate(feature_names):
        if name.endswith(SKIPPED_SUFFIX):
            base = name[: -len(SKIPPED_SUFFIX)]
            X[:, j] = [1.0 if r.signals.get(base) is None else 0.0 for r in records]
        else:
            X[:, j] = [_score(r.signals.get(name)) for r in records]
    y = np.array([r.poisoned for r in records], dtype=bool)
    meta = ExampleMeta(str(run.path), _run_info(run), feature_names, records, missing, total)
    return Examples(X, y, meta)


__all__ = ["SKIPPED_SUFFIX", "DocumentRecord", "ExampleMeta", "Examples", "document_examples"]
