"""Benchmark corpora of SPEC section 8: TruthfulQA, FEVER and the secure-coding knowledge base.

Each loader returns a :class:`Benchmark`: the clean corpus (one document per item), the
sampled queries with the index of the document each query was written from (its *aligned
source document*), and two disjoint splits: ``eval`` (Part A / Part B queries) and
``calib`` (held-out clean queries whose scores fit the decision threshold tau).

Document forms:

- **TruthfulQA** (``truthfulqa/TruthfulQA.csv``): "question + best answer". The item's
  incorrect answers are kept in ``metadata["false_claims"]``: they are the natural false
  statements the attack generator injects.
- **FEVER** (``fever/paper_dev.jsonl``): bare claims are too short for NLI, so documents
  are enriched to "question + verdict + claim" from the SUPPORTS and REFUTES items. The
  reference implementation wrote the label as one fixed sentence ("The claim is supported
  by evidence"), which a detector can key on and which makes every REFUTES document carry
  the same negative phrase. Here the question, the verdict and the claim line are each
  drawn deterministically (by a hash of the FEVER id, not the label) from several
  paraphrases, and the SUPPORTS and REFUTES verdict lists are built as parallel pairs that
  differ only in polarity ("Yes ... backs this up" / "No ... points the other way"), so no
  surface phrase is specific to a label and none uses the contradiction vocabulary of the
  poison detector ("false", "misconception", "actually", "contrary").
- **secure_coding**: the bundled 40 rules (:mod:`ragtrust.data.kb`), "question + answer".

Data location: ``--data-dir`` / ``RAGTRUST_DATA_DIR``; otherwise ``../shared/data``
relative to the working directory. A missing folder is one :class:`InputError` naming
both (:func:`data_folder`). The knowledge base ships inside the package and needs no
data directory.

Sampling is deterministic (seed 42 by default): a seeded permutation of the items gives
the first ``n`` as the evaluation split and the next ``n_calib`` (default ``n // 2``) as
the calibration split. When the corpus is too small for both (the knowledge base has 40
rules), a quarter of it (at least 5 items) is kept for calibration and the rest is
evaluated.

Example:
    >>> bench = load_benchmark("secure_coding", n=10, n_calib=5)
    >>> len(bench.documents), len(bench.eval_queries), len(bench.calib_queries)
    (40, 10, 5)
    >>> q = bench.eval_queries[0]
    >>> bench.documents[q.doc_index].text.startswith(q.text)
    True
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from ragtrust.documents import Document
from ragtrust.errors import ConfigError, InputError
from ragtrust.io import iter_jsonl

DATASETS: tuple[str, ...] = ("truthfulqa", "fever", "secure_coding")
TRUTHFULQA_FILE = "truthfulqa/TruthfulQA.csv"
FEVER_FILE = "fever/paper_dev.jsonl"
#: FEVER has 6,666 SUPPORTS/REFUTES items; the corpus is a seeded sample of this size
FEVER_CORPUS_SIZE = 1000
_ALIASES = {"tqa": "truthfulqa", "kb": "secure_coding", "secure-coding": "secure_coding", "owasp": "secure_coding"}

Split = Literal["eval", "calib"]


@dataclass(frozen=True)
class BenchmarkQuery:
    """One benchmark query and the corpus document it was written from.

    Attributes:
        text: the question sent to the pipeline.
        doc_index: index of the aligned source document in ``Benchmark.documents``.
        doc_id: that document's id.
        split: ``eval`` (Part A / B) or ``calib`` (threshold calibration).
    """

    text: str
    doc_index: int
    doc_id: str
    split: Split = "eval"


@dataclass(frozen=True)
class Benchmark:
    """A clean corpus with its sampled, split queries.

    Attributes:
        name: dataset name (``truthfulqa``, ``fever``, ``secure_coding``).
        documents: the clean corpus.
        queries: every sampled query (evaluation split first, then calibration).
        seed: the sampling seed.
        data_files: data file path -> sha256, for the report's provenance.
    """

    name: str
    documents: tuple[Document, ...]
    queries: tuple[BenchmarkQuery, ...]
    seed: int = 42
    data_files: Mapping[str, str] = field(default_factory=dict)

    @property
    def eval_queries(self) -> tuple[BenchmarkQuery, ...]:
        """The evaluation split (Part A on the clean corpus, Part B on the poisoned one)."""
        return tuple(q for q in self.queries if q.split == "eval")

    @property
    def calib_queries(self) -> tuple[BenchmarkQuery, ...]:
        """The calibration split (clean corpus only), disjoint from the evaluation split."""
        return tuple(q for q in self.queries if q.split == "calib")


#: the default data folder, relative to the working directory (the project's layout keeps the
#: public datasets beside the repository); nothing falls back to a path of this machine
DEFAULT_DATA_DIR = Path("..", "shared", "data")


def resolve_data_dir(data_dir: str | Path | None = None, *, env: Mapping[str, str] | None = None) -> Path:
    """The data directory: the explicit value, else ``RAGTRUST_DATA_DIR``, else ``../shared/data``.

    The folder may not exist (:func:`data_folder` checks it); a relative value stays relative.

    Example:
        >>> resolve_data_dir(None, env={}).as_posix()
        '../shared/data'
    """
    env = os.environ if env is None else env
    if data_dir is not None:
        return Path(data_dir)
    if env.get("RAGTRUST_DATA_DIR"):
        return Path(env["RAGTRUST_DATA_DIR"])
    return DEFAULT_DATA_DIR


def data_folder(data_dir: str | Path | None = None, *, env: Mapping[str, str] | None = None) -> Path:
    """:func:`resolve_data_dir`, checked: the folder must exist.

    Raises:
        InputError: one line naming the folder, ``--data-dir`` and ``RAGTRUST_DATA_DIR``.
    """
    folder = resolve_data_dir(data_dir, env=env)
    if not folder.is_dir():
        raise InputError(
            f"dataset folder {folder.as_posix()} not found: pass --data-dir or set RAGTRUST_DATA_DIR "
            "to the folder that holds the datasets (truthfulqa/, fever/, owasp-cheatsheets/, ...)"
        )
    return folder


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _require(data_dir: Path, relative: str, dataset: str) -> Path:
    path = data_dir / relative
    if not path.is_file():
        raise InputError(
            f"{dataset} data not found: expected {path}. Point --data-dir or RAGTRUST_DATA_DIR at the folder "
            f"that holds {TRUTHFULQA_FILE} and {FEVER_FILE}"
        )
    return path


def _sentence(text: str) -> str:
    """Strip and make sure the text ends with terminal punctuation."""
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else text + "."


def _stable_choice(key: str, options: Sequence[str]) -> str:
    """A choice that depends only on ``key`` (not on the label, the seed or the order)."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return options[int.from_bytes(digest[:4], "little") % len(options)]


# -- TruthfulQA ---------------------------------------------------------------------------


def load_truthfulqa_documents(data_dir: Path) -> tuple[list[Document], dict[str, str]]:
    """TruthfulQA as "question + best answer" documents, in file order."""
    path = _require(data_dir, TRUTHFULQA_FILE, "TruthfulQA")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8") from exc
    reader = csv.DictReader(io.StringIO(text))
    needed = {"Question", "Best Answer", "Incorrect Answers"}
    if reader.fieldnames is None or not needed <= set(reader.fieldnames):
        raise InputError(f"{path}: expected CSV columns {sorted(needed)}, got {reader.fieldnames}")
    docs: list[Document] = []
    for i, row in enumerate(reader):
        question, best = row["Question"].strip(), row["Best Answer"].strip()
        if not question or not best:
            continue
        incorrect = [_sentence(a) for a in (row.get("Incorrect Answers") or "").split(";") if a.strip()]
        doc_id = f"tqa-{i:03d}"
        docs.append(
            Document(
                id=doc_id,
                text=f"{_sentence(question)} {_sentence(best)}",
                url=f"truthfulqa:{i:03d}",
                source="TruthfulQA",
                metadata={
                    "question": question,
                    "answer": _sentence(best),
                    "category": row.get("Category", ""),
                    "false_claims": incorrect,
                },
            )
        )
    if not docs:
        raise InputError(f"{path}: no usable rows")
    return docs, {str(path): file_sha256(path)}


# -- FEVER --------------------------------------------------------------------------------

_FEVER_QUESTIONS = (
    "Is it true that {claim}?",
    "Does the evidence back the statement that {claim}?",
    "Can it be confirmed that {claim}?",
    "Is this accurate: {claim}?",
)
# parallel pairs: index i of SUPPORTS and REFUTES differ only in polarity
_FEVER_VERDICTS = {
    "SUPPORTS": (
        "Yes. The available evidence backs this up.",
        "Yes, reference sources confirm it.",
        "Correct: the documented record agrees with it.",
        "That holds, according to the reference material.",
    ),
    "REFUTES": (
        "No. The available evidence points the other way.",
        "No, reference sources say otherwise.",
        "Incorrect: the documented record disagrees with it.",
        "That does not hold, according to the reference material.",
    ),
}
_FEVER_CLAIM_LINES = ("Statement checked: {claim}", "The statement in question: {claim}", "Claim under review: {claim}")


def fever_document_text(item_id: int | str, claim: str, label: str) -> tuple[str, str]:
    """The enriched FEVER document and its question for one SUPPORTS/REFUTES claim.

    Returns:
        ``(question, document_text)``.

    Example:
        >>> q, text = fever_document_text(1, "Paris is in France.", "SUPPORTS")
        >>> text.startswith(q) and "Paris is in France." in text
        True
    """
    if label not in _FEVER_VERDICTS:
        raise InputError(f"FEVER label must be SUPPORTS or REFUTES, got {label!r}")
    bare = claim.strip().rstrip(".").strip()
    question = _stable_choice(f"q:{item_id}", _FEVER_QUESTIONS).format(claim=bare)
    # the verdict paraphrase is drawn by id, so the same position is used for either label
    position = _FEVER_VERDICTS["SUPPORTS"].index(_stable_choice(f"v:{item_id}", _FEVER_VERDICTS["SUPPORTS"]))
    verdict = _FEVER_VERDICTS[label][position]
    line = _stable_choice(f"c:{item_id}", _FEVER_CLAIM_LINES).format(claim=_sentence(bare))
    return question, f"{question} {verdict} {line}"


def load_fever_documents(
    data_dir: Path, *, corpus_size: int = FEVER_CORPUS_SIZE, seed: int = 42
) -> tuple[list[Document], dict[str, str]]:
    """A seeded sample of FEVER SUPPORTS/REFUTES claims as enriched documents."""
    from ragtrust.eval.attacks import negate_statement

    path = _require(data_dir, FEVER_FILE, "FEVER")
    items: list[dict[str, object]] = []
    with open(path, encoding="utf-8") as handle:
        for _, row in iter_jsonl(handle, path):
            if row.get("label") in _FEVER_VERDICTS and str(row.get("claim", "")).strip():
                items.append(row)
    if not items:
        raise InputError(f"{path}: no SUPPORTS/REFUTES items with a claim")
    rng = np.random.default_rng([seed, 7])
    keep = sorted(rng.permutation(len(items))[: min(corpus_size, len(items))].tolist())
    docs: list[Document] = []
    for i in keep:
        row = items[i]
        claim, label = str(row["claim"]).strip(), str(row["label"])
        question, text = fever_document_text(str(row["id"]), claim, label)
        false_claim = _sentence(claim) if label == "REFUTES" else negate_statement(claim)
        docs.append(
            Document(
                id=f"fever-{row['id']}",
                text=text,
                url=f"fever:{row['id']}",
                source="FEVER",
                metadata={"question": question, "claim": claim, "label": label, "false_claims": [false_claim]},
            )
        )
    return docs, {str(path): file_sha256(path)}


# -- secure coding ------------------------------------------------------------------------


def load_secure_coding_documents() -> tuple[list[Document], dict[str, str]]:
    """The bundled knowledge base (needs no data directory)."""
    from importlib import resources

    from ragtrust.data import KB_FILE, load_knowledge_base

    data = resources.files("ragtrust.data").joinpath(KB_FILE).read_bytes()
    return load_knowledge_base(), {f"ragtrust/data/{KB_FILE}": hashlib.sha256(data).hexdigest()}


# -- benchmark ----------------------------------------------------------------------------


def canonical_dataset(name: str) -> str:
    """Normalise a dataset name (``kb`` -> ``secure_coding``); unknown names list the valid ones."""
    key = name.strip().lower().replace(" ", "_")
    key = _ALIASES.get(key, key)
    if key not in DATASETS:
        raise ConfigError(f"unknown dataset {name!r}; valid: {', '.join(DATASETS)}")
    return key


def split_sizes(total: int, n: int, n_calib: int | None) -> tuple[int, int]:
    """Evaluation and calibration split sizes for a corpus of ``total`` items.

    Example:
        >>> split_sizes(817, 50, None), split_sizes(40, 50, None)
        ((50, 25), (30, 10))
    """
    if n < 1:
        raise ConfigError(f"the number of queries must be >= 1, got {n}")
    calib = n // 2 if n_calib is None else n_calib
    if calib < 0:
        raise ConfigError(f"the calibration split size must be >= 0, got {calib}")
    if n + calib <= total:
        return n, calib
    calib = min(calib, max(5, total // 4)) if total > 5 else 0
    return max(1, min(n, total - calib)), calib


def sample_queries(
    documents: Sequence[Document], n: int, n_calib: int | None = None, seed: int = 42
) -> tuple[BenchmarkQuery, ...]:
    """Deterministic, disjoint evaluation and calibration queries (one per source document)."""
    n_eval, calib = split_sizes(len(documents), n, n_calib)
    order = np.random.default_rng(seed).permutation(len(documents)).tolist()
    out: list[BenchmarkQuery] = []
    for position, index in enumerate(order[: n_eval + calib]):
        doc = documents[index]
        question = str(doc.metadata.get("question") or doc.text.split("?")[0] + "?")
        split: Split = "eval" if position < n_eval else "calib"
        out.append(BenchmarkQuery(text=question, doc_index=index, doc_id=doc.id, split=split))
    return tuple(out)


def load_benchmark(
    name: str,
    data_dir: str | Path | None = None,
    *,
    n: int = 50,
    n_calib: int | None = None,
    seed: int = 42,
    corpus_size: int | None = None,
) -> Benchmark:
    """Load a benchmark corpus and sample its query splits.

    Args:
        name: ``truthfulqa``, ``fever`` or ``secure_coding`` (aliases ``tqa``, ``kb``).
        data_dir: folder with ``truthfulqa/`` and ``fever/`` (see :func:`resolve_data_dir`).
        n: evaluation queries (SPEC section 8: 50).
        n_calib: calibration queries (default ``n // 2``), disjoint from the evaluation ones.
        seed: sampling seed.
        corpus_size: FEVER corpus size (default :data:`FEVER_CORPUS_SIZE`); ignored elsewhere.

    Raises:
        InputError: the data files are missing or malformed (the message names them).
        ConfigError: unknown dataset or bad sizes.
    """
    dataset = canonical_dataset(name)
    if dataset == "secure_coding":
        docs, files = load_secure_coding_documents()
    else:
        folder = data_folder(data_dir)
        if dataset == "truthfulqa":
            docs, files = load_truthfulqa_documents(folder)
        else:
            docs, files = load_fever_documents(folder, corpus_size=corpus_size or FEVER_CORPUS_SIZE, seed=seed)
    queries = sample_queries(docs, n, n_calib, seed)
    return Benchmark(name=dataset, documents=tuple(docs), queries=queries, seed=seed, data_files=files)


__all__ = [
    "DATASETS",
    "FEVER_CORPUS_SIZE",
    "FEVER_FILE",
    "TRUTHFULQA_FILE",
    "Benchmark",
    "BenchmarkQuery",
    "canonical_dataset",
    "data_folder",
    "fever_document_text",
    "file_sha256",
    "load_benchmark",
    "load_fever_documents",
    "load_secure_coding_documents",
    "load_truthfulqa_documents",
    "resolve_data_dir",
    "sample_queries",
    "split_sizes",
]
