"""File loaders: turn files and folders into :class:`~ragtrust.documents.Document` objects.

Supported formats (by extension, case-insensitive):

``.txt``
    one document, the whole text.
``.md`` / ``.markdown``
    one document, the raw markdown (so spans index into what a reader opens); the headings
    CommonMark sees (ATX ``# ...`` and setext ``Title`` / ``===``, none inside code or HTML
    blocks; :func:`~ragtrust.ingest.markup.markdown_metadata`, markdown-it-py) are kept as
    ``metadata["headings"]`` (``[level, title, offset]``) and the first level-1 heading as
    ``metadata["title"]``.
``.html`` / ``.htm``
    one document, the visible text extracted with BeautifulSoup (scripts, styles and
    templates removed, block elements on their own lines); ``<title>`` and ``h1``-``h6``
    become ``metadata["title"]`` and ``metadata["headings"]``.
``.jsonl``
    one document per line: ``text`` (required, non-empty string), ``id`` (recommended; without
    it the id is ``<file id>:<line number>``, which is stable only while lines keep their
    place), ``url``, ``metadata`` (an object); any other key is kept in the metadata. A bad
    line (an id :func:`~ragtrust.documents.check_document_id` refuses, such as ``x#1``, is
    one) is listed in :attr:`LoadReport.skipped` and the rest of the file still loads.
``.csv``
    one document per row with a header: ``text`` (required), ``id``, ``url`` columns; any
    other column goes to the metadata. The delimiter (``,`` ``;`` tab ``|``) is sniffed.
``.pdf`` / ``.docx`` (the ``docs`` extra; :mod:`~ragtrust.ingest.documents_office`)
    one document; a PDF's page boundaries in ``metadata["pages"]``, a DOCX's headings kept.

Document ids are stable: for a file given directly, its name; for a file found under a
folder, ``<folder name>/<path relative to the folder>`` (POSIX separators), so ingesting
the same folder again from another working directory gives the same ids. ``url`` is the
``file://`` URI of the file unless the record gives one; ``source`` is the absolute path.

Licence files found under a folder (``LICENSE``, ``LICENCE.md``, ``LICENSE-MIT``,
``COPYING``, ``NOTICE.txt``, ``UNLICENSE``...; see :func:`is_licence_file`) are skipped with a
reason: they are legal boilerplate, not knowledge, and would otherwise be retrieved as
evidence. A licence file named directly is read like any other file.

Bounds (:class:`~ragtrust.config.IngestConfig`, the ``ingest`` settings): a file larger
than ``max_file_bytes`` (20 MB), a JSONL line or CSV record larger than ``max_line_bytes``
(2 MB) and a folder more than ``max_depth`` (32) levels below a given folder are skipped with
a one-line reason naming the setting; the rest is still loaded. Folders are walked with an
explicit stack (no recursion limit); links to folders are not followed (no link loops),
links to files are read. A store met under a folder (``--store`` inside the corpus) is left
out, its own files only: the documents beside it are read.

Encodings: UTF-8 (with or without BOM) and UTF-16/32 with a BOM are read directly. Other
files are read as Windows-1252 (Western European; a superset of Latin-1's printable
characters) when charset-normalizer finds that decoding clean, else as charset-normalizer's
best guess when that is coherent (a recognised language); the encoding is recorded as
``metadata["encoding"]``. A low-confidence guess is never used: the file is skipped with
the guess in the reason. (Central-European cp1250 text whose bytes also read cleanly as
cp1252 is read as cp1252: save such files as UTF-8.) Empty files, binary files (NUL bytes)
and files whose encoding cannot be detected are skipped with a reason; one bad file never
stops a batch.

Example:
    >>> report = load_paths([])
    >>> (report.documents, report.skipped)
    ([], [])
"""

from __future__ import annotations

import codecs
import csv
import fnmatch
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ragtrust.config import IngestConfig
from ragtrust.documents import Document, check_document_id
from ragtrust.errors import InputError
from ragtrust.ingest.documents_office import OFFICE_EXTENSIONS, office_text
from ragtrust.ingest.markup import html_to_text, markdown_metadata
from ragtrust.ingest.store_files import holds_store, is_store_entry
from ragtrust.io import format_bytes

#: extensions that :func:`load_paths` reads
SUPPORTED_EXTENSIONS = (".txt", ".md", ".markdown", ".html", ".htm", ".jsonl", ".csv", *OFFICE_EXTENSIONS)
#: file names (lower case, without a text extension) that :func:`load_paths` skips under folders
LICENCE_FILE_NAMES = frozenset(
    {"license", "licence", "unlicense", "copying", "copying.lesser", "copyright", "notice", "licenses", "licences"}
)
#: name prefixes of per-licence files, e.g. ``LICENSE-MIT``, ``LICENCE-APACHE.txt``
LICENCE_FILE_PREFIXES = ("license-", "licence-")
_LICENCE_TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".html", ".htm")
_BINARY_SNIFF_BYTES = 8192
#: the least charset-normalizer language coherence (0..1) for a detected encoding other than
#: cp1252 to be used: real text in a recognised language scored >= 0.3 on the samples of
#: tests/ingest/test_loaders.py, short Western text decoded as Big5 or UTF-16 scored 0.0
_MIN_COHERENCE = 0.2


@dataclass
class LoadReport:
    """What :func:`load_paths` loaded and what it skipped.

    Attributes:
        documents: the loaded documents, in path order.
        skipped: ``(path, reason)`` for every file or record that could not be loaded.
        files: how many files were read (loaded or skipped).
    """

    documents: list[Document] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    files: int = 0


def load_paths(
    paths: Sequence[str | Path],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    *,
    limits: IngestConfig | None = None,
) -> LoadReport:
    r"""Load documents from files and folders (recursively).

    Args:
        paths: files or folders. Folders are walked recursively; hidden files and folders
            (names starting with ``.``) are ignored, licence files (:func:`is_licence_file`)
            are listed in ``skipped``.
        include: glob patterns (``*.md``, ``docs/**/*.txt``); when given, only files under a
            folder whose relative path or name matches one are read. Files named directly
            are always read.
        exclude: glob patterns of files to leave out (matched like ``include``).
        limits: the size and depth bounds (``settings.ingest``; the defaults when ``None``).

    Returns:
        A :class:`LoadReport`; unreadable files and bad records are in ``skipped``.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "a.md").write_text("# Title\n\nBody text.")
        >>> r = load_paths([d])
        >>> r.documents[0].id.endswith("/a.md"), r.documents[0].metadata["title"]
        (True, 'Title')
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    limits = limits or IngestConfig()
    report = LoadReport()
    seen: dict[str, str] = {}
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            report.skipped.append((str(raw), "no such file or directory"))
            continue
        if path.is_dir():
            files = _walk(path, include, exclude, limits.max_depth, report)
            if not files:
                report.skipped.append((str(raw), "no matching files in this folder"))
            for file, rel in files:
                if is_licence_file(file.name):
                    report.files += 1
                    report.skipped.append((str(file), "licence file, not a document (name the file to ingest it)"))
                    continue
                _load_one(file, f"{path.resolve().name}/{rel}", report, seen, limits)
        else:
            _load_one(path, path.name, report, seen, limits)
    return report


def _too_large(size: int, limit: int, what: str, setting: str) -> str:
    return f"{what} of {format_bytes(size)} is larger than ingest.{setting} ({format_bytes(limit)})"


def is_licence_file(name: str) -> bool:
    """Tell whether a file name is a licence file that folder loading skips (case-insensitive).

    Example:
        >>> [is_licence_file(n) for n in ("LICENSE", "License.md", "COPYING", "LICENSE-MIT", "licensing.md")]
        [True, True, True, True, False]
    """
    lower = name.lower()
    for suffix in _LICENCE_TEXT_SUFFIXES:
        if lower.endswith(suffix):
            lower = lower[: -len(suffix)]
            break
    return lower in LICENCE_FILE_NAMES or lower.startswith(LICENCE_FILE_PREFIXES)


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    for pattern in patterns:
        if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(name, pattern) or PurePosixPath(rel).match(pattern):
            return True
    return False


def _walk(
    root: Path, include: Sequence[str], exclude: Sequence[str], max_depth: int, report: LoadReport
) -> list[tuple[Path, str]]:
    """Files under ``root`` as ``(path, relative POSIX path)``, sorted by their path's parts.

    An explicit stack instead of recursion (a 1,200-deep folder raised RecursionError,
    issue 19 item 5); links to folders are not followed, so a link loop cannot recur.
    """
    found: list[tuple[tuple[str, ...], Path]] = []
    stack: list[tuple[Path, tuple[str, ...]]] = [(root, ())]
    while stack:
        folder, parts = stack.pop()
        try:
            with os.scandir(folder) as entries:
                listed = list(entries)
        except OSError as exc:
            report.skipped.append((str(folder), f"cannot read folder: {exc.strerror or exc}"))
            continue
        # a store kept under the folder (or in it): its segments are JSONL, never documents
        store = holds_store(folder)
        if store:
            report.skipped.append((str(folder), "a ragtrust store: its own files are not documents"))
        for entry in listed:
            if entry.name.startswith(".") or (store and is_store_entry(entry.name)):
                continue
            rel_parts = (*parts, entry.name)
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
                is_file = not is_folder and entry.is_file()
            except OSError:
                continue
            if is_folder:
                if len(rel_parts) > max_depth:
                    reason = f"folder more than ingest.max_depth ({max_depth}) levels deep; not read"
                    report.skipped.append((entry.path, reason))
                else:
                    stack.append((Path(entry.path), rel_parts))
                continue
            rel = "/".join(rel_parts)
            if not is_file or (include and not _matches(rel, include)) or (exclude and _matches(rel, exclude)):
                continue
            found.append((rel_parts, Path(entry.path)))
    found.sort(key=lambda item: item[0])
    return [(file, "/".join(parts)) for parts, file in found]


def _read_bounded(file: Path, limit: int) -> bytes:
    """The file's bytes, refusing (InputError) one larger than ``limit`` before reading it all."""
    vanished = "no longer there (deleted or moved after the folder was listed); not read"
    if not file.exists() and not file.is_symlink():
        raise InputError(vanished)
    if not file.is_file():
        raise InputError("not a regular file")
    try:
        size = file.stat().st_size
        if size > limit:
            raise InputError(_too_large(size, limit, "file", "max_file_bytes"))
        with open(file, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:  # gone between the checks and the read
        raise InputError(vanished) from None
    if len(data) > limit:  # it grew after the stat
        raise InputError(_too_large(len(data), limit, "file", "max_file_bytes"))
    return data


def _load_one(file: Path, doc_id: str, report: LoadReport, seen: dict[str, str], limits: IngestConfig) -> None:
    report.files += 1
    suffix = file.suffix.lower()
    if suffix not in SUPPORTED_EXTENSIONS:
        report.skipped.append(
            (
                str(file),
                f"unsupported file type {suffix or '(none)'}; expected one of {', '.join(SUPPORTED_EXTENSIONS)}",
            )
        )
        return
    try:
        check_document_id(doc_id, "the id from the file's path")
        data = _read_bounded(file, limits.max_file_bytes)
        office = suffix in OFFICE_EXTENSIONS  # binary formats: their readers decode them
        text, encoding = ("", "utf-8") if office else decode_bytes(data)
        # (where each document came from: the file, or a record's file:line), document
        docs: list[tuple[str, Document]]
        if office:
            docs = [(str(file), _document(file, doc_id, *office_text(suffix, data)))]
        elif suffix == ".jsonl":
            docs = _jsonl_documents(file, doc_id, text, report, limits.max_line_bytes)
        elif suffix == ".csv":
            docs = _csv_documents(file, doc_id, text, report, limits.max_line_bytes)
        elif suffix in (".md", ".markdown"):
            docs = [(str(file), _document(file, doc_id, text, markdown_metadata(text)))]
        elif suffix in (".html", ".htm"):
            body, meta = html_to_text(text)
            if not body.strip():
                raise InputError("no visible text in the HTML")
            docs = [(str(file), _document(file, doc_id, body, meta))]
        else:
            docs = [(str(file), _document(file, doc_id, text, {}))]
    except InputError as exc:
        report.skipped.append((str(file), str(exc)))
        return
    except OSError as exc:
        report.skipped.append((str(file), f"cannot read: {exc.strerror or exc}"))
        return
    for where, doc in docs:
        if encoding not in ("utf-8", "ascii"):
            doc = Document(
                id=doc.id,
                text=doc.text,
                url=doc.url,
                source=doc.source,
                metadata={**doc.metadata, "encoding": encoding},
            )
        if doc.id in seen:
            report.skipped.append((where, f"duplicate document id {doc.id!r} (first loaded from {seen[doc.id]})"))
            continue
        seen[doc.id] = where
        report.documents.append(doc)


def decode_bytes(data: bytes) -> tuple[str, str]:
    """Decode file bytes to text, detecting the encoding.

    Returns:
        ``(text, encoding)``.

    Raises:
        InputError: for empty, binary or undecodable data (the message is the reason).
    """
    if not data.strip():
        raise InputError("empty file")
    for bom, name in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return data.decode(name), name.replace("-sig", "")
            except UnicodeDecodeError as exc:
                raise InputError(f"starts with a {name} byte-order mark but does not decode ({exc.reason})") from None
    if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
        raise InputError("binary file (NUL bytes); expected text")
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        utf8_error = f"{exc.reason} at byte {exc.start}"
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a declared dependency
        raise InputError(f"not valid UTF-8 ({utf8_error}); install charset-normalizer to detect encodings") from None
    western = from_bytes(data, cp_isolation=["cp1252"]).best()
    # cp1252 first whenever charset-normalizer finds its decoding clean: the language
    # coherence it would rank by is noise on short text (a Baltic or Central-European code
    # page wins by it, which is how "être" was read as "ętre", issue 19 item 7). Cyrillic,
    # Greek or Polish bytes do not decode cleanly as cp1252 and go on to the detector.
    if western is not None:
        return str(western), "cp1252"
    best = from_bytes(data).best()
    if best is None:
        raise InputError(f"not valid UTF-8 ({utf8_error}) and no reliable encoding detected; re-encode it as UTF-8")
    if best.coherence < _MIN_COHERENCE:
        raise InputError(
            f"not valid UTF-8 ({utf8_error}) and no reliable encoding detected (best guess {best.encoding}, "
            f"language coherence {best.coherence:.2f} < {_MIN_COHERENCE}); re-encode it as UTF-8"
        )
    return str(best), best.encoding


def _document(file: Path, doc_id: str, text: str, metadata: dict[str, Any], url: str | None = None) -> Document:
    if not text.strip():
        raise InputError("no text (only whitespace)")
    return Document(
        id=doc_id,
        text=text,
        url=url or file.resolve().as_uri(),
        source=str(file.resolve()),
        metadata={"format": file.suffix.lower().lstrip("."), **metadata},
    )


def _record_document(file: Path, file_id: str, where: str, n: int, row: Any) -> Document:
    """Validate one JSONL/CSV record (``id``, ``text``, ``url``, ``metadata``, extras)."""
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(row).__name__}")
    text = row.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: missing or empty 'text' (each record needs a non-empty text)")
    raw_id = row.get("id")
    if raw_id is None or (isinstance(raw_id, str) and not raw_id.strip()):
        doc_id = f"{file_id}:{n}"
    elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
        doc_id = str(raw_id)
    else:
        raise InputError(f"{where}: 'id' must be a string or an integer, got {type(raw_id).__name__}")
    check_document_id(doc_id, where)
    url = row.get("url") or None
    if url is not None and not isinstance(url, str):
        raise InputError(f"{where}: 'url' must be a string")
    meta = row.get("metadata") or {}
    if not isinstance(meta, dict):
        raise InputError(f"{where}: 'metadata' must be an object")
    extras = {k: v for k, v in row.items() if k not in ("id", "text", "url", "metadata") and v not in (None, "")}
    metadata = {"format": file.suffix.lower().lstrip("."), **extras, **meta}
    return Document(
        id=doc_id, text=text, url=url or file.resolve().as_uri(), source=str(file.resolve()), metadata=metadata
    )


def _utf8_size(text: str, limit: int) -> int:
    """UTF-8 size of ``text``, counted only when it may exceed ``limit`` (4 bytes a character at most)."""
    return len(text.encode("utf-8")) if len(text) * 4 > limit else len(text)


def _jsonl_documents(
    file: Path, file_id: str, text: str, report: LoadReport, max_line: int
) -> list[tuple[str, Document]]:
    """``(file:line, document)`` of each valid record; the others are listed in ``report.skipped``."""
    docs: list[tuple[str, Document]] = []
    # lines end at \n only: JSON strings may hold U+2028 and other characters splitlines() breaks at
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{file}:{lineno}"
        size = _utf8_size(line, max_line)
        if size > max_line:
            report.skipped.append((where, _too_large(size, max_line, "line", "max_line_bytes")))
            continue
        try:
            docs.append((where, _record_document(file, file_id, where, lineno, json.loads(line))))
        except json.JSONDecodeError as exc:
            report.skipped.append((where, f"invalid JSON ({exc.msg})"))
        except RecursionError:
            report.skipped.append((where, "invalid JSON (nested too deeply)"))
        except InputError as exc:
            report.skipped.append((where, str(exc).removeprefix(f"{where}: ")))
    if not docs:
        raise InputError("no valid records (JSONL lines need a non-empty 'text')")
    return docs


def _record_size(row: dict[str, Any], limit: int) -> int:
    values = [v for v in row.values() if isinstance(v, str)]
    values += [x for v in row.values() if isinstance(v, list) for x in v if isinstance(x, str)]
    return sum(_utf8_size(v, limit) for v in values)


def _csv_documents(
    file: Path, file_id: str, text: str, report: LoadReport, max_line: int
) -> list[tuple[str, Document]]:
    """``(file:line, document)`` of each valid row; the others are listed in ``report.skipped``."""
    # the csv module refuses fields over 128 KB by default; records are bounded by max_line
    csv.field_size_limit(max(csv.field_size_limit(), max_line))
    try:
        dialect: Any = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = csv.DictReader(io.StringIO(text), dialect=dialect)
    fields = [f.strip().lower() for f in (reader.fieldnames or [])]
    if "text" not in fields:
        raise InputError(f"CSV needs a 'text' column (optional: id, url); found {', '.join(fields) or 'no header'}")
    reader.fieldnames = fields
    docs: list[tuple[str, Document]] = []
    try:
        for row in reader:
            lineno = reader.line_num
            where = f"{file}:{lineno}"
            size = _record_size(row, max_line)
            if size > max_line:
                report.skipped.append((where, _too_large(size, max_line, "record", "max_line_bytes")))
                continue
            clean = {k: v for k, v in row.items() if k}
            try:
                docs.append((where, _record_document(file, file_id, where, lineno, clean)))
            except InputError as exc:
                report.skipped.append((where, str(exc).removeprefix(f"{where}: ")))
    except csv.Error as exc:
        detail = str(exc)
        if "field limit" in detail:
            detail = f"a field larger than ingest.max_line_bytes ({format_bytes(max_line)})"
        where = f"{file}:{reader.line_num}"
        report.skipped.append((where, f"malformed CSV ({detail}); the rest of the file is skipped"))
    if not docs:
        raise InputError("no valid rows (each row needs a non-empty 'text')")
    return docs


__all__ = [
    "LICENCE_FILE_NAMES",
    "LICENCE_FILE_PREFIXES",
    "SUPPORTED_EXTENSIONS",
    "LoadReport",
    "decode_bytes",
    "format_bytes",
    "html_to_text",
    "is_licence_file",
    "load_paths",
    "markdown_metadata",
]
