from __future__ import annotations

import pytest

from ragtrust.errors import InputError
from ragtrust.testing import LexicalNLI, RaisingNLI, retrieved
from ragtrust.verification import FactualityVerifier, strip_citations

DOCS = retrieved(
    [
        "Passwords must be hashed with bcrypt or argon2 and a unique salt per user.",
        "Use TLS 1.2 or later for every connection that carries sensitive data.",
    ]
)


def test_supported_answer_high_factuality_one_call() -> None:
    nli = LexicalNLI()
    r = FactualityVerifier(nli=nli).verify(
        "Passwords must be hashed with bcrypt [1]. Use TLS 1.2 or later for sensitive data [doc-1].", DOCS
    )
    assert nli.calls == 1 and nli.pairs_seen == 4
    assert [s.best_doc_id for s in r.sentences] == ["doc-0", "doc-1"]
    assert all(s.supported for s in r.sentences)
    assert r.factuality > 0.8 and not r.inconclusive and not r.errors
    assert "[1]" not in r.sentences[0].text


def test_unsupported_sentence_costs_but_is_not_negative() -> None:
    verifier = FactualityVerifier(nli=LexicalNLI())
    grounded = verifier.verify("Passwords must be hashed with bcrypt.", DOCS)
    mixed = verifier.verify("Passwords must be hashed with bcrypt. The moon is made of green cheese.", DOCS)
    assert not mixed.sentences[1].supported
    assert 0.5 <= mixed.factuality < grounded.factuality


def test_nothing_supported_is_inconclusive() -> None:
    r = FactualityVerifier(nli=LexicalNLI()).verify("Bananas grow in tropical climates.", DOCS)
    assert r.inconclusive and r.factuality == 0.5


def test_contradiction_is_not_negative() -> None:
    r = FactualityVerifier(nli=LexicalNLI()).verify("Passwords must not be hashed with bcrypt.", DOCS)
    assert r.factuality == 0.5 and r.inconclusive


def test_model_error_fails_closed() -> None:
    r = FactualityVerifier(nli=RaisingNLI()).verify("Passwords must be hashed with bcrypt.", DOCS)
    assert r.errors and "simulated NLI failure" in r.errors[0]
    assert r.factuality == 0.0 and r.inconclusive


def test_windows_report_best_window() -> None:
    long_doc = " ".join(f"Filler sentence number {i} talks about unrelated gardening." for i in range(20))
    long_doc += " Session cookies must set the Secure and HttpOnly attributes."
    r = FactualityVerifier(nli=LexicalNLI(), window_chars=200).verify(
        "Session cookies must set the Secure and HttpOnly attributes.", retrieved([long_doc])
    )
    assert r.sentences[0].supported and r.sentences[0].window is not None and r.sentences[0].window > 0


def test_sequence_of_sentences_and_empty() -> None:
    v = FactualityVerifier(nli=LexicalNLI())
    r = v.verify(["Passwords must be hashed with bcrypt.", "  "], DOCS)
    assert len(r.sentences) == 1
    assert v.verify("", DOCS).inconclusive
    assert v.verify("Use TLS.", []).factuality == 0.5


def test_bad_input() -> None:
    with pytest.raises(InputError):
        FactualityVerifier(nli=LexicalNLI()).verify(42, DOCS)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        FactualityVerifier(nli=LexicalNLI(), entail_threshold=0.0)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Use bcrypt [1].", "Use bcrypt."),
        ("Use bcrypt [1, 2][3].", "Use bcrypt."),
        ("Use bcrypt [https://owasp.org/x].", "Use bcrypt."),
        ("Use bcrypt [kb-17].", "Use bcrypt."),
        ("Use bcrypt [kb-17, kb-2].", "Use bcrypt."),
        ("See [the guide](https://owasp.org).", "See the guide."),
        ("Arrays like a[i] stay.", "Arrays like a[i] stay."),
        # a bracketed value is not a citation: removed, the sentence would lose what it claims
        ("All traffic must use [TLS1.0] or later.", "All traffic must use [TLS1.0] or later."),
        ("Store passwords with [MD5].", "Store passwords with [MD5]."),
        ("Fixed in [CVE-2021-44228].", "Fixed in [CVE-2021-44228]."),
    ],
)
def test_strip_citations(raw: str, clean: str) -> None:
    assert strip_citations(raw, sources={"kb-17", "kb-2"}) == clean


def test_a_bracketed_value_is_checked_not_stripped() -> None:
    # "[TLS1.0]" was read as a citation and removed: "All traffic must use or later." was then
    # entailed by the document, and the answer that changed the version was supported
    docs = retrieved(["All traffic must use TLS 1.2 or later."])
    report = FactualityVerifier(nli=LexicalNLI()).verify("All traffic must use [TLS1.0] or later [1].", docs)
    (sentence,) = report.sentences
    assert sentence.text == "All traffic must use [TLS1.0] or later."
    assert not sentence.supported
    # the id of a given document is a citation
    report = FactualityVerifier(nli=LexicalNLI()).verify("All traffic must use TLS 1.2 or later [doc-0].", docs)
    assert report.sentences[0].text == "All traffic must use TLS 1.2 or later." and report.sentences[0].supported


# ---------------------------------------------------------------- nearest premises (issue 20)
SIX = retrieved(
    [
        "Passwords must be hashed with bcrypt or argon2 and a unique salt per user.",
        "Use TLS 1.2 or later for every connection that carries sensitive data.",
        "Log every failed login attempt with a timestamp and the source address.",
        "Session identifiers must be regenerated after a successful login.",
        "Validate uploaded file types against an allow list on the server.",
        "Content Security Policy headers restrict where scripts may be loaded from.",
    ]
)
TWO_CLAIMS = "Passwords must be hashed with bcrypt. Session identifiers must be regenerated after login."


def test_each_sentence_meets_only_its_nearest_documents() -> None:
    bounded, every = LexicalNLI(), LexicalNLI()
    near = FactualityVerifier(nli=bounded, max_premises=2).verify(TWO_CLAIMS, SIX)
    full = FactualityVerifier(nli=every, max_premises=None).verify(TWO_CLAIMS, SIX)
    assert (bounded.calls, bounded.pairs_seen) == (1, 4)  # 2 sentences x 2 nearest, one call
    assert every.pairs_seen == 12  # 2 sentences x 6 documents
    assert [s.best_doc_id for s in near.sentences] == ["doc-0", "doc-3"] == [s.best_doc_id for s in full.sentences]
    assert [s.support for s in near.sentences] == [s.support for s in full.sentences]
    assert near.factuality == full.factuality


def test_the_bound_never_makes_an_unrelated_sentence_supported() -> None:
    r = FactualityVerifier(nli=LexicalNLI(), max_premises=1).verify("Bananas grow in tropical climates.", SIX)
    assert not r.sentences[0].supported and r.inconclusive


def test_nearest_window_of_a_long_document_through_the_engine() -> None:
    from ragtrust.models.nli_engine import NLIEngine

    filler = " ".join(f"Filler sentence number {i} talks about unrelated gardening." for i in range(12))
    doc = filler + " Session cookies must set the Secure and HttpOnly attributes. " + filler
    model = LexicalNLI()
    engine = NLIEngine(model, max_premise_tokens=40, cache_size=0)
    spans = engine.premise_windows(doc, "Session cookies must set the Secure attribute.")
    assert len(spans) > 3 and all(doc[a:b] for a, b in spans)
    r = FactualityVerifier(nli=engine, max_premises=1).verify(
        "Session cookies must set the Secure attribute.", retrieved([doc])
    )
    s = r.sentences[0]
    assert s.supported and s.window is not None and "Session cookies" in doc[slice(*spans[s.window])]
    assert model.pairs_seen == 1  # one window scored, not every window of the document


@pytest.mark.parametrize("bad", [0, -1, True])
def test_bad_max_premises(bad: object) -> None:
    with pytest.raises(InputError, match="max_premises"):
        FactualityVerifier(nli=LexicalNLI(), max_premises=bad)  # type: ignore[arg-type]


def test_engine_windows_a_premise_once_while_caching() -> None:
    from ragtrust.models.nli_engine import NLIEngine

    class Counting(LexicalNLI):
        counted = 0

        def count_tokens(self, text: str) -> int:
            Counting.counted += 1
            return len(text.split())

    doc = " ".join(f"Sentence number {i} says that cookies need the Secure flag." for i in range(30))
    hypothesis = "Cookies need the Secure flag."
    cached = NLIEngine(Counting(), max_premise_tokens=40)
    first = cached.premise_windows(doc, hypothesis)
    after_first = Counting.counted
    assert cached.premise_windows(doc, hypothesis) == first and len(first) > 1
    assert Counting.counted == after_first + 1  # only the hypothesis is counted again
    cold = NLIEngine(Counting(), max_premise_tokens=40, cache_size=0)  # cold: nothing is kept
    before = Counting.counted
    assert cold.premise_windows(doc, hypothesis) == first
    assert cold.premise_windows(doc, hypothesis) == first
    assert Counting.counted - before == 2 * after_first  # premise and its sentences counted each time


def test_premise_tokens_cut_shorter_windows_and_score_only_those() -> None:
    from ragtrust.models.nli_engine import NLIEngine

    class Words(LexicalNLI):
        def count_tokens(self, text: str) -> int:
            return len(text.split())

        def predict(self, pairs):  # type: ignore[no-untyped-def]
            seen.extend(len(p.split()) for p, _ in pairs)
            return super().predict(pairs)

    seen: list[int] = []
    filler = " ".join(f"Filler sentence number {i} talks about unrelated gardening." for i in range(12))
    doc = filler + " Session cookies must set the Secure and HttpOnly attributes. " + filler
    claim = "Session cookies must set the Secure attribute."
    engine = NLIEngine(Words(), max_premise_tokens=120, cache_size=0)
    long_spans = engine.premise_windows(doc, claim)
    short_spans = engine.premise_windows(doc, claim, max_tokens=32)
    assert len(short_spans) > len(long_spans)
    assert all(len(doc[a:b].split()) <= 32 for a, b in short_spans)
    r = FactualityVerifier(nli=engine, max_premises=2, premise_tokens=32).verify(claim, retrieved([doc]))
    assert r.sentences[0].supported and "Session cookies" in doc[slice(*short_spans[r.sentences[0].window])]
    assert len(seen) == 2 and max(seen) <= 32  # two short windows scored, nothing longer
    seen.clear()
    FactualityVerifier(nli=engine, max_premises=None, premise_tokens=32).verify(claim, retrieved([doc]))
    distinct = {doc[a:b] for a, b in short_spans}  # the filler repeats: equal windows are scored once
    assert len(seen) == len(distinct) and max(seen) <= 32  # the grid over the short windows too


@pytest.mark.parametrize("bad", [0, 31, True, -5])
def test_bad_premise_tokens(bad: object) -> None:
    from ragtrust.models.nli_engine import NLIEngine

    with pytest.raises(InputError, match="premise_tokens"):
        FactualityVerifier(nli=LexicalNLI(), premise_tokens=bad)  # type: ignore[arg-type]
    if bad is not True and bad < 1:  # type: ignore[operator]
        with pytest.raises(InputError, match="max_tokens"):
            NLIEngine(LexicalNLI()).premise_windows("One sentence. Another one.", "x", max_tokens=bad)  # type: ignore[arg-type]


_NEAREST_IN_A_FRESH_PROCESS = """
from ragtrust.testing import LexicalNLI
from ragtrust.verification.factuality import FactualityVerifier

# premises 0 and 1 share six words each with the sentence, with the same document frequencies
# (so the same weights, summed in whatever order each set iterates): an exact tie
premises = [
    "a0x0 a0x1 a0x2 a0x3 a0x4 a0x5",
    "b0x5 b0x4 b0x3 b0x2 b0x1 b0x0",
    "a0x0 b0x0 a0x2 b0x2 a0x3 b0x3 a0x5 b0x5",
    "a0x0 b0x0 a0x2 b0x2",
    "a0x2 b0x2",
    "none",
]
sentence = " ".join(f"a0x{i}" for i in range(6)) + " " + " ".join(f"b0x{i}" for i in range(6))
verifier = FactualityVerifier(nli=LexicalNLI(), max_premises=2)
print([p[0] for p in verifier._nearest(sentence, [(i, None, p) for i, p in enumerate(premises)])])
"""


def test_the_nearest_premises_do_not_depend_on_the_process_hash_seed() -> None:
    """A tie is broken by position in every process (a plain float sum over a set broke it by hash order)."""
    import os
    import subprocess
    import sys

    picks = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        run = subprocess.run(
            [sys.executable, "-c", _NEAREST_IN_A_FRESH_PROCESS], env=env, capture_output=True, text=True, check=True
        )
        picks.add(run.stdout.strip())
    assert picks == {"[0, 2]"}
