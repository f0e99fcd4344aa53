"""File helpers: atomic writes and the JSONL document format of the CLI and API.

Document JSONL: one object per line with ``id`` and ``text`` (required), optional ``url``,
``similarity`` (retrieval similarity in [0, 1], the name the verdict's ``documents[]`` use;
``score``, its older name, is still read) and ``metadata``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import InputError


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same folder, fsync, rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file normal permissions
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """UTF-8 text version of :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> None:
    """Write rows as JSONL atomically."""
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_text_file(path: str | Path) -> str:
    """Read a UTF-8 text file with clear errors for missing, binary or non-UTF-8 files."""
    file = Path(path)
    if not file.exists():
        raise InputError(f"{file}: no such file")
    if file.is_dir():
        raise InputError(f"{file}: is a directory, expected a file")
    data = file.read_bytes()
    if b"\x00" in data[:8192]:
        raise InputError(f"{file}: looks binary (NUL bytes); expected UTF-8 text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{file}: not valid UTF-8 ({exc.reason} at byte {exc.start}); re-encode it as UTF-8") from exc


def parse_document_row(row: Any, where: str) -> RetrievedDoc:
    """Validate one JSON document object and wrap it as a :class:`RetrievedDoc`."""
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(row).__name__}")
    missing = [k for k in ("id", "text") if k not in row]
    if missing:
        raise InputError(f"{where}: missing field(s) {', '.join(missing)} (need id and text)")
    if not isinstance(row["text"], str) or not row["text"].strip():
        raise InputError(f"{where}: 'text' must be a non-empty string")
    # ``similarity`` is the verdict's name for it (``documents[].similarity``); ``score`` the older one
    key = "similarity" if row.get("similarity") is not None else "score"
    score = row.get(key)
    if score is not None:
        if not isinstance(score, (int, float)) or isinstance(score, bool) or not 0.0 <= float(score) <= 1.0:
            raise InputError(f"{where}: {key!r} must be a number in [0, 1], got {score!r}")
        score = float(score)
        if row.get("score") is not None and row["score"] != score:
            raise InputError(f"{where}: 'similarity' and 'score' differ; give one of them (the same value)")
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InputError(f"{where}: 'metadata' must be an object")
    doc = Document(id=str(row["id"]), text=row["text"], url=row.get("url"), source=where, metadata=metadata)
    return RetrievedDoc(document=doc, score=score, rank=int(row.get("rank", 0)) or 1)


def iter_jsonl(lines: Iterable[str], where: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for every non-blank line of a JSONL text.

    Raises:
        InputError: ``"{where}:{line}: invalid JSON (...)"`` on the first line that is not JSON.

    Example:
        >>> list(iter_jsonl(['{"id": "a"}', "", "[1, 2]"], "rows.jsonl"))
        [(1, {'id': 'a'}), (3, [1, 2])]
    """
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}:{lineno}: invalid JSON ({exc.msg})") from exc


def read_documents_jsonl(path: str | Path) -> list[RetrievedDoc]:
    """Read the CLI's document JSONL; ranks follow file order when not given."""
    text = read_text_file(path)
    docs: list[RetrievedDoc] = []
    for lineno, row in iter_jsonl(text.splitlines(), path):
        doc = parse_document_row(row, f"{path}:{lineno}")
        docs.append(RetrievedDoc(document=doc.document, score=doc.score, rank=len(docs) + 1))
    if not docs:
        raise InputError(f"{path}: no documents (expected JSONL lines with id and text)")
    ids = [d.id for d in docs]
    if len(set(ids)) != len(ids):
        raise InputError(f"{path}: duplicate document ids")
    return docs


def read_question_rows(path: str | Path | None, packaged: str) -> list[tuple[str, int, dict[str, Any], str]]:
    """The rows of a question JSONL: ``(where, line number, row, question)`` per non-blank line.

    Args:
        path: the file; ``None`` reads ``packaged`` from ``ragtrust/data``.
        packaged: the name of the question set shipped with ragtrust.

    Raises:
        InputError: a line is not JSON or not an object with a non-empty ``question``; the
            file has no question.
    """
    from importlib import resources

    if path is None:
        text = resources.files("ragtrust.data").joinpath(packaged).read_text(encoding="utf-8")
        name = packaged
    else:
        text = read_text_file(path)
        name = str(path)
    out: list[tuple[str, int, dict[str, Any], str]] = []
    for lineno, row in iter_jsonl(text.splitlines(), name):
        where = f"{name}:{lineno}"
        question = row.get("question") if isinstance(row, dict) else None
        if not isinstance(question, str) or not question.strip():
            raise InputError(f"{where}: expected an object with a non-empty 'question'")
        out.append((where, lineno, row, question.strip()))
    if not out:
        raise InputError(f"{name}: no questions")
    return out


__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "iter_jsonl",
    "parse_document_row",
    "read_question_rows",
    "read_documents_jsonl",
    "read_text_file",
    "write_jsonl",
]
