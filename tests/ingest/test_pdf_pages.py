"""PDF pages on every span of a verdict (issue 21): answer spans, passages, the suspicious spans
of each document's signals and both claims of a conflict, whether the PDF was sent whole or its
chunks come from a store. A span whose text is not the text at its offsets gets no page."""

from __future__ import annotations

from pathlib import Path

from ragtrust.documents import (
    ClaimRef,
    Conflict,
    Document,
    DocumentScreening,
    RetrievedDoc,
    SignalResult,
    Span,
    Verdict,
)
from ragtrust.ingest.documents_office import join_pages, span_page, with_pages
from ragtrust.ingest.store import Store
from ragtrust.testing import HashingEmbedder

PAGES = [
    "Password storage. Use a slow, salted hash for every stored password.",
    "Argon2id needs 19 MiB of memory per hash; bcrypt is the fallback.",
]
TEXT, META = join_pages(PAGES)
PDF = Document(id="guide.pdf", text=TEXT, metadata={"format": "pdf", **META})
NOTES = Document(id="notes", text="Argon2id needs 64 MiB of memory per hash in this guide.")


def _span(doc: Document, words: str) -> Span:
    at = doc.text.index(words)
    return Span(doc.id, at, at + len(words), words)


def _claim(doc: Document, words: str) -> ClaimRef:
    at = doc.text.index(words)
    return ClaimRef(doc.id, at, at + len(words), words)


def _verdict(pdf: Document, notes: Document) -> Verdict:
    """A screen verdict: a signal span and a conflict claim in each document."""
    signal = SignalResult("structural", 0.6, spans=(_span(pdf, "Password storage"), _span(pdf, "19 MiB")))
    other = SignalResult("linguistic", 0.1, spans=(_span(notes, "64 MiB"),))
    return Verdict(
        query="argon2id memory",
        trust_score=0.0,
        trust_level="VERY LOW",
        trusted=False,
        tau=0.5,
        factuality=0.0,
        consistency=1.0,
        poison_probability=0.6,
        documents=(
            DocumentScreening(pdf.id, None, 0.6, signals=(signal,)),
            DocumentScreening(notes.id, None, 0.0, signals=(other,)),
        ),
        conflicts=(Conflict(_claim(pdf, "19 MiB of memory"), _claim(notes, "64 MiB of memory"), "number", 0.9),),
        stage="screen",
    )


def _pages(verdict: Verdict) -> tuple[list[int | None], list[int | None], list[int | None]]:
    signals = [[s.page for r in d.signals for s in r.spans] for d in verdict.documents]
    (conflict,) = verdict.conflicts
    return signals[0], signals[1], [conflict.left.page, conflict.right.page]


def test_signal_and_conflict_spans_of_a_pdf_sent_whole_carry_their_page() -> None:
    paged = with_pages(_verdict(PDF, NOTES), None, [RetrievedDoc(PDF), NOTES])
    assert _pages(paged) == ([1, 2], [None], [2, None])


def test_spans_into_chunks_of_a_stored_pdf_carry_their_page(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "kb", HashingEmbedder(), create=True)
    store.add([PDF, NOTES])
    chunk, notes = store.get("guide.pdf#0"), store.get("notes#0")
    assert "pages" not in chunk.metadata  # the page list stays with the parent
    verdict = _verdict(chunk, notes)
    assert _pages(with_pages(verdict, store, [chunk, notes])) == ([1, 2], [None], [2, None])
    assert _pages(with_pages(verdict, store)) == ([1, 2], [None], [2, None])  # ask: nothing given, all stored
    assert _pages(with_pages(verdict, None, [chunk, notes])) == ([None, None], [None], [None, None])  # no store


def test_a_document_sent_under_a_stored_id_with_other_text_gets_no_page(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "kb", HashingEmbedder(), create=True)
    store.add([PDF])
    forged = Document(id="guide.pdf#0", text=PDF.text.replace("a slow, salted", "a fast, plain"))
    verdict = _verdict(forged, NOTES)
    assert _pages(with_pages(verdict, store, [forged, NOTES])) == ([None, None], [None], [None, None])
    # a span whose text is not at its offsets in the stored chunk
    assert span_page(store, Span("guide.pdf#0", 0, 16, "Password handlin")) is None
    assert span_page(store, Span("guide.pdf#0", 0, 16, "Password storage")) == 1
