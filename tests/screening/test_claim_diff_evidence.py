"""``evidence_change``: the diff that bench/bench_answer_diff.py measured (not wired into Stage 2)."""

from __future__ import annotations

import pytest

from ragtrust.screening.claim_diff import evidence_change

PASSWORDS = "Use multi-factor authentication. Passwords must be at least 8 characters long."


@pytest.mark.parametrize(
    ("sentence", "evidence", "kind", "was", "now"),
    [
        ("Passwords must be at least 12 characters long.", PASSWORDS, "number", "8", "12"),
        ("Passwords may be at least 8 characters long.", PASSWORDS, "modal", "must", "may"),
        ("Passwords must not be at least 8 characters long.", PASSWORDS, "negation", "", "not"),
        (
            "Session IDs need at least 64 bytes of entropy.",
            "Session IDs need at least 64 bits of entropy.",
            "number",
            "64 bits",
            "64 bytes",
        ),
    ],
)
def test_the_fifth_audits_reworded_sentences_are_found_against_the_nearest_evidence_sentence(
    sentence: str, evidence: str, kind: str, was: str, now: str
) -> None:
    change = evidence_change(sentence, evidence)
    assert change is not None
    nearest, finding = change
    assert nearest in evidence and (finding.kind, finding.left, finding.right) == (kind, was, now)


def test_a_verbatim_sentence_and_the_md5_swap_are_not_changes() -> None:
    assert evidence_change("Passwords must be at least 8 characters long.", PASSWORDS) is None
    # three names replaced by one is no value-for-value swap: the documented miss
    storage = "Store passwords with Argon2id, bcrypt or scrypt and a unique salt."
    assert evidence_change("Store passwords with MD5 and a unique salt.", storage) is None
