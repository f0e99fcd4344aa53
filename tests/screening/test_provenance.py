from __future__ import annotations

from pathlib import Path

from ragtrust import registry
from ragtrust.documents import Document, RetrievedDoc
from ragtrust.ingest.ledger import Ledger
from ragtrust.ingest.store import Store
from ragtrust.screening.provenance import ProvenanceSignal
from ragtrust.testing import HashingEmbedder

GUIDE = (
    "# Key sizes\n\nRSA keys must be at least 2048 bits long. "
    "Keys shorter than that can be factored by well-funded attackers.\n\n"
    "# Rotation\n\nRotate signing keys every year and after any suspected compromise."
)


def _retrieved(store: Store, chunk_id: str) -> RetrievedDoc:
    return RetrievedDoc(store.get(chunk_id), 0.8, 1)


def test_in_place_edit_after_vetting_is_flagged_end_to_end(tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "keys.md").write_text(GUIDE, encoding="utf-8")
    from ragtrust.ingest.loaders import load_paths

    store = Store.open(tmp_path / "store", HashingEmbedder(), create=True)
    store.add(load_paths([folder]).documents, tier="vetted")
    signal = ProvenanceSignal(store.ledger)
    clean = signal.score_batch([RetrievedDoc(d) for d in store.documents()])
    assert all(r.score == 0.0 and not r.skipped for r in clean)

    # entity swap in place: 2048 -> 512, then re-ingest the same folder
    (folder / "keys.md").write_text(GUIDE.replace("2048", "512"), encoding="utf-8")
    report = store.add(load_paths([folder]).documents)
    assert report.updated == 1
    results = signal.score_batch([RetrievedDoc(d) for d in store.documents()])
    flagged = [r for r in results if r.score >= 0.9]
    assert flagged, results
    reason = flagged[0].reasons[0]
    assert reason.startswith("content changed since vetted on 20")
    assert any("512" in s.text for s in flagged[0].spans)
    doc = next(d for d in store.documents() if "512" in d.text)
    span = next(s for s in flagged[0].spans if "512" in s.text)
    assert doc.text[span.start : span.end] == span.text


def test_only_the_edited_passage_is_flagged(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    ledger.record(Document(id="g", text=GUIDE), "g.md", tier="vetted")
    ledger.record(Document(id="g", text=GUIDE.replace("every year", "every decade")), "g.md")
    signal = ProvenanceSignal(ledger)
    untouched = RetrievedDoc(
        Document(id="g#0", text="RSA keys must be at least 2048 bits long.", metadata={"parent_id": "g"})
    )
    edited = RetrievedDoc(
        Document(
            id="g#1",
            text="Rotate signing keys every decade and after any suspected compromise.",
            metadata={"parent_id": "g"},
        )
    )
    r_untouched, r_edited = signal.score_batch([untouched, edited])
    assert r_untouched.score == 0.15 and "this passage is unchanged" in r_untouched.reasons[0]
    assert r_edited.score == 0.9 and [s.text for s in r_edited.spans] == ["decade"]


def test_tiers_unknown_and_no_ledger(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    ledger.record(Document(id="q", text="quarantined text"), "q.md")
    ledger.set_tier("q", "quarantined", "manual review")
    ledger.record(Document(id="u", text="unvetted text"), "https://wiki.example/u", tier="unvetted")
    ledger.record(Document(id="n", text="no tier text"), "n.md")
    signal = ProvenanceSignal(ledger)
    docs = [
        RetrievedDoc(Document(id=i, text=t))
        for i, t in (("q#0", "quarantined text"), ("u", "unvetted text"), ("n", "no tier text"), ("zz", "unknown"))
    ]
    q, u, n, zz = signal.score_batch(docs)
    assert q.score == 0.95 and q.reasons[0].startswith("quarantined on 20") and "manual review" in q.reasons[0]
    assert u.score == 0.4 and "unvetted source (https://wiki.example/u)" in u.reasons[0]
    assert n.score == 0.0 and not n.skipped
    assert zz.skipped and "not in the provenance ledger" in zz.skip_reason
    assert all(r.skipped for r in ProvenanceSignal(None).score_batch(docs))


def test_registered_and_built_with_a_ledger(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    registry._loaded.discard("signal")
    assert "provenance" in registry.registered("signal")
    built = registry.build("signal", "provenance", ledger=ledger, nli=None)
    assert isinstance(built, ProvenanceSignal) and built.ledger is ledger and built.document_level


def test_quarantine_is_a_structured_flag_that_the_pipeline_can_read(tmp_path: Path) -> None:
    from ragtrust.screening.provenance import ledger_quarantine_note, quarantine_note

    ledger = Ledger(tmp_path / "l.sqlite")
    ledger.record(Document(id="q", text="quarantined text"), "q.md", tier="vetted")
    ledger.set_tier("q", "quarantined", "scan: P=0.91 on q#0")
    ledger.record(Document(id="v", text="vetted text"), "v.md", tier="vetted")
    quarantined = RetrievedDoc(Document(id="q#0", text="quarantined text"))
    vetted = RetrievedDoc(Document(id="v", text="vetted text"))
    q, v = ProvenanceSignal(ledger).score_batch([quarantined, vetted])

    assert q.details["tier"] == "quarantined" and q.details["quarantined"] is True
    assert "quarantined" not in v.details and v.details["tier"] == "vetted"
    assert quarantine_note([q]) == q.reasons[0] and "scan: P=0.91 on q#0" in q.reasons[0]
    assert quarantine_note([v]) is None
    # the flag is read from the provenance finding only, and only when it ran
    assert quarantine_note([ProvenanceSignal(None).skipped("no ledger")]) is None
    # asked of the ledger directly (provenance signal not configured), with the same words
    assert ledger_quarantine_note(ledger, quarantined) == q.reasons[0]
    assert ledger_quarantine_note(ledger, vetted) is None
    assert ledger_quarantine_note(ledger, RetrievedDoc(Document(id="zz", text="unknown"))) is None
