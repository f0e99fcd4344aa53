"""Passages as JSON: EvidenT's ``{"collected_passages": [...]}`` (or a plain list) read into passages."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtrust.documents import Passage, RetrievedDoc
from ragtrust.errors import InputError
from ragtrust.evidence.align import resolve_source
from ragtrust.io import read_text_file


def to_passages(items: Sequence[Mapping[str, Any]], docs: Sequence[RetrievedDoc]) -> list[Passage]:
    """Passages of the contract's items; ids made unique, ``doc_id`` filled from a ``url`` naming one of ``docs``."""
    out: list[Passage] = []
    seen: set[str] = set()
    for i, item in enumerate(items, start=1):
        pid = str(item.get("passage_id") or f"p{i}")
        if pid in seen:
            pid = f"{pid}-{i}"
        seen.add(pid)
        url = item.get("url") or None
        doc_id = item.get("doc_id") or None
        if doc_id is None and url is not None:
            source = resolve_source(str(url), docs)
            doc_id = source.id if source is not None else None
        out.append(Passage(passage_id=pid, text=str(item["passage"]), url=url, doc_id=doc_id))
    return out


def passages_from_json(data: Any, docs: Sequence[RetrievedDoc] = ()) -> list[Passage]:
    """Read passages from ``{"collected_passages": [...]}`` or a plain list of objects.

    Each object needs ``passage`` (or ``text``); ``passage_id`` (or ``id``), ``url`` and
    ``doc_id`` are optional. ``doc_id`` is filled from ``url`` when it names one of ``docs``.

    Raises:
        InputError: the data does not have this shape.
    """
    if isinstance(data, Mapping):
        if "collected_passages" not in data:
            raise InputError("passages JSON: expected {'collected_passages': [...]} or a list of passages")
        data = data["collected_passages"]
    if not isinstance(data, list):
        raise InputError(f"passages JSON: expected a list of passages, got {type(data).__name__}")
    items: list[dict[str, Any]] = []
    for i, row in enumerate(data, start=1):
        if not isinstance(row, Mapping):
            raise InputError(
                f"passage {i}: expected an object with 'passage' (or 'text'), and optionally 'passage_id', 'url' "
                f"and 'doc_id'; got {type(row).__name__}"
            )
        text = row.get("passage", row.get("text"))
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"passage {i}: 'passage' (or 'text') must be a non-empty string")
        for key in ("url", "doc_id"):
            if row.get(key) is not None and not isinstance(row.get(key), str):
                raise InputError(f"passage {i}: '{key}' must be a string")
        items.append(
            {
                "passage_id": row.get("passage_id", row.get("id")),
                "passage": text,
                "url": row.get("url"),
                "doc_id": row.get("doc_id"),
            }
        )
    return to_passages(items, docs)


def read_passages_json(path: str | Path, docs: Sequence[RetrievedDoc] = ()) -> list[Passage]:
    """:func:`passages_from_json` of a UTF-8 JSON file; an error names the file."""
    text = read_text_file(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    try:
        return passages_from_json(data, docs)
    except InputError as exc:
        raise InputError(f"{path}: {str(exc).removeprefix('passages JSON: ')}") from None


__all__ = ["passages_from_json", "read_passages_json", "to_passages"]
