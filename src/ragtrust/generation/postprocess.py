"""Post-processing of a grounded answer (SPEC section 6.5).

:func:`postprocess` applies, in order:

1. **Duplicate removal**: repeated citations within a sentence are kept once, and a
   sentence that repeats an earlier one (same word tokens) is merged into it (citations
   and spans united).
2. **Term normalisation**: each ``config.terms`` key is replaced, case-insensitively and as
   a whole word, by its value (``{"owasp": "OWASP"}`` turns "Owasp" into "OWASP").
3. **Paragraphing**: a new paragraph starts when the first cited source changes, and
   after at most three sentences.
4. **Preface**: when the evidence does not answer the question (``answers_question`` is
   false, or there is no sentence), the text starts with :data:`NOT_STATED_PREFACE` (also
   kept in ``GroundedAnswer.preface``). Such an answer is not trusted by the pipeline
   (``relevance.not_stated_fails``); :func:`says_not_stated` recognises an LLM's own
   "does not explicitly state" too.

Citation numbers are recomputed in order of first use after these steps.

Example:
    >>> from ragtrust.config import EvidenceConfig
    >>> from ragtrust.documents import AnswerSentence
    >>> from ragtrust.evidence.citations import GroundedAnswer
    >>> g = GroundedAnswer("", (AnswerSentence("use owasp asvs.", ("u1", "u1")),))
    >>> postprocess(g, EvidenceConfig(terms={"owasp": "OWASP", "asvs": "ASVS"})).text
    'use OWASP ASVS. [1]'
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from ragtrust.config import EvidenceConfig
from ragtrust.documents import AnswerSentence, Document, Passage, RetrievedDoc
from ragtrust.evidence.citations import GroundedAnswer, render_answer
from ragtrust.evidence.extract import content_terms, sentence_context, topic_terms
from ragtrust.text import words

NOT_STATED_PREFACE = "The documentation does not explicitly state an answer to this question."
#: the words an answer writer uses to say the documents do not answer (the preface above and
#: the instruction of ``ragtrust.prompts.ANSWER_SYSTEM_PROMPT``)
NOT_STATED_MARK = "does not explicitly state"
CLOSEST_EVIDENCE = "The closest evidence found:"
#: share of the question's topic terms one passage must contain
ANSWER_COVERAGE = 0.5
_MAX_PARAGRAPH_SENTENCES = 3


def evidence_answers_question(
    query: str, passages: Sequence[Passage], docs: Sequence[RetrievedDoc] | Sequence[Document] = ()
) -> bool:
    """Whether the passages plausibly answer the question (a documented lexical heuristic).

    The question's topic terms are its content terms (stop words and question words such as
    "what", "how", "recommend" removed, light stemming). The evidence answers the question
    when some passage covers at least :data:`ANSWER_COVERAGE` (half) of them. A passage
    covers the terms of its own text and, when ``docs`` holds its source document, the
    terms of its topic context there (:func:`ragtrust.evidence.extract.sentence_context`:
    the document's title and question, the section heading): a passage under "SQL
    Injection Prevention" answers "How do I prevent SQL injection?" even when it only says
    "bind every variable". No passages: ``False``; a question without topic terms: ``True``
    whenever passages exist.

    Args:
        query: the question.
        passages: the verified passages (``dropped`` ones are ignored).
        docs: the retrieved documents the passages were taken from (optional).

    Example:
        >>> evidence_answers_question("How should passwords be stored?", [Passage("p", "Store passwords hashed.")])
        True
        >>> evidence_answers_question("What is the capital of France?", [Passage("p", "Store passwords hashed.")])
        False
    """
    live = [p for p in passages if p.status != "dropped"]
    if not live:
        return False
    topic = topic_terms(query)
    if not topic:
        return True
    by_id: dict[str, Document] = {}
    for doc in docs:
        document = doc.document if isinstance(doc, RetrievedDoc) else doc
        by_id.setdefault(document.id, document)
    best = 0
    for p in live:
        terms = set(content_terms(p.text))
        source = by_id.get(p.doc_id or "")
        if source is not None:
            offset = p.spans[0].start if p.spans and p.spans[0].doc_id == source.id else 0
            terms |= set(content_terms(sentence_context(source, offset)))
        best = max(best, len(topic & terms))
    return best / len(topic) >= ANSWER_COVERAGE


def says_not_stated(text: str) -> bool:
    """Whether an answer says the documentation does not explicitly state an answer.

    Example:
        >>> says_not_stated(NOT_STATED_PREFACE), says_not_stated("Use Argon2id. [1]")
        (True, False)
    """
    return NOT_STATED_MARK in " ".join(text.lower().split())


def normalize_terms(text: str, terms: Mapping[str, str]) -> str:
    """Replace each key of ``terms`` (case-insensitive, whole word) by its value."""
    for key in sorted(terms, key=len, reverse=True):
        if key.strip():
            pattern = re.compile(r"(?<!\w)" + re.escape(key) + r"(?!\w)", re.IGNORECASE)
            text = pattern.sub(terms[key].replace("\\", "\\\\"), text)
    return text


def postprocess(answer: GroundedAnswer, config: EvidenceConfig, *, answers_question: bool = True) -> GroundedAnswer:
    """Dedupe, normalise terms, paragraph and (when needed) preface the answer."""
    merged: list[AnswerSentence] = []
    index: dict[tuple[str, ...], int] = {}
    for sentence in answer.sentences:
        text = normalize_terms(sentence.text, config.terms)
        key = tuple(words(text))
        citations = tuple(dict.fromkeys(sentence.citations))
        if key in index:
            prev = merged[index[key]]
            merged[index[key]] = dataclasses.replace(
                prev,
                citations=tuple(dict.fromkeys(prev.citations + citations)),
                spans=prev.spans + tuple(s for s in sentence.spans if s not in prev.spans),
                supported=prev.supported or sentence.supported,
            )
            continue
        index[key] = len(merged)
        merged.append(dataclasses.replace(sentence, text=text, citations=citations))
    _, sources = render_answer(merged)
    warnings = list(answer.warnings)
    preface = ""
    if not answers_question or not merged:
        warnings.append("the retrieved evidence does not explicitly answer the question")
        preface = f"{NOT_STATED_PREFACE} {CLOSEST_EVIDENCE}" if merged else NOT_STATED_PREFACE
    return dataclasses.replace(
        answer,
        text=render_body(merged, preface),
        sentences=tuple(merged),
        sources=sources,
        unsupported_sentences=sum(not s.supported for s in merged),
        warnings=tuple(dict.fromkeys(warnings)),
        preface=preface,
    )


def render_body(sentences: Sequence[AnswerSentence], preface: str = "") -> str:
    r"""The answer's text: ``preface``, then the sentences in paragraphs with ``[n]`` markers.

    The same rendering :func:`postprocess` gives, so an answer rebuilt from some of its
    sentences (``trust.unsupported = "drop"``) numbers its citations as the UI and CLI do.

    Example:
        >>> from ragtrust.documents import AnswerSentence
        >>> render_body([AnswerSentence("Use Argon2id.", citations=("https://a",))], "Note.")
        'Note.\n\nUse Argon2id. [1]'
    """
    body, _ = render_answer(sentences, _paragraph_starts(sentences))
    if not preface:
        return body
    return f"{preface}\n\n{body}" if sentences else preface


def _paragraph_starts(sentences: Sequence[AnswerSentence]) -> list[int]:
    starts: list[int] = []
    length = 0
    previous: str | None = None
    for i, sentence in enumerate(sentences):
        primary = sentence.citations[0] if sentence.citations else None
        if i and (primary != previous or length >= _MAX_PARAGRAPH_SENTENCES):
            starts.append(i)
            length = 0
        previous = primary
        length += 1
    return starts


__all__ = [
    "ANSWER_COVERAGE",
    "CLOSEST_EVIDENCE",
    "NOT_STATED_MARK",
    "NOT_STATED_PREFACE",
    "evidence_answers_question",
    "normalize_terms",
    "postprocess",
    "render_body",
    "says_not_stated",
]
