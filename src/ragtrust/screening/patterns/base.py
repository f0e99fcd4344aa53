"""The vocabulary of the linguistic patterns: :class:`Pattern`, its categories, the word classes.

The word classes are regular-expression fragments (non-capturing groups) that several
patterns share: who an injection addresses, what it overrides, what it declares invalid.
The patterns themselves are in :mod:`~ragtrust.screening.patterns.injection` and
:mod:`~ragtrust.screening.patterns.poisoning`; see :mod:`ragtrust.screening.patterns` for
where they come from and how they were measured.

Example:
    >>> import re
    >>> bool(re.fullmatch(OVERRIDE_VERB, "disregard"))
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: readable noun phrases for the categories, used in reasons ("contains <phrase>: '...'")
CATEGORY_PHRASES: dict[str, str] = {
    "instruction_override": "an instruction override",
    "role_hijack": "a role or system-prompt hijack",
    "exfiltration": "a data exfiltration request",
    "answer_steering": "an answer-steering directive",
    "update_claim": "an 'information has been updated' claim",
    "contradiction_marker": "a contradiction marker",
    "attention_header": "an attention-grabbing header",
}


@dataclass(frozen=True)
class Pattern:
    """One linguistic pattern.

    Attributes:
        name: stable identifier (reported in signal details).
        category: one of :data:`CATEGORY_PHRASES`.
        severity: suspicion of one match in [0, 1] before context damping.
        expression: the regular expression source (case-insensitive by default).
        description: what the pattern looks for, in a few words.
    """

    name: str
    category: str
    severity: float
    expression: str
    description: str
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Validate and compile the expression once."""
        if self.category not in CATEGORY_PHRASES:
            raise ValueError(f"pattern {self.name}: unknown category {self.category!r}")
        if not 0.0 < self.severity <= 1.0:
            raise ValueError(f"pattern {self.name}: severity {self.severity} outside (0, 1]")
        object.__setattr__(self, "regex", re.compile(self.expression, re.IGNORECASE))


PRIOR = r"(?:previous|prior|above|earlier|preceding|foregoing|original|initial|system|safety|your|other|all)"
INSTRUCTION_OBJ = (
    r"(?:instructions?|prompts?|context|rules|guidance|directions|directives|guidelines|messages|"
    r"commands|constraints|policies|policy|answers?|information|documents?|sources|text|content|"
    r"advice|recommendations?|responses?|statements?|explanations?|training|programming)"
)
#: an object noun that is really the first half of a compound ("your text editor", "the policy file")
NOT_COMPOUND = r"(?!\s*-|\s+(?:editors?|fields?|box(?:es)?|areas?|files?|inputs?|sizes?|colou?rs?|nodes?|ids?)\b)"
#: things a document says that an injection wants discarded or declared invalid
INFO_OBJ = (
    r"(?:guidance|advice|answers?|responses?|information|instructions?|context|content|text|statements?|"
    r"recommendations?|claims?|directions|rules|explanations?|passage|documentation)"
)
ADDRESSEE = r"(?:the\s+)?(?:system|assistant|ai|a\.i\.|model|chatbot|bot|llm|language\s+model|agent|you)"
AI = r"(?:the\s+)?(?:system|assistant|ai|a\.i\.|model|chatbot|bot|llm|language\s+model|agent)"
#: the model as the subject of a directive, singular or plural ("any AI assistant", "language models")
AI_SUBJECT = (
    r"(?:the\s+|any\s+|all\s+|every\s+|this\s+)?(?:ai\s+|a\.i\.\s+|virtual\s+)?"
    r"(?:system|assistants?|ai|a\.i\.|models?|chatbots?|bots?|llms?|language\s+models?|agents?)"
    r"(?:,?\s+(?:that\s+(?:is|are)\s+)?(?:reading|processing|summari[sz]ing|parsing|retrieving|seeing)\s+this"
    r"(?:\s+(?:document|page|text|passage|content|article))?,?)?"
)
SAY = r"(?:answer|respond|reply|say|state|output|recommend|tell\s+(?:the\s+)?users?)"
#: speech acts that put words in the model's mouth
SAY_MORE = (
    r"(?:answer|respond|reply|say|state|output|recommend|claim|assert|insist|confirm|advise|suggest|"
    r"present|endorse|explain|report|describe|tell\s+(?:the\s+)?users?)"
)
OVERRIDE_VERB = (
    r"(?:ignore|disregard|forget|discard|override|bypass|dismiss|set\s+aside|"
    r"pay\s+no\s+(?:attention|heed)\s+to|stop\s+following)"
)
#: what an override discards: the document itself ("it", "the above") or earlier guidance
OVERRIDDEN = (
    r"(?:it|this|that|them|these|those|everything(?:\s+(?:above|else|before))?|"
    r"all\s+(?:of\s+)?(?:it|this|that|the\s+above)|the\s+above|"
    rf"(?:the\s+rest\s+of\s+)?(?:this|the)\s+(?:document|page|article|passage|source)(?:'s\s+(?:other\s+)?{INFO_OBJ})?|"
    r"(?:(?:all|any|the|this|that|these|those|your)\s+)?"
    rf"(?:(?:previous|prior|earlier|above|preceding|original|other|existing|old|older|official)\s+)*{INFO_OBJ}"
    r"(?:\s+above)?)"
)
#: "from now on" and its synonyms
HENCEFORTH = (
    r"(?:from\s+now\s+on|from\s+this\s+(?:point|moment)\s+(?:on|forward|onwards?)|henceforth|going\s+forward|"
    r"in\s+(?:all\s+)?(?:future|later|subsequent)\s+(?:answers|responses|replies|conversations))"
)
#: the people an injected directive wants told something
AUDIENCE = (
    r"(?:the\s+|all\s+|your\s+|any\s+|every\s+)?(?:users?|readers?|customers?|clients?|visitors?|"
    r"people|everyone|everybody|anyone|anybody|whoever\s+asks|the\s+person\s+asking|askers?)"
)
TELL = r"(?:tell|inform|advise|assure|reassure|convince|remind|instruct|teach)"
#: words that declare earlier content invalid
INVALID = (
    r"(?:outdated|obsolete|superseded|deprecated|invalid|void|wrong|incorrect|inaccurate|false|retracted|"
    r"withdrawn|revoked|rescinded|out\s+of\s+date|no\s+longer\s+(?:valid|accurate|correct|current|"
    r"applicable|true|in\s+effect|recommended))"
)
#: endorsements that steer the reader towards a practice
ENDORSED = (
    r"(?:approved|recommended|official|correct|accepted|endorsed|preferred|sanctioned|mandated|"
    r"(?:perfectly\s+|completely\s+|totally\s+)?(?:safe|secure|fine|acceptable|harmless)|"
    r"best\s+(?:practice|method|approach|way|option|choice)|industry\s+standard|"
    r"only\s+(?:safe|correct|approved|acceptable|valid|right)|right\s+(?:way|method|answer|approach))"
)

#: words of an instruction that attackers scramble (OWASP "typoglycemia"); a token whose
#: first and last letters match and whose middle letters are a permutation is folded back.
TYPOGLYCEMIA_KEYWORDS: tuple[str, ...] = (
    "ignore",
    "disregard",
    "previous",
    "instructions",
    "instruction",
    "system",
    "bypass",
    "reveal",
    "override",
    "forget",
    "prompt",
    "answer",
    "respond",
    "correction",
)


__all__ = [
    "ADDRESSEE",
    "AI",
    "AI_SUBJECT",
    "AUDIENCE",
    "CATEGORY_PHRASES",
    "ENDORSED",
    "HENCEFORTH",
    "INFO_OBJ",
    "INSTRUCTION_OBJ",
    "INVALID",
    "NOT_COMPOUND",
    "OVERRIDDEN",
    "OVERRIDE_VERB",
    "PRIOR",
    "SAY",
    "SAY_MORE",
    "TELL",
    "TYPOGLYCEMIA_KEYWORDS",
    "Pattern",
]
