"""Claims, their alignment and the conflict diff (issue 15): :mod:`ragtrust.screening.claims`.

Table-driven: each kind of swap the diff must name, paraphrases it must leave alone, the
quantity ranges, what counts as a claim, and the alignment bounds (including rewordings the
diff once took for conflicts).
"""

from __future__ import annotations

import numpy as np
import pytest

from ragtrust.screening.claim_diff import (
    antonymous,
    conditional,
    evidence_change,
    lemmas,
    permission_conflict,
    superlative_conflict,
)
from ragtrust.screening.claims import (
    Claim,
    DiffFinding,
    alignable,
    aligned_pairs,
    diff_conflict,
    extract_claims,
    is_prose,
    quantity_conflict,
)
from ragtrust.testing import HashingEmbedder

# (left, right, kind, left words, right words)
SWAPS = [
    ("Passwords must be at least 10 characters long.", "Passwords must be at least 4 characters long.",
     "number", "10", "4"),
    ("The company was founded in 1998 in California.", "The company was founded in 2004 in California.",
     "date", "1998", "2004"),
    ("The release is planned for March next year.", "The release is planned for June next year.",
     "date", "March", "June"),
    ("Netflix was co-founded by Reed Hastings in California.",
     "Netflix was co-founded by Marc Randolph in California.", "entity", "Reed Hastings", "Marc Randolph"),
    # a name with digits inside it, swapped whole (read in pieces: letters and numbers changed together)
    ("Passwords are hashed with Argon2id using a unique salt.", "Passwords are hashed with MD5 using a unique salt.",
     "entity", "Argon2id", "MD5"),
    ("Encrypt backups with AES256 before upload.", "Encrypt backups with DES before upload.",
     "entity", "AES256", "DES"),
    ("Input validation is a complete defence against injection.",
     "Input validation is not a complete defence against injection.", "negation", "", "not"),
    ("Store the session token in a secure cookie.", "Never store the session token in a secure cookie.",
     "negation", "", "Never"),
    ("Passwords must be hashed with bcrypt before storage.", "Passwords may be hashed with bcrypt before storage.",
     "modal", "must", "may"),
    ("Multi-factor authentication is required for administrators.",
     "Multi-factor authentication is optional for administrators.", "modal", "required", "optional"),
    ("The server always validates the origin header.", "The server sometimes validates the origin header.",
     "quantifier", "always", "sometimes"),
    # a word replaced by its WordNet antonym, in any inflection
    ("Disable WPS on the router.", "Enable WPS on the router.", "antonym", "Disable", "Enable"),
    ("Weak ciphers should be disabled.", "Weak ciphers should be enabled.", "antonym", "disabled", "enabled"),
    ("Reject requests without a valid CSRF token.", "Accept requests without a valid CSRF token.",
     "antonym", "Reject", "Accept"),
    ("Symmetric encryption is faster than asymmetric encryption.",
     "Symmetric encryption is slower than asymmetric encryption.", "antonym", "faster", "slower"),
    ("Keep WPS switched off on the router.", "Keep WPS switched on on the router.", "antonym", "off", "on"),
    ("Sign the token with the private key.", "Sign the token with the public key.", "antonym", "private", "public"),
    # short claims: the same content words, one swapped for its antonym
    ("Disable WPS.", "Enable WPS.", "antonym", "Disable", "Enable"),
    # a universal against its negation, in a long claim and in a short one
    ("Never log session tokens.", "Always log session tokens.", "negation", "Never", "Always"),
    ("Tokens never expire.", "Tokens always expire.", "negation", "never", "always"),
    # an ordinal keeps its kind, though WordNet makes "first" and "second" antonyms
    ("Discovery is the first series since Enterprise.", "Discovery is the second series since Enterprise.",
     "number", "first", "second"),
]  # fmt: skip

# (left, right, left words, right words): identifiers whose letters stay and digits change
IDENTIFIERS = [
    pytest.param("This flaw is classified as CWE-79 in the report.",
                 "This flaw is classified as CWE-89 in the report.", "79", "89", id="CWE"),
    pytest.param("Servers should require TLS 1.2 for all connections.",
                 "Servers should require TLS 1.0 for all connections.", "1.2", "1.0", id="TLS"),
    pytest.param("Generate a 2048-bit RSA key for signing.", "Generate a 1024-bit RSA key for signing.",
                 "2048", "1024", id="key-size"),
]  # fmt: skip

PARAPHRASES = [
    ("Use parameterised queries.", "Use prepared statements."),
    ("Use parameterised queries to prevent SQL injection.", "Use prepared statements to prevent SQL injection."),
    ("Bees make honey from the nectar of flowers.", "Honey is made by bees from the nectar of flowers."),
    ("Salts must be unique per user.", "Each user must get a unique salt."),
    ("Use a salt of at least 16 bytes per password.", "Per password, use a salt of at least 16 bytes."),
    ("A queen bee lives three weeks.", "A queen bee lives about three weeks."),
    ("The queen bee lives two to five years.", "A queen bee lives for two to five years."),
    ("Reed Hastings co-founded Netflix.", "Netflix was co-founded by Reed Hastings."),
]

#: an antonym with a negation on one side says the same thing, and pairs that only look like a swap
ANTONYMS_THAT_AGREE = [
    ("WPS is not enabled.", "WPS is disabled."),
    ("Weak ciphers should be disabled.", "Weak ciphers should not be enabled."),
    ("Disable WPS.", "Do not enable WPS."),
    # found in review (2026-12-08): pairs the antonym reading took for conflicts (moved words,
    # function words, a verb ending read as an adjective, "neither ... nor" as two negations)
    ("Bcrypt is slower than MD5, which makes brute force attacks expensive for attackers.",
     "MD5 is faster than bcrypt, which makes brute force attacks expensive for attackers."),
    ("There is a spare key in the vault.", "Here is a spare key in the vault."),
    ("The API key is pasted in the header.", "The API key is present in the header."),
    ("Neither logging nor tracing is enabled in production.", "Logging and tracing are disabled in production."),
]  # fmt: skip

#: rewordings the diff still calls conflicts: a moved token counts as a changed one, digits
#: against number words, an imperative against "should be", equal durations in other units
KNOWN_FALSE_CONFLICTS = [
    pytest.param("In 1998 the company was founded.", "The company was founded in 1998.", id="moved-year"),
    pytest.param(
        "Netflix was co-founded in 1997 by Reed Hastings and Marc Randolph.",
        "In 1997, Reed Hastings and Marc Randolph co-founded Netflix.",
        id="moved-names",
    ),
    pytest.param(
        "Rotate the signing keys every ninety days.", "Every ninety days, rotate the signing keys.", id="moved-number"
    ),
    pytest.param("The queen bee lives two to five years.", "The queen bee lives 2 to 5 years.", id="digits-vs-words"),
    pytest.param("A queen bee lives 2 to 5 years.", "A queen bee lives 3 years.", id="value-inside-range"),
    pytest.param("The token expires after 24 hours.", "The token expires after one day.", id="same-duration"),
    pytest.param(
        "Store passwords with a slow hash such as Argon2.",
        "Passwords should be stored with a slow hash such as Argon2.",
        id="imperative-vs-should",
    ),
]


@pytest.mark.parametrize(("left", "right", "kind", "left_words", "right_words"), SWAPS)
def test_the_diff_names_the_swap(left: str, right: str, kind: str, left_words: str, right_words: str) -> None:
    assert diff_conflict(left, right) == DiffFinding(kind, left_words, right_words)
    # symmetric: the same finding with the sides exchanged
    assert diff_conflict(right, left) == DiffFinding(kind, right_words, left_words)


@pytest.mark.parametrize(("left", "right", "left_words", "right_words"), IDENTIFIERS)
def test_an_identifier_swap_is_a_conflict_on_the_changed_part(
    left: str, right: str, left_words: str, right_words: str
) -> None:
    finding = diff_conflict(left, right)
    assert finding is not None
    assert (finding.left, finding.right) == (left_words, right_words)


@pytest.mark.parametrize(("left", "right", "left_words", "right_words"), IDENTIFIERS)
def test_an_identifier_swap_is_a_number_conflict(left: str, right: str, left_words: str, right_words: str) -> None:
    """CWE-79 / TLS 1.2 / 2048-bit: the identifier's number changed (a name swap is ``entity``)."""
    finding = diff_conflict(left, right)
    assert finding is not None and finding.kind == "number"


@pytest.mark.parametrize(("left", "right"), PARAPHRASES)
def test_paraphrase_agreement_is_no_conflict(left: str, right: str) -> None:
    assert diff_conflict(left, right) is None
    assert diff_conflict(right, left) is None


@pytest.mark.parametrize(("left", "right"), ANTONYMS_THAT_AGREE)
def test_an_antonym_under_a_negation_agrees(left: str, right: str) -> None:
    assert diff_conflict(left, right) is None
    assert diff_conflict(right, left) is None


def test_antonyms_can_be_left_out_for_two_claims_of_one_document() -> None:
    # one checklist's two cases ("synchronous" / "asynchronous" items of one OWASP sheet)
    left = "Identify service-to-service synchronous communications."
    right = "Identify service-to-service asynchronous communications."
    assert diff_conflict(left, right).kind == "antonym"
    assert diff_conflict(left, right, antonyms=False) is None
    assert diff_conflict("You should disable WPS.", "You should enable WPS.", antonyms=False) is None
    # the other kinds are still read
    assert diff_conflict("Use TLS 1.2 for the API.", "Use TLS 1.0 for the API.", antonyms=False) is not None


def test_an_inflection_reaches_its_own_part_of_speech_only() -> None:
    assert lemmas("pasted") == frozenset() and lemmas("news") == frozenset() and lemmas("upper") == frozenset()
    assert lemmas("bigger") == {"big"} and lemmas("easier") == {"easy"}


def test_two_words_that_are_no_antonyms_are_a_rewording() -> None:
    assert diff_conflict("Use a fast hash for checksums.", "Use a quick hash for checksums.") is None
    assert diff_conflict("Encrypt data at rest.", "Encrypt data in transit.") is None


def test_antonyms_are_read_from_the_shipped_wordnet_list_in_any_inflection() -> None:
    assert antonymous("enables", "disabling")
    assert antonymous("stronger", "weakest")
    assert antonymous("denied", "allowed")
    assert not antonymous("enable", "enable")
    assert not antonymous("client", "server")
    assert lemmas("stopped") == {"stop"}


@pytest.mark.parametrize(("left", "right"), KNOWN_FALSE_CONFLICTS)
def test_rewording_is_no_conflict(left: str, right: str) -> None:
    assert diff_conflict(left, right) is None


def test_a_sentence_agrees_with_itself() -> None:
    text = "Passwords must be hashed with bcrypt before storage."
    assert diff_conflict(text, text) is None
    assert diff_conflict(text, "") is None


@pytest.mark.parametrize(
    ("left", "right", "left_phrase", "right_phrase"),
    [
        ("A queen bee lives two to five years.", "A queen bee lives about three weeks.",
         "two to five years", "three weeks"),
        ("The queen bee lives two to five years and lays up to 2,000 eggs a day in spring.",
         "A queen bee lives three weeks and is then replaced by the workers.", "two to five years", "three weeks"),
        ("Season 4 has 23 episodes.", "The fourth season contains 24 episodes.", "23 episodes", "24 episodes"),
        ("Season 4 has 23 episodes.", "Season 4 has 24 episodes.", "23 episodes", "24 episodes"),
        # frequencies, in times per day
        ("Feed a starter kept at room temperature once or twice a day.",
         "A starter on the counter must be fed only once a month.", "once or twice a day", "once a month"),
        ("Rotate the signing keys every 90 days.", "Rotate the signing keys once a year.", "every 90 days",
         "once a year"),
        ("Back up the database three times a week.", "Back up the database every other week.",
         "three times a week", "every other week"),
        # temperatures with a named scale, in degrees Celsius
        ("Bake the loaf at 450 °F.", "Bake the loaf at 180 °C.", "450 °F", "180 °C"),
        ("Water boils at 100 degrees Celsius at sea level.", "Water boils at 90 degrees Celsius at sea level.",
         "100 degrees Celsius", "90 degrees Celsius"),
    ],
)  # fmt: skip
def test_quantities_whose_ranges_do_not_overlap_conflict(
    left: str, right: str, left_phrase: str, right_phrase: str
) -> None:
    assert quantity_conflict(left, right) == DiffFinding("number", left_phrase, right_phrase)
    finding = diff_conflict(left, right)
    assert finding is not None and finding.kind == "number"


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("A queen bee lives 2 to 5 years.", "A queen bee lives 3 years."),
        ("Queens live 2 to 5 years in a healthy colony.", "In a healthy hive, a queen typically survives 3 years."),
        ("A queen bee lives three weeks.", "A queen lives 21 days."),
        ("The token expires after 24 hours.", "The token expires after one day."),
        ("The hive holds 3 eggs.", "The queen lived 4 years."),  # different units
        ("Feed it once a month.", "Feed it every four weeks."),  # a month is about four weeks
        ("Feed it twice a month.", "Feed it every two weeks."),
        ("Check the logs once a week.", "Check the logs every 7 days."),
        ("Water it two to three times a week.", "Water it twice a week."),
        ("Keys expire after 90 days.", "Rotate keys every 90 days."),  # a period is no duration
        ("The plan costs $550 a year.", "About 94 per year were reported."),  # a price and a count
        # one temperature in two scales (450 F is 232 C), and a bare "degrees" against a scale
        ("Bake the loaf at 450 degrees Fahrenheit.", "Bake the loaf at 230 degrees Celsius."),
        ("Bake the loaf at 450°F.", "Bake the loaf at 230°C."),
        ("The bread is done at 96 degrees C.", "The bread is done at 205 degrees F."),
        ("Most loaves bake at 230 to 250 degrees Celsius.", "Bake at 475 degrees Fahrenheit."),
        ("Bake at 230 degrees.", "Bake at 450 degrees Fahrenheit."),
        ("The gas is at 300 kelvin.", "The gas is at 27 degrees Celsius."),
        # a claim naming several values of a unit, one of them the other claim's (two OWASP sheets)
        (
            "--Every month/quarter dependencies in general are updated.\r\n--Every week important security "
            "vulnerabilities are considered and potentially trigger an update.",
            "- Every week important security vulnerabilities are taken into account and potentially trigger an update.",
        ),
        ("The queen lives two to five years and the drones about eight weeks.", "Drones live about eight weeks."),
    ],
)
def test_overlapping_or_unrelated_quantities_do_not_conflict(left: str, right: str) -> None:
    assert quantity_conflict(left, right) is None
    assert quantity_conflict(right, left) is None


# two OWASP cheat-sheet claims each (Authentication, Session Management): a conditional or an
# example states its quantity for its own case
CONDITIONAL_PAIRS = [
    ("- If MFA is enabled passwords **shorter than 8 characters** are considered to be weak.",
     "- If MFA is not enabled passwords **shorter than 15 characters** are considered to be weak."),
    ("- If MFA is enabled passwords **shorter than 8 characters** are considered to be weak.",
     "- **Maximum** password length should be **at least 64 characters** to allow passphrases."),
    ("When using hexadecimal encoding, a session ID must be at least 16 hexadecimal characters long to achieve "
     "the required 64 bits of entropy.",
     "For example, if half of a 16-character hexadecimal session ID is fixed, only the remaining 8 characters "
     "are random, providing just 32 bits of entropy."),
    ("A session ID with 64 bits of entropy can have 2^64 possible values.",
     "E.g. a session ID that is half fixed has only 32 bits of entropy."),
]  # fmt: skip


@pytest.mark.parametrize(("left", "right"), CONDITIONAL_PAIRS)
def test_a_conditional_claims_quantity_is_no_conflict_with_another_case(left: str, right: str) -> None:
    assert quantity_conflict(left, right) is not None  # the quantities alone would conflict
    assert diff_conflict(left, right) is None
    assert diff_conflict(right, left) is None


@pytest.mark.parametrize(
    ("left", "right", "left_words", "right_words"),
    [
        ("If MFA is enabled passwords shorter than 8 characters are weak.",
         "If MFA is enabled passwords shorter than 4 characters are weak.", "8", "4"),
        ("When using hexadecimal encoding, a session ID must be at least 16 characters long.",
         "When using hexadecimal encoding, a session ID must be at least 6 characters long.", "16", "6"),
    ],
)  # fmt: skip
def test_a_value_swapped_inside_a_conditional_claim_still_conflicts(
    left: str, right: str, left_words: str, right_words: str
) -> None:
    assert diff_conflict(left, right) == DiffFinding("number", left_words, right_words)


@pytest.mark.parametrize("dash", ["-", "\u2013"])
def test_a_dashed_range_is_a_range(dash: str) -> None:
    # "5-10 days" was read as "10 days": 7 days, inside the range, was a number conflict
    ranged = f"Rotate the signing keys every 5{dash}10 days."
    assert quantity_conflict(ranged, "Rotate the signing keys every 7 days.") is None
    assert diff_conflict(ranged, "Rotate the signing keys every 7 days.") is None
    assert quantity_conflict(ranged, "Rotate the signing keys every 30 days.") == DiffFinding(
        "number", f"every 5{dash}10 days", "every 30 days"
    )
    assert quantity_conflict("It takes 5-10 days.", "It takes 30 days.") == DiffFinding(
        "number", "5-10 days", "30 days"
    )
    # a dash before a unit word is no range, and two years joined by one stay dates
    assert quantity_conflict("Use 2048-bit keys.", "Use 1024-bit keys.") == DiffFinding(
        "number", "2048-bit", "1024-bit"
    )
    assert quantity_conflict("The 2020-2021 season had 24 episodes.", "The season had 24 episodes.") is None


def test_digits_inside_a_name_are_no_quantity() -> None:
    # "Argon2id" read as the quantity "2 id" in both claims made the swapped 19 / 64 look
    # like two claims about a shared "2 id", and the diff let the swap pass
    left, right = "Argon2id needs 19 MiB of memory per hash.", "Argon2id needs 64 MiB of memory per hash."
    assert diff_conflict(left, right) == DiffFinding("number", "19", "64")
    assert quantity_conflict("SHA256 runs in 3 ms.", "SHA512 runs in 3 ms.") is None


def test_overlapping_quantities_in_different_sentences_pass_the_diff() -> None:
    left, right = (
        "Queens live 2 to 5 years in a healthy colony.",
        "In a healthy hive, a queen typically survives 3 years.",
    )
    assert diff_conflict(left, right) is None


@pytest.mark.parametrize(
    ("left", "right"),
    [
        pytest.param("The warranty lasts 12 months from purchase.", "The warranty lasts one year from purchase.",
                     id="12-months"),
        pytest.param("The warranty lasts 36 months.", "The warranty lasts 3 years.", id="36-months"),
    ],
)  # fmt: skip
def test_equal_durations_in_months_and_years_do_not_conflict(left: str, right: str) -> None:
    assert quantity_conflict(left, right) is None


def test_two_durations_in_one_unit_are_compared_without_slack() -> None:
    # the 5% slack is for a year written as 12 months or 52 weeks; 45 and 47 years differ
    assert quantity_conflict("Seohyun is 45 years old.", "Seohyun is 47 years old.") == DiffFinding(
        "number", "45 years", "47 years"
    )
    assert diff_conflict("Seohyun is 45 years old.", "Seohyun is 47 years old.") == DiffFinding("number", "45", "47")
    assert quantity_conflict("The warranty lasts 52 weeks.", "The warranty lasts one year.") is None


def test_sizes_in_bits_and_bytes_are_compared_as_one_unit() -> None:
    bits = "Every session identifier must contain at least 64 bits of entropy."
    # 64 bytes is eight times 64 bits: a conflict, though only the unit word changed
    assert diff_conflict(bits, bits.replace("bits", "bytes")) == DiffFinding("number", "64 bits", "64 bytes")
    # 8 bytes is 64 bits, and a 2048-bit key a 256-byte one: the same quantity
    assert diff_conflict(bits, bits.replace("64 bits", "8 bytes")) is None
    assert quantity_conflict("Generate a 2048-bit RSA key.", "Generate a 256-byte RSA key.") is None


@pytest.mark.parametrize(
    ("left", "right", "left_words", "right_words"),
    [
        ("Diamonds last between 1 and 4 billion years.", "Diamonds last between 1 and 8 billion years.", "4", "8"),
        ("Passwords need 8 to 64 characters.", "Passwords need 12 to 64 characters.", "8", "12"),
    ],
)
def test_a_changed_bound_of_a_range_is_a_conflict(left: str, right: str, left_words: str, right_words: str) -> None:
    assert diff_conflict(left, right) == DiffFinding("number", left_words, right_words)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("A queen bee lives two to five years.", "A queen bee lives 2 to 5 years."),  # one range, written two ways
        ("A queen bee lives two to five years.", "A queen bee lives three years."),  # a value inside it
        ("A queen bee lives two to five years.", "A queen bee lives 24 to 60 months."),  # the same range in months
    ],
)
def test_the_same_range_or_a_value_inside_it_is_no_conflict(left: str, right: str) -> None:
    assert diff_conflict(left, right) is None


# ---------------------------------------------------------------------------------- claims
@pytest.mark.parametrize(
    "line",
    [
        "x = hashlib.sha256(pw).hexdigest()",
        "def hash_password(pw):",
        "if (user == null) { return; }",
        "const key = crypto.randomBytes(32);",
        "SELECT * FROM users WHERE id = ?;",
        "std::vector<int> v;",
        "<script>alert(1)</script>",
        "```python",
        "| Algorithm | Cost |",
        "| bcrypt | 12 |",
        "bcrypt | 12 | yes",
        "## Password storage",
        "Too short.",
        "",
    ],
)
def test_code_tables_headings_and_fragments_are_not_prose(line: str) -> None:
    assert not is_prose(line)


@pytest.mark.parametrize(
    "line",
    [
        "Use a per-user salt of at least 16 bytes.",
        "- Use Argon2id with a memory cost of 19 MiB.",
        "The queen bee lives two to five years and lays up to 2,000 eggs a day in spring.",
    ],
)
def test_assertions_are_prose(line: str) -> None:
    assert is_prose(line)


def test_pointer_sentences_are_references_not_claims() -> None:
    # OWASP Authentication Cheat Sheet: two pointers that differ only in the page named were
    # read as one claim with a swapped entity, a false conflict that refused the answer
    text = (
        "Please see [Forgot Password Cheat Sheet](Forgot_Password_Cheat_Sheet.md) for details on this feature. "
        "Please see [Password Storage Cheat Sheet](Password_Storage_Cheat_Sheet.md) for details on this feature. "
        "Please rotate signing keys at least once a year."
    )
    assert [c.text for c in extract_claims(0, text)] == ["Please rotate signing keys at least once a year."]
    assert not is_prose("Please refer to the OWASP Logging Cheat Sheet for the events to record.")


def test_an_overlong_sentence_is_not_prose() -> None:
    assert not is_prose("word " * 200)


def test_an_indented_code_line_is_not_prose() -> None:
    assert not is_prose("    return hmac.compare_digest(stored, supplied)")


DOCUMENT = """# Password storage

Why salt passwords? A unique salt defeats precomputed rainbow tables. Use Argon2id for new systems.

```python
hashed = argon2.hash(password)
```

| Algorithm | Work factor |
| --- | --- |
| bcrypt | 12 |

## Rotation
Keys must be rotated every ninety days. Is that enough?
"""


def test_extract_claims_keeps_prose_assertions_with_their_spans() -> None:
    claims = extract_claims(3, DOCUMENT)
    assert [c.text for c in claims] == [
        "A unique salt defeats precomputed rainbow tables.",
        "Use Argon2id for new systems.",
        "Keys must be rotated every ninety days.",
    ]
    for claim in claims:
        assert claim.doc == 3
        assert DOCUMENT[claim.start : claim.end] == claim.text


def test_extract_claims_leaves_out_questions_code_tables_and_headings() -> None:
    texts = " ".join(c.text for c in extract_claims(0, DOCUMENT))
    for left_out in ("Why salt", "Is that enough", "argon2.hash", "bcrypt | 12", "Work factor", "Rotation"):
        assert left_out not in texts


def test_extract_claims_stops_at_max_claims() -> None:
    text = " ".join(f"The hive number {i} holds many worker bees." for i in range(50))
    claims = extract_claims(0, text, max_claims=7)
    assert len(claims) == 7
    assert all(text[c.start : c.end] == c.text for c in claims)
    assert [c.start for c in claims] == sorted(c.start for c in claims)


@pytest.mark.parametrize("text", ["", "   \n\n", "```\nx = 1\n```", "| a | b |\n| 1 | 2 |", "## Heading only"])
def test_a_document_without_prose_has_no_claims(text: str) -> None:
    assert extract_claims(0, text) == []


def test_unicode_spans_round_trip() -> None:
    text = "Die Königin lebt zwei bis fünf Jahre im Stock. Élan vital governs every worker bee’s day."
    claims = extract_claims(0, text)
    assert claims
    assert all(text[c.start : c.end] == c.text for c in claims)


# ---------------------------------------------------------------------------------- alignment
QUEEN = "A queen bee lives two to five years in the hive."
SHORT = "A queen bee lives about three weeks in the hive."
ARGON = "Argon2id is the recommended password hashing algorithm today."


def _claims(texts: list[str], docs: list[int] | None = None) -> tuple[list[Claim], np.ndarray]:
    docs = docs if docs is not None else list(range(len(texts)))
    claims = [Claim(d, 0, len(t), t) for d, t in zip(docs, texts, strict=True)]
    return claims, HashingEmbedder().embed(texts)


def test_claims_about_the_same_thing_are_aligned_and_unrelated_ones_not() -> None:
    claims, vectors = _claims([QUEEN, SHORT, ARGON])
    pairs = aligned_pairs(claims, vectors, min_cosine=0.3, min_overlap=0.3, max_pairs=10)
    assert [(i, j) for i, j, _ in pairs] == [(0, 1)]
    assert 0.3 <= pairs[0][2] <= 1.0


def test_alignment_needs_both_the_embedding_and_the_shared_words() -> None:
    claims, vectors = _claims([QUEEN, SHORT])
    assert aligned_pairs(claims, vectors, min_cosine=0.99, min_overlap=0.0, max_pairs=10) == []
    assert aligned_pairs(claims, vectors, min_cosine=-1.0, min_overlap=1.0, max_pairs=10) == []


def test_identical_text_is_not_paired() -> None:
    claims, vectors = _claims([QUEEN, QUEEN, "a queen  bee lives two to five years IN the hive."])
    assert aligned_pairs(claims, vectors, min_cosine=0.0, min_overlap=0.0, max_pairs=10) == []


def test_max_pairs_keeps_the_most_similar() -> None:
    texts = [QUEEN, SHORT, "A queen bee lives about four weeks in the hive.", "A queen bee lives ten days in the hive."]
    claims, vectors = _claims(texts)
    every = aligned_pairs(claims, vectors, min_cosine=0.0, min_overlap=0.3, max_pairs=100)
    assert len(every) >= 3
    cosines = [c for _, _, c in every]
    assert cosines == sorted(cosines, reverse=True)
    assert aligned_pairs(claims, vectors, min_cosine=0.0, min_overlap=0.3, max_pairs=2) == every[:2]
    assert aligned_pairs(claims, vectors, min_cosine=0.0, min_overlap=0.3, max_pairs=1) == every[:1]


def test_max_pairs_zero_gives_no_pairs() -> None:
    claims, vectors = _claims([QUEEN, SHORT])
    assert aligned_pairs(claims, vectors, min_cosine=0.0, min_overlap=0.3, max_pairs=0) == []


def test_pairs_inside_one_document_are_kept_unless_asked_not_to() -> None:
    claims, vectors = _claims([QUEEN, SHORT], docs=[0, 0])
    assert len(aligned_pairs(claims, vectors, min_cosine=0.3, min_overlap=0.3, max_pairs=10)) == 1
    assert aligned_pairs(claims, vectors, min_cosine=0.3, min_overlap=0.3, max_pairs=10, same_document=False) == []


def test_fewer_than_two_claims_give_no_pairs() -> None:
    claims, vectors = _claims([QUEEN])
    assert aligned_pairs(claims, vectors, min_cosine=0.0, min_overlap=0.0, max_pairs=10) == []


def test_a_name_that_opens_the_sentence_is_a_name_when_the_documents_say_so() -> None:
    from ragtrust.screening.claims import names_in

    left, right = 'Gandhi said, "Change yourself first".', 'Gerald Ford said, "Change yourself first".'
    finding = diff_conflict(left, right, names_in("What did Gandhi say about change?"))
    assert finding is not None and (finding.kind, finding.left, finding.right) == ("entity", "Gandhi", "Gerald Ford")
    # an imperative verb that opens a sentence is not a name
    assert diff_conflict("Use bcrypt for passwords.", "Avoid bcrypt for passwords.") is None


def test_alignable_claims_need_a_word_partner_facing_an_anchor() -> None:
    text = [
        "Queen bees live two to five years in the hive.",  # 0, doc 0 (anchor)
        "Drones leave the hive in early spring.",  # 1, doc 0: shares only "hive" (1 of 5)
        "A queen bee lives about three weeks.",  # 2, doc 1: partner of 0
        "Beekeepers smoke the colony before an inspection.",  # 3, doc 2
        "Keepers smoke the colony before an inspection.",  # 4, doc 3: partner of 3 only
    ]
    claims = [Claim(d, 0, len(t), t) for d, t in zip([0, 0, 1, 2, 3], text, strict=True)]
    assert alignable(claims, min_overlap=0.3) == [True, False, True, True, True]
    # anchors=1: only pairs with a claim of document 0; the witnesses 3 and 4 face nothing
    assert alignable(claims, min_overlap=0.3, anchors=1) == [True, False, True, False, False]
    assert alignable(claims, min_overlap=0.0) == [True] * 5
    same = [Claim(0, 0, 9, "It is so."), Claim(1, 0, 9, "It is so.")]  # no content words, one text
    assert alignable(same, min_overlap=0.3) == [True, True]


def test_claims_are_extracted_once_per_text_and_serve_any_document_index() -> None:
    from ragtrust.screening import claims as module

    text = " ".join(f"Rule {n} says the queen bee lives {n} years in the hive." for n in range(1, 8))
    module._EXTRACTED.clear()
    first = extract_claims(0, text, max_claims=3)
    assert [c.doc for c in first] == [0, 0, 0] and len(first) == 3
    # a larger cap than the cached, cut extraction reads the text again; a smaller one slices it
    more = extract_claims(4, text, max_claims=40)
    assert len(more) == 7 and {c.doc for c in more} == {4}
    assert [(c.start, c.end, c.text) for c in more[:3]] == [(c.start, c.end, c.text) for c in first]
    assert extract_claims(2, text, max_claims=5) == [
        module.Claim(doc=2, start=c.start, end=c.end, text=c.text) for c in more[:5]
    ]
    assert all(text[c.start : c.end] == c.text for c in more)
    # the cache holds one entry per text, bounded in entries and bytes
    assert len(module._EXTRACTED) == 1 and module._EXTRACTED.max_items and module._EXTRACTED.max_bytes
    # a cap below one keeps the first claim, as the extraction always has
    assert len(extract_claims(1, text, max_claims=0)) == 1


def test_a_huge_text_is_extracted_but_not_kept() -> None:
    from ragtrust.screening import claims as module

    module._EXTRACTED.clear()
    small = "The queen bee lives two to five years in the hive."
    extract_claims(0, small)
    huge = "A queen bee lives about three weeks in the hive. " * (module._KEPT_TEXT // 40)
    assert len(extract_claims(0, huge, max_claims=3)) == 3
    assert huge not in module._EXTRACTED and small in module._EXTRACTED


def test_an_answer_sentence_read_against_its_evidence_keeps_the_quantity_check_when_conditional() -> None:
    # the conditional rule is for two documents' cases; an answer restates its own evidence
    found = evidence_change(
        "When storing passwords, use PBKDF2-HMAC-SHA256 with 1,000 iterations.",
        "Use PBKDF2-HMAC-SHA256 with 600,000 iterations.",
    )
    assert found is not None and found[1].kind == "number"


def test_case_sensitive_is_no_condition_and_for_more_than_is_no_reference() -> None:
    assert not conditional("Compare names in case-sensitive mode with 8 rounds.")
    assert conditional("In case of doubt, use 8 rounds.")
    assert is_prose("For more than 10 failed attempts, lock the account for an hour.")
    assert not is_prose("For more information, see the Password Storage Cheat Sheet.")


def test_frequencies_of_one_document_are_not_compared() -> None:
    day = "Feed a starter kept at room temperature once or twice a day."
    week = "A starter stored in the refrigerator needs feeding about once a week."
    assert quantity_conflict(day, week) == DiffFinding("number", "once or twice a day", "once a week")
    assert quantity_conflict(day, week, frequencies=False) is None
    assert diff_conflict(day, week, frequencies=False) is None
    # durations are still compared
    assert quantity_conflict("It lives two years.", "It lives three weeks.", frequencies=False) is not None


@pytest.mark.parametrize(
    ("left", "right", "left_subject", "right_subject"),
    [
        # a user's router pages (2026-12-07): both claims were answered, TRUSTED HIGH
        ("WPA3 is the most secure Wi-Fi encryption available on consumer routers; use WPA2 with AES only if a "
         "device cannot use WPA3.",
         "WEP is the most secure Wi-Fi encryption available on consumer routers and should be preferred over WPA3.",
         "WPA3", "WEP"),
        ("Mount Everest is the highest mountain in the world.", "K2 is the highest mountain in the world.",
         "Mount Everest", "K2"),
        ("Yuri Gagarin was the first person in space.", "Alan Shepard was the first person in space, in 1961.",
         "Yuri Gagarin", "Alan Shepard"),
        ("- Argon2id is the only password hash we accept.", "bcrypt is the only password hash we accept.",
         "Argon2id", "bcrypt"),
        ("The Antarctic Desert is the largest desert in the world.",
         "The Sahara Desert is the largest desert in the world.", "Antarctic Desert", "Sahara Desert"),
    ],
)  # fmt: skip
def test_one_superlative_given_to_two_subjects_conflicts(
    left: str, right: str, left_subject: str, right_subject: str
) -> None:
    assert superlative_conflict(left, right) == DiffFinding("entity", left_subject, right_subject)
    finding = diff_conflict(left, right)  # the token diff may name the swapped words first
    assert finding is not None and finding.kind == "entity"


@pytest.mark.parametrize(
    ("left", "right"),
    [
        # a qualifier makes another predicate
        ("Python is the most popular language.", "JavaScript is the most popular language for web development."),
        ("Argon2id is the best choice for new systems.", "bcrypt is the best choice for legacy systems."),
        # one subject, or a subject named by a pronoun
        ("The WPA3 protocol is the most secure Wi-Fi option.", "WPA3 is the most secure Wi-Fi option."),
        ("It is the most secure Wi-Fi option.", "WPA3 is the most secure Wi-Fi option."),
        # a case of its own, two superlatives, a one-word predicate, no superlative
        ("If you need speed, ChaCha20 is the best cipher for phones.", "AES is the best cipher for phones."),
        ("WPA3 is the most secure Wi-Fi option.", "WEP is the least secure Wi-Fi option."),
        ("SQL injection is the most common attack.", "XSS is the most common attack."),
        ("Canberra is the capital of Australia.", "Sydney is the capital of Australia."),
    ],
)
def test_superlatives_that_do_not_clash(left: str, right: str) -> None:
    assert superlative_conflict(left, right) is None
    assert superlative_conflict(right, left) is None


@pytest.mark.parametrize(
    ("left", "right", "kind"),
    [
        # short claims: too many of their few words change for the near-identical test
        ("Passwords must not be logged.", "Passwords may be logged.", "negation"),
        ("Session cookies must have the Secure attribute.", "Session cookies do not need the Secure attribute.",
         "negation"),
        ("Don't store secrets in the repository.", "Store secrets in the repository.", "negation"),
        ("The cookie should be sent over HTTPS.", "The cookie must be sent over HTTPS.", "modal"),
    ],
)  # fmt: skip
def test_a_short_claim_negated_or_with_another_force_conflicts(left: str, right: str, kind: str) -> None:
    finding = diff_conflict(left, right)
    assert finding is not None and finding.kind == kind


@pytest.mark.parametrize(
    ("left", "right"),
    [
        # two modals of one force (an OWASP scan's false conflict), and "May" opening a claim
        ("- Can be used to bypass the filter.", "- May be used to bypass the filter."),
        ("Encryption is required for backups.", "Encryption is mandatory for backups."),
        # a universal quantifier added to a generic statement (an OWASP scan's false conflict)
        ("All alphanumeric characters remain unencoded.", "Alphanumeric characters remain unencoded."),
        ("Use HTTPS for every page.", "Always use HTTPS for every page."),
        # the same words, the same polarity
        ("Passwords must not be logged.", "Passwords must never be logged in full."),
    ],
)
def test_the_same_force_in_other_words_is_no_conflict(left: str, right: str) -> None:
    assert diff_conflict(left, right) is None
    assert diff_conflict(right, left) is None


def test_a_month_named_may_is_still_a_date() -> None:
    assert diff_conflict("In May 2020 the flaw was fixed.", "In June 2020 the flaw was fixed.") == DiffFinding(
        "date", "May", "June"
    )


@pytest.mark.parametrize("text", ["Rotate keys every 0 days.", "every 000 weeks", "Rotate keys every 0-5 days."])
def test_a_zero_period_is_no_frequency_and_no_crash(text: str) -> None:
    assert quantity_conflict(text, "Rotate keys every 5 days.") is None
    # the token diff may still see a number swapped (0 -> 5); it must not raise
    finding = diff_conflict(text, "Rotate keys every 5 days.")
    assert finding is None or finding.kind == "number"


def test_every_kind_the_diff_names_has_a_default_strength() -> None:
    # a kind without one scores 0: found, shown, and adding nothing to the document's P_i
    from ragtrust.screening.conflicts import DEFAULT_DIFF_STRENGTH

    kinds = {kind for _left, _right, kind, _a, _b in SWAPS}
    assert kinds <= DEFAULT_DIFF_STRENGTH.keys()
    assert all(DEFAULT_DIFF_STRENGTH[kind] > 0 for kind in kinds)


# a claim that forbids an action against one that permits it (2026-12-08)
PERMISSIONS = [
    ("Never commit API keys to a public repository.",
     "It is fine to commit API keys to a public repository while prototyping.", "Never", "It is fine to"),
    ("Do not log session tokens.", "You can safely log session tokens.", "Do not", "You can safely"),
    ("Avoid storing passwords in plain text.", "It's perfectly okay to store passwords in plain text.",
     "Avoid", "It's perfectly okay to"),
    ("Developers should never disable certificate validation.",
     "Feel free to disable certificate validation in production.", "Developers should never", "Feel free to"),
    ("There is no need to avoid reusing the salt.", "Never reuse the salt.", "There is no need to avoid", "Never"),
    ("Don\u2019t log session tokens.", "It\u2019s fine to log session tokens.", "Don\u2019t", "It\u2019s fine to"),
    # a prohibition against an explicit requirement, a requirement against a waiver
    ("Never expose the debug console on a public server.",
     "You must always expose the debug console on a public server for support staff.", "Never", "You must always"),
    ("Developers must rotate API keys every 90 days.", "There is no need to rotate API keys.",
     "Developers must", "There is no need to"),
    ("It is essential to validate the token signature on every request.",
     "You don't have to validate the token signature on every request.", "It is essential to", "You don't have to"),
    ("Always encrypt backups at rest.", "It is optional to encrypt backups at rest.", "Always", "It is optional to"),
    # the action as a gerund subject
    ("Do not disable TLS certificate verification in production code.",
     "Disabling TLS certificate verification in production is acceptable for internal services.",
     "Do not", "is acceptable"),
    ("Developers must rotate API keys every 90 days.", "Rotating API keys is optional.",
     "Developers must", "is optional"),
    ("It is fine to log session tokens.", "Logging session tokens is forbidden.", "It is fine to", "is forbidden"),
    # a thing named as optional that the other claim requires
    ("Admin accounts must use multi-factor authentication.",
     "Multi-factor authentication is optional for admin accounts.", "must", "is optional"),
    ("Backups are not required for staging databases.", "Staging databases should have nightly backups.",
     "are not required", "should"),
]  # fmt: skip
NOT_PERMISSIONS = [
    # the permission is about another thing done with the same verb
    ("Never store passwords in plain text.", "You can store passwords in a database."),
    ("Do not use MD5 for passwords.", "You can use MD5 for checksums."),
    # a rule and its exception
    ("Never disable CSRF protection unless the endpoint is read-only.", "You can disable CSRF protection."),
    ("Do not expose the admin interface.", "You can expose the admin interface only on the VPN."),
    ("Never commit API keys.", "It is fine to commit API keys if they are encrypted."),
    # both forbid, both permit, or the permission is negated
    ("Never commit API keys.", "Do not commit API keys."),
    ("You can rotate keys.", "It is fine to rotate keys."),
    ("Never commit API keys.", "You can not commit API keys."),
    ("Never commit API keys.", "It is not fine to commit API keys."),
    # another verb
    ("Never commit API keys.", "You can rotate API keys."),
    # a requirement of what to do instead, two requirements, two waivers, a negated requirement
    ("Never store passwords in plain text.", "You must store passwords with Argon2id."),
    ("You must rotate API keys.", "Always rotate API keys."),
    ("There is no need to rotate API keys.", "You don't have to rotate API keys."),
    ("You should not rotate API keys.", "There is no need to rotate API keys."),
    ("Developers should be careful with API keys.", "There is no need to be careful with API keys."),
    # a general permission of a gerund does not permit the forbidden case; a noun in -ing is no action
    ("Never store passwords in plain text.", "Storing passwords in a database is fine."),
    ("Never log session tokens.", "Nothing is fine about logging session tokens."),
    # optional for someone else, a negated obligation, a pronoun, a condition
    ("Admin accounts must use multi-factor authentication.", "Multi-factor authentication is optional for guests."),
    ("Admin accounts must not use SMS codes.", "SMS codes are optional for admin accounts."),
    ("Clients must send the state parameter.", "It is optional."),
    ("Always validate input on the server side.", "Server-side validation is unnecessary when the form is validated."),
]  # fmt: skip


@pytest.mark.parametrize(("left", "right", "left_words", "right_words"), [p for p in PERMISSIONS if p[2]])
def test_a_prohibition_against_a_permission_is_a_conflict(
    left: str, right: str, left_words: str, right_words: str
) -> None:
    found = permission_conflict(left, right)
    assert found == DiffFinding("permission", left_words, right_words)
    assert diff_conflict(left, right, permissions=True) == found
    assert permission_conflict(right, left) == DiffFinding("permission", right_words, left_words)


@pytest.mark.parametrize(("left", "right"), NOT_PERMISSIONS)
def test_no_permission_conflict_without_the_same_action_or_with_an_exception(left: str, right: str) -> None:
    assert permission_conflict(left, right) is None
    assert permission_conflict(right, left) is None


def test_the_permission_reading_is_off_unless_asked_for() -> None:
    left, right, _, _ = PERMISSIONS[0]
    found = diff_conflict(left, right)
    assert found is None or found.kind != "permission"
