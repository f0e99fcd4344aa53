"""A store's last scan, kept so the next scan reads again only what changed (issue 20).

After an ingest adds or edits a few files, a scan of the whole store would run every signal
on every chunk again. :class:`ScanState` keeps each row of the last scan in the store
(:data:`SCAN_STATE_FILE`) under a *key*: a hash of everything the row was computed from
(:func:`row_keys`):

- the scan's configuration (:func:`config_key`: the settings, the models' identities and
  the manifests that hold their calibrated thresholds, and the source code of the
  ``ragtrust`` package itself), the suspicious threshold, the fusion weights and the
  witness parameters;
- the document: id, text, url, source and metadata, and what the provenance ledger records
  for its parent (tier, content and vetted hashes, versions, when they changed);
- its witnesses: which corpus neighbours, at what cosine, with their full documents and
  ledger records.

A document whose key is the one stored keeps its row; every other document is scanned:
new and edited documents, and the documents that gain, lose or read an edited witness
(their neighbours). A change anywhere outside the documents (a setting, a model file, a
recalibrated threshold, an upgrade of ragtrust) changes every key, so the whole store is
scanned again. Like the model caches, the file is best effort: one that cannot be read,
or a row that no longer parses, is scanned again, never trusted; a ledger that cannot be
read gives no key, so nothing is reused.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from ragtrust.documents import Document
    >>> from ragtrust.scan.report import ScanRow
    >>> docs = [Document(id="a", text="Use TLS.")]
    >>> keys = row_keys(docs, [[]], config="cfg", ledger=None, scan={"threshold": 0.7})
    >>> state = ScanState(Path(tempfile.mkdtemp()) / SCAN_STATE_FILE)
    >>> state.save([ScanRow(id="a", url=None, source=None, poison_probability=0.0, suspicious=False)], keys)
    True
    >>> state.load(docs, keys)[0].poison_probability
    0.0
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtrust.documents import Document
from ragtrust.errors import InputError
from ragtrust.identity import complete, model_identity, source_digest
from ragtrust.identity import digest as _digest
from ragtrust.models.cache import BlobCache
from ragtrust.scan.report import ScanRow
from ragtrust.screening.conflicts import LEDGER_FAILED

#: the file in a store that keeps the last scan's rows
SCAN_STATE_FILE = "scan_state.sqlite"
#: the rows' format; a new one makes every stored row miss
STATE_VERSION = 1
_TABLE = "scan_rows"


def config_key(settings: Any, models: Mapping[str, Any]) -> str:
    """The scan's configuration as one hash: the settings, the models and signals, and the code.

    Args:
        settings: the :class:`~ragtrust.config.Settings` the scan was built from (or any
            object with ``model_dump``; ``None`` for none).
        models: the model and signal objects by role (``nli``, ``embedder``, ``signal.<name>``),
            loaded (``warm_up``), so their fingerprints and calibrations are known.
    """
    dumped = settings.model_dump(mode="json") if hasattr(settings, "model_dump") else settings
    identities = {name: model_identity(m) for name, m in sorted(models.items())}
    if not complete(identities):  # a parameter that cannot be named: this scan's rows match no other scan
        return f"unnamed:{uuid.uuid4().hex}"
    return _digest({"state": STATE_VERSION, "settings": dumped, "models": identities, "code": source_digest()})


def _document_part(doc: Document) -> str:
    return _digest(doc.to_dict())


def ledger_ids(doc: Document) -> list[str]:
    """The ids the signals may read ``doc``'s ledger record by: its ``parent_id``, its id less ``#<n>``, its id."""
    ids = []
    parent = doc.metadata.get("parent_id")
    if isinstance(parent, str) and parent:
        ids.append(parent)
    head, sep, tail = doc.id.rpartition("#")
    if sep and tail.isdigit():
        ids.append(head)
    ids.append(doc.id)
    return list(dict.fromkeys(ids))


def row_keys(
    docs: Sequence[Document],
    near: Sequence[Sequence[tuple[int, float]]],
    *,
    config: str,
    ledger: Any,
    scan: Mapping[str, Any],
) -> list[str | None]:
    """Per document, the hash of everything its scan row is computed from (``None``: never reuse).

    Args:
        docs: the corpus scanned.
        near: per document, its witnesses as ``(row, cosine)`` (:func:`~ragtrust.screening.witness.neighbours`).
        config: :func:`config_key` (or any string naming the scan's configuration).
        ledger: the store's provenance ledger (``None``: no ledger).
        scan: the scan's own parameters (threshold, weights, witnesses, min_similarity).
    """
    records: dict[str, Any] = {}
    failed = False

    def lookup(key: str) -> Any:
        nonlocal failed
        if key not in records:
            try:
                found = ledger.get(key)
                records[key] = None if found is None else found.to_dict()
            except Exception:  # noqa: BLE001 - an unreadable ledger: nothing is reused
                failed = True
                records[key] = None
        return records[key]

    def record(doc: Document) -> Any:
        """The ledger's records of every id a signal may look the document up by."""
        if ledger is None:
            return None
        return {key: lookup(key) for key in ledger_ids(doc)}

    parts = [_document_part(d) for d in docs]
    base = _digest({"state": STATE_VERSION, "config": config, "scan": dict(scan)})
    keys: list[str | None] = []
    for i, doc in enumerate(docs):
        payload = {
            "base": base,
            "doc": parts[i],
            "ledger": record(doc),
            "witnesses": [(docs[j].id, repr(float(sim)), parts[j], record(docs[j])) for j, sim in near[i]],
        }
        keys.append(_digest(payload))
    return [None] * len(docs) if failed else keys


def saveable(row: ScanRow) -> bool:
    """Whether a row may be kept for the next scan: no signal failed on it and the ledger could be read.

    A failure (a signal that raised, a ledger lookup that failed) is recorded in the row as a
    skipped signal or a note; kept, it would outlive its cause. Such a row is scanned again.
    """
    for result in row.signals:
        reason = result.skip_reason or ""
        if result.skipped and (reason.startswith("error:") or "lookup failed" in reason):
            return False
        notes = result.details.get("notes") if isinstance(result.details, Mapping) else None
        if isinstance(notes, list) and any(isinstance(n, str) and n.startswith(LEDGER_FAILED) for n in notes):
            return False
    return True


class ScanState:
    """The rows of a store's last scan, by document id, each with its key (:func:`row_keys`).

    Best effort, like the model caches: a file that cannot be opened or read reuses nothing;
    a store folder this process cannot write (a read-only store), or ``read_only``, is read
    and never written. ``reuse=False`` loads nothing (every document is scanned again) and
    still saves what the scan found.
    """

    def __init__(self, path: str | Path, read_only: bool = False, *, reuse: bool = True) -> None:
        self.path = Path(path)
        self.reuse = reuse
        self._rows = BlobCache(self.path, _TABLE, read_only)

    @property
    def writable(self) -> bool:
        """Whether :meth:`save` writes the file."""
        return self._rows.persists

    def load(self, docs: Sequence[Document], keys: Sequence[str | None]) -> list[ScanRow | None]:
        """Per document, its stored row when the stored key is ``keys[i]``, else ``None``."""
        if len(keys) != len(docs):
            raise InputError(f"scan state: {len(keys)} keys for {len(docs)} documents")
        wanted = {d.id: k for d, k in zip(docs, keys, strict=True) if k is not None and self.reuse}
        stored = dict(zip(wanted, self._rows.get_blobs(list(wanted)), strict=True))
        return [_row(stored.get(doc.id), wanted.get(doc.id), doc.id) for doc in docs]

    def save(self, rows: Sequence[ScanRow], keys: Sequence[str | None], keep: Iterable[str] | None = None) -> bool:
        """Keep ``rows`` (those with a key) and forget every other document's row; whether it was written.

        ``keep``: ids whose stored rows stay as they are (the rows reused by this scan);
        ``None``: only ``rows``' ids stay.
        """
        if len(keys) != len(rows):
            raise InputError(f"scan state: {len(keys)} keys for {len(rows)} rows")
        items = [
            (r.id, json.dumps({"key": k, "row": r.to_dict()}, ensure_ascii=False).encode("utf-8", "surrogatepass"))
            for r, k in zip(rows, keys, strict=True)
            if k is not None
        ]
        # a row without a key is forgotten, even when ``keep`` names it
        unkeyed = {r.id for r, k in zip(rows, keys, strict=True) if k is None}
        return self._rows.replace_all(items, keep=set(keep or ()) - unkeyed)

    def close(self) -> None:
        """Close the file (later loads reuse nothing, saves write nothing)."""
        self._rows.close()


def _row(blob: bytes | None, key: str | None, doc_id: str) -> ScanRow | None:
    """The stored row when it parses, carries ``key`` and is ``doc_id``'s; else ``None`` (scan again)."""
    if blob is None or key is None:
        return None
    try:
        data = json.loads(bytes(blob).decode("utf-8", "surrogatepass"))
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        row = ScanRow.from_dict(data["row"])
    except (ValueError, KeyError, TypeError, InputError):
        return None
    return row if row.id == doc_id else None


__all__ = [
    "SCAN_STATE_FILE",
    "STATE_VERSION",
    "ScanState",
    "config_key",
    "ledger_ids",
    "model_identity",
    "row_keys",
    "saveable",
    "source_digest",
]
