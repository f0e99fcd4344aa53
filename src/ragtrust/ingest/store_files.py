"""The store's folder on disk: its layout, the readers that name a damaged file, the writers.

A store folder (see :mod:`ragtrust.ingest.store`) holds ``CURRENT``, the manifests under
``generations/``, immutable segments under ``segments/`` and the provenance ledger. Every
reader here raises :class:`~ragtrust.errors.StoreDamagedError` naming the file that does not
parse; every writer writes under a new name first, so a crash never leaves a half-written
file where a reader looks. :func:`check_ledger_file` makes a store without a readable ledger
fail closed. A folder this process cannot write (:func:`store_writable`) is opened read-only:
queries work, writes raise :class:`~ragtrust.errors.StoreReadOnlyError`. Messages name a store
by its folder's name (:func:`store_name`) and its files relative to it, never by absolute path.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> store_exists(root)
    False
    >>> print(ledger_damage(root))
    missing
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrust.config import Settings
from ragtrust.documents import Document
from ragtrust.errors import ConfigError, InputError, StoreDamagedError, StoreReadOnlyError, redact_paths
from ragtrust.ingest.ledger import Ledger
from ragtrust.io import atomic_write_bytes, atomic_write_text
from ragtrust.models.base import Embedder

FORMAT = "ragtrust-store-1"
CURRENT = "CURRENT"
LEDGER_FILE = "ledger.sqlite"
#: the first 16 bytes of every SQLite 3 database file
SQLITE_MAGIC = b"SQLite format 3\x00"
#: generations kept after a write (readers that opened an older one keep working)
KEEP_GENERATIONS = 3

#: one parsed segment: its chunks, their vectors (row ``i`` for chunk ``i``), its parent documents
Segment = tuple[list[Document], npt.NDArray[np.float32], list[Document]]


# -- the layout ------------------------------------------------------------------------------
def store_exists(path: str | Path) -> bool:
    """Tell whether ``path`` holds a store: a ``CURRENT`` pointer, or the files of a store that lost it.

    A store whose ``CURRENT`` is missing still exists (damaged: :func:`current_generation`
    raises), so an ingest never takes it for a new, empty store and publishes a generation
    without its documents. A folder whose first ingest failed before publishing (an empty
    ledger, perhaps an orphaned segment) is still new.
    """
    root = Path(path)
    return os.path.lexists(root / CURRENT) or _has_store_files(root)


def holds_store(folder: str | Path) -> bool:
    """Tell whether a folder met while reading documents holds a store (its ledger, or ``CURRENT`` and segments).

    Stricter than :func:`store_exists`: a corpus may have a ``segments/`` folder of its own.
    """
    root = Path(folder)
    return (root / LEDGER_FILE).is_file() or (os.path.lexists(root / CURRENT) and (root / "segments").is_dir())


def is_store_entry(name: str) -> bool:
    """Tell whether an entry of a folder that :func:`holds_store`, by name, is one of the store's own.

    ``CURRENT``, ``generations/``, ``segments/`` and the SQLite files (the ledger, the
    caches, their ``-wal`` / ``-shm`` files and the copies ``store repair`` keeps); anything
    else is a file kept beside the store.

    Example:
        >>> [is_store_entry(n) for n in ("segments", "ledger.sqlite-wal", "notes.md")]
        [True, True, False]
    """
    return name in (CURRENT, "generations", "segments") or ".sqlite" in name


def _has_store_files(root: Path) -> bool:
    """A manifest, a ledger that records documents (or is not one), or segments without a ledger."""
    gens = root / "generations"
    if gens.is_dir() and any(p.stem.isdigit() for p in gens.glob("*.json")):
        return True
    if (root / LEDGER_FILE).exists():
        return _ledger_records_documents(root)
    segments = root / "segments"
    return segments.is_dir() and any(not p.name.startswith(".") for p in segments.iterdir())


def _ledger_records_documents(root: Path) -> bool:
    """True unless the ledger is a readable SQLite file that records no document (a failed first ingest)."""
    import sqlite3

    from ragtrust.ingest.sqlite_ro import connect_read_only

    if ledger_damage(root) is not None:
        return True
    try:
        conn = connect_read_only(root / LEDGER_FILE)
        try:
            return conn.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is not None
        finally:
            conn.close()
    except (sqlite3.Error, StoreReadOnlyError):
        return True


def current_generation(root: Path) -> str | None:
    """The live generation that ``CURRENT`` names; ``None`` for a new store (nothing published yet).

    Raises:
        StoreDamagedError: the folder holds a store (:func:`store_exists`) but ``CURRENT`` is
            missing, empty or unreadable: the store never reads as empty, so an ingest cannot
            replace its documents with only the new ones and a query cannot answer from nothing.
    """
    file = root / CURRENT
    try:
        name = file.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        if not store_exists(root):
            return None
        raise _current_damaged(root, "missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _current_damaged(root, f"unreadable ({_why(exc)})") from exc
    if not name:
        raise _current_damaged(root, "empty")
    return name


def _current_damaged(root: Path, detail: str) -> StoreDamagedError:
    return StoreDamagedError(
        CURRENT,
        f"{detail} (it names the live generation: without it the store refuses to read or ingest)",
        f"{current_fix(root)}, or run `ragtrust store check` on the store ({store_name(root)})",
    )


def current_fix(root: Path) -> str:
    """How to restore a lost ``CURRENT``: name the newest manifest, the likely live generation."""
    gens = root / "generations"
    numbers = [int(p.stem) for p in gens.glob("*.json") if p.stem.isdigit()] if gens.is_dir() else []
    if not numbers:
        return "no manifest is left under generations/: re-ingest the documents into a new store"
    return f"write the newest generation's name ({max(numbers):06d}) into {CURRENT} to restore the store"


def store_name(root: str | Path) -> str:
    """How messages name a store: its folder's name, never its absolute path.

    Example:
        >>> store_name("/srv/data/kb")
        'kb'
    """
    path = Path(root)
    return path.name or path.resolve().name or str(path)


def store_writable(root: Path) -> bool:
    """Tell whether this process may write the store folder and its ledger (read-only mount included)."""
    if not os.access(root, os.W_OK):
        return False
    ledger = root / LEDGER_FILE
    return not ledger.exists() or os.access(ledger, os.W_OK)


def read_only_error(root: Path, action: str) -> StoreReadOnlyError:
    """The error for a write (``action``: "cannot ingest"...) to a store opened read-only."""
    return StoreReadOnlyError(
        store_name(root), f"{action}: no write access to its folder or files (queries still work)"
    )


def missing_message(root: Path) -> str:
    """The message of an :class:`~ragtrust.errors.InputError` for a folder without a store."""
    return f"store {store_name(root)} does not exist or is empty: run `ragtrust ingest PATHS --store DIR` to build one"


def empty_manifest(embedder: Embedder, settings: Settings) -> dict[str, Any]:
    """The manifest of a store with nothing in it yet."""
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


def check_store_embedder(root: Path, info: Mapping[str, Any], embedder: Embedder, given: bool) -> None:
    """Raise :class:`ConfigError` when ``embedder`` is not the one the store was built with.

    ``given`` false: the embedder is the default one (``Store.open`` without an embedder),
    and the message says how to pass the store's own.
    """
    from ragtrust.retrieval.dense import check_embedder

    where = f"store {store_name(root)}"
    if not given and (info["model_id"], int(info["dim"])) != (embedder.model_id, int(embedder.dim)):
        raise ConfigError(
            f"{where} was built with embedder {info['model_id']!r} (dim {info['dim']}) but the default embedder "
            f"(models.embedder) is {embedder.model_id!r}: pass the store's embedder to Store.open or set it there"
        )
    check_embedder(info["model_id"], info["dim"], embedder, where)


@contextlib.contextmanager
def writer_lock(root: Path) -> Iterator[None]:
    """Hold the store's writer lock (``.lock``): one writer at a time."""
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


# -- the ledger file -------------------------------------------------------------------------
def open_ledger(path: str | Path, *, read_only: bool | None = None) -> Ledger:
    """Open the ledger of an existing store (no embedder needed: for vet / quarantine / ledger).

    Args:
        path: the store folder.
        read_only: open the ledger read-only (its writes raise
            :class:`~ragtrust.errors.StoreReadOnlyError`); ``None``: when the store cannot be written.

    Raises:
        InputError: when there is no store at ``path``.
        StoreDamagedError: the store's ledger is missing or not a SQLite database.
    """
    root = Path(path)
    if not store_exists(root):
        raise InputError(missing_message(root))
    check_ledger_file(root)
    if read_only is None:
        read_only = not store_writable(root)
    return Ledger(root / LEDGER_FILE, read_only=read_only)


def ledger_damage(root: Path) -> str | None:
    """What is wrong with the ledger file of the store at ``root`` (``None`` when it looks sound)."""
    try:
        with open(root / LEDGER_FILE, "rb") as handle:
            magic = handle.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"
    if magic != SQLITE_MAGIC:
        return "empty (0 bytes)" if not magic else "not a SQLite database (overwritten or truncated?)"
    return None


def check_ledger_file(root: Path) -> None:
    """Refuse a store that has a live generation but no readable ledger (fail closed).

    Creating a fresh ledger there would forget every vetting and quarantine: a quarantined
    document would be served as if nothing were known about it.
    """
    if not store_exists(root):
        return  # a new store: its ledger is created with its first generation
    damage = ledger_damage(root)
    if damage is not None:
        raise StoreDamagedError(
            LEDGER_FILE,
            f"{damage}; without the provenance ledger vetted and quarantined documents cannot be told apart, "
            "so the store refuses to answer",
            f"run `ragtrust store repair` on the store ({store_name(root)}) to re-create it with every document "
            "unvetted",
        )


# -- reading ---------------------------------------------------------------------------------
def damaged(root: Path, file: Path, detail: str) -> StoreDamagedError:
    """The error for a damaged ``file`` of the store at ``root``, pointing at ``ragtrust store check``."""
    name = file.relative_to(root).as_posix() if file.is_relative_to(root) else file.name
    return StoreDamagedError(name, detail, f"run `ragtrust store check` on the store ({store_name(root)})")


def _why(exc: BaseException) -> str:
    """What went wrong, without the absolute path an OSError's text carries."""
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return redact_paths(str(exc))


def _read_jsonl_documents(root: Path, file: Path) -> list[Document]:
    try:
        lines = file.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        raise damaged(root, file, "missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise damaged(root, file, f"unreadable ({_why(exc)})") from exc
    docs: list[Document] = []
    for number, line in enumerate(lines, start=1):
        if not line:
            continue
        try:
            docs.append(Document.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError) as exc:
            raise damaged(root, file, f"line {number}: {exc} (truncated or edited?)") from exc
    return docs


def read_segment_files(root: Path, name: str) -> Segment:
    """Parse one segment folder; :class:`StoreDamagedError` names the file that does not parse."""
    folder = root / "segments" / name
    chunks = _read_jsonl_documents(root, folder / "chunks.jsonl")
    parents = _read_jsonl_documents(root, folder / "parents.jsonl")
    try:
        vectors = np.load(folder / "vectors.npy")
    except FileNotFoundError:
        raise damaged(root, folder / "vectors.npy", "missing") from None
    except (OSError, ValueError, EOFError) as exc:
        raise damaged(root, folder / "vectors.npy", f"unreadable ({_why(exc)})") from exc
    if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
        detail = f"{vectors.shape[0] if vectors.ndim else 0} vectors for {len(chunks)} chunks in chunks.jsonl"
        raise damaged(root, folder / "vectors.npy", detail)
    return chunks, vectors, parents


def read_manifest_file(root: Path, generation: str) -> dict[str, Any]:
    """Parse the manifest of ``generation``.

    Raises:
        StoreDamagedError: the manifest is missing or does not parse.
        InputError: the manifest is of another store format.
    """
    file = root / "generations" / f"{generation}.json"
    try:
        manifest: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise damaged(root, file, f"missing (named by {CURRENT})") from None
    except (OSError, ValueError) as exc:
        raise damaged(root, file, f"unreadable ({_why(exc)})") from exc
    if manifest.get("format") != FORMAT:
        raise InputError(f"store {store_name(root)}: unknown format {manifest.get('format')!r}, expected {FORMAT}")
    return manifest


def segment_rows(root: Path, name: str) -> int:
    """Rows (chunks) of a segment, read from the header of its vectors."""
    header = np.load(root / "segments" / name / "vectors.npy", mmap_mode="r")
    return int(header.shape[0])


# -- writing ---------------------------------------------------------------------------------
def write_segment_files(
    root: Path, chunks: Sequence[Document], vectors: npt.NDArray[np.float32], parents: Sequence[Document]
) -> str:
    """Write a new immutable segment (under a temporary name, then renamed); returns its name."""
    from ragtrust.retrieval.dense import _npy_bytes

    name = f"seg-{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"
    segments = root / "segments"
    tmp = segments / f".tmp-{name}"
    tmp.mkdir(parents=True)
    atomic_write_text(tmp / "chunks.jsonl", "".join(c.to_json() + "\n" for c in chunks))
    atomic_write_text(tmp / "parents.jsonl", "".join(p.to_json() + "\n" for p in parents))
    atomic_write_bytes(tmp / "vectors.npy", _npy_bytes(np.ascontiguousarray(vectors, dtype=np.float32)))
    os.replace(tmp, segments / name)
    return name


def write_generation(root: Path, manifest: Mapping[str, Any]) -> str:
    """Write ``manifest`` as the next generation and make it live (swap ``CURRENT``); returns its name."""
    gens = root / "generations"
    gens.mkdir(parents=True, exist_ok=True)
    number = max((int(p.stem) for p in gens.glob("*.json") if p.stem.isdigit()), default=0) + 1
    name = f"{number:06d}"
    atomic_write_text(gens / f"{name}.json", json.dumps(manifest, ensure_ascii=False))
    atomic_write_text(root / CURRENT, name + "\n")
    return name


def collect_garbage(root: Path, current: str | None) -> None:
    """Remove generations beyond the newest few (never ``current``) and segments none of them uses."""
    gens = root / "generations"
    if not gens.is_dir():
        return
    files = sorted((p for p in gens.glob("*.json") if p.stem.isdigit()), key=lambda p: int(p.stem))
    keep = files[-KEEP_GENERATIONS:]
    for p in files:
        if p not in keep and p.stem != current:
            p.unlink(missing_ok=True)
    used: set[str] = set()
    for p in gens.glob("*.json"):
        try:
            used.update(json.loads(p.read_text(encoding="utf-8"))["segments"])
        except (OSError, ValueError, KeyError):
            return  # unsure what is used: keep everything
    segments = root / "segments"
    if segments.is_dir():
        for seg in segments.iterdir():
            if seg.name not in used:
                shutil.rmtree(seg, ignore_errors=True)
    for tmp in gens.glob(".*.tmp"):
        tmp.unlink(missing_ok=True)


__all__ = [
    "CURRENT",
    "FORMAT",
    "KEEP_GENERATIONS",
    "LEDGER_FILE",
    "SQLITE_MAGIC",
    "Segment",
    "check_ledger_file",
    "check_store_embedder",
    "collect_garbage",
    "current_fix",
    "current_generation",
    "damaged",
    "empty_manifest",
    "holds_store",
    "is_store_entry",
    "ledger_damage",
    "missing_message",
    "open_ledger",
    "read_only_error",
    "read_manifest_file",
    "read_segment_files",
    "segment_rows",
    "store_exists",
    "store_name",
    "store_writable",
    "write_generation",
    "write_segment_files",
]
