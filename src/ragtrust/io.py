"""File helpers: atomic writes, output-path checks and the JSONL document format of the CLI and API.

Document JSONL: one object per line with ``id`` and ``text`` (required), optional ``url``,
``similarity`` (retrieval similarity in [0, 1], the name the verdict's ``documents[]`` use;
``score``, its older name, is still read) and ``metadata``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal

from ragtrust.documents import Document, RetrievedDoc, check_rank, check_similarity, check_url, is_blank
from ragtrust.errors import InputError


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: Literal["w", "wb"] = "w", *, newline: str | None = None) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` that replaces it only when the block ends without an exception.

    For output written piece by piece (an export, a report): an exception, an interrupt or a
    full disk leaves ``path`` as it was, and the temporary file is removed. Text mode (``"w"``)
    writes UTF-8.

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "rows.csv"
        >>> with atomic_open(out, newline="") as handle:
        ...     _ = handle.write("a,b")
        >>> out.read_text(encoding="utf-8")
        'a,b'
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        encoding = None if mode == "wb" else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file normal permissions
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same folder, fsync, rename)."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Tell whether ``a`` and ``b`` name one file (through links, ``..`` and relative paths).

    Example:
        >>> same_file("docs/../setup.cfg", "setup.cfg"), same_file("a.txt", "b.txt")
        (True, False)
    """
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare where they point
        return Path(a).resolve() == Path(b).resolve()


def nearest_existing_folder(path: str | Path) -> Path:
    """The nearest existing parent of ``path``: where a file there would be created (or a file in the way).

    Example:
        >>> nearest_existing_folder("/no/such/folder/out.json")
        PosixPath('/')
    """
    folder = Path(path).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def check_output_file(path: str | Path, what: str) -> None:
    """Refuse, before any work is done, an output file that cannot be written.

    Args:
        path: the file an atomic write will create or replace (its missing folders are created).
        what: how the message names it, e.g. ``"--report out.jsonl"``.

    Raises:
        InputError: ``path`` is a folder, lies under a file, or it (or the folder it would be
            written to) is not writable: a read-only folder or mount.

    Example:
        >>> import tempfile
        >>> check_output_file(tempfile.mkdtemp(), "--out")
        Traceback (most recent call last):
        ...
        ragtrust.errors.InputError: --out is a folder: name the file to write
    """
    file = Path(path)
    if file.is_dir():
        raise InputError(f"{what} is a folder: name the file to write")
    folder = nearest_existing_folder(file)
    if not folder.is_dir():
        raise InputError(f"{what} cannot be written: {folder} is a file, not a folder; choose another path")
    # the write goes to a temporary file in the folder, renamed over the file: the folder must be writable
    if not os.access(folder, os.W_OK | os.X_OK) or (file.exists() and not os.access(file, os.W_OK)):
        where = file if file.exists() else folder
        raise InputError(f"{what} cannot be written: {where} is read-only; choose a writable path")


def check_output_folder(path: str | Path, what: str) -> None:
    """Refuse, before any work is done, an output folder that cannot be created or written.

    Args:
        path: the folder files will be written into (created with its parents when missing).
        what: how the message names it, e.g. ``"--out runs/paper"``.

    Raises:
        InputError: ``path`` is a file, lies under a file, or it (or the folder it would be
            created in) is read-only.

    Example:
        >>> import tempfile
        >>> check_output_folder(tempfile.mkstemp()[1], "--out")
        Traceback (most recent call last):
        ...
        ragtrust.errors.InputError: --out is a file: name a folder to write into
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{what} is a file: name a folder to write into")
    where = folder if folder.is_dir() else nearest_existing_folder(folder)
    if not where.is_dir():
        raise InputError(f"{what} cannot be created: {where} is a file, not a folder; choose another path")
    if not os.access(where, os.W_OK | os.X_OK):
        raise InputError(f"{what} cannot be written: {where} is read-only; choose a writable path")


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
    if isinstance(row["id"], bool) or not isinstance(row["id"], (str, int)):
        raise InputError(f"{where}: 'id' must be a string or an integer, got {type(row['id']).__name__}")
    if not isinstance(row["text"], str) or is_blank(row["text"]):
        raise InputError(f"{where}: 'text' must be a non-empty string")
    # ``similarity`` is the verdict's name for it (``documents[].similarity``); ``score`` the older one
    key = "similarity" if row.get("similarity") is not None else "score"
    score = row.get(key)
    if score is not None:
        score = check_similarity(score, f"{where}: {key!r}")
        if row.get("score") is not None and row["score"] != score:
            raise InputError(f"{where}: 'similarity' and 'score' differ; give one of them (the same value)")
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InputError(f"{where}: 'metadata' must be an object")
    url = check_url(row.get("url"), f"{where}: 'url'")
    rank = check_rank(row["rank"], f"{where}: 'rank'") if row.get("rank") is not None else 1
    doc = Document(id=str(row["id"]), text=row["text"], url=url, source=where, metadata=metadata)
    return RetrievedDoc(document=doc, score=score, rank=rank)


def format_bytes(size: int) -> str:
    """A byte count for a reader, in decimal units.

    Example:
        >>> format_bytes(20_000_000), format_bytes(54_123_456), format_bytes(1_500), format_bytes(12)
        ('20 MB', '54.1 MB', '1.5 KB', '12 bytes')
    """
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= scale:
            return f"{size / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


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
        except RecursionError:
            raise InputError(f"{where}:{lineno}: invalid JSON (nested too deeply)") from None


def read_documents_jsonl(
    path: str | Path, *, max_file_bytes: int | None = None, max_line_bytes: int | None = None
) -> list[RetrievedDoc]:
    r"""The documents of a ``--docs`` JSONL file, in file order (ranks follow the file order).

    One object a line, validated by :func:`parse_document_row`. With ``max_file_bytes`` /
    ``max_line_bytes`` (the CLI passes ``ingest.max_file_bytes`` / ``ingest.max_line_bytes``)
    the file is bounded as ``ragtrust ingest`` bounds its files. Lines end at ``\n`` only: a
    JSON string may hold U+2028 and the other characters :meth:`str.splitlines` breaks at.

    Raises:
        InputError: ``"{path}:{line}: ..."`` for the first bad line; the file is too large,
            holds no document or gives an id twice.
    """
    if max_file_bytes is not None and Path(path).is_file() and Path(path).stat().st_size > max_file_bytes:
        size = Path(path).stat().st_size
        raise InputError(
            f"{path}: file of {format_bytes(size)} is larger than ingest.max_file_bytes "
            f"({format_bytes(max_file_bytes)}); pass fewer documents or raise the limit"
        )
    lines = read_text_file(path).split("\n")
    if max_line_bytes is not None:
        for lineno, line in enumerate(lines, start=1):
            # 4 bytes a character at most: encode only a line that may be over the limit
            size = len(line.encode("utf-8")) if len(line) * 4 > max_line_bytes else len(line)
            if size > max_line_bytes:
                raise InputError(
                    f"{path}:{lineno}: line of {format_bytes(size)} is larger than ingest.max_line_bytes "
                    f"({format_bytes(max_line_bytes)}); split the document or raise the limit"
                )
    docs: list[RetrievedDoc] = []
    first_line: dict[str, int] = {}
    for lineno, row in iter_jsonl(lines, path):
        doc = parse_document_row(row, f"{path}:{lineno}")
        if doc.id in first_line:
            raise InputError(
                f"{path}:{lineno}: duplicate document ids: {doc.id!r} is on line {first_line[doc.id]} too; "
                "ids must be unique"
            )
        first_line[doc.id] = lineno
        docs.append(RetrievedDoc(document=doc.document, score=doc.score, rank=len(docs) + 1))
    if not docs:
        raise InputError(f"{path}: no documents (expected JSONL lines with id and text)")
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
    "nearest_existing_folder",
    "format_bytes",
    "atomic_open",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_output_file",
    "check_output_folder",
    "iter_jsonl",
    "parse_document_row",
    "read_question_rows",
    "read_documents_jsonl",
    "read_text_file",
    "same_file",
    "write_jsonl",
]
