"""One generation of a store, loaded: its live chunks, their vectors, the current parents.

A :class:`Snapshot` is what a :class:`~ragtrust.ingest.store.Store` reads until it refreshes
or writes: a consistent view of one generation (readers never see a half-written one), with
the retrievers built over it cached for as long as it lives.

Example:
    >>> import numpy as np
    >>> from ragtrust.documents import Document
    >>> chunk = Document(id="kb#0", text="Use TLS.", metadata={"parent_id": "kb"})
    >>> segments = {"seg-1": ([chunk], np.ones((1, 4), dtype=np.float32), [])}
    >>> manifest = {"segments": ["seg-1"], "deleted": [], "parents": {}, "embedder": {"dim": 4}}
    >>> snap = Snapshot.load("000001", manifest, segments.__getitem__)
    >>> snap.rows, sorted(snap.stale({"kb"}))
    ({'kb#0': 0}, ['seg-1/kb#0'])
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ragtrust.documents import Document
from ragtrust.ingest.store_files import Segment
from ragtrust.models.base import Embedder
from ragtrust.retrieval.base import Retriever

if TYPE_CHECKING:
    from ragtrust.evidence.extract import Vocabulary


def live_rows(
    manifest: Mapping[str, Any], read: Callable[[str], Segment]
) -> tuple[list[Document], list[str], list[npt.NDArray[np.float32]], dict[str, Document]]:
    """The live rows of a generation: chunks not deleted, their segments and vectors, current parents.

    Args:
        manifest: the generation's manifest.
        read: parses (or recalls) one segment by name.

    Returns:
        ``(chunks, segment of each chunk, vectors per segment, parents by id)``; a parent is
        live when the manifest lists it with the same content hash.
    """
    deleted = set(manifest["deleted"])
    known: Mapping[str, Any] = manifest["parents"]
    chunks: list[Document] = []
    segment_of: list[str] = []
    vectors: list[npt.NDArray[np.float32]] = []
    parents: dict[str, Document] = {}
    for name in manifest["segments"]:
        seg_chunks, seg_vectors, seg_parents = read(name)
        keep = [i for i, c in enumerate(seg_chunks) if f"{name}/{c.id}" not in deleted]
        chunks.extend(seg_chunks[i] for i in keep)
        segment_of.extend([name] * len(keep))
        vectors.append(seg_vectors[keep])
        for p in seg_parents:
            if known.get(p.id, {}).get("hash") == p.content_hash:
                parents[p.id] = p
    return chunks, segment_of, vectors, parents


def stack_vectors(vectors: Sequence[npt.NDArray[np.float32]], dim: int) -> npt.NDArray[np.float32]:
    """One matrix of the rows of every segment (an empty ``(0, dim)`` one when there are none)."""
    matrix = np.concatenate(vectors) if vectors else np.zeros((0, dim), dtype=np.float32)
    return matrix.astype(np.float32, copy=False)


@dataclass
class Snapshot:
    """One generation, loaded: live chunks, their vectors, parent documents.

    Attributes:
        segment_of: the segment of each chunk (for deletion keys).
        rows: the row of each chunk id.
        retrievers: indexes built over this generation (``dense``, ``bm25``), built once.

    :meth:`vocabulary` is built on first use and kept with the generation.
    """

    generation: str
    manifest: dict[str, Any]
    chunks: list[Document]
    vectors: npt.NDArray[np.float32]
    parents: dict[str, Document]
    segment_of: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    retrievers: dict[str, Any] = field(default_factory=dict)
    _vocabulary: Vocabulary | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def load(cls, generation: str, manifest: dict[str, Any], read: Callable[[str], Segment]) -> Snapshot:
        """Load the live rows of ``manifest``, parsing (or recalling) each segment with ``read``."""
        chunks, segment_of, vectors, parents = live_rows(manifest, read)
        matrix = stack_vectors(vectors, int(manifest["embedder"]["dim"]))
        snap = cls(generation, manifest, chunks, matrix, parents)
        snap.segment_of = segment_of
        snap.rows = {c.id: i for i, c in enumerate(chunks)}
        return snap

    def vocabulary(self) -> Vocabulary:
        """The words and content terms of the live chunks (:func:`ragtrust.evidence.extract.vocabulary`), built once."""
        if self._vocabulary is None:
            from ragtrust.evidence.extract import vocabulary

            self._vocabulary = vocabulary(c.text for c in self.chunks)
        return self._vocabulary

    def stale(self, parent_ids: set[str]) -> set[str]:
        """Return the deletion keys (``<segment>/<chunk id>``) of the live chunks of these parents."""
        return {
            f"{seg}/{c.id}"
            for c, seg in zip(self.chunks, self.segment_of, strict=True)
            if c.metadata.get("parent_id") in parent_ids
        }

    def retriever(self, mode: str, top_k: int, embedder: Embedder, rrf_k: int) -> Retriever:
        """A ``dense``, ``bm25`` or ``hybrid`` retriever over this generation (indexes built once).

        The retrievers come through the registry (``{"type": mode, "params": {...}}``) over
        this generation's indexes, which are shared objects: the dense index, and the BM25
        retriever whose built index a copy shares.
        """
        from ragtrust import registry
        from ragtrust.retrieval.bm25 import BM25Retriever
        from ragtrust.retrieval.dense import DenseIndex

        if "dense" not in self.retrievers:
            self.retrievers["dense"] = DenseIndex(list(self.chunks), self.vectors, embedder)
        if mode != "dense" and "bm25" not in self.retrievers:
            self.retrievers["bm25"] = registry.build("retriever", "bm25", documents=list(self.chunks))
        dense: Retriever = registry.build(
            "retriever", {"type": "dense", "params": {"default_top_k": top_k}}, index=self.retrievers["dense"]
        )
        if mode == "dense":
            return dense
        lexical: BM25Retriever = copy.copy(self.retrievers["bm25"])  # shares the built index
        lexical.default_top_k = top_k
        if mode == "bm25":
            return lexical
        hybrid: Retriever = registry.build(
            "retriever",
            {"type": "hybrid", "params": {"rrf_k": rrf_k, "default_top_k": top_k}},
            dense=dense,
            bm25=lexical,
        )
        return hybrid


__all__ = ["Snapshot", "live_rows", "stack_vectors"]
