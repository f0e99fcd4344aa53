"""PDF and DOCX loaders (issue 21): page boundaries in a PDF's metadata and ``p. N`` in the
CLI's cited spans, DOCX paragraphs / tables / headings, one skipped line for an encrypted,
damaged or text-less file and for a missing ``docs`` extra. The files are built here: the
PDFs by hand (a text object per page), the DOCX with python-docx."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtrust.cli.main import app
from ragtrust.ingest.chunker import chunk_document
from ragtrust.ingest.documents_office import PAGE_SEPARATOR, page_of
from ragtrust.ingest.loaders import SUPPORTED_EXTENSIONS, load_paths

pytest.importorskip("pypdf")
pytest.importorskip("docx")

PAGES = [
    "Password storage. Use a slow, salted hash for every stored password.",
    "Argon2id is the first choice for password hashing; bcrypt is the fallback.",
    "Session identifiers must be long, random and rotated after login.",
]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A minimal PDF 1.4 with one Helvetica text object per page (offsets in the xref computed)."""
    n = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages):
        shown = f"({_escape(text)}) Tj" if text else ""
        content = f"BT /F1 11 Tf 40 700 Td {shown} ET".encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    info = None
    if title is not None:
        objects.append(f"<< /Title ({_escape(title)}) >>".encode())
        info = len(objects)
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{off:010d} 00000 n \n".encode() for off in offsets)
    trailer = f"/Size {len(objects) + 1} /Root 1 0 R" + (f" /Info {info} 0 R" if info else "")
    out += f"trailer\n<< {trailer} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def encrypted_pdf(user_password: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(PAGES))))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def make_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Secure Storage Guide", 0)
    document.add_paragraph("This guide covers secrets at rest.")
    document.add_heading("Passwords", level=1)
    document.add_paragraph("Hash passwords with Argon2id.")
    document.add_heading("Parameters", level=2)
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([("algorithm", "memory"), ("argon2id", "19 MiB")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_paragraph("Tune the cost to about one second.")
    document.save(str(path))
    return path


def test_the_extensions_are_registered() -> None:
    assert ".pdf" in SUPPORTED_EXTENSIONS and ".docx" in SUPPORTED_EXTENSIONS


def test_a_pdf_loads_page_by_page_with_page_boundaries(tmp_path: Path) -> None:
    (tmp_path / "guide.pdf").write_bytes(make_pdf(PAGES, title="Storage guide"))
    report = load_paths([tmp_path / "guide.pdf"])
    assert report.skipped == []
    (doc,) = report.documents
    assert doc.id == "guide.pdf" and doc.metadata["format"] == "pdf"
    assert doc.metadata["page_count"] == 3 and doc.metadata["title"] == "Storage guide"
    assert doc.text == PAGE_SEPARATOR.join(PAGES)
    for number, ((start, end), page) in enumerate(zip(doc.metadata["pages"], PAGES, strict=True), start=1):
        assert doc.text[start:end] == page
        assert page_of(doc.metadata, start) == page_of(doc.metadata, end - 1) == number
    assert page_of(doc.metadata, doc.text.index("Argon2id")) == 2


def test_an_empty_page_keeps_the_numbering(tmp_path: Path) -> None:
    (tmp_path / "gap.pdf").write_bytes(make_pdf([PAGES[0], "", PAGES[2]]))
    (doc,) = load_paths([tmp_path / "gap.pdf"]).documents
    start, end = doc.metadata["pages"][1]
    assert start == end
    assert page_of(doc.metadata, doc.text.index("Session")) == 3


def test_chunks_leave_the_page_list_with_the_parent(tmp_path: Path) -> None:
    (tmp_path / "guide.pdf").write_bytes(make_pdf(PAGES))
    (doc,) = load_paths([tmp_path / "guide.pdf"]).documents
    chunks = chunk_document(doc, 16, 0)
    assert len(chunks) > 1 and all("pages" not in c.metadata for c in chunks)
    assert {page_of(doc.metadata, c.metadata["start"]) for c in chunks} == {1, 2, 3}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (lambda: encrypted_pdf("secret"), "encrypted PDF (needs a password)"),
        (lambda: b"%PDF-1.4\nnot really a pdf\n", "damaged or unreadable PDF"),
        (lambda: make_pdf(["", ""]), "no text layer in the PDF"),
    ],
)
def test_unreadable_pdfs_are_skipped_with_one_line(tmp_path: Path, data: object, reason: str) -> None:
    (tmp_path / "bad.pdf").write_bytes(data())  # type: ignore[operator]
    (tmp_path / "ok.md").write_text("# Ok\n\nStill loaded.\n", encoding="utf-8")
    report = load_paths([tmp_path])
    assert [d.id.rsplit("/", 1)[-1] for d in report.documents] == ["ok.md"]
    ((where, why),) = report.skipped
    assert where.endswith("bad.pdf") and reason in why and "\n" not in why


def test_a_permissions_only_lock_still_reads(tmp_path: Path) -> None:
    (tmp_path / "locked.pdf").write_bytes(encrypted_pdf(""))
    (doc,) = load_paths([tmp_path / "locked.pdf"]).documents
    assert "Argon2id" in doc.text and doc.metadata["page_count"] == 3


def test_a_docx_keeps_paragraphs_tables_and_headings(tmp_path: Path) -> None:
    report = load_paths([make_docx(tmp_path / "guide.docx")])
    assert report.skipped == []
    (doc,) = report.documents
    assert doc.metadata["format"] == "docx" and doc.metadata["title"] == "Secure Storage Guide"
    assert doc.text.startswith("# Secure Storage Guide\n\nThis guide covers secrets at rest.")
    assert "\n\n# Passwords\n\nHash passwords with Argon2id.\n\n## Parameters\n\n" in doc.text
    assert "algorithm | memory\nargon2id | 19 MiB" in doc.text
    assert doc.text.endswith("Tune the cost to about one second.")
    headings = doc.metadata["headings"]
    assert [(level, title) for level, title, _ in headings] == [
        (1, "Secure Storage Guide"),
        (1, "Passwords"),
        (2, "Parameters"),
    ]
    assert all(doc.text[offset:].lstrip("#").strip().startswith(title) for _, title, offset in headings)
    chunks = chunk_document(doc, 12, 0)
    assert any(c.metadata["heading"] == "Parameters" for c in chunks)


def test_a_damaged_docx_is_skipped_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.docx").write_bytes(b"PK\x03\x04 not a zip archive")
    ((where, why),) = load_paths([tmp_path / "bad.docx"]).skipped
    assert where.endswith("bad.docx") and why.startswith("damaged or unreadable DOCX") and "\n" not in why


@pytest.mark.parametrize(("module", "suffix", "kind"), [("pypdf", ".pdf", "PDF"), ("docx", ".docx", "DOCX")])
def test_without_the_extra_the_file_is_skipped_naming_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, suffix: str, kind: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import fails as when the extra is missing
    (tmp_path / f"doc{suffix}").write_bytes(make_pdf(PAGES) if suffix == ".pdf" else b"PK\x03\x04")
    ((_, why),) = load_paths([tmp_path / f"doc{suffix}"]).skipped
    assert why == f"reading {kind} files needs the docs extra: pip install 'ragtrust[docs]'"


# --------------------------------------------------------------------------- p. N in the CLI's spans


@pytest.mark.usefixtures("cli_fakes")
def test_cli_spans_show_the_pdf_page(tmp_path: Path) -> None:
    (tmp_path / "guide.pdf").write_bytes(make_pdf(PAGES))
    ingested = runner.invoke(app, ["ingest", "guide.pdf", "--store", "kb", "--json"])
    assert ingested.exit_code == 0, ingested.output
    result = runner.invoke(
        app, ["ask", "Which algorithm is the first choice for password hashing?", "--store", "kb", "--spans"]
    )
    assert result.exit_code in (0, 3), result.output
    flat = " ".join(result.stdout.split())
    assert "guide.pdf#" in flat and "p. 2" in flat, result.stdout


runner = CliRunner()


@pytest.mark.usefixtures("cli_fakes")
def test_cli_json_spans_carry_the_pdf_page(tmp_path: Path) -> None:
    (tmp_path / "guide.pdf").write_bytes(make_pdf(PAGES))
    (tmp_path / "notes.md").write_text("Bcrypt with a cost of 12 is a fallback for password hashing.\n")
    ingested = runner.invoke(app, ["ingest", "guide.pdf", "notes.md", "--store", "kb", "--json"])
    assert ingested.exit_code == 0, ingested.output
    result = runner.invoke(
        app, ["ask", "Which algorithm is the first choice for password hashing?", "--store", "kb", "--json"]
    )
    assert result.exit_code in (0, 3), result.output
    verdict = json.loads(result.stdout)
    spans = [s for sentence in verdict["sentences"] for s in sentence["spans"]]
    spans += [s for passage in verdict["passages"] for s in passage["spans"]]
    pdf = [s for s in spans if s["doc_id"].startswith("guide.pdf")]
    assert pdf, verdict
    for span in pdf:
        (number,) = [n for n, page in enumerate(PAGES, start=1) if span["text"] in page]
        assert span["page"] == number
    assert 2 in {s["page"] for s in pdf}
    assert all(s["page"] is None for s in spans if not s["doc_id"].startswith("guide.pdf"))


def test_a_truncated_pdf_is_one_skipped_line_and_no_stray_library_warnings(tmp_path: Path) -> None:
    # pypdf logs "EOF marker not found" and the like; with no logging set up Python's last-resort
    # handler printed them to stderr: lines naming no file, before the skipped-files table
    data = make_pdf(["Use TLS 1.2 or later."])
    (tmp_path / "cut.pdf").write_bytes(data[: len(data) // 2])
    code = f"from ragtrust.ingest.loaders import load_paths; print(load_paths([{str(tmp_path / 'cut.pdf')!r}]).skipped)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert "damaged or unreadable PDF" in done.stdout or "no text layer" in done.stdout, done.stdout
    assert done.stderr == ""
