"""The evidence report's data: its question set, the corpus, the stress passages, the records.

:func:`load_questions` reads a question set (the OWASP one shipped with ragtrust by
default); :func:`load_corpus` loads and chunks a folder of documents and
:func:`cached_chunk_vectors` embeds the chunks once per corpus, chunker and model;
:func:`stress_passages` builds the seeded synthetic extraction errors of the stress
ablation; :class:`QuestionResult` and :class:`EvidenceReport` hold what a run measured
(see :mod:`ragtrust.eval.evidence_report`).

Example:
    >>> source_name("https://example.org/cheatsheets/Password_Storage_Cheat_Sheet.md#chunk-3")
    'Password_Storage_Cheat_Sheet.md'
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ragtrust.config import Settings
from ragtrust.documents import Document, Passage, RetrievedDoc
from ragtrust.errors import InputError
from ragtrust.io import read_question_rows
from ragtrust.models.base import Embedder

#: the question set shipped with ragtrust (``ragtrust/data/owasp_questions.jsonl``)
QUESTIONS_FILE = "owasp_questions.jsonl"
#: n-gram lengths of AnsCov@n / DocFocus@n (SPEC section 9)
ANSCOV_NS = (2, 3, 5, 10)
#: the (n, t) grid of the alignment ablation
ABLATION_NS = (2, 3, 5, 10)
ABLATION_TS = (0.5, 0.6, 0.7, 0.8, 0.9)
#: kinds of synthetic extraction errors in the stress set, assigned round-robin
STRESS_KINDS = ("exact", "drift", "partial", "reworded", "fabricated")
#: the ideal outcome per kind: a paraphrase with no verbatim 5-gram left has no support
STRESS_EXPECTED = {
    "exact": "kept",
    "drift": "reattributed",
    "partial": "truncated",
    "reworded": "dropped",
    "fabricated": "dropped",
}
SEM_NOT_COMPUTED = "not computed (no NLI model shipped yet)"


@dataclass(frozen=True)
class EvidenceQuestion:
    """A question with its gold sources (file names of the documents that answer it)."""

    id: str
    question: str
    gold: tuple[str, ...] = ()


def load_questions(path: str | Path | None = None) -> list[EvidenceQuestion]:
    """Read a JSONL question file: ``{"id"?, "question", "gold": [file names]}`` per line.

    Args:
        path: the file; ``None`` reads the OWASP question set shipped with ragtrust.

    Raises:
        InputError: a line is not JSON, lacks ``question``, or ``gold`` is not a list of strings.
    """
    out: list[EvidenceQuestion] = []
    for where, n, row, question in read_question_rows(path, QUESTIONS_FILE):
        gold = row.get("gold", [])
        if isinstance(gold, str):
            gold = [gold]
        if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
            raise InputError(f"{where}: 'gold' must be a list of file names")
        out.append(EvidenceQuestion(str(row.get("id") or f"q{n}"), question, tuple(gold)))
    return out


def source_name(target: str) -> str:
    """The file name a citation target or document id points to (``…/X.md#chunk-3`` -> ``X.md``)."""
    path = target.split("#", 1)[0].rstrip("/")
    return PurePosixPath(path).name


def stress_passages(
    passages: Sequence[Passage],
    docs: Sequence[RetrievedDoc],
    foreign: Sequence[str],
    seed: int = 42,
    start: int = 0,
) -> list[tuple[Passage, str]]:
    """Seeded synthetic extraction errors built from honest passages (with their kind).

    Passage ``i`` becomes kind ``STRESS_KINDS[(start + i) % 5]`` (``start`` continues the
    round-robin across questions):

    - ``exact``: unchanged;
    - ``drift``: the same text claiming another retrieved document's URL;
    - ``partial``: the text followed by a sentence from a document that was not retrieved;
    - ``reworded``: every third word removed (a loose paraphrase);
    - ``fabricated``: a sentence from a document that was not retrieved, claiming this one.

    ``foreign`` holds the non-retrieved sentences to draw from (``random.Random(seed)``).
    Kinds that cannot be built (``drift`` with one document, no foreign text) stay exact.
    """
    rng = random.Random(seed)
    out: list[tuple[Passage, str]] = []
    for i, passage in enumerate(passages):
        kind = STRESS_KINDS[(start + i) % len(STRESS_KINDS)]
        base = dataclasses.replace(passage, spans=(), status="unverified", overlap=None)
        others = [d for d in docs if d.id != passage.doc_id]
        if kind == "drift" and others:
            target = others[rng.randrange(len(others))].document
            out.append((dataclasses.replace(base, url=target.cite, doc_id=target.id), kind))
        elif kind == "partial" and foreign:
            text = f"{passage.text} {foreign[rng.randrange(len(foreign))]}"
            out.append((dataclasses.replace(base, text=text), kind))
        elif kind == "reworded" and len(passage.text.split()) >= 9:
            text = " ".join(w for k, w in enumerate(passage.text.split()) if k % 3 != 2)
            out.append((dataclasses.replace(base, text=text), kind))
        elif kind == "fabricated" and foreign:
            out.append((dataclasses.replace(base, text=foreign[rng.randrange(len(foreign))]), kind))
        else:
            out.append((base, "exact"))
    return out


@dataclass(frozen=True)
class QuestionResult:
    """Every number measured for one question (see the module docstring)."""

    id: str
    question: str
    gold: tuple[str, ...]
    retrieved: tuple[str, ...]
    cited: tuple[str, ...]
    answer: str
    preface: bool
    sentences: int
    unsupported_sentences: int
    out_of_set_citations: int
    removed_citations: int
    hallucinated: float
    grounded: float
    gold_retrieved: bool
    ans_cov: float
    doc_focus: float
    ans_cov_at: Mapping[str, float]
    doc_focus_at: Mapping[str, float]
    sem_max: float | None
    sem_recall: float | None
    cov_at_10: float
    alignment: Mapping[str, float]
    extraction_failed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        data = dataclasses.asdict(self)
        data["gold"], data["retrieved"], data["cited"] = list(self.gold), list(self.retrieved), list(self.cited)
        return data


@dataclass
class EvidenceReport:
    """The report: summary numbers, per-question rows, ablations and provenance."""

    summary: dict[str, Any]
    questions: list[QuestionResult]
    ablation: list[dict[str, Any]]
    stress_ablation: list[dict[str, Any]]
    stress_confusion: dict[str, dict[str, int]]
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (what ``<out>.json`` holds)."""
        return {
            "summary": self.summary,
            "ablation": self.ablation,
            "stress_ablation": self.stress_ablation,
            "stress_confusion": self.stress_confusion,
            "provenance": self.provenance,
            "questions": [q.to_dict() for q in self.questions],
        }


def shipped_nli_available() -> bool:
    """Whether the shipped NLI model's manifest exists (``models/assets/nli_manifest.json``)."""
    from ragtrust.models.nli import MANIFEST_FILE

    return Path(MANIFEST_FILE).is_file()


def load_corpus(
    data_dir: str | Path, settings: Settings, include: Sequence[str] = ("*.md",)
) -> tuple[list[Document], list[Document]]:
    """Load the documents of ``data_dir`` and chunk them (settings.chunking).

    Licence and read-me files are left out. Each chunk's URL is its document's URL plus
    ``#chunk-<n>`` so that a citation names the exact chunk.

    Returns:
        ``(documents, chunks)``.

    Raises:
        InputError: the folder holds no loadable document.
    """
    from ragtrust.ingest.chunker import chunk_document
    from ragtrust.ingest.loaders import load_paths

    folder = Path(data_dir)
    if not folder.is_dir():
        raise InputError(f"--data-dir {folder} is not a folder; pass the folder of cheat sheets")
    report = load_paths([folder], include=include, exclude=("LICENSE*", "README*"))
    documents = sorted(report.documents, key=lambda d: d.id)
    if not documents:
        raise InputError(f"no documents matching {list(include)} in {folder}")
    chunks: list[Document] = []
    for doc in documents:
        for chunk in chunk_document(doc, settings.chunking.chunk_tokens, settings.chunking.overlap_tokens):
            url = f"{chunk.cite}#chunk-{chunk.metadata.get('chunk_index', 0)}"
            chunks.append(dataclasses.replace(chunk, url=url))
    return documents, chunks


def check_gold_sources(questions: Sequence[EvidenceQuestion], chunks: Sequence[Document], folder: str | Path) -> None:
    """Refuse a question whose gold sources are not documents of the corpus.

    Groundedness asks whether an answer cites a gold source: a misspelt file name, or no
    name at all, would count every answer to that question as ungrounded, a wrong figure
    rather than an error.

    Raises:
        InputError: one line naming the question and the file (with the closest file names).
    """
    import difflib

    names = sorted({source_name(c.url or c.id) for c in chunks} | {source_name(c.id) for c in chunks})
    for q in questions:
        if not q.gold:
            raise InputError(f"question {q.id}: no gold source (groundedness needs the file names that answer it)")
        for gold in q.gold:
            if gold not in names:
                close = difflib.get_close_matches(gold, names, n=3, cutoff=0.6)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise InputError(f"question {q.id}: gold source {gold!r} is not a document of {folder}{hint}")


def cached_chunk_vectors(
    chunks: Sequence[Document], embedder: Embedder, settings: Settings, cache_dir: str | Path | None
) -> tuple[Any, bool]:
    """Embeddings of ``chunks``, read from / written to ``cache_dir`` when given.

    The cache file is named by the sha256 of the embedder id, the chunking settings and
    every chunk's id and content hash, so any change to the corpus, the chunker or the model
    misses the cache. Returns ``(vectors, hit)``.
    """
    import numpy as np

    from ragtrust.retrieval.dense import embed_texts

    model_id = str(getattr(embedder, "model_id", type(embedder).__name__))
    digest = hashlib.sha256(
        f"{model_id}\0{settings.chunking.chunk_tokens}/{settings.chunking.overlap_tokens}\n".encode()
    )
    for chunk in chunks:
        digest.update(f"{chunk.id}\0{chunk.content_hash}\n".encode())
    file = Path(cache_dir) / f"vectors-{digest.hexdigest()[:24]}.npy" if cache_dir else None
    if file is not None and file.is_file():
        vectors = np.load(file)
        if vectors.shape[0] == len(chunks):
            return vectors, True
    vectors = embed_texts(embedder, [c.text for c in chunks])
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_suffix(".tmp.npy")
        np.save(tmp, vectors)
        tmp.replace(file)
    return vectors, False


def corpus_hash(documents: Sequence[Document]) -> str:
    """The sha256 of every document's file name and content hash (the corpus a run measured)."""
    digest = hashlib.sha256()
    for doc in documents:
        digest.update(f"{source_name(doc.id)}\0{doc.content_hash}\n".encode())
    return digest.hexdigest()


__all__ = [
    "ABLATION_NS",
    "ABLATION_TS",
    "ANSCOV_NS",
    "QUESTIONS_FILE",
    "SEM_NOT_COMPUTED",
    "STRESS_EXPECTED",
    "STRESS_KINDS",
    "EvidenceQuestion",
    "EvidenceReport",
    "QuestionResult",
    "cached_chunk_vectors",
    "check_gold_sources",
    "corpus_hash",
    "load_corpus",
    "load_questions",
    "shipped_nli_available",
    "source_name",
    "stress_passages",
]
