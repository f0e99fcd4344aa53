from __future__ import annotations

import re

import pytest

from ragtrust.documents import Document, Passage, RetrievedDoc
from ragtrust.errors import ConfigError, InputError
from ragtrust.evidence.align import TRUNCATION_JOINER, NGramAligner
from ragtrust.testing import retrieved

SQL = (
    "SQL injection happens when untrusted input is concatenated into a query string. "
    "Always use parameterised queries so that the database treats user input as data and never as code. "
    "Stored procedures can help but are not a complete defence on their own."
)
PASSWORDS = (
    "Passwords must never be stored in plain text or with a fast hash such as MD5. "
    "Use a slow salted password hashing function such as Argon2id, scrypt or bcrypt with a work factor "
    "tuned to your hardware."
)
DOCS = retrieved([SQL, PASSWORDS])
SQL_URL = DOCS[0].document.url
PW_URL = DOCS[1].document.url


def roundtrip(passage: Passage, docs: list[RetrievedDoc]) -> None:
    by_id = {d.id: d.document for d in docs}
    assert passage.spans, "a verified passage has at least one span"
    for span in passage.spans:
        assert by_id[span.doc_id].text[span.start : span.end] == span.text
        assert span.url == by_id[span.doc_id].cite


def test_exact_copy_is_kept_with_its_span() -> None:
    text = "Always use parameterised queries so that the database treats user input as data and never as code."
    result = NGramAligner().align([Passage("p1", text, url=SQL_URL)], DOCS)
    (p,) = result.passages
    assert p.status == "kept" and p.overlap == 1.0 and p.doc_id == "doc-0" and p.url == SQL_URL
    assert p.spans[0].text == text and p.spans[0].start == SQL.index(text)
    roundtrip(p, DOCS)
    assert result.dropped == ()


def test_paraphrase_without_shared_ngrams_is_dropped() -> None:
    paraphrase = "You should rely on prepared statements, which keep what users type separate from the SQL code."
    result = NGramAligner().align([Passage("p1", paraphrase, url=SQL_URL)], DOCS)
    assert result.passages == ()
    (p,) = result.dropped
    assert p.status == "dropped" and p.spans == ()
    assert result.diagnostics["pct_hallucinated"] == 1.0


def test_partial_copy_is_truncated_to_the_overlapping_part() -> None:
    copied = "Always use parameterised queries so that the database treats user input"
    invented = " and then disable the firewall because modern databases cannot be attacked by anyone at all ever"
    result = NGramAligner().align([Passage("p1", copied + invented, url=SQL_URL)], DOCS)
    (p,) = result.passages
    assert p.status == "truncated"
    assert 0 < p.overlap <= 0.7
    assert p.text == copied  # verbatim document text of the overlapping part only
    assert "firewall" not in p.text
    roundtrip(p, DOCS)
    assert result.diagnostics["pct_partial"] == 1.0


def test_truncation_keeps_separate_parts_joined() -> None:
    part_a = "SQL injection happens when untrusted input is concatenated"
    part_b = "Stored procedures can help but are not a complete defence"
    filler = " whereas goats climb mountains every single morning before sunrise in the alps and also "
    result = NGramAligner().align([Passage("p1", part_a + filler + part_b, url=SQL_URL)], DOCS)
    (p,) = result.passages
    assert p.status == "truncated"
    assert [s.text for s in p.spans] == [part_a, part_b]
    assert p.text == part_a + TRUNCATION_JOINER + part_b
    roundtrip(p, DOCS)


def test_wrong_url_is_reattributed_to_the_real_source() -> None:
    text = "Use a slow salted password hashing function such as Argon2id, scrypt or bcrypt"
    result = NGramAligner().align([Passage("p1", text, url=SQL_URL, doc_id="doc-0")], DOCS)
    (p,) = result.passages
    assert p.status == "reattributed" and p.doc_id == "doc-1" and p.url == PW_URL
    roundtrip(p, DOCS)
    assert result.diagnostics["pct_url_drift_corrected"] == 1.0
    assert result.diagnostics["drift_candidates"] == 1.0


def test_url_never_retrieved_counts_as_drift() -> None:
    text = "Passwords must never be stored in plain text or with a fast hash such as MD5."
    result = NGramAligner().align([Passage("p1", text, url="https://evil.test/fake")], DOCS)
    (p,) = result.passages
    assert p.status == "reattributed" and p.url == PW_URL


def test_fabricated_passage_is_dropped() -> None:
    fabricated = "The OWASP board recommends storing passwords with ROT13 twice for extra safety."
    result = NGramAligner().align([Passage("p1", fabricated, url=PW_URL), Passage("p2", PASSWORDS, url=PW_URL)], DOCS)
    assert [p.passage_id for p in result.passages] == ["p2"]
    assert [p.passage_id for p in result.dropped] == ["p1"]
    d = result.diagnostics
    assert (d["n_in"], d["kept"], d["dropped"], d["pct_hallucinated"]) == (2.0, 1.0, 1.0, 0.5)


def test_drift_with_only_partial_support_elsewhere_is_dropped() -> None:
    # overlap 0 with the claimed doc, and only partial (<= t) overlap with the other doc
    text = "Stored procedures can help but are not a complete defence on mars or jupiter or saturn or venus today"
    result = NGramAligner().align([Passage("p1", text, url=PW_URL)], DOCS)
    assert result.passages == () and result.dropped[0].overlap is not None and 0 < result.dropped[0].overlap <= 0.7


@pytest.mark.parametrize(
    ("doc_text", "passage"),
    [
        (
            "Use the  secure\n  cookie   flag\tfor every session cookie you set.",
            "use the secure cookie flag for every session cookie",
        ),
        ("Validate the ﬁle name before you open the ﬁle on disk.", "Validate the file name before you open the file"),
        (
            "Do not trust the client\u00a0side checks ever, because they\u2019re bypassed.",
            "do not trust the client side checks ever, because they're bypassed",
        ),
        ("ＵＳＥ ＨＴＴＰＳ everywhere on every page you serve.", "use https everywhere on every page you serve"),
        (
            "Ensure \u201cSameSite=Strict\u201d is set on the session cookie always.",
            'Ensure "SameSite=Strict" is set on the session cookie',
        ),
    ],
)
def test_unicode_and_whitespace_variants_match_and_spans_roundtrip(doc_text: str, passage: str) -> None:
    docs = retrieved([doc_text])
    result = NGramAligner().align([Passage("p1", passage, doc_id="doc-0")], docs)
    (p,) = result.passages
    assert p.status == "kept" and p.overlap == 1.0
    roundtrip(p, docs)
    span = p.spans[0]
    assert span.start == 0  # the span starts at the document's first matching character
    assert doc_text[span.start : span.end] == span.text


def test_spans_roundtrip_for_every_slice_of_a_document() -> None:
    docs = retrieved([SQL, PASSWORDS])
    aligner = NGramAligner()
    text = docs[0].document.text
    starts = [i for i in range(len(text)) if i == 0 or text[i - 1] == " "]
    for a in starts[::3]:
        for b in starts[::4]:
            piece = text[a:b].strip()
            if len(piece.split()) < 2:
                continue
            result = aligner.align([Passage("p", piece, doc_id="doc-0")], docs)
            assert result.passages, piece
            p = result.passages[0]
            roundtrip(p, docs)
            assert " ".join(s.text for s in p.spans).split()[0] in piece


def test_overlap_uses_multiset_ngrams() -> None:
    aligner = NGramAligner(n=2)
    # G_2(p) = {ab: 2, ba: 1}; G_2(d) = {ab: 1}: intersection 1 of 3
    assert aligner.overlap("a b a b", "a b") == pytest.approx(1 / 3)
    assert aligner.overlap("a b a b", "a b x a b") == pytest.approx(2 / 3)
    assert aligner.overlap("", "a b") == 0.0
    assert aligner.overlap("a b", "") == 0.0


def test_short_passages_use_the_largest_n_that_fits() -> None:
    aligner = NGramAligner(n=5)
    assert aligner.overlap("parameterised queries", SQL) == 1.0  # one 2-gram
    assert aligner.overlap("queries parameterised", SQL) == 0.0
    docs = retrieved([SQL])
    (p,) = aligner.align([Passage("p", "use parameterised queries", doc_id="doc-0")], docs).passages
    assert p.status == "kept" and p.spans[0].text == "use parameterised queries"


def test_kept_passage_with_small_edit_gets_spans_around_the_edit() -> None:
    edited = SQL.replace("treats", "handles")
    aligner = NGramAligner()
    o = aligner.overlap(edited, SQL)
    assert 0.7 < o < 1.0
    (p,) = aligner.align([Passage("p", edited, url=SQL_URL)], DOCS).passages
    assert p.status == "kept" and p.text == edited and p.overlap == o
    assert len(p.spans) == 2
    assert p.spans[0].text.endswith("so that the database") and p.spans[0].start == 0
    assert p.spans[1].text.startswith("user input as data") and p.spans[1].end == len(SQL)
    assert all("treats" not in s.text for s in p.spans)
    roundtrip(p, DOCS)


def test_threshold_is_strict_and_configurable() -> None:
    doc = Document("d", "one two three four five six seven eight nine ten")
    docs = [RetrievedDoc(doc)]
    passage = Passage("p", "one two three four five six seven eight zzz", doc_id="d")  # 8 of 9 words, n=2: 7/8
    assert NGramAligner(n=2, threshold=0.875).align([passage], docs).passages[0].status == "truncated"
    assert NGramAligner(n=2, threshold=0.87).align([passage], docs).passages[0].status == "kept"


def test_empty_input_and_bad_parameters() -> None:
    result = NGramAligner().align([], DOCS)
    assert result.passages == () and result.diagnostics["n_in"] == 0 and result.diagnostics["pct_hallucinated"] == 0
    with pytest.raises(ConfigError):
        NGramAligner(n=0)
    with pytest.raises(ConfigError):
        NGramAligner(threshold=0)
    with pytest.raises(ConfigError):
        NGramAligner(threshold=1.5)


def test_result_to_dict_is_json_ready() -> None:
    import json

    result = NGramAligner().align([Passage("p1", PASSWORDS, url=PW_URL)], DOCS)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["passages"][0]["spans"][0]["doc_id"] == "doc-1"
    assert data["diagnostics"]["kept"] == 1.0


@pytest.mark.parametrize(
    ("passages", "message"),
    [
        ("use parameterised queries", "passages must be a list of Passage, got str"),
        (None, "passages must be a list of Passage, got NoneType"),
        ({"passage_id": "p", "passage": "x"}, "passages must be a list of Passage, got dict"),
        (["use parameterised queries"], "passages[0] must be a Passage, got str"),
        ([{"passage_id": "p", "passage": "use parameterised queries"}], "passages[0] must be a Passage, got dict"),
    ],
)
def test_passages_of_another_type_are_one_input_error(passages: object, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)) as err:
        NGramAligner().align(passages, DOCS)  # type: ignore[arg-type]
    assert "passages_from_json" in str(err.value)  # the way to build them from JSON


def test_documents_of_another_type_are_one_input_error() -> None:
    p = Passage("p1", "use parameterised queries")
    with pytest.raises(InputError, match=r"docs\[0\] must be a RetrievedDoc, got Document"):
        NGramAligner().align([p], [DOCS[0].document])  # type: ignore[list-item]


@pytest.mark.parametrize(
    "passages",
    ["use parameterised queries", ["use parameterised queries"], [{"passage_id": "p", "passage": "queries"}], None],
)
def test_trust_gate_align_names_the_passage_type(passages: object) -> None:
    from ragtrust.config import load_settings
    from ragtrust.pipeline import TrustGate
    from ragtrust.testing import HashingEmbedder, LexicalNLI

    gate = TrustGate.from_settings(load_settings(env={}), nli=LexicalNLI(), embedder=HashingEmbedder())
    with pytest.raises(InputError, match=r"passages(\[0\])? must be a (list of )?Passage"):
        gate.align(passages, DOCS)  # type: ignore[arg-type]
