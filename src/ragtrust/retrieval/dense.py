"""Dense retrieval: FAISS inner product on unit vectors, i.e. cosine similarity.

Scores are the cosine of the (L2-normalised) query and document embeddings, clipped to
[0, 1] — the quantity SPEC section 5's low-retrieval rule (best < 0.30) is defined on.

Up to ``ivf_threshold`` vectors (50,000 by default) the index is exact
(``IndexFlatIP``); above it an ``IndexIVFFlat`` with ``4 * sqrt(n)`` lists is trained on
the vectors and searched with ``nprobe`` lists (approximate, far faster on large corpora).
Scores are recomputed exactly from the stored vectors either way.

Example:
    >>> from ragtrust.documents import Document
    >>> from ragtrust.testing import HashingEmbedder
    >>> docs = [Document(id="a", text="parameterised queries stop SQL injection"),
    ...         Document(id="b", text="bcrypt is an adaptive password hash")]
    >>> index = DenseIndex.from_documents(docs, HashingEmbedder())
    >>> index.retrieve("how to stop SQL injection", top_k=1)[0].id
    'a'
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import ConfigError, InputError, MissingDependencyError
from ragtrust.io import atomic_write_bytes, atomic_write_text
from ragtrust.models.base import Embedder
from ragtrust.registry import register

IVF_THRESHOLD = 50_000
FORMAT = "ragtrust-dense-1"


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise MissingDependencyError("dense retrieval", "pip install faiss-cpu") from exc
    return faiss


def embed_texts(
    embedder: Embedder,
    texts: Sequence[str],
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> npt.NDArray[np.float32]:
    """Embed in batches and re-normalise rows (a defensive no-op for compliant embedders)."""
    dim = int(embedder.dim)
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start : start + batch_size])
        vectors = np.asarray(embedder.embed(batch), dtype=np.float32)
        if vectors.shape != (len(batch), dim):
            raise ConfigError(
                f"embedder {embedder.model_id!r} returned shape {vectors.shape}, expected ({len(batch)}, {dim})"
            )
        out[start : start + len(batch)] = vectors
        if progress is not None:
            progress(min(start + batch_size, len(texts)), len(texts))
    return normalize_rows(out)


def normalize_rows(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Unit-norm rows (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: npt.NDArray[np.float32] = (vectors / norms).astype(np.float32, copy=False)
    return result


@dataclass
class DenseIndex:
    """Documents, their unit embeddings and a FAISS index over them.

    Build it with :meth:`from_documents` (embeds) or :meth:`from_vectors` (already
    embedded); persist it with :meth:`save` / :meth:`load`.

    Attributes:
        documents: the indexed documents (row ``i`` of ``vectors`` is ``documents[i]``).
        vectors: ``(n, dim)`` float32 unit rows.
        embedder: the model that embeds queries (must be the one that embedded the rows).
        ivf_threshold: above this many rows an IVF index is used.
        nprobe: IVF lists searched per query.
    """

    documents: list[Document]
    vectors: npt.NDArray[np.float32]
    embedder: Embedder
    ivf_threshold: int = IVF_THRESHOLD
    nprobe: int = 16
    name: str = "dense"
    _index: Any = field(default=None, init=False, repr=False)
    _rows: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.documents):
            raise InputError(f"{len(self.documents)} documents but vectors of shape {self.vectors.shape}")
        self._rows = {doc.id: i for i, doc in enumerate(self.documents)}
        if len(self._rows) != len(self.documents):
            raise InputError("duplicate document ids in the dense index")

    # -- construction --------------------------------------------------------------------
    @classmethod
    def from_documents(
        cls,
        docs: Sequence[Document],
        embedder: Embedder,
        *,
        batch_size: int = 64,
        progress: Callable[[int, int], None] | None = None,
    ) -> DenseIndex:
        """Embed ``docs`` and index them in memory."""
        vectors = embed_texts(embedder, [d.text for d in docs], batch_size, progress)
        return cls(list(docs), vectors, embedder)

    @classmethod
    def from_vectors(cls, docs: Sequence[Document], vectors: npt.NDArray[np.float32], embedder: Embedder) -> DenseIndex:
        """Index already-embedded documents (rows are re-normalised)."""
        return cls(list(docs), normalize_rows(np.asarray(vectors, dtype=np.float32)), embedder)

    def __len__(self) -> int:
        return len(self.documents)

    @property
    def kind(self) -> str:
        """``flat`` (exact) or ``ivf`` (approximate)."""
        return "ivf" if len(self.documents) > self.ivf_threshold else "flat"

    def warm_up(self) -> None:
        """Build the FAISS index (done lazily by the first search otherwise)."""
        if self._index is not None:
            return
        faiss = _faiss()
        dim = self.vectors.shape[1] if self.vectors.size else int(self.embedder.dim)
        if self.kind == "ivf":
            nlist = int(4 * math.sqrt(len(self.documents)))
            quantizer = faiss.IndexFlatIP(dim)
            index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
            rng = np.random.default_rng(42)  # SPEC seed: the training sample is reproducible
            sample = self.vectors[rng.choice(len(self.vectors), size=min(len(self.vectors), 64 * nlist), replace=False)]
            index.train(sample)
            index.add(self.vectors)
            index.nprobe = self.nprobe
        else:
            index = faiss.IndexFlatIP(dim)
            if len(self.vectors):
                index.add(self.vectors)
        self._index = index

    # -- search --------------------------------------------------------------------------
    def embed_query(self, query: str) -> npt.NDArray[np.float32]:
        """Embed a query: unit row, shape ``(1, dim)``."""
        if not isinstance(query, str) or not query.strip():
            raise InputError("the query is empty: pass a non-empty question text")
        return embed_texts(self.embedder, [query])

    def search(self, vectors: npt.NDArray[np.float32], top_k: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[Any]]:
        """Cosine scores and row indices of the ``top_k`` rows per query vector (-1 = none)."""
        self.warm_up()
        k = max(0, min(top_k, len(self.documents)))
        queries = normalize_rows(np.ascontiguousarray(vectors, dtype=np.float32))
        if k == 0:
            return np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64)
        scores, rows = self._index.search(queries, k)
        return scores.astype(np.float32), rows

    def retrieve(self, query: str, top_k: int = 5) -> list[RetrievedDoc]:
        """Return the ``top_k`` most similar documents; score = cosine clipped to [0, 1]."""
        scores, rows = self.search(self.embed_query(query), top_k)
        out: list[RetrievedDoc] = []
        for score, row in zip(scores[0], rows[0], strict=True):
            if row < 0:
                continue
            out.append(
                RetrievedDoc(
                    document=self.documents[int(row)],
                    score=float(np.clip(score, 0.0, 1.0)),
                    rank=len(out) + 1,
                    retriever=self.name,
                )
            )
        return out

    def similarities(self, query: str, doc_ids: Sequence[str]) -> dict[str, float]:
        """Exact cosine (clipped to [0, 1]) of the query with the given indexed documents."""
        q = self.embed_query(query)[0]
        out: dict[str, float] = {}
        for doc_id in doc_ids:
            row = self._rows.get(doc_id)
            if row is not None:
                out[doc_id] = float(np.clip(self.vectors[row] @ q, 0.0, 1.0))
        return out

    def row(self, doc_id: str) -> int:
        """Row of a document id (``KeyError`` when absent)."""
        return self._rows[doc_id]

    def neighbours(self, docs: Sequence[Document], top_k: int) -> list[RetrievedDoc]:
        """The ``top_k`` indexed documents nearest to any of ``docs`` (not ``docs`` themselves).

        An indexed document is searched with its stored vector, another one is embedded.
        Each neighbour's score is its best cosine to one of ``docs``; nearest first. These
        are the *witnesses* of the claim-conflict signal: statements of the same facts that
        did not make the top-K.
        """
        if top_k <= 0 or not docs or not len(self.documents):
            return []
        rows = [self._rows.get(d.id) for d in docs]
        missing = [d.text for d, r in zip(docs, rows, strict=True) if r is None]
        embedded = iter(embed_texts(self.embedder, missing)) if missing else iter(())
        vectors = np.vstack([self.vectors[r] if r is not None else next(embedded) for r in rows])
        scores, found = self.search(vectors, top_k + len(docs))
        exclude = {d.id for d in docs}
        best: dict[int, float] = {}
        for score_row, index_row in zip(scores, found, strict=True):
            for score, row in zip(score_row, index_row, strict=True):
                if row >= 0 and self.documents[int(row)].id not in exclude:
                    best[int(row)] = max(best.get(int(row), -1.0), float(score))
        ranked = sorted(best.items(), key=lambda item: -item[1])[:top_k]
        return [
            RetrievedDoc(self.documents[row], float(np.clip(score, 0.0, 1.0)), rank, "witness")
            for rank, (row, score) in enumerate(ranked, start=1)
        ]

    def retriever(self, top_k: int = 5) -> DenseRetriever:
        """Wrap this index in a :class:`DenseRetriever`."""
        return DenseRetriever(index=self, default_top_k=top_k)

    # -- persistence ---------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write ``documents.jsonl``, ``vectors.npy`` and ``meta.json`` into folder ``path``."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / "documents.jsonl", "".join(d.to_json() + "\n" for d in self.documents))
        buf = _npy_bytes(self.vectors)
        atomic_write_bytes(folder / "vectors.npy", buf)
        meta = {"format": FORMAT, "model_id": self.embedder.model_id, "dim": int(self.vectors.shape[1])}
        atomic_write_text(folder / "meta.json", json.dumps(meta))

    @classmethod
    def load(cls, path: str | Path, embedder: Embedder) -> DenseIndex:
        """Read an index written by :meth:`save`; the embedder must match the one used."""
        folder = Path(path)
        try:
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
            vectors = np.load(folder / "vectors.npy")
            lines = (folder / "documents.jsonl").read_text(encoding="utf-8").split("\n")
        except FileNotFoundError as exc:
            raise InputError(f"{folder}: not a saved dense index ({exc.filename} missing)") from exc
        check_embedder(meta.get("model_id"), meta.get("dim"), embedder, str(folder))
        docs = [Document.from_dict(json.loads(line)) for line in lines if line.strip()]
        return cls(docs, vectors.astype(np.float32, copy=False), embedder)


def check_embedder(model_id: Any, dim: Any, embedder: Embedder, where: str) -> None:
    """Raise :class:`ConfigError` when ``embedder`` is not the model an index was built with."""
    if model_id != embedder.model_id or int(dim) != int(embedder.dim):
        raise ConfigError(
            f"{where} was built with embedder {model_id!r} (dim {dim}) but {embedder.model_id!r} "
            f"(dim {embedder.dim}) was given: use the same embedding model or re-ingest into a new store"
        )


def _npy_bytes(array: npt.NDArray[Any]) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


@register("retriever", "dense")
@dataclass
class DenseRetriever:
    """Cosine top-k retrieval over a :class:`DenseIndex`.

    Attributes:
        index: the dense index (its embedder embeds the queries).
        default_top_k: used when ``retrieve`` is called without ``top_k``.
    """

    index: DenseIndex
    default_top_k: int = 5
    name: str = "dense"

    def warm_up(self) -> None:
        """Build the FAISS index now."""
        self.index.warm_up()

    def retrieve(self, query: str, top_k: int | None = None) -> list[RetrievedDoc]:
        """Return the ``top_k`` most similar documents; score = cosine clipped to [0, 1]."""
        docs = self.index.retrieve(query, top_k or self.default_top_k)
        return [RetrievedDoc(d.document, d.score, d.rank, self.name) for d in docs]

    def similarities(self, query: str, doc_ids: Sequence[str]) -> dict[str, float]:
        """Exact cosine of the query with the given documents (for hybrid fusion)."""
        return self.index.similarities(query, doc_ids)


__all__ = ["IVF_THRESHOLD", "DenseIndex", "DenseRetriever", "check_embedder", "embed_texts", "normalize_rows"]
