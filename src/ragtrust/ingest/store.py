"""The store: chunks, their embeddings and the provenance ledger in one folder.

Layout::

    STORE/
      CURRENT                     name of the live generation (swapped with os.replace)
      generations/000007.json     manifest: embedder, segments, deleted ``<segment>/<chunk id>``, parents
      segments/<name>/            immutable: chunks.jsonl, vectors.npy, parents.jsonl
      ledger.sqlite               provenance ledger (WAL)
      .lock                       writer lock (one writer at a time)

**Incremental.** An ingest embeds only new and changed documents (new text, or the same text
with another URL or metadata) and writes them as a new immutable *segment*; replaced or
deleted chunks are listed as deleted in the next manifest. Unchanged documents are neither
re-chunked nor re-embedded. When more than a
third of the stored rows are deleted the live rows are compacted into one segment.

**Atomic.** A write builds its segment and manifest under new names and only then
replaces ``CURRENT`` (``os.replace``, atomic on POSIX and Windows). An exception or a
crash at any earlier point leaves ``CURRENT`` naming the previous, complete generation;
the half-written files are ignored (and removed by the next write). Readers read
``CURRENT`` once and then only immutable files, so they never see a half-written index.
The ledger is opened (created, for a new store) before the swap and updated after it;
re-ingesting heals it if a crash came in between, and until then the documents the ledger
does not list are screened as never vetted (:meth:`Store.holds` tells the provenance
signal they are the store's own), never as another source's.

**Fails closed.** The ledger is what tells a vetted document from a quarantined one, so a
store with a live generation whose ``ledger.sqlite`` is missing or not a SQLite database
refuses to open (:class:`~ragtrust.errors.StoreDamagedError`) instead of starting a new,
empty ledger. Likewise a store whose ``CURRENT`` is missing, empty or unreadable (its
manifests, segments or ledger are there) refuses to read or ingest instead of reading as an
empty store, which an ingest would replace by a generation holding only the new documents.
:func:`check_store` names the damage; :func:`repair_store` re-creates the ledger with every
document of the store recorded *unvetted*.

**Read-only stores answer queries.** A store folder this process cannot write (``chmod -R
a-w``, a read-only mount) or opened with ``read_only=True`` reads its ledger through SQLite's
``mode=ro`` and keeps every cache in memory; only a write (ingest, delete, vet, quarantine,
repair) fails, with :class:`~ragtrust.errors.StoreReadOnlyError` (``the store at kb is
read-only: ...``). Messages name the store by its folder's name, never its absolute path.

The folder's files are read and written by :mod:`~ragtrust.ingest.store_files`; check and
repair live in :mod:`~ragtrust.ingest.store_check` (both still import from here).

Example:
    >>> import tempfile
    >>> from ragtrust.documents import Document
    >>> from ragtrust.testing import HashingEmbedder
    >>> store = Store.open(tempfile.mkdtemp(), HashingEmbedder(), create=True)
    >>> store.add([Document(id="kb-1", text="Use parameterised queries against SQL injection.")]).added
    1
    >>> store.retriever().retrieve("SQL injection", top_k=1)[0].id
    'kb-1#0'
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ragtrust.config import Settings
from ragtrust.documents import Document, shown_id
from ragtrust.errors import ConfigError, InputError
from ragtrust.ingest.chunker import chunk_document
from ragtrust.ingest.ingest_report import IngestReport, Progress
from ragtrust.ingest.ledger import TIERS, UNKNOWN_ACTOR, Ledger
from ragtrust.ingest.snapshot import Snapshot, live_rows, stack_vectors
from ragtrust.ingest.store_check import REPAIR_REASON, StoreCheck, StoreRepair, check_store, repair_store
from ragtrust.ingest.store_files import (
    FORMAT,
    LEDGER_FILE,
    Segment,
    check_ledger_file,
    check_store_embedder,
    collect_garbage,
    current_generation,
    empty_manifest,
    missing_message,
    open_ledger,
    read_manifest_file,
    read_only_error,
    read_segment_files,
    segment_rows,
    store_exists,
    store_name,
    store_writable,
    write_generation,
    write_segment_files,
    writer_lock,
)
from ragtrust.models.base import Embedder
from ragtrust.retrieval.base import Retriever

if TYPE_CHECKING:
    from ragtrust.evidence.extract import Vocabulary

#: compact when this share of stored rows is deleted
COMPACT_RATIO = 1 / 3


class Store:
    """A persistent, incrementally updated, atomically written document store.

    Open it with :meth:`open`; add documents with :meth:`add`; query it through
    :meth:`retriever`. An object reads one generation (a consistent snapshot) until
    :meth:`refresh` or its own write; long-running readers call :meth:`refresh` to see
    what other processes published.
    """

    def __init__(self, root: Path, embedder: Embedder, settings: Settings, *, read_only: bool = False) -> None:
        self.root = root
        self.embedder = embedder
        self.settings = settings
        #: reads only: the ledger opens with SQLite's mode=ro, writes raise StoreReadOnlyError
        self.read_only = read_only
        self._snapshot: Snapshot | None = None
        self._ledger: Ledger | None = None
        #: parsed segments by name; a published segment never changes, so a reload after
        #: a write (or refresh) parses only the segments it has not seen
        self._segments: dict[str, Segment] = {}

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        embedder: Embedder | None = None,
        *,
        create: bool = False,
        settings: Settings | None = None,
        read_only: bool | None = None,
    ) -> Store:
        """Open a store folder.

        Args:
            path: the store folder.
            embedder: the embedding model (must be the one the store was built with);
                ``None``: ``default_embedder(settings)``, checked against the store's.
            create: create an empty store when there is none.
            settings: chunking and retrieval settings (defaults when ``None``).
            read_only: open it for reading only (queries work; ingest, delete and ledger
                changes raise :class:`~ragtrust.errors.StoreReadOnlyError`); ``None``: when
                this process cannot write the folder or its ledger.

        Raises:
            InputError: no store at ``path`` and ``create`` is false; ``path`` is a file.
            StoreReadOnlyError: ``create`` on a read-only folder without a store.
            ConfigError: the store was built with another embedder.
            StoreDamagedError: the manifest or the provenance ledger is missing or
                unreadable (the store refuses to answer until ``ragtrust store repair``).
        """
        root = Path(path).expanduser()
        if root.exists() and not root.is_dir():
            raise InputError(f"store path {store_name(root)} is a file; expected a folder")
        if not store_exists(root) and not create:
            raise InputError(missing_message(root))
        if read_only is None:
            read_only = root.exists() and not store_writable(root)
        if read_only and not store_exists(root):
            raise read_only_error(root, "cannot create a store there")
        settings = settings or Settings()
        given = embedder is not None
        if embedder is None:
            from ragtrust.models.embedder import default_embedder

            embedder = default_embedder(settings)
        store = cls(root, embedder, settings, read_only=read_only)
        if store_exists(root):
            store._check_embedder(store._read_manifest(store._current()), given)
            check_ledger_file(root)
        else:
            root.mkdir(parents=True, exist_ok=True)
        return store

    def _current(self) -> str | None:
        return current_generation(self.root)

    def _read_manifest(self, generation: str | None) -> dict[str, Any]:
        if generation is None:
            return empty_manifest(self.embedder, self.settings)
        return read_manifest_file(self.root, generation)

    def _check_embedder(self, manifest: dict[str, Any], given: bool = True) -> None:
        check_store_embedder(self.root, manifest["embedder"], self.embedder, given)

    @property
    def path(self) -> Path:
        """The store folder (also where per-store caches such as the NLI cache live)."""
        return self.root

    @property
    def ledger(self) -> Ledger:
        """The store's provenance ledger.

        Raises:
            StoreDamagedError: the store has a live generation but its ledger file is
                missing or not a SQLite database (it is never silently re-created).
        """
        if self._ledger is None:
            check_ledger_file(self.root)
            self._ledger = Ledger(self.root / LEDGER_FILE, read_only=self.read_only)
        return self._ledger

    def close(self) -> None:
        """Close the ledger connection."""
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None

    def refresh(self) -> bool:
        """Reload if another process published a newer generation; True when it did."""
        if self._snapshot is not None and self._snapshot.generation == self._current():
            return False
        self._snapshot = None
        return True

    def check_readable(self) -> None:
        """Raise when the store can no longer be read: a cheap probe that parses no segment.

        Reads ``CURRENT`` and the manifest it names and checks the ledger file's header, what
        a readiness probe asks of a long-running reader whose store may be damaged after it
        opened it (a server that loaded its snapshot keeps it in memory, but its next query
        reads ``CURRENT`` again).

        Raises:
            StoreDamagedError: ``CURRENT``, its manifest or the ledger is missing or unreadable,
                or the ledger this object has open was deleted or replaced since.
        """
        self._read_manifest(self._current())
        check_ledger_file(self.root)
        if self._ledger is not None:  # the file on disk may be sound and still not the one it reads
            self._ledger.check_file()

    # -- reading -------------------------------------------------------------------------
    def _load(self) -> Snapshot:
        if self._snapshot is not None:  # pinned until refresh() (or this object's own write)
            return self._snapshot
        generation = self._current()
        manifest = self._read_manifest(generation)

        def cached(name: str) -> Segment:
            if name not in self._segments:
                self._segments[name] = self._read_segment(name)
            return self._segments[name]

        snap = Snapshot.load(generation or "", manifest, cached)
        for name in set(self._segments) - set(manifest["segments"]):
            del self._segments[name]
        self._snapshot = snap
        return snap

    def _read_segment(self, name: str) -> Segment:
        return read_segment_files(self.root, name)

    def __len__(self) -> int:
        return len(self._load().chunks)

    @property
    def generation(self) -> str:
        """Name of the generation this object reads."""
        return self._load().generation

    def documents(self) -> list[Document]:
        """All live chunks, in storage order."""
        return list(self._load().chunks)

    def parents(self) -> list[Document]:
        """All live parent documents."""
        return list(self._load().parents.values())

    def vectors(self) -> npt.NDArray[np.float32]:
        """Return the chunk embeddings, row ``i`` for ``documents()[i]`` (read-only view)."""
        view = self._load().vectors.view()
        view.flags.writeable = False
        return view

    def snapshot(self) -> tuple[list[Document], npt.NDArray[np.float32]]:
        """:meth:`documents` and :meth:`vectors` of one generation (an ingest may swap it between two calls)."""
        loaded = self._load()
        view = loaded.vectors.view()
        view.flags.writeable = False
        return list(loaded.chunks), view

    def vocabulary(self) -> Vocabulary:
        """The words and content terms (stop words out, lightly stemmed) of the live chunks of this object's generation.

        What relevance asks of a question word: does any document of the store use it at all?
        Built once per generation (0.18 s for the 1,493 OWASP chunks on a 2-core AVX2 host).
        """
        return self._load().vocabulary()

    def holds(self, doc_id: str) -> bool:
        """Whether ``doc_id`` is a live parent document of the generation this object reads."""
        return doc_id in self._load().manifest["parents"]

    def get(self, doc_id: str) -> Document:
        """Return a chunk (``<id>#<n>``) or a parent document by id.

        Raises:
            InputError: the id is not in the store.
        """
        snap = self._load()
        row = snap.rows.get(doc_id)
        if row is not None:
            return snap.chunks[row]
        if doc_id in snap.parents:
            return snap.parents[doc_id]
        raise InputError(f"document {shown_id(doc_id)} is not in store {store_name(self.root)}")

    def retriever(self, mode: str = "dense", top_k: int = 5) -> Retriever:
        """Build a retriever over the current generation.

        Args:
            mode: ``dense`` (FAISS cosine), ``bm25`` or ``hybrid`` (RRF, dense cosine scores).
            top_k: default number of results.

        Raises:
            ConfigError: an unknown mode.
        """
        if mode not in ("dense", "bm25", "hybrid"):
            raise ConfigError(f"unknown retrieval mode {mode!r}; expected dense, bm25 or hybrid")
        return self._load().retriever(mode, top_k, self.embedder, self.settings.retrieval.rrf_k)

    # -- writing -------------------------------------------------------------------------
    def add(
        self,
        documents: Sequence[Document],
        *,
        tier: str | None = None,
        source: str = "",
        progress: Progress | None = None,
        actor: str = UNKNOWN_ACTOR,
    ) -> IngestReport:
        """Add or update parent documents; unchanged ones are left as they are.

        Args:
            documents: parent documents (e.g. from :func:`~ragtrust.ingest.loaders.load_paths`).
            tier: trust tier recorded in the ledger for every given document
                (``vetted`` / ``unvetted`` / ``quarantined``; ``None`` keeps the current one).
            source: provenance source for all documents (default: each one's ``source``).
            progress: ``progress(stage, done, total)`` callback.
            actor: who ingests (an API key's name, an OS user): the ledger's audit trail.

        Raises:
            InputError: duplicate ids in the batch, an unknown tier, or a chunk-style id.
            StoreReadOnlyError: the store was opened read-only.

        The write is atomic: on any exception the store stays at its previous generation. A
        document longer than ``ingest.max_chunks_per_document`` chunks is left out (listed in
        the report's ``skipped``; a stored older version of it stays) and the rest is added.
        """
        if self.read_only:
            raise read_only_error(self.root, "cannot ingest")
        started = time.perf_counter()
        docs = list(documents)
        if tier is not None and tier not in TIERS:
            raise InputError(f"unknown trust tier {tier!r}; expected one of {', '.join(TIERS)}")
        ids = [d.id for d in docs]
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise InputError(f"duplicate document ids in one ingest: {', '.join(dupes)}")
        bad = [i for i in ids if "#" in i and i.rsplit("#", 1)[1].isdigit()]
        if bad:
            raise InputError(f"document id {bad[0]!r} looks like a chunk id (<id>#<n>); rename the document")
        with writer_lock(self.root):
            self._snapshot = None
            snap = self._load()
            _ = self.ledger  # checked (or created, for a new store) before anything is published
            manifest = snap.manifest
            known: dict[str, Any] = manifest["parents"]
            new = [d for d in docs if d.id not in known]
            changed = [d for d in docs if d.id in known and _changed(d, known[d.id]["hash"], snap.parents.get(d.id))]
            unchanged = len(docs) - len(new) - len(changed)
            report_chunks = 0
            generation = snap.generation
            skipped: list[tuple[str, str]] = []
            if new or changed:
                chunks, skipped = self._chunk(new + changed, progress)
                left_out = {doc_id for doc_id, _ in skipped}
                new = [d for d in new if d.id not in left_out]
                changed = [d for d in changed if d.id not in left_out]
                docs = [d for d in docs if d.id not in left_out]
            if new or changed:
                stale = snap.stale({d.id for d in changed})
                vectors = self._embed(chunks, progress)
                segment = self._write_segment(chunks, vectors, new + changed)
                parents = dict(known)
                per_parent = Counter(c.metadata["parent_id"] for c in chunks)
                for d in new + changed:
                    parents[d.id] = {
                        "hash": d.content_hash,
                        "chunks": per_parent[d.id],
                        "source": source or d.source or d.url or d.id,
                        "url": d.url,
                    }
                generation = self._publish(
                    manifest,
                    segments=[*manifest["segments"], segment],
                    deleted=sorted(set(manifest["deleted"]) | stale),
                    parents=parents,
                )
                report_chunks = len(chunks)
            self._ledger_record(docs, source, tier, actor)
            total = len(self._load().chunks)
            self._collect_garbage()
        return IngestReport(
            added=len(new),
            updated=len(changed),
            unchanged=unchanged,
            chunks=report_chunks,
            total_chunks=total,
            seconds=time.perf_counter() - started,
            generation=generation,
            added_ids=tuple(d.id for d in new),
            updated_ids=tuple(d.id for d in changed),
            skipped=tuple(skipped),
        )

    def _ledger_record(self, docs: Sequence[Document], source: str, tier: str | None, actor: str) -> None:
        if docs:
            self.ledger.record_many(docs, source, tier, actor=actor)

    def delete(self, doc_ids: Sequence[str], *, actor: str = UNKNOWN_ACTOR) -> int:
        """Delete parent documents (all their chunks); returns how many were deleted.

        ``actor`` is who the ledger records the deletion as (as for :meth:`add`).

        Raises:
            InputError: an id that is not a document of the store (nothing is deleted).
        """
        if self.read_only:
            raise read_only_error(self.root, "cannot delete documents")
        wanted = list(dict.fromkeys(doc_ids))
        if not wanted:
            return 0
        with writer_lock(self.root):
            self._snapshot = None
            snap = self._load()
            _ = self.ledger  # a damaged ledger refuses the delete before anything is published
            known = snap.manifest["parents"]
            unknown = [i for i in wanted if i not in known]
            if unknown:
                hint = " (a chunk id: delete its document instead)" if "#" in unknown[0] else ""
                raise InputError(f"not in store {store_name(self.root)}: {', '.join(unknown[:5])}{hint}")
            targets = set(wanted)
            stale = snap.stale(targets)
            self._publish(
                snap.manifest,
                segments=list(snap.manifest["segments"]),
                deleted=sorted(set(snap.manifest["deleted"]) | stale),
                parents={k: v for k, v in known.items() if k not in targets},
            )
            for doc_id in wanted:
                self.ledger.delete(doc_id, actor=actor)
            self._collect_garbage()
        return len(wanted)

    def _chunk(
        self, docs: Sequence[Document], progress: Progress | None
    ) -> tuple[list[Document], list[tuple[str, str]]]:
        """Chunks of ``docs``, and ``(id, reason)`` of each document over the chunk bound."""
        tokenizer = getattr(self.embedder, "tokenizer", None)
        cfg = self.settings.chunking
        limit = self.settings.ingest.max_chunks_per_document
        chunks: list[Document] = []
        skipped: list[tuple[str, str]] = []
        for i, doc in enumerate(docs, start=1):
            try:
                chunks.extend(chunk_document(doc, cfg.chunk_tokens, cfg.overlap_tokens, tokenizer, max_chunks=limit))
            except InputError as exc:
                skipped.append((doc.id, str(exc)))
            if progress is not None:
                progress("chunk", i, len(docs))
        return chunks, skipped

    def _embed(self, chunks: Sequence[Document], progress: Progress | None) -> npt.NDArray[np.float32]:
        from ragtrust.retrieval.dense import embed_texts

        def report(done: int, total: int) -> None:
            if progress is not None:
                progress("embed", done, total)

        return embed_texts(self.embedder, [c.text for c in chunks], batch_size=64, progress=report)

    def _write_segment(
        self, chunks: Sequence[Document], vectors: npt.NDArray[np.float32], parents: Sequence[Document]
    ) -> str:
        name = write_segment_files(self.root, chunks, vectors, parents)
        self._segments[name] = (list(chunks), np.ascontiguousarray(vectors, dtype=np.float32), list(parents))
        return name

    def _publish(
        self, previous: dict[str, Any], *, segments: list[str], deleted: list[str], parents: dict[str, Any]
    ) -> str:
        """Write a new manifest (compacting when many rows are dead) and swap CURRENT."""
        manifest = {
            **previous,
            "format": FORMAT,
            "embedder": {"model_id": self.embedder.model_id, "dim": int(self.embedder.dim)},
            "segments": segments,
            "deleted": deleted,
            "parents": parents,
            "created": time.time(),
        }
        total_rows = sum(segment_rows(self.root, s) for s in segments)
        if segments and total_rows and len(deleted) / total_rows > COMPACT_RATIO:
            manifest = self._compact(manifest)
        name = write_generation(self.root, manifest)
        self._snapshot = None
        return name

    def _compact(self, manifest: dict[str, Any]) -> dict[str, Any]:
        chunks, _, vectors, parents = live_rows(manifest, self._read_segment)
        for name in set(self._segments) - set(manifest["segments"]):
            del self._segments[name]
        matrix = stack_vectors(vectors, int(manifest["embedder"]["dim"]))
        segment = self._write_segment(chunks, matrix, list(parents.values()))
        return {**manifest, "segments": [segment], "deleted": []}

    def _collect_garbage(self) -> None:
        """Remove generations beyond the newest few and segments none of them uses."""
        collect_garbage(self.root, self._current())


def _changed(doc: Document, stored_hash: str, stored: Document | None) -> bool:
    """New text, or the same text with another URL (the citation target) or metadata than the stored parent."""
    if doc.content_hash != stored_hash:
        return True
    # compared as the store writes them (JSON: a tuple reads back as a list)
    return stored is not None and (doc.url, doc.to_dict()["metadata"]) != (stored.url, stored.to_dict()["metadata"])


__all__ = [
    "REPAIR_REASON",
    "IngestReport",
    "Progress",
    "Store",
    "StoreCheck",
    "StoreRepair",
    "check_store",
    "open_ledger",
    "repair_store",
    "store_exists",
]
