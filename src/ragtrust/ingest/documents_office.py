"""PDF and DOCX loaders (the ``docs`` extra: ``pip install 'ragtrust[docs]'``).

``.pdf`` (pypdf, BSD)
    one document, its pages' text in order, separated by a blank line. The page
    boundaries are kept as ``metadata["pages"]``: ``[[start, end], ...]`` character offsets
    into the text, one pair per page (an empty page has ``start == end``), so a span maps to
    its page (:func:`page_of`); ``metadata["page_count"]`` and the PDF's ``title`` when it
    has one. An encrypted PDF is read only when it opens with an empty password (a
    permissions-only lock); otherwise it is skipped, as are damaged PDFs and PDFs with no
    text layer (scanned pages need OCR first).
``.docx`` (python-docx, MIT)
    one document: paragraphs and tables in document order (a table row is one line, its
    cells separated by `` | ``). Headings stay headings: ``Heading N`` paragraphs are
    written as Markdown headings (``## Section``) and recorded in ``metadata["headings"]``
    (``[level, title, offset]``, as for Markdown files), so chunks keep their section;
    the ``Title`` paragraph (or the core properties' title) is ``metadata["title"]``.

Without the extra, such a file is skipped with one line naming the install command.
Both readers raise :class:`~ragtrust.errors.InputError` (one line) for a file they cannot
read; :mod:`~ragtrust.ingest.loaders` lists it as skipped and goes on.

Example:
    >>> page_of({"pages": [[0, 120], [122, 300]]}, 130)
    2
"""

from __future__ import annotations

import dataclasses
import io
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from ragtrust.documents import AnswerSentence, ClaimRef, Document, RetrievedDoc, Span, Verdict
from ragtrust.errors import InputError

#: extensions read by this module
OFFICE_EXTENSIONS = (".pdf", ".docx")
#: how a missing extra is reported (a skipped file's reason)
INSTALL_HINT = "reading {kind} files needs the docs extra: pip install 'ragtrust[docs]'"
#: between two pages' text
PAGE_SEPARATOR = "\n\n"
_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def office_text(suffix: str, data: bytes) -> tuple[str, dict[str, Any]]:
    """``(text, metadata)`` of a ``.pdf`` or ``.docx`` file's bytes.

    Raises:
        InputError: the extra is missing, or the file is encrypted, damaged or has no text.
    """
    if suffix == ".pdf":
        return pdf_text(data)
    if suffix == ".docx":
        return docx_text(data)
    raise InputError(f"not a PDF or DOCX file: {suffix}")


def _why(exc: BaseException) -> str:
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {detail}"[:200] if detail else type(exc).__name__


def join_pages(pages: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """One text from page texts (stripped, ``PAGE_SEPARATOR`` between) and its page metadata.

    ``metadata["pages"]`` holds each page's ``[start, end)`` in the text, as :func:`page_of`
    reads it; ``page_count`` the number of pages.

    Example:
        >>> text, meta = join_pages(["One.", " Two. "])
        >>> text.split(PAGE_SEPARATOR), meta
        (['One.', 'Two.'], {'pages': [[0, 4], [6, 10]], 'page_count': 2})
    """
    parts: list[str] = []
    bounds: list[list[int]] = []
    at = 0
    for i, page in enumerate(pages):
        page = page.strip()
        if i:
            parts.append(PAGE_SEPARATOR)
            at += len(PAGE_SEPARATOR)
        bounds.append([at, at + len(page)])
        parts.append(page)
        at += len(page)
    return "".join(parts), {"pages": bounds, "page_count": len(pages)}


def pdf_text(data: bytes) -> tuple[str, dict[str, Any]]:
    """The text of a PDF, page by page, with ``metadata["pages"]`` (see the module docstring)."""
    try:
        from pypdf import PdfReader
    except ImportError:
        raise InputError(INSTALL_HINT.format(kind="PDF")) from None
    _quiet("pypdf")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _opens_without_password(reader):
            raise InputError("encrypted PDF (needs a password); decrypt it first, e.g. qpdf --decrypt")
        pages = [page.extract_text() or "" for page in reader.pages]
        info = reader.metadata
        title = info.get("/Title") if info is not None else None
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf raises many kinds on a damaged file
        raise InputError(f"damaged or unreadable PDF ({_why(exc)})") from None
    text, meta = join_pages(pages)
    if not text.strip():
        raise InputError("no text layer in the PDF (scanned pages? run OCR first)")
    if isinstance(title, str) and title.strip():
        meta["title"] = title.strip()
    return text, meta


def _quiet(library: str) -> None:
    """Give a library's logger a NullHandler, once, so its warnings go to a configured log or nowhere.

    pypdf logs what it repairs ("EOF marker not found"); with no logging set up, Python's
    last-resort handler printed that to stderr: lines that name no file, beside the one
    line a skipped file gets. An application that configures logging still receives them.
    """
    logger = logging.getLogger(library)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


def _opens_without_password(reader: Any) -> bool:
    """A permissions-only lock opens with the empty password; AES without ``cryptography`` does not."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # noqa: BLE001 - pypdf's DependencyError, a wrong-password error
        return False


def page_of(metadata: Mapping[str, Any], offset: int) -> int | None:
    """The 1-based page holding character ``offset`` of a PDF document's text, else ``None``.

    An offset between two pages (the separator) belongs to the page that follows.

    Example:
        >>> page_of({"pages": [[0, 10], [12, 20]]}, 0), page_of({"pages": [[0, 10], [12, 20]]}, 11)
        (1, 2)
        >>> page_of({}, 5) is None
        True
    """
    pages = metadata.get("pages")
    if not isinstance(pages, list) or not pages:
        return None
    for number, bounds in enumerate(pages, start=1):
        if isinstance(bounds, (list, tuple)) and len(bounds) == 2 and offset < int(bounds[1]):
            return number
    return len(pages) if offset <= int(pages[-1][1]) else None


class _DocumentSource(Protocol):
    def get(self, doc_id: str) -> Document: ...


@dataclasses.dataclass
class _Pages:
    """Where a span's page is read: the documents a verdict was given, else the store.

    A span gets a page only when its text is the text at its offsets (fail closed: a
    document sent under a stored chunk's id but with other text gets no page).
    """

    store: _DocumentSource | None
    given: Mapping[str, Document]

    def _stored(self, doc_id: str) -> Document | None:
        if self.store is None:
            return None
        try:
            return self.store.get(doc_id)
        except (InputError, KeyError):
            return None

    def page(self, doc_id: str, start: int, end: int, text: str) -> int | None:
        doc = self.given.get(doc_id)
        if doc is not None and doc.text[start:end] != text:
            return None
        if doc is not None and isinstance(doc.metadata.get("pages"), list):  # a whole PDF was sent
            return page_of(doc.metadata, start)
        chunk = self._stored(doc_id)
        if chunk is None or chunk.text[start:end] != text or (doc is not None and doc.text != chunk.text):
            return None
        if isinstance(chunk.metadata.get("pages"), list):  # a stored PDF that was not chunked
            return page_of(chunk.metadata, start)
        parent_id = chunk.metadata.get("parent_id")
        parent = self._stored(str(parent_id)) if parent_id is not None else None
        if parent is None:
            return None
        return page_of(parent.metadata, int(chunk.metadata.get("start", 0)) + start)

    def span(self, span: Span) -> Span:
        return dataclasses.replace(span, page=self.page(span.doc_id, span.start, span.end, span.text))

    def claim(self, claim: ClaimRef) -> ClaimRef:
        return dataclasses.replace(claim, page=self.page(claim.doc_id, claim.start, claim.end, claim.text))


def span_page(store: _DocumentSource, span: Span) -> int | None:
    """The PDF page of a span into a stored chunk: its offset into the parent, in the parent's page list.

    ``None`` when the span's document is not a PDF, is not in ``store`` or has other text there.
    """
    return _Pages(store, {}).page(span.doc_id, span.start, span.end, span.text)


def with_pages(
    verdict: Verdict, store: _DocumentSource | None, documents: Iterable[Document | RetrievedDoc] = ()
) -> Verdict:
    """``verdict`` with ``page`` set on every span into a PDF document.

    The spans of the answer's sentences and passages, the suspicious spans of each
    document's signals and both claims of each conflict. A span's document is looked up
    among ``documents`` (what ``screen`` / ``verify`` were given: a whole PDF document
    carries its ``pages``; a chunk is matched to ``store`` by id and text), then in ``store``
    (``None``: no store).
    """
    given = {d.id: (d.document if isinstance(d, RetrievedDoc) else d) for d in documents}
    pages = _Pages(store, given)

    def spans(items: tuple[Span, ...]) -> tuple[Span, ...]:
        return tuple(pages.span(s) for s in items)

    def sentences(items: tuple[AnswerSentence, ...]) -> tuple[AnswerSentence, ...]:
        return tuple(dataclasses.replace(s, spans=spans(s.spans)) for s in items)

    screenings = tuple(
        dataclasses.replace(d, signals=tuple(dataclasses.replace(r, spans=spans(r.spans)) for r in d.signals))
        for d in verdict.documents
    )
    return dataclasses.replace(
        verdict,
        sentences=sentences(verdict.sentences),
        dropped_sentences=sentences(verdict.dropped_sentences),
        passages=tuple(dataclasses.replace(p, spans=spans(p.spans)) for p in verdict.passages),
        documents=screenings,
        conflicts=tuple(
            dataclasses.replace(c, left=pages.claim(c.left), right=pages.claim(c.right)) for c in verdict.conflicts
        ),
    )


def docx_text(data: bytes) -> tuple[str, dict[str, Any]]:
    """The text of a DOCX: paragraphs and tables in order, headings as Markdown headings."""
    try:
        import docx
        from docx.table import Table
    except ImportError:
        raise InputError(INSTALL_HINT.format(kind="DOCX")) from None
    try:
        document = docx.Document(io.BytesIO(data))
        blocks = list(document.iter_inner_content())
        core_title = document.core_properties.title
    except Exception as exc:  # noqa: BLE001 - python-docx / zipfile / lxml errors on a damaged file
        raise InputError(f"damaged or unreadable DOCX ({_why(exc)})") from None
    lines: list[str] = []
    headings: list[list[Any]] = []
    title = core_title.strip() if isinstance(core_title, str) and core_title.strip() else None
    at = 0
    for block in blocks:
        if isinstance(block, Table):
            rows = [" | ".join(cell.text.strip() for cell in row.cells) for row in block.rows]
            line = "\n".join(r for r in rows if r.strip(" |"))
        else:
            text = block.text.strip()
            style = (block.style.name if block.style is not None else "") or ""
            level = _heading_level(style)
            if level and text:
                headings.append([level, text, at])
                title = title or (text if level == 1 else None)
                line = f"{'#' * level} {text}"
            else:
                line = text
        if line:
            lines.append(line)
            at += len(line) + 2
    text = "\n\n".join(lines)
    if not text.strip():
        raise InputError("no text in the DOCX")
    meta: dict[str, Any] = {"headings": headings}
    if title:
        meta["title"] = title
    return text, meta


def _heading_level(style: str) -> int:
    """1-6 for ``Title`` / ``Heading N`` paragraph styles, 0 otherwise."""
    if style.lower() == "title":
        return 1
    match = _HEADING_STYLE.match(style.strip())
    return min(int(match.group(1)), 6) if match and int(match.group(1)) > 0 else 0


__all__ = [
    "INSTALL_HINT",
    "OFFICE_EXTENSIONS",
    "PAGE_SEPARATOR",
    "docx_text",
    "join_pages",
    "office_text",
    "page_of",
    "pdf_text",
    "span_page",
    "with_pages",
]
