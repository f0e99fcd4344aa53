"""Prompt-injection patterns: instruction overrides, role or system hijacks, exfiltration.

Written from the OWASP prompt-injection cheat sheet and SPEC.md section 3 (see
:mod:`ragtrust.screening.patterns` for their provenance and the held-out rule).

Example:
    >>> sorted({p.category for p in INJECTION_PATTERNS})
    ['exfiltration', 'instruction_override', 'role_hijack']
"""

from __future__ import annotations

from ragtrust.screening.patterns.base import (
    ADDRESSEE,
    AUDIENCE,
    INFO_OBJ,
    INSTRUCTION_OBJ,
    NOT_COMPOUND,
    OVERRIDDEN,
    OVERRIDE_VERB,
    PRIOR,
    TELL,
    Pattern,
)

INJECTION_PATTERNS: tuple[Pattern, ...] = (
    # --- instruction override (OWASP: direct / indirect injection; SPEC 3 "ignore previous")
    Pattern(
        "ignore_previous",
        "instruction_override",
        0.9,
        rf"\b(?:{OVERRIDE_VERB}|skip)\s+(?:all\s+|any\s+|the\s+|of\s+)*"
        rf"(?:{PRIOR}\s+)+{INSTRUCTION_OBJ}\b{NOT_COMPOUND}",
        "tells the reader to ignore earlier instructions or sources",
    ),
    Pattern(
        "ignore_the_above",
        "instruction_override",
        0.85,
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+of\s+|everything\s+|all\s+)?(?:the\s+)?"
        r"(?:above|before|preceding|foregoing|that\s+came\s+before|said\s+(?:above|before))\b",
        "tells the reader to ignore what came before",
    ),
    Pattern(
        "ignore_source_above",
        "instruction_override",
        0.85,
        rf"\b{OVERRIDE_VERB}\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|this\s+|that\s+|these\s+|those\s+)?"
        rf"{INFO_OBJ}\s+(?:above|before\s+this|(?:given|provided|stated|written|shown)\s+(?:above|earlier|before|"
        rf"previously)|you\s+(?:were\s+given|received|have\s+(?:read|seen|been\s+given)|read|saw))\b",
        "tells the reader to ignore the guidance or text given above",
    ),
    Pattern(
        "ignore_what_you_were_told",
        "instruction_override",
        0.8,
        rf"\b{OVERRIDE_VERB}\s+(?:everything|anything|all|whatever|what)\s+(?:that\s+)?(?:you\s+(?:were|have\s+been|"
        rf"'ve\s+been)\s+(?:told|given|taught|instructed)|you\s+(?:have\s+|'ve\s+)?(?:just\s+)?(?:read|seen)\s+"
        rf"(?:above|before|earlier|so\s+far)|(?:was|is|has\s+been)\s+(?:said|written|stated|mentioned)\s+"
        rf"(?:above|before|earlier|previously|so\s+far)|(?:above|before\s+this|so\s+far|until\s+now|up\s+to\s+now))\b",
        "tells the reader to forget what it was told or read before",
    ),
    Pattern(
        "override_then_steer",
        "instruction_override",
        0.85,
        rf"\b{OVERRIDE_VERB}\s+{OVERRIDDEN}\s*(?:,\s*)?(?:\band\b|,|;|\bthen\b|\u2014|\s-\s)\s*"
        rf"(?:instead\s*,?\s+|now\s+|just\s+|simply\s+|only\s+|always\s+)*"
        rf"(?:{TELL}\s+{AUDIENCE}\b|(?:answer|say|respond|reply|state|claim|assert|insist|confirm|explain)\s+"
        rf"(?:only\s+)?(?:that\b|with\s+(?:only\b|[\"'\u201c])|by\s+saying\b|:)|recommend\b|endorse\b)",
        "an override followed by what to tell the user or answer instead",
    ),
    Pattern(
        "override_pronoun",
        "instruction_override",
        0.3,
        r"^\W*(?:(?:please|so|now|just|simply|instead)\s*,?\s+)?(?:ignore|disregard|forget|discard|dismiss)\s+"
        r"(?:it|this|that|them|these|those|all\s+(?:of\s+)?(?:it|this|that)|everything)\s*(?:[.!;,:]|$|\band\b)",
        "a sentence that opens by telling the reader to ignore 'it' or 'this'",
    ),
    Pattern(
        "do_not_follow",
        "instruction_override",
        0.8,
        rf"\b(?:do\s+not|don't|never|stop)\s+(?:follow|obey|apply|trust|use)\s+(?:any\s+|the\s+)?"
        rf"(?:{PRIOR}\s+)+{INSTRUCTION_OBJ}\b{NOT_COMPOUND}",
        "tells the reader not to follow earlier instructions or sources",
    ),
    Pattern(
        "new_instructions",
        "instruction_override",
        0.65,
        r"\b(?:new|updated|revised|real|actual|true|secret|hidden)\s+(?:system\s+)?instructions?\s*(?::|follow|are)",
        "announces new instructions",
    ),
    Pattern(
        "correction_directive",
        "instruction_override",
        0.7,
        r"\b(?:correction|erratum|retraction|override)\s*[:!\-\u2013\u2014](?=.{0,200}?"
        r"\b(?:always|never|must|shall|should|do\s+not|don't|instead|recommended?|answer|respond|reply|"
        r"the\s+(?:correct|right|only)\s+(?:answer|approach|way))\b)",
        "a correction notice that issues a directive (an erratum does not); the span is the header",
    ),
    Pattern(
        "note_to_model",
        "instruction_override",
        0.8,
        r"\b(?:note|message|instructions?|reminder)\s+(?:to|for)\s+(?:the\s+)?"
        r"(?:ai|a\.i\.|assistant|model|llm|chatbot|bot|language\s+model|agent|system)\b",
        "addresses the AI reading the document",
    ),
    Pattern(
        "ai_reader",
        "instruction_override",
        0.7,
        r"\bif\s+you\s+are\s+(?:an?\s+)?(?:ai|a\.i\.|llm|(?:large\s+)?language\s+model|(?:ai\s+)?assistant|chatbot|"
        r"bot|(?:ai\s+)?agent)\b(?:\s+(?:reading|processing|summari[sz]ing|parsing|seeing|answering))?"
        r"|\b(?:any|all|every)\s+(?:ai|a\.i\.|llms?|(?:large\s+)?language\s+models?|(?:ai\s+)?assistants?|"
        r"chatbots?|(?:ai\s+)?agents?)\s+(?:(?:that\s+(?:is|are)\s+)?(?:reading|processing|summari[sz]ing|parsing|"
        r"retrieving|answering\s+(?:from|with))\s+this)\b",
        "addresses an AI that reads or summarises the document",
    ),
    # --- role / system hijack (OWASP: format injection, jailbreak personas)
    Pattern(
        "role_prefix",
        "role_hijack",
        0.6,
        r"^\s*(?:#+\s*)?(?:system|assistant|developer|admin|root)(?:\s+(?:prompt|message|override|note))?\s*:(?=\s|$)",
        "a line that impersonates a chat role ('system:')",
    ),
    Pattern(
        "role_tag",
        "role_hijack",
        0.8,
        r"<\s*/?\s*(?:system|sys|system[_-]?prompt|instructions?|im_start|im_end|\|im_start\||\|im_end\|)\s*/?\s*>"
        r"|(?-i:\[/?INST\])|<<\s*/?sys\s*>>|<\|(?:system|im_start|im_end|start_header_id)\|>",
        "a chat-template or system tag",
    ),
    Pattern(
        "you_are_now",
        "role_hijack",
        0.6,
        r"\byou\s+are\s+now\s+(?:a|an|in|the|my|no\s+longer|acting|operating|free|unrestricted|unfiltered|"
        r"jailbroken|dan|developer|allowed|permitted|authori[sz]ed)\b",
        "assigns the reader a new role ('you are now ...')",
    ),
    Pattern(
        "from_now_on",
        "role_hijack",
        0.6,
        rf"\bfrom\s+now\s+on,?\s+{ADDRESSEE}\b",
        "changes the assistant's behaviour 'from now on'",
    ),
    Pattern(
        "mode_switch",
        "role_hijack",
        0.7,
        r"\b(?:enter|enable|activate|switch\s+to|now\s+in)\s+(?:god|dan|jailbreak|jailbroken|unrestricted|unfiltered)\s+mode\b"
        r"|\byou\s+are\s+(?:now\s+)?in\s+developer\s+mode\b",
        "asks for a privileged mode",
    ),
    Pattern(
        "pretend_to_be",
        "role_hijack",
        0.5,
        r"\b(?:pretend|imagine)\s+(?:that\s+)?you\s+are\b|\bact\s+as\s+(?:an?\s+)?(?:unrestricted|unfiltered|different)\b",
        "asks the reader to adopt a persona",
    ),
    # --- exfiltration / system prompt extraction (OWASP)
    Pattern(
        "reveal_prompt",
        "exfiltration",
        0.75,
        r"\b(?:reveal|print|show|display|output|repeat|leak|disclose|dump|tell\s+me|share)\s+(?:me\s+)?"
        r"(?:all\s+)?(?:of\s+)?your\s+(?:system\s+|initial\s+|hidden\s+|original\s+|secret\s+)?"
        r"(?:prompt|instructions|configuration|rules|guidelines|api\s+keys?|credentials|secrets?)\b"
        r"|\b(?:reveal|print|show|leak|disclose|dump)\s+(?:the\s+)?(?:system|hidden|initial)\s+prompt\b",
        "asks for the system prompt or secrets",
    ),
    Pattern(
        "repeat_above",
        "exfiltration",
        0.6,
        r"\brepeat\s+(?:the\s+|all\s+|everything\s+)?(?:text|words|content|everything)?\s*(?:above|before\s+this)\b"
        r"|\bwhat\s+(?:were|are)\s+your\s+(?:exact\s+|original\s+|initial\s+)?instructions\b",
        "asks to repeat the hidden context",
    ),
    Pattern(
        "send_to_url",
        "exfiltration",
        0.75,
        r"\b(?:send|post|upload|forward|exfiltrate|transmit|email|submit)\s+(?:\w+\s+){0,6}?to\s+"
        r"(?:https?://|www\.|(?:an?\s+)?(?:external|remote|attacker|following)\s+(?:url|address|server|endpoint))",
        "asks to send data to an outside address",
    ),
    Pattern(
        "conversation_history",
        "exfiltration",
        0.55,
        r"\b(?:include|append|add|reveal|send|output)\s+(?:the\s+)?(?:user'?s?\s+)?"
        r"(?:conversation|chat)\s+history\b|\bprevious\s+users?'?\s+(?:data|messages|questions)\b",
        "asks for conversation history or other users' data",
    ),
)


__all__ = ["INJECTION_PATTERNS"]
