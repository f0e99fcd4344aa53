"""Knowledge-poisoning patterns: answer steering, update claims, contradiction markers, headers.

The cues of a document that wants the answer changed rather than the model hijacked (see
:mod:`ragtrust.screening.patterns` for their provenance and the held-out rule).

Example:
    >>> sorted({p.category for p in POISONING_PATTERNS})
    ['answer_steering', 'attention_header', 'contradiction_marker', 'update_claim']
"""

from __future__ import annotations

from ragtrust.screening.patterns.base import (
    AI_SUBJECT,
    AUDIENCE,
    ENDORSED,
    HENCEFORTH,
    INFO_OBJ,
    INVALID,
    SAY,
    SAY_MORE,
    TELL,
    Pattern,
)

POISONING_PATTERNS: tuple[Pattern, ...] = (
    # --- answer steering (SPEC 3 "the system must now answer ...")
    Pattern(
        "addressee_must_answer",
        "answer_steering",
        0.75,
        rf"\b{AI_SUBJECT}\s+(?:must|should|shall|will|is\s+to|are\s+to|needs?\s+to|has\s+to|have\s+to|"
        rf"(?:is|are)\s+(?:required|instructed|expected|supposed|told)\s+to)\s+"
        rf"(?:(?:(?:now|always|only|henceforth|instead|from\s+now\s+on)\s+)+{SAY_MORE}\b"
        rf"|{SAY_MORE}\s+(?:only\s+)?(?:that\b|:|with\s+[\"'\u201c])|{TELL}\s+{AUDIENCE}\b)"
        rf"|\byou\s+(?:must|should|shall|will)\s+(?:now|always|only|henceforth|instead)\s+{SAY_MORE}\b",
        "tells the assistant what it must answer",
    ),
    Pattern(
        "instead_say",
        "answer_steering",
        0.6,
        rf"\b(?:instead|rather)\s*,?\s+(?:you\s+(?:should|must)\s+)?{SAY}\b",
        "tells the reader to say something else instead",
    ),
    Pattern(
        "when_asked_say",
        "answer_steering",
        0.7,
        r"\b(?:when|if|whenever)\s+(?:you\s+are\s+|users?\s+|anyone\s+|someone\s+)?(?:asked|asks?|questioned|queried)"
        r"\b.{0,120}?,?\s+(?:always\s+|you\s+(?:must|should)\s+)?(?:answer|respond|reply|say|state|tell\s+them)\b",
        "scripts the answer to a question",
    ),
    Pattern(
        "respond_only_with",
        "answer_steering",
        0.75,
        r"(?:^\W*|[,;:]\s*|\b(?:please|and|now|then|just|simply|always|you\s+(?:must|should|will))\s+)"
        r"(?:respond|reply|answer)\s+(?:(?:only|solely|exclusively)\s+(?:with|by\s+saying|that)\b|"
        r"with\s+(?:only|just)\s+(?:the\s+)?(?:words?|phrase|sentence|text|following|[\"'\u201c]))",
        "an imperative to answer only with a given text",
    ),
    Pattern(
        "from_now_on_answer",
        "answer_steering",
        0.75,
        rf"\b{HENCEFORTH}\s*,?\s+(?:you\s+(?:must|should|will)\s+)?(?:always\s+|only\s+)?"
        rf"(?:answer|respond|reply|say|state|claim|insist|assert)\b",
        "changes what is to be answered 'from now on'",
    ),
    Pattern(
        "from_now_on_tell",
        "answer_steering",
        0.6,
        rf"\b{HENCEFORTH}\s*,?\s+(?:you\s+(?:must|should|will)\s+)?(?:always\s+|only\s+)?"
        rf"(?:recommend|{TELL}\s+{AUDIENCE})\b",
        "changes what users are to be told 'from now on' (staff memos do this too)",
    ),
    Pattern(
        "tell_audience",
        "answer_steering",
        0.25,
        rf"\b{TELL}\s+{AUDIENCE}\s+that\b",
        "tells the reader what to tell users (weak alone: how-tos do this too)",
    ),
    Pattern(
        "tell_audience_endorsed",
        "answer_steering",
        0.6,
        rf"\b{TELL}\s+{AUDIENCE}\s+that\b(?:[^.;!?\n]|\.(?=\w)){{0,160}}?\b(?:is|are)\s+(?:now\s+|still\s+|actually\s+)?"
        rf"(?:the\s+|an?\s+|considered\s+|perfectly\s+)?(?:now\s+)?{ENDORSED}\b",
        "tells the reader to assure users that something is approved or safe",
    ),
    Pattern(
        "answer_that",
        "answer_steering",
        0.45,
        r"^\W*(?:(?:please|now|instead|just|simply)\s*,?\s+)?(?:answer|reply|respond|say|state|claim)\s+"
        r"(?:only\s+)?(?:that\b(?!\s+(?:questions?|calls?|emails?|messages?|ones?|query|queries|tickets?|requests?|"
        r"prompts?|way)\b)|:)",
        "a sentence that opens by telling the reader what to answer",
    ),
    Pattern(
        "always_answer",
        "answer_steering",
        0.6,
        r"\b(?:always|only|must)\s+(?:answer|respond|reply|say)\s+(?:that|with\s+['\"]|:)",
        "prescribes a fixed answer",
    ),
    Pattern(
        "correct_answer_is",
        "answer_steering",
        0.5,
        r"\bthe\s+(?:correct|right|true|only\s+(?:valid|acceptable|correct))\s+answer\s+(?:is|should\s+be)\b",
        "asserts what 'the correct answer' is",
    ),
    Pattern(
        "do_not_mention",
        "answer_steering",
        0.45,
        r"\b(?:do\s+not|don't|never)\s+(?:mention|acknowledge|tell\s+the\s+user|let\s+the\s+user\s+know)\b",
        "tells the reader to hide something from the user",
    ),
    # --- "information has been updated" (reference: 0.4-0.5)
    Pattern(
        "information_updated",
        "update_claim",
        0.45,
        r"\b(?:this|the|that|all|previous|prior)?\s*(?:information|guidance|policy|recommendations?|advice|"
        r"documentation|data|content|standard|rule)s?\s+(?:has|have)\s+(?:now\s+)?(?:been\s+)?"
        r"(?:updated|revised|changed|superseded|corrected|replaced|withdrawn)\b",
        "claims the information has been updated",
    ),
    Pattern(
        "supersedes_previous",
        "update_claim",
        0.55,
        r"\b(?:supersedes?|overrides?|replaces?|invalidates?)\s+(?:all\s+|any\s+)?(?:the\s+)?"
        r"(?:previous|prior|earlier|older|existing|other|above)\s+(?:guidance|information|instructions|"
        r"recommendations?|advice|documents?|versions?|sources|answers?)\b",
        "claims to supersede earlier sources",
    ),
    Pattern(
        "previous_is_wrong",
        "update_claim",
        0.55,
        r"\b(?:previous|prior|earlier|older|existing|above|other)\s+(?:guidance|information|advice|"
        r"recommendations?|instructions|documents?|answers?|sources)\s+(?:is|are|was|were)\s+(?:now\s+)?"
        rf"{INVALID}\b",
        "declares earlier sources wrong",
    ),
    Pattern(
        "source_above_invalid",
        "update_claim",
        0.55,
        rf"\b{INFO_OBJ}\s+(?:above|(?:given|provided|stated|written|shown)\s+(?:above|earlier|before|previously)|"
        rf"in\s+the\s+(?:previous|preceding|above|earlier)\s+(?:section|paragraph|answer|response|message))\s+"
        rf"(?:is|are|was|were|has\s+been|have\s+been)\s+(?:now\s+|since\s+been\s+|been\s+|officially\s+)?{INVALID}",
        "declares the guidance or text above invalid",
    ),
    Pattern(
        "takes_precedence",
        "update_claim",
        0.55,
        rf"\b(?:takes?|taking)\s+precedence\s+over\s+(?:all\s+|any\s+)?(?:the\s+)?(?:(?:previous|prior|earlier|"
        rf"older|existing|other|above|preceding)\s+)?{INFO_OBJ}\b"
        rf"|\b(?:this|the\s+following)\s+(?:notice|update|message|note|correction|statement|answer|guidance)\s+"
        rf"(?:replaces|supersedes|overrides|invalidates|cancels|voids)\s+(?:all\s+|any\s+)?(?:the\s+)?"
        rf"(?:(?:previous|prior|earlier|older|existing|other|above|preceding)\s+)?{INFO_OBJ}\b",
        "claims precedence over other guidance",
    ),
    Pattern(
        "update_header",
        "update_claim",
        0.3,
        r"\b(?:updated|revised|official|latest|current|corrected|amended)\s+(?:guidance|advice|recommendations?|"
        r"information|answer|directive|statement)\s*(?::|\u2014|\u2013|\s-\s)"
        r"|\bofficial\s+(?:update|notice|correction|announcement)\b",
        "an 'updated guidance:' header (weak alone)",
    ),
    Pattern(
        "update_directive",
        "update_claim",
        0.55,
        r"\b(?:updated|revised|official|latest|corrected|amended)\s+(?:guidance|advice|recommendations?|"
        r"information|answer|instructions|update)\s*(?::|\u2014|\u2013|\s-\s)"
        r"(?=.{0,200}?\b(?:always|never|must|shall|should|do\s+not|don't|instead|recommended|approved|tell|answer|"
        r"respond|reply|say)\b)",
        "an update header that issues a directive; the span is the header",
    ),
    # --- contradiction markers (SPEC 3); weak alone, they add up with the NLI signals
    Pattern(
        "common_misconception",
        "contradiction_marker",
        0.45,
        r"\b(?:it\s+is\s+|it's\s+)?a\s+(?:common|popular|widespread|persistent)\s+(?:misconception|myth|"
        r"misunderstanding|mistake)\s+(?:that|to\s+(?:think|believe|assume))\b",
        "frames accepted knowledge as a misconception",
    ),
    Pattern(
        "contrary_to_belief",
        "contradiction_marker",
        0.4,
        r"\b(?:contrary\s+to|despite|in\s+spite\s+of)\s+(?:what\s+)?(?:popular|common|widespread|conventional|"
        r"general|most|many)\s+(?:belief|wisdom|opinion|advice|guidance|sources|experts|people|guides)\b",
        "sets itself against common belief",
    ),
    Pattern(
        "in_fact_not",
        "contradiction_marker",
        0.4,
        r"\b(?:in\s+fact|actually|in\s+reality|in\s+truth|the\s+truth\s+is)\s*,?\s+(?:\w+\s+){0,5}?"
        r"(?:do|does|did|is|are|was|were|can|could|will|would|should|has|have)\s*(?:not\b|n't\b|no\s+longer\b)",
        "an 'in fact ... not' negation",
    ),
    Pattern(
        "actually_false",
        "contradiction_marker",
        0.4,
        r"\b(?:is|are|was|were)\s+(?:actually|in\s+fact|really|now\s+known\s+to\s+be)\s+"
        r"(?:false|wrong|incorrect|untrue|a\s+myth|not\s+true|unnecessary|outdated|obsolete)\b",
        "declares a claim actually false",
    ),
    Pattern(
        "rebuttal",
        "contradiction_marker",
        0.45,
        r"\b(?:actually|in\s+fact|in\s+reality|in\s+truth|no)\s*,?\s+(?:that|this|it|the\s+(?:above|previous|"
        r"earlier|preceding)\s+(?:claim|statement|answer|information|text))\s+(?:is|was|'s)\s+(?:simply\s+|"
        r"completely\s+|entirely\s+)?(?:not\s+(?:true|correct|accurate|right)|false|wrong|incorrect|untrue|"
        r"inaccurate|mistaken|a\s+myth|a\s+misconception)\b",
        "an 'actually, that is false' rebuttal",
    ),
    Pattern(
        "widely_believed_wrong",
        "contradiction_marker",
        0.4,
        r"\b(?:widely|commonly|generally|often)\s+(?:held|accepted|believed|repeated|recommended|cited)\s+"
        r"(?:\w+\s+){0,4}?(?:is|are|was|were)\s+(?:wrong|false|incorrect|mistaken|a\s+myth|outdated)\b",
        "declares widely held advice wrong",
    ),
    # --- attention headers (reference "IMPORTANT:" 0.15): weak, upper case only
    Pattern(
        "upper_header",
        "attention_header",
        0.15,
        r"(?-i:\b(?:CORRECTION|UPDATE|IMPORTANT|URGENT|ATTENTION|NOTICE|OVERRIDE|ALERT)\b)\s*[:!]",
        "an upper-case attention header",
    ),
)


__all__ = ["POISONING_PATTERNS"]
