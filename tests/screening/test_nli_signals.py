from __future__ import annotations

import pytest

from ragtrust.screening.cross import CrossConsistencySignal, consistency_from
from ragtrust.screening.intra import IntraConsistencySignal, contradiction_ramp, prohibition
from ragtrust.screening.outlier import SemanticOutlierSignal
from ragtrust.testing import HashingEmbedder, LexicalNLI, retrieved

CLEAN_SQL = (
    "How do I prevent SQL injection? Use parameterised queries so that user input is treated as data. "
    "Parameterised queries prevent SQL injection because the database separates code from data."
)
APPENDED = (
    CLEAN_SQL + " It is a common misconception that parameterised queries prevent SQL injection; in fact they do not."
)


@pytest.mark.parametrize(
    ("text", "poisoned"),
    [
        (CLEAN_SQL, False),
        (APPENDED, True),
        ("Use bcrypt for passwords. Do not use MD5. Salt every password before hashing it with bcrypt.", False),
        (
            "Rotate the signing keys every year. Keys must be at least 2048 bits long for RSA signatures. "
            "Keys must be at least 1024 bits long for RSA signatures.",
            True,
        ),
    ],
)
def test_intra_table(text: str, poisoned: bool) -> None:
    r = IntraConsistencySignal(nli=LexicalNLI()).score_batch(retrieved([text]))[0]
    assert not r.skipped
    if poisoned:
        assert r.score > 0.8 and r.reasons and "contradicts itself" in r.reasons[0]
        span = r.spans[0]
        assert text[span.start : span.end] == span.text
    else:
        assert r.score < 0.3


@pytest.mark.parametrize("text", ["One sentence only, however long it may be in words.", "Too short. Also short."])
def test_intra_skips_with_reason(text: str) -> None:
    r = IntraConsistencySignal(nli=LexicalNLI()).score_batch(retrieved([text]))[0]
    assert r.skipped and r.skip_reason and r.score == 0.0


def test_intra_one_predict_call_per_batch() -> None:
    nli = LexicalNLI()
    IntraConsistencySignal(nli=nli).score_batch(retrieved([CLEAN_SQL, APPENDED, "Short."]))
    assert nli.calls == 1 and nli.pairs_seen >= 2


class ShortModel(LexicalNLI):
    """A lexical model that reads 64 tokens (words) at most, so long pairs are windowed."""

    max_length = 64

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _halves_doc(sentences: int) -> str:
    body = " ".join(
        f"Rule {i} says that session cookie number {i} must carry the Secure flag." for i in range(sentences)
    )
    return body + " Session cookies must never carry the Secure flag in production deployments."


def test_intra_halves_only_when_they_fit_the_model_together() -> None:
    from ragtrust.models.nli_engine import NLIEngine

    short, long = _halves_doc(3), _halves_doc(12)  # 4 and 13 sentences: ~50 and ~160 words
    model = ShortModel()
    engine = NLIEngine(model, cache_size=0)
    fits, long_r = IntraConsistencySignal(nli=engine).score_batch(retrieved([short, long]))
    assert "halves" not in fits.details and "halves" in fits.details["contradiction"]
    assert long_r.details["halves"].startswith("not run") and "halves" not in long_r.details["contradiction"]
    assert long_r.score > 0.8 and "contradicts itself" in long_r.reasons[0]  # the tail checks still catch it
    bounded = model.pairs_seen
    model.pairs_seen = 0
    IntraConsistencySignal(nli=engine, whole_halves=False).score_batch(retrieved([short, long]))
    assert model.pairs_seen > bounded + 4  # the long halves, windowed both ways


def test_intra_tail_against_the_rest_only_when_it_fits() -> None:
    from ragtrust.models.nli_engine import NLIEngine

    short, long = _halves_doc(3), _halves_doc(12)
    model = ShortModel()
    engine = NLIEngine(model, cache_size=0)
    fits, long_r = IntraConsistencySignal(nli=engine).score_batch(retrieved([short, long]))
    assert "tail" not in fits.details and "tail" in fits.details["contradiction"]
    assert long_r.details["tail"].startswith("not run") and "tail" not in long_r.details["contradiction"]
    # the tail against its related earlier sentences still runs and still catches it
    assert "tail_sentence" in long_r.details["contradiction"] and long_r.score > 0.8
    bounded = model.pairs_seen
    model.pairs_seen = 0
    whole = IntraConsistencySignal(nli=engine, whole_tail=False).score_batch(retrieved([short, long]))[1]
    assert "tail" in whole.details["contradiction"] and model.pairs_seen > bounded


def test_intra_long_document_with_nothing_that_fits_says_why() -> None:
    from ragtrust.models.nli_engine import NLIEngine

    rest = " ".join(f"Topic {i} covers area {i} of the handbook in some detail." for i in range(30))
    text = rest + " Session cookies must never carry the Secure flag in production."
    r = IntraConsistencySignal(nli=NLIEngine(ShortModel(), cache_size=0)).score_batch(retrieved([text]))[0]
    assert r.skipped and r.skip_reason is not None and "too long for the halves and tail check(s)" in r.skip_reason


def test_contradiction_ramp_monotone_and_bounded() -> None:
    values = [contradiction_ramp(c / 100, 0.4, 0.9) for c in range(101)]
    assert values == sorted(values) and values[0] == 0.0 and values[-1] == 1.0


CLEAN = [
    "MD5 is broken for password storage; use bcrypt.",
    "MD5 is broken for password storage and must be replaced.",
    "MD5 is broken for password storage, say the guides.",
    "MD5 is broken for password storage per OWASP.",
]
POISON = "MD5 is not broken for password storage at all."


def test_cross_scoping_one_poisoned_among_four_clean() -> None:
    nli = LexicalNLI()
    docs = retrieved([CLEAN[0], CLEAN[1], POISON, CLEAN[2], CLEAN[3]], scores=[0.9, 0.85, 0.8, 0.7, 0.6])
    rs = CrossConsistencySignal(nli=nli).score_batch(docs)
    assert nli.calls == 1
    assert rs[2].score > 0.8 and "contradicts 4 of 4" in rs[2].reasons[0]
    assert all(rs[i].score == 0.0 for i in (0, 1, 3, 4))
    c = consistency_from(rs)
    assert c is not None and 0.0 < c < 1.0


def test_cross_two_documents_share_blame() -> None:
    rs = CrossConsistencySignal(nli=LexicalNLI()).score_batch(retrieved([CLEAN[0], POISON]))
    assert rs[0].score == pytest.approx(rs[1].score) and 0.3 < rs[0].score < 0.6
    assert "ambiguous" in rs[0].reasons[0]


def test_cross_single_document_consistency_one() -> None:
    rs = CrossConsistencySignal(nli=LexicalNLI()).score_batch(retrieved([CLEAN[0]]))
    assert rs[0].skipped and consistency_from(rs) == 1.0


def test_cross_unrelated_pairs_not_sent() -> None:
    nli = LexicalNLI()
    rs = CrossConsistencySignal(nli=nli).score_batch(
        retrieved(["Bananas are yellow fruit.", "Kernel modules load at boot time."])
    )
    assert nli.pairs_seen == 0 and consistency_from(rs) == 1.0


def test_cross_agreeing_set_fully_consistent() -> None:
    rs = CrossConsistencySignal(nli=LexicalNLI()).score_batch(retrieved(CLEAN))
    assert consistency_from(rs) == 1.0 and all(r.score == 0.0 for r in rs)


ON_TOPIC = [
    "Hash passwords with bcrypt and a unique salt per user.",
    "Use argon2 or bcrypt to hash stored passwords with a salt.",
    "Passwords need a slow hash such as bcrypt or argon2 with a unique salt.",
    "Never store passwords in plain text; hash them with bcrypt and salt.",
]


def test_outlier_table() -> None:
    sig = SemanticOutlierSignal(embedder=HashingEmbedder())
    rs = sig.score_batch(retrieved([*ON_TOPIC, "The festival features jazz bands and street food all summer."]))
    assert rs[-1].score > 0.3 and rs[-1].reasons
    assert all(r.score < 0.3 for r in rs[:-1])
    assert all(r.score < 0.3 for r in sig.score_batch(retrieved(ON_TOPIC)))


@pytest.mark.parametrize("k", [1, 2])
def test_outlier_small_batches_skipped(k: int) -> None:
    rs = SemanticOutlierSignal(embedder=HashingEmbedder()).score_batch(retrieved(ON_TOPIC[:k]))
    assert len(rs) == k and all(r.skipped and r.skip_reason for r in rs)


def test_outlier_three_documents_robust() -> None:
    rs = SemanticOutlierSignal(embedder=HashingEmbedder()).score_batch(retrieved(ON_TOPIC[:3]))
    assert all(0.0 <= r.score <= 1.0 and not r.skipped for r in rs)


class LinksContradict(LexicalNLI):
    """Calls any two texts that both hold a Markdown link a contradiction (the shipped model did, at 0.93)."""

    def predict(self, pairs):  # type: ignore[no-untyped-def]
        import numpy as np

        self.calls += 1
        self.pairs_seen += len(pairs)
        rows = [[0.02, 0.03, 0.95] if "](" in p and "](" in h else [0.1, 0.8, 0.1] for p, h in pairs]
        return np.asarray(rows, dtype=np.float32)


REFERENCE_TAIL = (
    "LDAP injection happens when user input reaches an LDAP filter without escaping. "
    "Escape every special character of the filter syntax before the query is built. "
    "Frameworks that build the filters for you escape the input for you as well.\n\n"
    "- OWASP article on [LDAP Injection](https://owasp.org/www-community/attacks/LDAP_Injection) and its variants.\n"
    "- [OWASP Testing Guide](https://owasp.org/testing) article on how to [Test for LDAP Injection](https://owasp.org/t)."
)


def test_intra_tail_checks_skip_a_reference_list() -> None:
    docs = retrieved([REFERENCE_TAIL])
    assert IntraConsistencySignal(nli=LinksContradict(), direction="both").score_batch(docs)[0].score == 0.0
    old = IntraConsistencySignal(nli=LinksContradict(), direction="both", prose_tail=False).score_batch(docs)[0]
    assert old.score > 0.8 and "OWASP Testing Guide" in old.reasons[0]  # the false alarm the rule removes
    # a tail that states something is still compared with the earlier statements
    prose = REFERENCE_TAIL.replace(
        "- [OWASP Testing Guide](https://owasp.org/testing) article on how to [Test for LDAP Injection](https://owasp.org/t).",
        "Escaping every special character of the filter syntax is never needed, whatever the input.",
    )
    r = IntraConsistencySignal(nli=LexicalNLI(), direction="both").score_batch(retrieved([prose]))[0]
    assert r.details["contradiction"].get("tail_sentence", 0.0) > 0.0


# a user's note (2026-12-08): the shipped NLI model reads the prohibition as contradicting the
# instruction (0.92), and the clean page was withheld
PASSWORD_NOTE = (
    "Store passwords with a slow, salted hash such as Argon2id, bcrypt or scrypt, always with a unique salt. "
    "Never store passwords in plain text or with a fast hash."
)
# a CWE entry: a description, then the advice that forbids what it describes
CWE_ENTRY = (
    "The product uses the class loader when it builds Enterprise JavaBeans components. "
    "Do not use the class loader when writing Enterprise JavaBeans components."
)


@pytest.mark.parametrize("text", [PASSWORD_NOTE, CWE_ENTRY])
def test_intra_reads_no_prohibition_against_a_statement(text: str) -> None:
    r = IntraConsistencySignal(nli=LexicalNLI(), direction="both").score_batch(retrieved([text]))[0]
    assert r.skipped and "prohibition" in (r.skip_reason or "") and r.score == 0.0
    old = IntraConsistencySignal(nli=LexicalNLI(), direction="both", instructions=False)
    assert old.score_batch(retrieved([text]))[0].score > 0.8  # what the rule leaves out


@pytest.mark.parametrize(
    ("sentence", "forbids"),
    [
        ("Never store passwords in plain text.", True),
        ("- Do not use the class loader.", True),
        ("2. Don't log session tokens.", True),
        ("Don\u2019t log session tokens.", True),
        ("Avoid MD5 for passwords.", True),
        ("Passwords are never stored in plain text.", False),
        ("Store passwords with bcrypt.", False),
        ("Nevertheless, the key is rotated.", False),
        ("**Never** commit keys.", True),
        ("- [ ] Do not reuse nonces.", True),
        ("> Avoid MD5.", True),
        ("Never-ending loops are a classic bug.", False),
        ("Never before has the service failed.", False),
    ],
)
def test_a_prohibition_opens_with_never_do_not_or_avoid(sentence: str, forbids: bool) -> None:
    assert prohibition(sentence) is forbids


def test_two_prohibitions_or_two_statements_are_still_compared() -> None:
    both_forbid = (
        "Never store passwords in plain text on any server. Do not log passwords on the server. "
        "Never hash passwords before you store them on the server."
    )
    r = IntraConsistencySignal(nli=LexicalNLI(), direction="both").score_batch(retrieved([both_forbid]))[0]
    assert not r.skipped
    r = IntraConsistencySignal(nli=LexicalNLI()).score_batch(retrieved([APPENDED]))[0]
    assert r.score > 0.8
