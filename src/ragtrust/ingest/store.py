"""The store: chunks, their embeddings and the provenance ledger in one folder.

Layout::

    STORE/
      CURRENT                     name of the live generation (swapped with os.replace)
      generations/000007.json     manifest: embedder, segments, deleted ``<segment>/<chunk id>``, parents
      segments/<name>/            immutable: chunks.jsonl, vectors.npy, parents.jsonl
      ledger.sqlite               provenance ledger (WAL)
      .lock                       writer lock (one writer at a time)

**Incremental.** An ingest embeds only new and changed documents and writes them as a new
immutable *segment*; replaced or deleted chunks are listed as deleted in the next
manifest. Unchanged documents are neither re-chunked nor re-embedded. When more than a
third of the stored rows are deleted the live rows are compacted into one segment.

**Atomic.** A write builds its segment and manifest under new names and only then
replaces ``CURRENT`` (``os.replace``, atomic on POSIX and Windows). An exception or a
crash at any earlier point leaves ``CURRENT`` naming the previous, complete generation;
the half-written files are ignored (and removed by the next write). Readers read
``CURRENT`` once and then only immutable files, so they never see a half-written index.
The ledger is opened (created, for a new store) before the swap and updated after it;
re-ingesting heals it if a crash came in between.

**Fails closed.** The ledger is what tells a vetted document from a quarantined one, so a
store with a live generation whose ``ledger.sqlite`` is missing or not a SQLite database
refuses to open (:class:`~ragtrust.errors.StoreDamagedError`) instead of starting a new,
empty ledger. :func:`check_store` names the damage; :func:`repair_store` re-creates the
ledger with every document of the store recorded *unvetted*.

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

import contextlib
import copy
import json
import os
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.config import Settings
from ragtrust.documents import Document
from ragtrust.errors import ConfigError, InputError, StoreDamagedError
from ragtrust.ingest.chunker import chunk_document
from ragtrust.ingest.ledger import TIERS, Ledger
from ragtrust.io import atomic_write_bytes, atomic_write_text
from ragtrust.models.base import Embedder
from ragtrust.retrieval.base import Retriever

FORMAT = "ragtrust-store-1"
CURRENT = "CURRENT"
LEDGER_FILE = "ledger.sqlite"
#: the first 16 bytes of every SQLite 3 database file
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: the tier reason recorded for every document by :func:`repair_store`
REPAIR_REASON = "ledger re-created by `ragtrust store repair`: earlier tiers and vetting were lost"
#: generations kept after a write (readers that opened an older one keep working)
KEEP_GENERATIONS = 3
#: compact when this share of stored rows is deleted
COMPACT_RATIO = 1 / 3

#: progress callback: (stage, done, total); stages: "chunk", "embed", "write"
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class IngestReport:
    """What one :meth:`Store.add` (or :meth:`Store.delete`) changed.

    Attributes:
        added / updated / unchanged / deleted: parent documents in each case.
        chunks: chunks written (embedded) by this call.
        total_chunks: chunks in the store afterwards.
        skipped: ``(path, reason)`` of inputs that could not be loaded (filled by callers
            that load files, e.g. the CLI, from :class:`~ragtrust.ingest.loaders.LoadReport`).
        seconds: wall time of the call.
        generation: the generation now live.
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    chunks: int = 0
    total_chunks: int = 0
    skipped: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0
    generation: str = ""
    added_ids: tuple[str, ...] = ()
    updated_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "chunks": self.chunks,
            "total_chunks": self.total_chunks,
            "skipped": [list(s) for s in self.skipped],
            "seconds": self.seconds,
            "generation": self.generation,
        }


@dataclass
class _Snapshot:
    """One generation, loaded: live chunks, their vectors, parent documents."""

    generation: str
    manifest: dict[str, Any]
    chunks: list[Document]
    vectors: npt.NDArray[np.float32]
    parents: dict[str, Document]
    segment_of: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    retrievers: dict[str, Any] = field(default_factory=dict)


def _empty_manifest(embedder: Embedder, settings: Settings) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "embedder": {"model_id": embedder.model_id, "dim": int(embedder.dim)},
        "chunking": {
            "chunk_tokens": settings.chunking.chunk_tokens,
            "overlap_tokens": settings.chunking.overlap_tokens,
        },
        "segments": [],
        "deleted": [],
        "parents": {},
        "created": time.time(),
    }


@contextlib.contextmanager
def _writer_lock(root: Path) -> Iterator[None]:
    lock = root / ".lock"
    handle = open(lock, "a+")  # noqa: SIM115 - held for the duration of the context
    try:
        try:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows: single writer assumed
            pass
        yield
    finally:
        handle.close()


def _stale(snap: _Snapshot, parent_ids: set[str]) -> set[str]:
    """Return the deletion keys (``<segment>/<chunk id>``) of the live chunks of these parents."""
    return {
        f"{seg}/{c.id}"
        for c, seg in zip(snap.chunks, snap.segment_of, strict=True)
        if c.metadata.get("parent_id") in parent_ids
    }


def store_exists(path: str | Path) -> bool:
    """Tell whether ``path`` holds a store with a live generation."""
    return (Path(path) / CURRENT).is_file()


def open_ledger(path: str | Path) -> Ledger:
    """Open the ledger of an existing store (no embedder needed: for vet / quarantine / ledger).

    Raises:
        InputError: when there is no store at ``path``.
        StoreDamagedError: the store's ledger is missing or not a SQLite database.
    """
    root = Path(path)
    if not store_exists(root):
        raise InputError(_missing_message(root))
    _check_ledger_file(root)
    return Ledger(root / LEDGER_FILE)


def _ledger_damage(root: Path) -> str | None:
    """What is wrong with the ledger file of the store at ``root`` (``None`` when it looks sound)."""
    try:
        with open(root / LEDGER_FILE, "rb") as handle:
            magic = handle.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"
    if magic != _SQLITE_MAGIC:
        return "empty (0 bytes)" if not magic else "not a SQLite database (overwritten or truncated?)"
    return None


def _check_ledger_file(root: Path) -> None:
    """Refuse a store that has a live generation but no readable ledger (fail closed).

    Creating a fresh ledger there would forget every vetting and quarantine: a quarantined
    document would be served as if nothing were known about it.
    """
    if not store_exists(root):
        return  # a new store: its ledger is created with its first generation
    damage = _ledger_damage(root)
    if damage is not None:
        raise StoreDamagedError(
            LEDGER_FILE,
            f"{damage}; without the provenance ledger vetted and quarantined documents cannot be told apart, "
            "so the store refuses to answer",
            f"run `ragtrust store repair --store {root}` to re-create it with every document unvetted",
        )


def _damaged(root: Path, file: Path, detail: str) -> StoreDamagedError:
    name = file.relative_to(root).as_posix() if file.is_relative_to(root) else str(file)
    return StoreDamagedError(name, detail, f"run `ragtrust store check --store {root}`")


def _read_jsonl_documents(root: Path, file: Path) -> list[Document]:
    try:
        lines = file.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        raise _damaged(root, file, "missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _damaged(root, file, f"unreadable ({exc})") from exc
    docs: list[Document] = []
    for number, line in enumerate(lines, start=1):
        if not line:
            continue
        try:
            docs.append(Document.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError) as exc:
            raise _damaged(root, file, f"line {number}: {exc} (truncated or edited?)") from exc
    return docs


def _read_segment_files(root: Path, name: str) -> tuple[list[Document], npt.NDArray[np.float32], list[Document]]:
    """Parse one segment folder; :class:`StoreDamagedError` names the file that does not parse."""
    folder = root / "segments" / name
    chunks = _read_jsonl_documents(root, folder / "chunks.jsonl")
    parents = _read_jsonl_documents(root, folder / "parents.jsonl")
    try:
        vectors = np.load(folder / "vectors.npy")
    except FileNotFoundError:
        raise _damaged(root, folder / "vectors.npy", "missing") from None
    except (OSError, ValueError, EOFError) as exc:
        raise _damaged(root, folder / "vectors.npy", f"unreadable ({exc})") from exc
    if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
        detail = f"{vectors.shape[0] if vectors.ndim else 0} vectors for {len(chunks)} chunks in chunks.jsonl"
        raise _damaged(root, folder / "vectors.npy", detail)
    return chunks, vectors, parents


def _read_manifest_file(root: Path, generation: str) -> dict[str, Any]:
    file = root / "generations" / f"{generation}.json"
    try:
        manifest: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _damaged(root, file, f"missing (named by {CURRENT})") from None
    except (OSError, ValueError) as exc:
        raise _damaged(root, file, f"unreadable ({exc})") from exc
    if manifest.get("format") != FORMAT:
        raise InputError(f"store {root}: unknown format {manifest.get('format')!r}, expected {FORMAT}")
    return manifest


def _missing_message(root: Path) -> str:
    return f"store {root} does not exist or is empty: run `ragtrust ingest PATHS --store {root}`"


class Store:
    """A persistent, incrementally updated, atomically written document store.

    Open it with :meth:`open`; add documents with :meth:`add`; query it through
    :meth:`retriever`. An object reads one generation (a consistent snapshot) until
    :meth:`refresh` or its own write; long-running readers call :meth:`refresh` to see
    what other processes published.
    """

    def __init__(self, root: Path, embedder: Embedder, settings: Settings) -> None:
        self.root = root
        self.embedder = embedder
        self.settings = settings
        self._snapshot: _Snapshot | None = None
        self._ledger: Ledger | None = None
        #: parsed segments by name; a published segment never changes, so a reload after
        #: a write (or refresh) parses only the segments it has not seen
        self._segments: dict[str, tuple[list[Document], npt.NDArray[np.float32], list[Document]]] = {}

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        embedder: Embedder,
        *,
        create: bool = False,
        settings: Settings | None = None,
    ) -> Store:
        """Open a store folder.

        Args:
            path: the store folder.
            embedder: the embedding model (must be the one the store was built with).
            create: create an empty store when there is none.
            settings: chunking and retrieval settings (defaults when ``None``).

        Raises:
            InputError: no store at ``path`` and ``create`` is false; ``path`` is a file.
            ConfigError: the store was built with another embedder.
            StoreDamagedError: the manifest or the provenance ledger is missing or
                unreadable (the store refuses to answer until ``ragtrust store repair``).
        """
        root = Path(path).expanduser()
        if root.exists() and not root.is_dir():
            raise InputError(f"store path {root} is a file; expected a folder")
        if not store_exists(root) and not create:
            raise InputError(_missing_message(root))
        store = cls(root, embedder, settings or Settings())
        if store_exists(root):
            manifest = store._read_manifest(store._current())
            store._check_embedder(manifest)
            _check_ledger_file(root)
        else:
            root.mkdir(parents=True, exist_ok=True)
        return store

    def _current(self) -> str | None:
        try:
            name = (self.root / CURRENT).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return name or None

    def _read_manifest(self, generation: str | None) -> dict[str, Any]:
        if generation is None:
            return _empty_manifest(self.embedder, self.settings)
        return _read_manifest_file(self.root, generation)

    def _check_embedder(self, manifest: dict[str, Any]) -> None:
        from ragtrust.retrieval.dense import check_embedder

        info = manifest["embedder"]
        check_embedder(info["model_id"], info["dim"], self.embedder, f"store {self.root}")

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
            _check_ledger_file(self.root)
            self._ledger = Ledger(self.root / LEDGER_FILE)
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

    # -- reading -------------------------------------------------------------------------
    def _load(self) -> _Snapshot:
        if self._snapshot is not None:  # pinned until refresh() (or this object's own write)
            return self._snapshot
        generation = self._current()
        manifest = self._read_manifest(generation)
        deleted = set(manifest["deleted"])
        chunks: list[Document] = []
        segment_of: list[str] = []
        vectors: list[npt.NDArray[np.float32]] = []
        parents: dict[str, Document] = {}
        for name in manifest["segments"]:
            if name not in self._segments:
                self._segments[name] = self._read_segment(name)
            seg_chunks, seg_vectors, seg_parents = self._segments[name]
            keep = [i for i, c in enumerate(seg_chunks) if f"{name}/{c.id}" not in deleted]
            chunks.extend(seg_chunks[i] for i in keep)
            segment_of.extend([name] * len(keep))
            vectors.append(seg_vectors[keep])
            for p in seg_parents:
                if p.id in manifest["parents"] and manifest["parents"][p.id]["hash"] == p.content_hash:
                    parents[p.id] = p
        for name in set(self._segments) - set(manifest["segments"]):
            del self._segments[name]
        dim = int(manifest["embedder"]["dim"])
        matrix = np.concatenate(vectors) if vectors else np.zeros((0, dim), dtype=np.float32)
        snap = _Snapshot(generation or "", manifest, chunks, matrix.astype(np.float32, copy=False), parents)
        snap.segment_of = segment_of
        snap.rows = {c.id: i for i, c in enumerate(chunks)}
        self._snapshot = snap
        return snap

    def _read_segment(self, name: str) -> tuple[list[Document], npt.NDArray[np.float32], list[Document]]:
        return _read_segment_files(self.root, name)

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
        raise InputError(f"document {doc_id!r} is not in store {self.root}")

    def retriever(self, mode: str = "dense", top_k: int = 5) -> Retriever:
        """Build a retriever over the current generation.

        Args:
            mode: ``dense`` (FAISS cosine), ``bm25`` or ``hybrid`` (RRF, dense cosine scores).
            top_k: default number of results.

        Raises:
            ConfigError: an unknown mode.
        """
        from ragtrust.retrieval.bm25 import BM25Retriever
        from ragtrust.retrieval.dense import DenseIndex, DenseRetriever
        from ragtrust.retrieval.hybrid import HybridRetriever

        if mode not in ("dense", "bm25", "hybrid"):
            raise ConfigError(f"unknown retrieval mode {mode!r}; expected dense, bm25 or hybrid")
        snap = self._load()
        if "dense" not in snap.retrievers:
            snap.retrievers["dense"] = DenseIndex(list(snap.chunks), snap.vectors, self.embedder)
        if mode != "dense" and "bm25" not in snap.retrievers:
            snap.retrievers["bm25"] = BM25Retriever(list(snap.chunks))
        dense = DenseRetriever(index=snap.retrievers["dense"], default_top_k=top_k)
        if mode == "dense":
            return dense
        lexical: BM25Retriever = copy.copy(snap.retrievers["bm25"])  # shares the built index
        lexical.default_top_k = top_k
        if mode == "bm25":
            return lexical
        return HybridRetriever(dense=dense, bm25=lexical, rrf_k=self.settings.retrieval.rrf_k, default_top_k=top_k)

    # -- writing -------------------------------------------------------------------------
    def add(
        self,
        documents: Sequence[Document],
        *,
        tier: str | None = None,
        source: str = "",
        progress: Progress | None = None,
    ) -> IngestReport:
        """Add or update parent documents; unchanged ones are left as they are.

        Args:
            documents: parent documents (e.g. from :func:`~ragtrust.ingest.loaders.load_paths`).
            tier: trust tier recorded in the ledger for every given document
                (``vetted`` / ``unvetted`` / ``quarantined``; ``None`` keeps the current one).
            source: provenance source for all documents (default: each one's ``source``).
            progress: ``progress(stage, done, total)`` callback.

        Raises:
            InputError: duplicate ids in the batch, an unknown tier, or a chunk-style id.

        The write is atomic: on any exception the store stays at its previous generation.
        """
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
        with _writer_lock(self.root):
            self._snapshot = None
            snap = self._load()
            _ = self.ledger  # checked (or created, for a new store) before anything is published
            manifest = snap.manifest
            known: dict[str, Any] = manifest["parents"]
            new = [d for d in docs if d.id not in known]
            changed = [d for d in docs if d.id in known and known[d.id]["hash"] != d.content_hash]
            unchanged = len(docs) - len(new) - len(changed)
            report_chunks = 0
            generation = snap.generation
            if new or changed:
                stale = _stale(snap, {d.id for d in changed})
                chunks = self._chunk(new + changed, progress)
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
            self._ledger_record(docs, source, tier)
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
        )

    def _ledger_record(self, docs: Sequence[Document], source: str, tier: str | None) -> None:
        if docs:
            self.ledger.record_many(docs, source, tier)

    def delete(self, doc_ids: Sequence[str]) -> int:
        """Delete parent documents (all their chunks); returns how many were deleted.

        Raises:
            InputError: an id that is not a document of the store (nothing is deleted).
        """
        wanted = list(dict.fromkeys(doc_ids))
        if not wanted:
            return 0
        with _writer_lock(self.root):
            self._snapshot = None
            snap = self._load()
            _ = self.ledger  # a damaged ledger refuses the delete before anything is published
            known = snap.manifest["parents"]
            unknown = [i for i in wanted if i not in known]
            if unknown:
                hint = " (a chunk id: delete its document instead)" if "#" in unknown[0] else ""
                raise InputError(f"not in store {self.root}: {', '.join(unknown[:5])}{hint}")
            targets = set(wanted)
            stale = _stale(snap, targets)
            self._publish(
                snap.manifest,
                segments=list(snap.manifest["segments"]),
                deleted=sorted(set(snap.manifest["deleted"]) | stale),
                parents={k: v for k, v in known.items() if k not in targets},
            )
            for doc_id in wanted:
                self.ledger.delete(doc_id)
            self._collect_garbage()
        return len(wanted)

    def _chunk(self, docs: Sequence[Document], progress: Progress | None) -> list[Document]:
        tokenizer = getattr(self.embedder, "tokenizer", None)
        cfg = self.settings.chunking
        chunks: list[Document] = []
        for i, doc in enumerate(docs, start=1):
            chunks.extend(chunk_document(doc, cfg.chunk_tokens, cfg.overlap_tokens, tokenizer))
            if progress is not None:
                progress("chunk", i, len(docs))
        return chunks

    def _embed(self, chunks: Sequence[Document], progress: Progress | None) -> npt.NDArray[np.float32]:
        from ragtrust.retrieval.dense import embed_texts

        def report(done: int, total: int) -> None:
            if progress is not None:
                progress("embed", done, total)

        return embed_texts(self.embedder, [c.text for c in chunks], batch_size=64, progress=report)

    def _write_segment(
        self, chunks: Sequence[Document], vectors: npt.NDArray[np.float32], parents: Sequence[Document]
    ) -> str:
        from ragtrust.retrieval.dense import _npy_bytes

        name = f"seg-{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"
        segments = self.root / "segments"
        tmp = segments / f".tmp-{name}"
        tmp.mkdir(parents=True)
        atomic_write_text(tmp / "chunks.jsonl", "".join(c.to_json() + "\n" for c in chunks))
        atomic_write_text(tmp / "parents.jsonl", "".join(p.to_json() + "\n" for p in parents))
        atomic_write_bytes(tmp / "vectors.npy", _npy_bytes(np.ascontiguousarray(vectors, dtype=np.float32)))
        os.replace(tmp, segments / name)
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
        total_rows = sum(self._segment_rows(s) for s in segments)
        if segments and total_rows and len(deleted) / total_rows > COMPACT_RATIO:
            manifest = self._compact(manifest)
        gens = self.root / "generations"
        gens.mkdir(parents=True, exist_ok=True)
        number = max((int(p.stem) for p in gens.glob("*.json") if p.stem.isdigit()), default=0) + 1
        name = f"{number:06d}"
        atomic_write_text(gens / f"{name}.json", json.dumps(manifest, ensure_ascii=False))
        atomic_write_text(self.root / CURRENT, name + "\n")
        self._snapshot = None
        return name

    def _segment_rows(self, name: str) -> int:
        header = np.load(self.root / "segments" / name / "vectors.npy", mmap_mode="r")
        return int(header.shape[0])

    def _compact(self, manifest: dict[str, Any]) -> dict[str, Any]:
        deleted = set(manifest["deleted"])
        chunks: list[Document] = []
        vectors: list[npt.NDArray[np.float32]] = []
        parents: list[Document] = []
        for name in manifest["segments"]:
            seg_chunks, seg_vectors, seg_parents = self._read_segment(name)
            keep = [i for i, c in enumerate(seg_chunks) if f"{name}/{c.id}" not in deleted]
            chunks.extend(seg_chunks[i] for i in keep)
            vectors.append(seg_vectors[keep])
            parents.extend(p for p in seg_parents if manifest["parents"].get(p.id, {}).get("hash") == p.content_hash)
        for name in set(self._segments) - set(manifest["segments"]):
            del self._segments[name]
        dim = int(manifest["embedder"]["dim"])
        matrix = np.concatenate(vectors) if vectors else np.zeros((0, dim), dtype=np.float32)
        unique_parents = list({p.id: p for p in parents}.values())
        segment = self._write_segment(chunks, matrix, unique_parents)
        return {**manifest, "segments": [segment], "deleted": []}

    def _collect_garbage(self) -> None:
        """Remove generations beyond the newest few and segments none of them uses."""
        gens = self.root / "generations"
        if not gens.is_dir():
            return
        files = sorted((p for p in gens.glob("*.json") if p.stem.isdigit()), key=lambda p: int(p.stem))
        keep = files[-KEEP_GENERATIONS:]
        current = self._current()
        for p in files:
            if p not in keep and p.stem != current:
                p.unlink(missing_ok=True)
        used: set[str] = set()
        for p in gens.glob("*.json"):
            try:
                used.update(json.loads(p.read_text(encoding="utf-8"))["segments"])
            except (OSError, ValueError, KeyError):
                return  # unsure what is used: keep everything
        segments = self.root / "segments"
        if segments.is_dir():
            for seg in segments.iterdir():
                if seg.name not in used:
                    shutil.rmtree(seg, ignore_errors=True)
        for tmp in gens.glob(".*.tmp"):
            tmp.unlink(missing_ok=True)


# -- check and repair ----------------------------------------------------------------------


@dataclass(frozen=True)
class StoreCheck:
    """What :func:`check_store` found.

    Attributes:
        generation: the live generation ("" when ``CURRENT`` is unreadable).
        documents / chunks: live parent documents and chunks of that generation.
        problems: one line per damaged file (``<file>: <what is wrong>``); empty when sound.
    """

    root: str
    generation: str
    documents: int
    chunks: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when nothing is damaged."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "store": self.root,
            "ok": self.ok,
            "generation": self.generation,
            "documents": self.documents,
            "chunks": self.chunks,
            "problems": list(self.problems),
        }


@dataclass(frozen=True)
class StoreRepair:
    """What :func:`repair_store` did.

    Attributes:
        recreated: the ledger was missing or unreadable and was re-created.
        moved_aside: files of the unreadable ledger, renamed (kept for forensics).
        recorded: ids now recorded *unvetted* (every document when ``recreated``, else the
            documents the ledger did not list).
        documents: live parent documents of the store.
    """

    root: str
    recreated: bool
    moved_aside: tuple[str, ...]
    recorded: tuple[str, ...]
    documents: int

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "store": self.root,
            "recreated": self.recreated,
            "moved_aside": list(self.moved_aside),
            "recorded_unvetted": list(self.recorded),
            "documents": self.documents,
        }


def _live_generation(root: Path) -> tuple[str, dict[str, Any], list[Document], dict[str, Document]]:
    """Read the live generation without an embedder: (name, manifest, live chunks, live parents)."""
    try:
        generation = (root / CURRENT).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise _damaged(root, root / CURRENT, f"unreadable ({exc})") from exc
    if not generation:
        raise _damaged(root, root / CURRENT, "empty")
    manifest = _read_manifest_file(root, generation)
    deleted = set(manifest["deleted"])
    chunks: list[Document] = []
    parents: dict[str, Document] = {}
    for name in manifest["segments"]:
        seg_chunks, _, seg_parents = _read_segment_files(root, name)
        chunks.extend(c for c in seg_chunks if f"{name}/{c.id}" not in deleted)
        for p in seg_parents:
            if manifest["parents"].get(p.id, {}).get("hash") == p.content_hash:
                parents[p.id] = p
    return generation, manifest, chunks, parents


def _ledger_ids(root: Path) -> set[str]:
    """Ids of the live documents the ledger lists (opened read-only: a check writes nothing)."""
    import sqlite3

    uri = (root / LEDGER_FILE).resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=30.0)
        try:
            rows = conn.execute("SELECT doc_id FROM documents WHERE deleted_at IS NULL").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreDamagedError(LEDGER_FILE, f"unreadable ({exc})") from exc
    return {r[0] for r in rows}


def check_store(path: str | Path) -> StoreCheck:
    """Verify a store without loading a model: manifest, segments, ledger.

    Checks that ``CURRENT`` names a readable manifest, that every segment's
    ``chunks.jsonl``, ``parents.jsonl`` and ``vectors.npy`` parse and agree, that every
    document of the manifest has its text stored, and that the provenance ledger opens
    and lists every live document.

    Raises:
        InputError: there is no store at ``path``.

    Example:
        >>> import tempfile
        >>> from ragtrust.testing import HashingEmbedder
        >>> root = tempfile.mkdtemp()
        >>> _ = Store.open(root, HashingEmbedder(), create=True).add([Document(id="kb", text="Use TLS.")])
        >>> check_store(root).ok
        True
    """
    root = Path(path).expanduser()
    if not store_exists(root):
        raise InputError(_missing_message(root))
    problems: list[str] = []
    generation, documents, chunk_count = "", 0, 0
    try:
        generation, manifest, chunks, parents = _live_generation(root)
    except StoreDamagedError as exc:
        problems.append(f"{exc.file}: {exc.detail}")
        manifest, chunks, parents = {"parents": {}}, [], {}
    else:
        documents, chunk_count = len(manifest["parents"]), len(chunks)
        unstored = sorted(set(manifest["parents"]) - set(parents))
        if unstored:
            problems.append(
                f"generations/{generation}.json: {len(unstored)} document(s) without stored text: " + _some(unstored)
            )
    damage = _ledger_damage(root)
    if damage is not None:
        problems.append(f"{LEDGER_FILE}: {damage}")
    else:
        try:
            listed = _ledger_ids(root)
        except StoreDamagedError as exc:
            problems.append(f"{exc.file}: {exc.detail}")
        else:
            unlisted = sorted(set(manifest["parents"]) - listed)
            if unlisted:
                problems.append(f"{LEDGER_FILE}: does not list {len(unlisted)} document(s): " + _some(unlisted))
    return StoreCheck(str(root), generation, documents, chunk_count, tuple(problems))


def _some(ids: Sequence[str], n: int = 5) -> str:
    return ", ".join(ids[:n]) + (f" (and {len(ids) - n} more)" if len(ids) > n else "")


def repair_store(path: str | Path) -> StoreRepair:
    """Re-create a missing or unreadable ledger, every document recorded *unvetted*.

    Vetting and quarantine cannot be recovered: every document of the live generation is
    recorded with tier ``unvetted`` and the reason :data:`REPAIR_REASON`; vet or quarantine
    them again. An unreadable ledger file (and its ``-wal`` / ``-shm``) is renamed, not
    deleted. A sound ledger is kept; documents it does not list are recorded unvetted.

    Raises:
        InputError: there is no store at ``path``.
        StoreDamagedError: a manifest or segment is damaged (only the ledger is repaired).
    """
    root = Path(path).expanduser()
    if not store_exists(root):
        raise InputError(_missing_message(root))
    with _writer_lock(root):
        _, manifest, _, parents = _live_generation(root)
        damage = _ledger_damage(root)
        if damage is None:
            try:
                listed = _ledger_ids(root)
            except StoreDamagedError:
                damage = "unreadable"
        moved: list[str] = []
        if damage is not None:
            stamp = time.strftime("%Y%m%d%H%M%S")
            for suffix in ("", "-wal", "-shm"):  # a stale -wal must not be replayed into the new ledger
                file = root / f"{LEDGER_FILE}{suffix}"
                if file.exists():
                    target = file.with_name(f"{file.name}.damaged-{stamp}")
                    os.replace(file, target)
                    moved.append(target.name)
            listed = set()
        wanted = [parents[i] for i in sorted(parents) if i not in listed]
        by_source: dict[str, list[Document]] = {}
        for doc in wanted:
            by_source.setdefault(str(manifest["parents"][doc.id].get("source") or doc.id), []).append(doc)
        with Ledger(root / LEDGER_FILE) as ledger:
            for source, docs in by_source.items():
                ledger.record_many(docs, source, "unvetted", reason=REPAIR_REASON)
    return StoreRepair(str(root), damage is not None, tuple(moved), tuple(d.id for d in wanted), len(parents))


__all__ = [
    "REPAIR_REASON",
    "IngestReport",
    "Store",
    "StoreCheck",
    "StoreRepair",
    "check_store",
    "open_ledger",
    "repair_store",
    "store_exists",
]
