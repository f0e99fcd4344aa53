"""The claim-conflict signal (issue 15): pool, witnesses, attribution, caps, and the Screener.

Most cases use the deterministic fakes (``min_cosine=0.3``: the hashing embedder spreads
cosines lower than a sentence model); the ``model`` tests run the same scenarios with the
shipped NLI model and embedder (its ``claim_conflict`` ramp calibrated in the manifest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from tests.screening.conftest import CountingEmbedder, NeutralNLI

from ragtrust import registry
from ragtrust.config import load_settings
from ragtrust.documents import ClaimRef, Conflict, Document, RetrievedDoc, SignalResult
from ragtrust.errors import ModelError
from ragtrust.ingest.ledger import Ledger
from ragtrust.screening.aggregate import Screener
from ragtrust.screening.claims import extract_claims
from ragtrust.screening.conflicts import CLAIM_CONFLICT, ClaimConflictSignal, conflicts_from
from ragtrust.testing import HashingEmbedder, LexicalNLI, RaisingNLI, retrieved

LONG = "A queen bee lives two to five years in the hive."
LONG_REWORDED = "In the hive, a queen bee lives two to five years."
SHORT = "A queen bee lives about three weeks in the hive."
ARGON = "Argon2id is the recommended password hashing algorithm today."
HONEY = "Honey keeps for years in a sealed jar at room temperature."


@dataclass
class BadShapeEmbedder:
    model_id: str = "bad-shape"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.ones((len(texts) + 1, 8), dtype=np.float32)


@dataclass
class BadShapeNLI:
    model_id: str = "bad-shape-nli"

    def predict(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        return np.ones((len(pairs), 2), dtype=np.float32)


def fake_signal(**params: Any) -> ClaimConflictSignal:
    params.setdefault("nli", LexicalNLI())
    params.setdefault("embedder", HashingEmbedder())
    params.setdefault("min_cosine", 0.3)
    return ClaimConflictSignal(**params)


def doc(doc_id: str, text: str, **metadata: Any) -> RetrievedDoc:
    return RetrievedDoc(Document(id=doc_id, text=text, url=f"file://{doc_id}.md", metadata=metadata), 0.8, 1)


def conflicts(results: Sequence[SignalResult]) -> list[Conflict]:
    return conflicts_from(results)


# ---------------------------------------------------------------------------------- attribution
def test_the_poisoned_document_is_blamed_by_two_independent_witnesses() -> None:
    results = fake_signal().score_batch([doc("a", LONG), doc("b", LONG_REWORDED), doc("p", SHORT)])
    assert [r.name for r in results] == [CLAIM_CONFLICT] * 3
    assert results[0].score == 0.0 and results[1].score == 0.0
    assert results[2].score == pytest.approx(0.9)
    found = conflicts(results)
    assert len(found) == 2
    for c in found:
        assert c.blamed == "p"
        assert c.resolution == "2 independent sources against 1"
        assert c.kind == "number"
        assert "p" in c.doc_ids
    assert all(r.reasons[0].startswith("is contradicted by") for r in results[2:])
    assert results[0].reasons[0].startswith("conflicts with p")
    # resolved conflicts weigh half: C = 1 - 0.9 / 2
    assert results[0].details["consistency"] == pytest.approx(0.55)


@dataclass
class ContradictingNLI:
    """An NLI model that calls every pair a contradiction: what only NLI would find."""

    model_id: str = "contradicting-nli"
    pairs_seen: int = 0

    def predict(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        self.pairs_seen += len(pairs)
        return np.tile(np.array([0.0, 0.0, 1.0], dtype=np.float32), (len(pairs), 1))


def test_without_the_nli_check_agreement_still_settles_the_blame() -> None:
    results = fake_signal(nli_contradiction=False).score_batch(
        [doc("a", LONG), doc("b", LONG_REWORDED), doc("p", SHORT)]
    )
    found = conflicts(results)
    assert {(c.blamed, c.resolution, c.kind) for c in found} == {("p", "2 independent sources against 1", "number")}
    assert all(c.contradiction is None for c in found)  # the NLI model never read these pairs
    assert results[0].details["nli_pairs"] > 0  # it was asked whether a and b agree


def test_without_the_nli_check_what_only_nli_sees_is_no_conflict_and_costs_nothing() -> None:
    texts = [ARGON, "Argon2id is the recommended password hashing algorithm for servers."]
    on = fake_signal(nli=ContradictingNLI()).score_batch(retrieved(texts))
    assert [c.kind for c in conflicts(on)] == ["nli"]
    nli = ContradictingNLI()
    off = fake_signal(nli=nli, nli_contradiction=False).score_batch(retrieved(texts))
    assert conflicts(off) == [] and nli.pairs_seen == 0 and off[0].details["nli_pairs"] == 0
    assert off[0].details["aligned_pairs"] == 1  # aligned, diffed, not sent to NLI


def test_one_against_one_is_contested() -> None:
    signal = fake_signal()
    results = signal.score_batch([doc("a", LONG), doc("p", SHORT)])
    (c,) = conflicts(results)
    assert c.blamed is None
    assert c.resolution.startswith("contested")
    expected = signal.contested_factor * c.strength
    assert [r.score for r in results] == pytest.approx([expected, expected])
    assert results[0].details["consistency"] == pytest.approx(1 - c.strength)


def test_the_contested_factor_scales_both_sides() -> None:
    results = fake_signal(contested_factor=0.2).score_batch([doc("a", LONG), doc("p", SHORT)])
    (c,) = conflicts(results)
    assert [r.score for r in results] == pytest.approx([0.2 * c.strength] * 2)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (doc("kb#0", LONG), doc("kb#1", LONG_REWORDED)),
        (doc("part-a", LONG, parent_id="kb"), doc("part-b", LONG_REWORDED, parent_id="kb")),
    ],
    ids=["chunk-ids", "parent-id-metadata"],
)
def test_chunks_of_one_parent_count_once(first: RetrievedDoc, second: RetrievedDoc) -> None:
    results = fake_signal().score_batch([first, second, doc("p", SHORT)])
    found = conflicts(results)
    assert len(found) == 2
    assert all(c.blamed is None and c.resolution == "contested: 1 source(s) against 1" for c in found)
    assert results[2].score == pytest.approx(0.45)


def test_near_duplicate_witnesses_count_once() -> None:
    extra = " Queens are fed royal jelly by the workers."
    near = " Queens are fed royal jelly by workers."
    duplicates = fake_signal().score_batch([doc("x", LONG + extra), doc("y", LONG + near), doc("p", SHORT)])
    assert all(c.blamed is None for c in conflicts(duplicates))
    # control: two different texts stating the same fact are two sources
    different = " Drones die after mating in early summer."
    independent = fake_signal().score_batch([doc("x", LONG + extra), doc("y", LONG + different), doc("p", SHORT)])
    assert {c.blamed for c in conflicts(independent)} == {"p"}


def test_a_store_witness_testifies_but_gets_no_result() -> None:
    nli = LexicalNLI()
    results = fake_signal(nli=nli).score_batch([doc("a", LONG), doc("p", SHORT)], witnesses=[doc("w", LONG_REWORDED)])
    assert len(results) == 2
    assert results[0].score == 0.0 and results[1].score == pytest.approx(0.9)
    found = conflicts(results)
    assert {c.blamed for c in found} == {"p"}
    assert {c.resolution for c in found} == {"2 independent sources against 1"}
    store_sides = [side for c in found for side in (c.left, c.right) if side.doc_id == "w"]
    assert store_sides and all(side.origin == "store" for side in store_sides)
    assert any("w (from the store)" in reason for reason in results[1].reasons)
    assert results[0].details["witnesses"] == 1


def test_a_witness_already_retrieved_is_not_counted_twice() -> None:
    results = fake_signal().score_batch([doc("a", LONG), doc("p", SHORT)], witnesses=[doc("a", LONG)])
    assert all(c.blamed is None for c in conflicts(results))
    assert results[0].details["witnesses"] == 0


def test_witnesses_that_disagree_with_each_other_are_not_compared() -> None:
    nli = LexicalNLI()
    results = fake_signal(nli=nli).score_batch([doc("r", ARGON)], witnesses=[doc("w1", LONG), doc("w2", SHORT)])
    assert results[0].score == 0.0
    assert conflicts(results) == []
    assert results[0].details["aligned_pairs"] == 0 and nli.pairs_seen == 0


def test_a_document_stating_both_sides_is_blamed() -> None:
    results = fake_signal().score_batch([doc("x", f"{LONG} {SHORT}"), doc("y", LONG_REWORDED)])
    found = conflicts(results)
    assert found and all(c.blamed == "x" for c in found)
    resolutions = {c.resolution for c in found}
    assert resolutions == {"the document contradicts itself", "states both sides of the conflict"}
    assert results[0].score == pytest.approx(0.9)
    assert results[1].score == 0.0
    assert any("itself" in reason for reason in results[0].reasons)


def test_a_self_contradiction_alone_scores_the_intra_factor() -> None:
    signal = fake_signal(intra_factor=0.5)
    (result,) = signal.score_batch([doc("x", f"{LONG} {SHORT}")])
    (c,) = conflicts([result])
    assert c.doc_ids == ("x", "x") and c.blamed == "x"
    assert result.score == pytest.approx(0.5 * c.strength)


def _ledger(tmp_path: Path, vetted: str, edited: str) -> Ledger:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.record(Document(id="kb", text=vetted), "kb.md", tier="vetted")
    ledger.record(Document(id="kb", text=edited), "kb.md")
    return ledger


def test_the_vetted_version_blames_the_edit(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, "Use a 64-bit nonce.", "Use a 32-bit nonce.")
    signal = fake_signal(ledger=ledger)
    (result,) = signal.score_batch([doc("kb#0", "Use a 32-bit nonce.", parent_id="kb")])
    (c,) = conflicts([result])
    assert result.score == pytest.approx(0.9)
    assert c.blamed == "kb#0"
    assert c.resolution == "the vetted version says otherwise"
    assert (c.left.origin, c.right.origin) == ("retrieved", "vetted")
    assert c.right.text == "Use a 64-bit nonce."
    assert result.details["witnesses"] == 1
    assert "its vetted version" in result.reasons[0]


def test_an_antonym_swapped_into_a_vetted_page_is_blamed_on_the_edit(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, "Keep the firewall enabled on laptops.", "Keep the firewall disabled on laptops.")
    signal = fake_signal(ledger=ledger, nli=NeutralNLI())
    (result,) = signal.score_batch([doc("kb#0", "Keep the firewall disabled on laptops.", parent_id="kb")])
    (c,) = conflicts([result])
    assert (c.kind, c.blamed, c.resolution) == ("antonym", "kb#0", "the vetted version says otherwise")
    assert {c.left_words, c.right_words} == {"enabled", "disabled"}


def test_a_vetted_page_listing_both_cases_is_no_witness_against_its_unchanged_claims(tmp_path: Path) -> None:
    vetted = (
        "Identify the synchronous calls between services. Identify the asynchronous calls between services. "
        "Record every call in the inventory."
    )
    edited = vetted.replace("Record every call", "Record some calls")
    ledger = _ledger(tmp_path, vetted, edited)
    (result,) = fake_signal(ledger=ledger, nli=NeutralNLI()).score_batch([doc("kb#0", edited, parent_id="kb")])
    assert all(c.kind != "antonym" for c in conflicts([result]))


def test_an_antonym_in_two_chunks_of_one_document_is_no_conflict() -> None:
    # one page's checklist gives both cases; two chunks of it are one document
    left = doc("page#0", "Identify the synchronous calls between services.", parent_id="page")
    right = doc("page#1", "Identify the asynchronous calls between services.", parent_id="page")
    assert conflicts(fake_signal(nli=NeutralNLI()).score_batch([left, right])) == []
    other = doc("other#0", "Identify the asynchronous calls between services.", parent_id="other")
    (c,) = conflicts(fake_signal(nli=NeutralNLI()).score_batch([left, other]))
    assert c.kind == "antonym"


def test_the_vetted_diff_reports_the_changed_words(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, "Use a 64-bit nonce.", "Use a 32-bit nonce.")
    (result,) = fake_signal(ledger=ledger, nli=NeutralNLI()).score_batch(
        [doc("kb#0", "Use a 32-bit nonce.", parent_id="kb")]
    )
    (c,) = conflicts([result])
    assert (c.kind, c.left_words, c.right_words) == ("number", "32", "64")
    assert c.blamed == "kb#0"


def test_a_tie_between_diff_and_nli_keeps_the_diff(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, "Use a 64-bit nonce.", "Use a 32-bit nonce.")
    (result,) = fake_signal(ledger=ledger).score_batch([doc("kb#0", "Use a 32-bit nonce.", parent_id="kb")])
    (c,) = conflicts([result])
    assert (c.kind, c.left_words, c.right_words) == ("number", "32", "64")


def test_an_unchanged_chunk_of_an_edited_document_has_no_vetted_witness(tmp_path: Path) -> None:
    ledger = _ledger(
        tmp_path, "Use a 64-bit nonce. Rotate keys every year.", "Use a 32-bit nonce. Rotate keys every year."
    )
    (result,) = fake_signal(ledger=ledger).score_batch([doc("kb#1", "Rotate keys every year.", parent_id="kb")])
    assert result.details["witnesses"] == 0
    assert result.score == 0.0


def test_an_unvetted_source_is_blamed_against_a_vetted_one(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.record(Document(id="good", text=LONG), "good.md", tier="vetted")
    ledger.record(Document(id="bad", text=SHORT), "bad.md", tier="unvetted")
    results = fake_signal(ledger=ledger).score_batch([doc("good", LONG), doc("bad", SHORT)])
    (c,) = conflicts(results)
    assert c.blamed == "bad"
    assert c.resolution == "an unvetted source against a vetted one"
    assert results[0].score == 0.0 and results[1].score == pytest.approx(0.9)


# ---------------------------------------------------------------------------------- no conflict
def test_unrelated_neighbours_give_no_conflict() -> None:
    nli = LexicalNLI()
    results = fake_signal(nli=nli).score_batch(retrieved([LONG, ARGON, HONEY]))
    assert [r.score for r in results] == [0.0, 0.0, 0.0]
    assert conflicts(results) == []
    assert all(r.details["consistency"] == 1.0 and r.details["aligned_pairs"] == 0 for r in results)
    assert nli.calls == 0


def test_parallel_statements_about_two_subjects_are_no_conflict() -> None:
    """Each side's changed name is its own document's subject, even when function words changed with it."""
    california = doc("ca", "What books are still banned in California? Very few books are still banned in California.")
    england = doc(
        "en",
        "Are there still books that are banned by the law in England? What are they? "
        "No, very few books (if any) are still banned in England.",
    )
    assert conflicts(fake_signal(nli=NeutralNLI()).score_batch([california, england])) == []
    # the swap of the answer's name, with the question unchanged, is still found
    swapped = doc("p", "What books are still banned in California? Very few books are still banned in Massachusetts.")
    (c,) = conflicts(fake_signal(nli=NeutralNLI()).score_batch([california, swapped]))
    assert c.kind == "entity" and {c.left_words, c.right_words} == {"California", "Massachusetts"}


def test_a_claim_that_leans_on_another_sentence_meets_only_its_own_version() -> None:
    """ "That holds" is compared across documents only when the sentence it leans on says the same."""
    verdicts = [
        doc(
            "a",
            "Does the evidence back the statement that Asylum Records is an American record label founded in 1979 "
            "by Emma Stone? That does not hold, according to the reference material. Claim under review: Asylum "
            "Records is an American record label founded in 1979 by Emma Stone.",
        ),
        doc(
            "b",
            "Can it be confirmed that Asylum Records is an American record label founded in 1971 by two people? "
            "That holds, according to the reference material. Claim under review: Asylum Records is an American "
            "record label founded in 1971 by two people.",
        ),
    ]
    found = conflicts(fake_signal(nli=NeutralNLI()).score_batch(verdicts))
    assert all("hold" not in c.left.text for c in found), found
    # the same sentence edited in a copy of the document: what it leans on is unchanged, so it is compared
    original = doc(
        "o", "Output encoding is applied to every page that echoes user input. It must be applied on the server."
    )
    edited = doc(
        "e", "Output encoding is applied to every page that echoes user input. It may be applied on the server."
    )
    (c,) = conflicts(fake_signal(nli=NeutralNLI()).score_batch([original, edited]))
    assert c.kind == "modal"


EDITED_CONTEXT = (
    "Cross-site request forgery tokens protect every state-changing form in the application. "
    "The framework generates a new token for each user session and checks it on submission. "
)


@pytest.mark.parametrize(
    "poisoned",
    [
        EDITED_CONTEXT + "Encode the output on every page. It may be applied on the server.",  # a word added before
        EDITED_CONTEXT + "Encode output on every single page. It may be applied on the server.",
        "It may be applied on the server. " + EDITED_CONTEXT,  # chunked so that the claim opens the copy
        EDITED_CONTEXT + "Legacy clients exist. Encode output on every page. It may be applied on the server.",
        EDITED_CONTEXT + "Encode output on every screen. It may be applied on the server.",  # a word replaced before
    ],
)
def test_an_edit_around_a_leaning_claim_does_not_hide_it(poisoned: str) -> None:
    """Touching the sentence before a leaning claim, or where the chunk starts, does not stop the comparison."""
    clean = doc("o", EDITED_CONTEXT + "Encode output on every page. It must be applied on the server.")
    found = conflicts(fake_signal(nli=NeutralNLI()).score_batch([clean, doc("p", poisoned)]))
    assert any(c.kind == "modal" for c in found), found


def test_a_swap_whose_own_question_names_the_original_is_the_suspect() -> None:
    """One against one, the edited document's question still names the original value."""
    clean = doc("ca", "What books are still banned in California? Very few books are still banned in California.")
    swapped = doc("p", "What books are still banned in California? Very few books are still banned in Massachusetts.")
    signal = fake_signal(nli=NeutralNLI())
    results = signal.score_batch([clean, swapped])
    (c,) = conflicts(results)
    # it scores as if blamed, but nobody is cleared: the conflict stays contested
    assert c.blamed is None and c.resolution == "contested: 1 source(s) against 1; p asks about 'California'"
    assert results[1].score == pytest.approx(c.strength)
    assert results[0].score == pytest.approx(signal.contested_factor * c.strength)
    # an edit of every mention leaves no trace: it reads as a statement about another
    # subject (the same-subject test), not as a conflict
    everywhere = doc(
        "q", "What books are still banned in Massachusetts? Very few books are still banned in Massachusetts."
    )
    assert conflicts(fake_signal(nli=NeutralNLI()).score_batch([clean, everywhere])) == []


_WARN = " Stay away from broken modes such as ECB."


@pytest.mark.parametrize(
    ("clean", "poisoned"),
    [
        # a heading names what to avoid
        (
            "# Disable TLS 1.0\n\nThe server should accept TLS 1.3 connections only.",
            "# Transport\n\nThe server should accept TLS 1.0 connections only.",
        ),
        # so may a body sentence
        (
            "Which mode should encrypt data? Use AES in an authenticated mode such as GCM." + _WARN,
            "Which mode should encrypt data? Use AES in an authenticated mode such as ECB." + _WARN,
        ),
        # a question that warns: the other side's question does not corroborate its own value
        (
            "Why is ECB mode unsafe? Use AES in an authenticated mode such as GCM.",
            "Which mode is best? Use AES in an authenticated mode such as ECB.",
        ),
        # a question of an earlier section is not the claim's question
        (
            "Is TLS 1.0 still allowed? No, it is not.\n\n## Configuration\n\n"
            "Servers should accept TLS 1.3 connections only.",
            "Which TLS 1.0 settings apply? Servers should accept TLS 1.0 connections only.",
        ),
    ],
    ids=["heading", "body", "warning-question", "earlier-section"],
)
def test_what_is_no_trace_stays_contested(clean: str, poisoned: str) -> None:
    results = fake_signal(nli=NeutralNLI()).score_batch([doc("a", clean), doc("b", poisoned)])
    (c,) = conflicts(results)
    assert c.resolution == "contested: 1 source(s) against 1" and results[0].score == results[1].score


def test_no_trace_when_each_question_names_the_other_value() -> None:
    a = doc("a", "Are books banned in Massachusetts? Very few books are still banned in California.")
    b = doc("b", "What books are still banned in California? Very few books are still banned in Massachusetts.")
    (c,) = conflicts(fake_signal(nli=NeutralNLI()).score_batch([a, b]))
    assert c.resolution == "contested: 1 source(s) against 1"


def test_agreeing_documents_give_no_conflict() -> None:
    results = fake_signal().score_batch(retrieved([LONG, LONG_REWORDED]))
    assert conflicts(results) == []
    assert [r.score for r in results] == [0.0, 0.0]


@pytest.mark.parametrize(
    "texts",
    [
        ["```python\nhashed = argon2.hash(password)\n```", "| algorithm | cost |\n| bcrypt | 12 |"],
        ["", "   "],
        ["## Heading", "What is the nonce size?"],
    ],
    ids=["code-and-table", "blank", "heading-and-question"],
)
def test_documents_without_claims_score_zero(texts: list[str]) -> None:
    results = fake_signal().score_batch(retrieved(texts))
    assert len(results) == len(texts)
    assert all(r.score == 0.0 and not r.skipped and r.details["claims"] == 0 for r in results)


def test_no_documents_no_results() -> None:
    assert fake_signal().score_batch([]) == []


# ---------------------------------------------------------------------------------- caps
def test_many_near_duplicate_claims_are_bounded() -> None:
    nli = LexicalNLI()
    signal = fake_signal(nli=nli, max_pairs=12)
    texts = [f"A queen bee lives {n} years in the hive." for n in range(300)]
    results = signal.score_batch(retrieved(texts))
    assert len(results) == 300
    details = results[0].details
    assert details["aligned_pairs"] == 12
    assert details["nli_pairs"] <= 2 * signal.max_pairs
    assert nli.pairs_seen <= 2 * signal.max_pairs
    assert any("the 12 most similar were checked" in note for note in details["notes"])
    assert all(0.0 <= r.score <= 1.0 for r in results)


@dataclass
class RecordingNLI:
    """A neutral NLI model that records the pairs it reads: the budget's choices, seen from outside."""

    model_id: str = "recording-nli"
    read: list[tuple[str, str]] = field(default_factory=list)

    def predict(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        self.read.extend(pairs)
        return np.tile(np.array([0.1, 0.8, 0.1], dtype=np.float32), (len(pairs), 1))


BEES = ["A queen bee lives for years inside the hive.", "Inside the hive a queen bee lives for years."]
HASHES = [
    "Argon2id is the recommended password hashing algorithm today.",
    "The recommended password hashing algorithm today is Argon2id.",
]


def test_the_nli_budget_reads_the_pairs_nearest_the_question() -> None:
    nli = RecordingNLI()
    signal = fake_signal(nli=nli, max_nli_pairs=1)
    results = signal.score_batch(
        retrieved([BEES[0], HASHES[0], BEES[1], HASHES[1]]), "Which password hashing is recommended?"
    )
    assert results[0].details["aligned_pairs"] == 2
    assert results[0].details["nli_pairs"] == 2 == len(nli.read)  # one pair, read both ways
    assert {frozenset(p) for p in nli.read} == {frozenset(HASHES)}
    assert any("NLI read 1 of 2 aligned claim pairs" in note for note in results[0].details["notes"])
    bees = RecordingNLI()
    fake_signal(nli=bees, max_nli_pairs=1).score_batch(
        retrieved([BEES[0], HASHES[0], BEES[1], HASHES[1]]), "How long does a queen bee live?"
    )
    assert {frozenset(p) for p in bees.read} == {frozenset(BEES)}


def test_without_a_question_the_budget_reads_the_most_similar_pairs() -> None:
    nli = RecordingNLI()
    results = fake_signal(nli=nli, max_nli_pairs=1).score_batch(retrieved([BEES[0], HASHES[0], BEES[1], HASHES[1]]))
    assert results[0].details["nli_pairs"] == 2 and len({frozenset(p) for p in nli.read}) == 1


def test_witness_pairs_are_read_only_when_a_conflict_needs_them() -> None:
    question = "How long does a queen bee live?"
    witnesses = [doc("w1", LONG), doc("w2", LONG_REWORDED)]
    # clean: the retrieved claim agrees with both witnesses; their own pair is not read
    nli = RecordingNLI()
    quiet = fake_signal(nli=nli, max_nli_pairs=10).score_batch([doc("a", LONG)], question, witnesses=witnesses)
    assert conflicts(quiet) == []
    assert quiet[0].details["nli_pairs"] == 2 * quiet[0].details["aligned_pairs"] == len(nli.read)
    unbudgeted = RecordingNLI()
    fake_signal(nli=unbudgeted, max_nli_pairs=None).score_batch([doc("a", LONG)], question, witnesses=witnesses)
    assert len(unbudgeted.read) > len(nli.read)  # without the budget the witnesses' own pair is read too
    # poisoned: the witnesses' agreement is read and settles the blame, as without a budget
    for budget in (10, 1, None):
        results = fake_signal(max_nli_pairs=budget).score_batch([doc("p", SHORT)], question, witnesses=witnesses)
        assert {(c.blamed, c.resolution) for c in conflicts(results)} == {("p", "2 independent sources against 1")}


def test_a_conflict_only_nli_sees_first_reads_the_rest() -> None:
    texts = [BEES[0], HASHES[0], BEES[1], HASHES[1]]
    results = fake_signal(nli=ArgonContradictingNLI(), max_nli_pairs=1).score_batch(
        retrieved(texts), "Which password hashing is recommended?"
    )
    assert results[0].details["aligned_pairs"] == 2
    assert results[0].details["nli_pairs"] == 4  # both pairs, both ways: the first found a conflict
    assert not any(note.startswith("NLI read") for note in results[0].details["notes"])


@pytest.mark.parametrize("nli_factory", [LexicalNLI, ContradictingNLI])
@pytest.mark.parametrize(
    "question", [None, "How long does a queen bee live?", "Which password hashing is recommended?"]
)
def test_a_conflict_found_first_reads_the_rest_as_without_a_budget(nli_factory: Any, question: str | None) -> None:
    """Once the diff or the first reads find a conflict, the set is judged exactly as without the budget."""
    texts = [LONG, HASHES[0], LONG_REWORDED, HASHES[1], SHORT, ARGON]
    budgeted = fake_signal(nli=nli_factory(), max_nli_pairs=1).score_batch(retrieved(texts), question)
    full = fake_signal(nli=nli_factory(), max_nli_pairs=None).score_batch(retrieved(texts), question)
    assert conflicts(full)  # the set holds a conflict: the budget must not change its judgement
    assert [c.to_dict() for c in conflicts(budgeted)] == [c.to_dict() for c in conflicts(full)]
    assert [r.score for r in budgeted] == [r.score for r in full]
    assert budgeted[0].details["consistency"] == full[0].details["consistency"]


@dataclass
class ArgonContradictingNLI:
    """Calls a pair a contradiction only when both sides name Argon2id."""

    model_id: str = "argon-nli"

    def predict(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        rows = [[0.0, 0.0, 1.0] if "Argon2id" in a and "Argon2id" in b else [0.1, 0.8, 0.1] for a, b in pairs]
        return np.asarray(rows, dtype=np.float32).reshape(len(pairs), 3)


def test_a_contradiction_past_the_budget_goes_unread_when_nothing_else_conflicts() -> None:
    """The trade the budget makes: NLI reads the pairs nearest the question, not the others."""
    texts = [BEES[0], HASHES[0], BEES[1], HASHES[1]]
    bees, hashes = "How long does a queen bee live?", "Which password hashing is recommended?"
    unbudgeted = fake_signal(nli=ArgonContradictingNLI(), max_nli_pairs=None)
    assert [c.kind for c in conflicts(unbudgeted.score_batch(retrieved(texts), bees))] == ["nli"]
    budgeted = fake_signal(nli=ArgonContradictingNLI(), max_nli_pairs=1)
    assert conflicts(budgeted.score_batch(retrieved(texts), bees)) == []
    assert [c.kind for c in conflicts(budgeted.score_batch(retrieved(texts), hashes))] == ["nli"]


def test_a_question_vector_of_the_wrong_size_is_a_model_error() -> None:
    @dataclass
    class ShortQuestion(HashingEmbedder):
        def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            out = super().embed(texts)
            return out[:, :8] if len(texts) == 1 and texts[0].endswith("?") else out

    signal = fake_signal(embedder=ShortQuestion(), max_nli_pairs=1)
    with pytest.raises(ModelError, match="question vector"):
        signal.score_batch(retrieved([BEES[0], HASHES[0], BEES[1], HASHES[1]]), "Which hashing?")


def test_a_document_with_thousands_of_sentences_is_capped() -> None:
    nli = LexicalNLI()
    signal = fake_signal(nli=nli)
    big = " ".join(f"Sentence number {i} says the hive holds {i} bees in total." for i in range(5000))
    results = signal.score_batch(retrieved([big, "The hive holds 12 bees in total according to the count."]))
    details = results[0].details
    assert details["claims"] == signal.max_claims_per_doc
    assert f"doc-0: only the first {signal.max_claims_per_doc} claims compared" in details["notes"]
    assert details["nli_pairs"] <= 2 * signal.max_pairs and nli.pairs_seen <= 2 * signal.max_pairs


def test_the_claim_cap_leaves_documents_out_with_a_note() -> None:
    texts = [f"Hive {name} holds about ten thousand worker bees in summer." for name in ("one", "two", "three")]
    results = fake_signal(max_claims=2).score_batch(retrieved(texts))
    assert [r.details["claims"] for r in results] == [1, 1, 0]
    assert any("claim cap 2 reached: 1 document(s) not compared" in n for n in results[0].details["notes"])


def test_the_claim_cap_notes_a_document_cut_short() -> None:
    first = "Bees make honey from nectar. Honey keeps for years in a jar. Queens lay eggs in spring."
    second = "Workers build the comb from wax. Drones mate with the queen in flight. Guards defend the hive."
    results = fake_signal(max_claims=5).score_batch(retrieved([first, second]))
    assert [r.details["claims"] for r in results] == [3, 2]
    assert results[0].details["notes"]


def test_a_document_at_the_per_document_cap_is_not_noted() -> None:
    text = "Bees make honey from nectar. Honey keeps for years in a jar. Queens lay eggs in spring."
    (result,) = fake_signal(max_claims_per_doc=3).score_batch(retrieved([text]))
    assert result.details["claims"] == 3
    assert result.details["notes"] == []


# ---------------------------------------------------------------------------------- models and plumbing
def test_claims_are_embedded_once_and_cached() -> None:
    embedder = CountingEmbedder()
    signal = fake_signal(embedder=embedder)
    docs = [doc("a", LONG), doc("p", SHORT)]
    first = signal.score_batch(docs)
    assert sorted(embedder.texts) == sorted([LONG, SHORT])
    second = signal.score_batch(docs)
    assert len(embedder.texts) == 2
    assert [r.score for r in first] == [r.score for r in second]


def test_a_small_cache_still_scores_correctly() -> None:
    signal = fake_signal(cache_size=1)
    results = signal.score_batch([doc("a", LONG), doc("b", LONG_REWORDED), doc("p", SHORT)])
    assert {c.blamed for c in conflicts(results)} == {"p"}
    assert len(signal._cache) == 1


def test_a_malformed_embedding_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="embedder returned shape"):
        fake_signal(embedder=BadShapeEmbedder()).score_batch([doc("a", LONG), doc("p", SHORT)])


@pytest.mark.parametrize(
    ("params", "texts"),
    [
        ({}, [LONG, SHORT]),  # every aligned pair goes to NLI
        ({"nli_contradiction": False}, [LONG, LONG_REWORDED, SHORT]),  # NLI hears agreement only
    ],
    ids=["contradiction-check", "agreement-only"],
)
def test_a_malformed_nli_output_is_a_model_error(params: dict[str, Any], texts: list[str]) -> None:
    with pytest.raises(ModelError, match="NLI model returned shape"):
        fake_signal(nli=BadShapeNLI(), **params).score_batch(retrieved(texts))


def test_the_signal_is_registered_and_built_from_a_spec() -> None:
    signal = registry.build(
        "signal",
        {"type": "claim_conflict", "params": {"min_cosine": 0.4, "max_pairs": 7}},
        nli=LexicalNLI(),
        embedder=HashingEmbedder(),
    )
    assert isinstance(signal, ClaimConflictSignal)
    assert (signal.min_cosine, signal.max_pairs) == (0.4, 7)
    assert signal.uses_witnesses and not signal.document_level


def test_conflicts_from_deduplicates_and_sorts_by_strength() -> None:
    def conflict(right: str, strength: float) -> Conflict:
        return Conflict(ClaimRef("a", 0, 5, "aaaaa"), ClaimRef(right, 0, 5, "bbbbb"), "number", strength)

    weak, strong = conflict("b", 0.3), conflict("c", 0.9)
    results = [
        SignalResult(CLAIM_CONFLICT, 0.5, details={"conflicts": [weak.to_dict(), strong.to_dict()]}),
        SignalResult(CLAIM_CONFLICT, 0.5, details={"conflicts": [strong]}),
        SignalResult("cross_consistency", 0.9, details={"conflicts": [conflict("d", 1.0).to_dict()]}),
        SignalResult(CLAIM_CONFLICT, skipped=True, details={"conflicts": [conflict("e", 1.0).to_dict()]}),
    ]
    assert conflicts_from(results) == [strong, weak]


def test_a_conflict_round_trips_through_json() -> None:
    results = fake_signal().score_batch([doc("a", LONG), doc("p", SHORT)])
    (c,) = conflicts(results)
    assert Conflict.from_dict(c.to_dict()) == c
    for side, text in ((c.left, LONG), (c.right, SHORT)):
        assert text[side.start : side.end] == side.text
        assert side.url == f"file://{side.doc_id}.md"


# ---------------------------------------------------------------------------------- Screener
def test_the_screener_collects_conflicts_and_lowers_consistency() -> None:
    screener = Screener(signals=[fake_signal()])
    report = screener.screen([doc("a", LONG), doc("p", SHORT)], "How long does a queen bee live?")
    assert len(report.conflicts) == 1 and report.conflicts[0].doc_ids == ("a", "p")
    assert report.consistency < 1.0
    assert report.consistency == pytest.approx(1 - report.conflicts[0].strength)
    assert not report.errors
    assert report.to_dict()["conflicts"][0]["kind"] == "number"


def test_the_screener_passes_witnesses_to_the_signal() -> None:
    screener = Screener(signals=[fake_signal()])
    report = screener.screen([doc("a", LONG), doc("p", SHORT)], None, witnesses=[doc("w", LONG_REWORDED)])
    assert {c.blamed for c in report.conflicts} == {"p"}
    by_id = {d.doc_id: d for d in report.documents}
    assert by_id["p"].poison_probability == pytest.approx(0.9)
    assert set(by_id) == {"a", "p"}


def test_the_screener_without_conflicts_keeps_full_consistency() -> None:
    report = Screener(signals=[fake_signal()]).screen(retrieved([LONG, ARGON]))
    assert report.conflicts == () and report.consistency == 1.0


def test_a_failing_claim_conflict_signal_fails_closed() -> None:
    screener = Screener(signals=[fake_signal(nli=RaisingNLI())])
    report = screener.screen([doc("a", LONG), doc("b", LONG_REWORDED), doc("p", SHORT)])
    assert report.consistency == 0.0
    assert report.errors and report.errors[0].startswith("signal 'claim_conflict' failed: ModelError")
    assert report.conflicts == ()
    assert all(r.skipped for d in report.documents for r in d.signals)


# ---------------------------------------------------------------------------------- shipped models
@pytest.fixture(scope="module")
def shipped() -> ClaimConflictSignal:
    from ragtrust.models.embedder import default_embedder
    from ragtrust.models.nli import default_nli

    settings = load_settings(env={})
    signal = ClaimConflictSignal(nli=default_nli(settings), embedder=default_embedder(settings))
    signal.warm_up()
    return signal


@pytest.mark.model
def test_shipped_models_blame_the_poisoned_document(shipped: ClaimConflictSignal) -> None:
    results = shipped.score_batch([doc("a", LONG), doc("b", LONG_REWORDED), doc("p", SHORT)])
    assert results[0].score == 0.0 and results[1].score == 0.0 and results[2].score >= 0.8
    found = conflicts(results)
    assert found and {c.blamed for c in found} == {"p"}
    assert {c.resolution for c in found} == {"2 independent sources against 1"}


@pytest.mark.model
def test_shipped_models_one_against_one_is_contested(shipped: ClaimConflictSignal) -> None:
    results = shipped.score_batch([doc("a", LONG), doc("p", SHORT)])
    (c,) = conflicts(results)
    assert c.blamed is None
    assert [r.score for r in results] == pytest.approx([shipped.contested_factor * c.strength] * 2)


@pytest.mark.model
def test_shipped_models_count_chunks_of_one_parent_once(shipped: ClaimConflictSignal) -> None:
    results = shipped.score_batch([doc("kb#0", LONG), doc("kb#1", LONG_REWORDED), doc("p", SHORT)])
    found = conflicts(results)
    assert found and all(c.blamed is None for c in found)


@pytest.mark.model
def test_shipped_models_hear_a_store_witness(shipped: ClaimConflictSignal) -> None:
    results = shipped.score_batch([doc("a", LONG), doc("p", SHORT)], witnesses=[doc("w", LONG_REWORDED)])
    assert len(results) == 2
    assert {c.blamed for c in conflicts(results)} == {"p"}
    assert results[0].score == 0.0


@pytest.mark.model
def test_shipped_models_vetted_version(shipped: ClaimConflictSignal, tmp_path: Path) -> None:
    signal = ClaimConflictSignal(
        nli=shipped.nli,
        embedder=shipped.embedder,
        ledger=_ledger(tmp_path, "Use a 64-bit nonce.", "Use a 32-bit nonce."),
    )
    (result,) = signal.score_batch([doc("kb#0", "Use a 32-bit nonce.", parent_id="kb")])
    (c,) = conflicts([result])
    assert c.right.origin == "vetted" and c.blamed == "kb#0"
    assert (c.left_words, c.right_words) == ("32", "64")


@pytest.mark.model
def test_shipped_models_leave_unrelated_neighbours_alone(shipped: ClaimConflictSignal) -> None:
    results = shipped.score_batch(retrieved([LONG, ARGON, HONEY]))
    assert conflicts(results) == [] and all(r.score == 0.0 for r in results)


@pytest.mark.model
def test_shipped_models_survive_documents_without_claims(shipped: ClaimConflictSignal) -> None:
    results = shipped.score_batch(retrieved(["```python\nx = 1\n```", "| a | b |\n| 1 | 2 |", LONG]))
    assert [r.score for r in results] == [0.0, 0.0, 0.0]


QUEEN_LONG = "The queen bee lives two to five years and lays up to 2,000 eggs a day in spring."
QUEEN_SHORT = "A queen bee lives three weeks and is then replaced by the workers."
QUEEN_AGREES = "A queen bee usually lives two to five years."


@pytest.mark.model
def test_shipped_models_blame_the_issue_example(shipped: ClaimConflictSignal) -> None:
    results = shipped.score_batch([doc("a", QUEEN_LONG), doc("p", QUEEN_SHORT), doc("c", QUEEN_AGREES)])
    assert {c.blamed for c in conflicts(results) if "p" in c.doc_ids} == {"p"}
    assert not [c for c in conflicts(results) if set(c.doc_ids) == {"a", "c"}]


# ---------------------------------------------------------------------------------- cost
def test_claims_without_a_word_partner_are_not_embedded_and_the_result_is_the_same() -> None:
    unrelated = "Drones leave the hive in early spring to find a mate."
    witness_only = "Beekeepers smoke the colony before opening it for inspection."
    docs = [doc("a", LONG), doc("b", LONG_REWORDED), doc("p", SHORT + " " + unrelated)]
    witnesses = [doc("w1", witness_only), doc("w2", witness_only.replace("Beekeepers", "Keepers"))]
    counting = CountingEmbedder()
    results = fake_signal(embedder=counting).score_batch(docs, witnesses=witnesses)
    # the unrelated claim has no partner; the two witness claims only have each other, and a
    # pair of witness claims is never checked
    assert not {unrelated, witness_only} & set(counting.texts)
    assert counting.texts and all(t in LONG + LONG_REWORDED + SHORT for t in counting.texts)
    assert results[2].score == pytest.approx(0.9) and conflicts(results)[0].blamed == "p"
    assert results[2].details["claims"] == len(extract_claims(0, SHORT + " " + unrelated))


def test_embed_every_claim_embeds_the_retrieved_claims_without_a_partner_and_finds_the_same() -> None:
    unrelated = "Drones leave the hive in early spring to find a mate."
    witness_only = "Beekeepers smoke the colony before opening it for inspection."
    docs = [doc("a", LONG), doc("b", LONG_REWORDED), doc("p", SHORT + " " + unrelated)]
    witnesses = [doc("w1", witness_only), doc("w2", witness_only.replace("Beekeepers", "Keepers"))]
    plain, every = CountingEmbedder(), CountingEmbedder()
    expected = fake_signal(embedder=plain).score_batch(docs, witnesses=witnesses)
    signal = fake_signal(embedder=every)
    signal.embed_every_claim = True
    got = signal.score_batch(docs, witnesses=witnesses)
    assert unrelated in every.texts and unrelated not in plain.texts
    assert witness_only not in every.texts  # a witness's claims are embedded when it is judged itself
    assert [r.to_dict() for r in got] == [r.to_dict() for r in expected]


def test_a_scan_embeds_every_claim_without_changing_the_callers_signal() -> None:
    from ragtrust.scan.engine import scan_corpus

    texts = [LONG, LONG_REWORDED, SHORT + " Drones leave the hive in early spring to find a mate."]
    counting = CountingEmbedder()
    signal = fake_signal(embedder=counting)
    scan_corpus(
        [Document(id=f"d{i}", text=t) for i, t in enumerate(texts)],
        signals=[signal],
        embedder=HashingEmbedder(),
        nli=None,
        witnesses=2,
        min_similarity=0.0,
    )
    assert "Drones leave the hive in early spring to find a mate." in counting.texts
    assert signal.embed_every_claim is False


def test_prefetch_embeds_what_judging_each_document_would_embed_in_one_call() -> None:
    texts = [LONG, LONG_REWORDED, SHORT + " Drones leave the hive in early spring to find a mate."]
    docs = [Document(id=f"d{i}", text=t) for i, t in enumerate(texts)]
    idle = CountingEmbedder()
    fake_signal(embedder=idle).prefetch(docs)  # without embed_every_claim: depends on the pool
    assert idle.calls == 0
    counting = CountingEmbedder()
    signal = fake_signal(embedder=counting)
    signal.embed_every_claim = True
    signal.prefetch(docs)
    assert counting.calls == 1
    assert sorted(counting.texts) == sorted({c.bare for t in texts for c in extract_claims(0, t)})
    counting.texts.clear()
    for d in docs:
        signal.score_batch([RetrievedDoc(document=d, rank=1)])
    assert counting.texts == []  # every claim judging embeds was already there


def test_a_scan_prefetching_claims_gives_the_same_rows_with_fewer_embedder_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ragtrust.scan.engine as engine

    texts = [LONG, LONG_REWORDED, SHORT, SHORT + " Drones leave the hive in early spring to find a mate."]
    docs = [Document(id=f"d{i}", text=t) for i, t in enumerate(texts)]

    def scan(counting: CountingEmbedder) -> list[dict[str, object]]:
        report = engine.scan_corpus(
            docs,
            signals=[fake_signal(embedder=counting)],
            embedder=HashingEmbedder(),
            nli=None,
            witnesses=2,
            min_similarity=0.0,
        )
        return [r.to_dict() for r in report.rows]

    batched = CountingEmbedder()
    rows = scan(batched)
    monkeypatch.setattr(engine, "prefetch_claims", lambda signals, docs: None)
    one_by_one = CountingEmbedder()
    assert scan(one_by_one) == rows
    assert batched.calls == 1 < one_by_one.calls
    assert sorted(set(batched.texts)) == sorted(set(one_by_one.texts))
