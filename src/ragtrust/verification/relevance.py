"""Relevance: is the evidence about the question, does the answer address it (the RAG triad).

The RAG triad (TruLens; RAGAS calls the parts *context relevance*, *faithfulness* and
*answer relevance*) asks three questions of an answer. Faithfulness is Stage 2's NLI
factuality; :class:`RelevanceJudge` measures the other two with the pipeline's embedder
(cosine of unit-norm vectors):

* **context relevance** = the best relevance of a sentence of the evidence passages (the
  sentences the extractor scored: their vectors are usually already in the embedder's
  cache, so this costs little more than a lookup). One relevant sentence is enough: the
  question is whether *any* retrieved evidence is about it. A sentence is about what its
  section is about: when the retrieved documents are given, a sentence's relevance is the
  larger of its own cosine and ``(1 - context_weight) * own + context_weight * topic``,
  where *topic* is the cosine of the question with the passage's topic context (the
  document's title / question / heading metadata and the nearest heading or question line
  before the passage, :func:`~ragtrust.evidence.extract.sentence_context`: the context the
  extractor scored the sentence with). "I have no comment." under the line "What's a fact
  that everyone on the East Coast lies about?" answers that question though its own words
  do not say so; a heading alone cannot make an unrelated sentence fully relevant.
* **answer relevance** = the cosine between the question and the answer, the answer
  being the normalised mean of its sentences' vectors (citation markers are not part of
  the sentences). An answer padded with off-topic sentences scores lower than its best
  sentence would.

* **named subjects**: the names of the question (words capitalised mid-sentence, a first
  word only as a label, acronyms, letters mixed with digits, a capital after a small
  letter: "Netflix", "MongoDB", "AES-128"; see :func:`question_names`) are what it asks
  about; when it has some and *none* of them occurs in the documents the answer rests on
  (the documents its sentences' verified spans, best NLI support and citations come from,
  and those of live passages that state a sentence of it word for word; failing those, the
  documents of the live passages; failing those, every given document), the
  evidence is about something else, however close its vocabulary ("How do I reset the
  password of my Netflix account?" against password-reset guidance that never mentions
  Netflix). A name in another retrieved document does not count: "How long does Amazon
  keep my credit card details?" was answered from a cryptographic storage chunk while a
  secrets-management chunk beside it, never cited, linked to Amazon's key service. One name
  found is enough ("Is MD5 OK for passwords?" needs MD5, not "OK"). This is a failed
  condition of its own, not a threshold (``RelevanceConfig.names_required``).

* **words the store never uses**: when the pipeline answers from a store whose chunks hold
  at least ``min_vocabulary`` distinct content terms, a topic term of the question (its
  content terms less question words, :func:`~ragtrust.evidence.extract.topic_terms`) that
  occurs in no chunk of the store means the store is not about what is asked: "How many
  strings does a standard violin have?" against the OWASP cheat sheets, none of which says
  "violin", was answered from a sentence on JavaScript's "international standard" and
  "string escapes". A small store says little by lacking a word (the 40-rule knowledge
  base lacks "iframe" and "chatbot", which its users ask about), hence the floor. A failed
  condition of its own (``RelevanceConfig.unknown_terms_fail``).

Each is compared with its threshold (``config.RelevanceConfig``: fitted for the shipped
embedder by ``ragtrust eval relevance``, :mod:`ragtrust.eval.relevance`); a value below it
is a failed condition of the decision (see :mod:`ragtrust.trust`). Passages given but none
live (the extractor found no sentence of the retrieved documents relevant enough to
extract) is no relevant evidence as well; passages ``None`` (the ``verify`` stage has
none) or no answer leaves that part unmeasured (``None``): nothing fails on it.

Example:
    >>> from ragtrust.documents import Document, Passage, RetrievedDoc
    >>> from ragtrust.testing import HashingEmbedder
    >>> judge = RelevanceJudge(embedder=HashingEmbedder(), context_threshold=0.3, answer_threshold=0.3)
    >>> p = [Passage("p1", "Store passwords with Argon2id. Cats purr.")]
    >>> r = judge.judge("How should passwords be stored with Argon2id?", p, ["Store passwords with Argon2id."])
    >>> r.relevant, r.context > 0.3
    (True, True)
    >>> judge.judge("What is the capital of France?", p, ["Store passwords with Argon2id."]).failures()[0]
    'no relevant evidence: the best evidence sentence has similarity 0.00 to the question (< 0.30)'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragtrust.documents import Document, Passage, RetrievedDoc
from ragtrust.errors import ConfigError
from ragtrust.evidence.extract import in_vocabulary, sentence_context, stem, topic_terms
from ragtrust.models.base import Embedder
from ragtrust.registry import warm_up
from ragtrust.screening.claim_diff import STOP_WORDS
from ragtrust.text import split_sentences, word_tokens


@dataclass(frozen=True)
class RelevanceReport:
    """Context and answer relevance of one verdict.

    Attributes:
        context: best cosine question-evidence sentence in [0, 1]; ``None`` when there was
            no evidence passage to measure.
        answer: cosine question-answer in [0, 1]; ``None`` when there was no answer.
        context_threshold: the context relevance a verdict needs.
        answer_threshold: the answer relevance a verdict needs.
        no_evidence: passages were expected but none was live: no relevant evidence.
        unnamed: the question's names when none of them occurs in the documents the
            evidence came from (empty when one does, when it has none, or when nothing was
            checked).
        unknown: the question's words (as written) that no document of the store contains
            (empty when every one occurs or when the check did not apply).
    """

    context: float | None
    answer: float | None
    context_threshold: float
    answer_threshold: float
    no_evidence: bool = False
    unnamed: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()

    @property
    def context_relevant(self) -> bool:
        """Whether some evidence is about the question (``True`` when not measured)."""
        if self.no_evidence:
            return False
        return self.context is None or self.context >= self.context_threshold

    @property
    def answer_relevant(self) -> bool:
        """Whether the answer addresses the question (``True`` when not measured)."""
        return self.answer is None or self.answer >= self.answer_threshold

    @property
    def relevant(self) -> bool:
        """Every check passed (or was not measured)."""
        return self.context_relevant and self.answer_relevant and not self.unnamed and not self.unknown

    def failures(self) -> list[str]:
        """The failed checks in words (decision reasons); empty when :attr:`relevant`."""
        out = []
        if self.unnamed:
            out.append(
                f"the evidence is not about what the question names: no document the evidence came from mentions "
                f"{_listed(self.unnamed)}"
            )
        if self.unknown:
            out.append(
                f"the store is not about what the question asks: no document of it contains {_listed(self.unknown)}"
            )
        if self.no_evidence:
            out.append("no relevant evidence: no sentence of the retrieved documents was extracted for the question")
        elif not self.context_relevant:
            out.append(
                f"no relevant evidence: the best evidence sentence has similarity {self.context:.2f} "
                f"to the question (< {self.context_threshold:.2f})"
            )
        if not self.answer_relevant:
            out.append(
                f"the answer does not address the question: similarity {self.answer:.2f} "
                f"(< {self.answer_threshold:.2f})"
            )
        return out

    def warnings(self) -> list[str]:
        """Plain-language warnings for a person; empty when :attr:`relevant`."""
        out = []
        if self.unnamed:
            out.append(
                f"The question asks about {_listed(self.unnamed)}, which no document the evidence came from "
                "mentions: the evidence is about something else. The answer is not trusted."
            )
        if self.unknown:
            out.append(
                f"The question asks about {_listed(self.unknown)}, which no document of the store contains: "
                "nothing in it can answer that. The answer is not trusted."
            )
        if self.no_evidence:
            out.append(
                "No relevant evidence: no sentence of the retrieved documents was relevant enough to the question "
                "to be used as evidence. The answer is not trusted."
            )
        elif not self.context_relevant:
            out.append(
                "No relevant evidence: none of the retrieved documents appears to be about the question "
                f"(best similarity {self.context:.2f}, needed {self.context_threshold:.2f}). "
                "The answer is not trusted."
            )
        if not self.answer_relevant:
            out.append(
                "The answer does not appear to address the question "
                f"(similarity {self.answer:.2f}, needed {self.answer_threshold:.2f}). The answer is not trusted."
            )
        return out


@dataclass
class RelevanceJudge:
    """Context and answer relevance with a sentence embedder.

    Args:
        embedder: unit-norm sentence embeddings (the pipeline's; its cache is shared with
            retrieval and extraction).
        context_threshold: context relevance below this fails (``RelevanceConfig``).
        answer_threshold: answer relevance below this fails.
        context_weight: weight of a passage's topic context in a sentence's relevance (0:
            sentences alone); 0.5, the extractive extractor's default ``context_weight``.
        names_required: fail a question none of whose names occurs in the evidence documents
            (``RelevanceConfig.names_required``).
        vocabulary: the store's words (``Store.vocabulary``, an
            :class:`~ragtrust.evidence.extract.Vocabulary`), called when a question is judged;
            ``None``: no store, the unknown-words check is off.
        min_vocabulary: the check applies only when the vocabulary holds at least this many
            distinct content terms (its ``terms``; ``RelevanceConfig.unknown_terms_min_vocabulary``).
    """

    embedder: Embedder
    context_threshold: float = 0.167
    answer_threshold: float = 0.0
    context_weight: float = 0.5
    names_required: bool = True
    vocabulary: Callable[[], Collection[str]] | None = None
    min_vocabulary: int = 5000

    def __post_init__(self) -> None:
        """Validate the thresholds and the topic weight."""
        for label in ("context_threshold", "answer_threshold", "context_weight"):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ConfigError(f"{label} must be a number in [0, 1], got {value!r}")
        if isinstance(self.min_vocabulary, bool) or not isinstance(self.min_vocabulary, int) or self.min_vocabulary < 0:
            raise ConfigError(f"min_vocabulary must be an integer >= 0, got {self.min_vocabulary!r}")

    def warm_up(self) -> None:
        """Load the embedder's model when it has a ``warm_up``, and build the store's vocabulary."""
        warm_up(self.embedder)
        if self.vocabulary is not None:
            self.vocabulary()  # once per store generation: a server pays it at start, not on a request

    def unknown_words(self, question: str) -> tuple[str, ...]:
        """The question's topic words (as written) that no document of the store contains.

        Empty without a vocabulary or when it holds fewer than ``min_vocabulary`` terms.

        Example:
            >>> from ragtrust.evidence.extract import vocabulary
            >>> from ragtrust.testing import HashingEmbedder
            >>> terms = vocabulary(["Many strings follow the standard for string escapes."])
            >>> judge = RelevanceJudge(HashingEmbedder(), vocabulary=lambda: terms, min_vocabulary=5)
            >>> judge.unknown_words("How many strings does a standard Violin have?")
            ('Violin',)
        """
        if self.vocabulary is None:
            return ()
        known = self.vocabulary()
        if getattr(known, "terms", len(known)) < self.min_vocabulary:  # distinct content terms
            return ()
        topic = topic_terms(question)
        found = [
            question[t.start : t.end]
            for t in word_tokens(question)
            if stem(t.text) in topic and not in_vocabulary(t.text, known)
        ]
        return tuple(dict.fromkeys(found))

    def judge(
        self,
        question: str,
        passages: Sequence[Passage] | None,
        answer_sentences: Sequence[str] = (),
        documents: Sequence[Document | RetrievedDoc] = (),
        answer_documents: Sequence[str] = (),
    ) -> RelevanceReport:
        """Relevance of ``passages`` (live ones) and of the answer to ``question``.

        Args:
            question: the user's question.
            passages: the evidence passages (``dropped`` ones are ignored); none live is no
                relevant evidence; ``None``: context relevance is not measured.
            answer_sentences: the answer's sentences without citation markers (no preface).
            documents: the documents the passages were taken from; a passage whose document
                is here is also read in its topic context (see the module docstring).
            answer_documents: ids of the documents the answer rests on (its sentences'
                verified spans, best NLI support and citations); the names check reads these first.
        """
        live = [p for p in passages if p.status != "dropped"] if passages is not None else []
        by_id = {d.id: d for d in (doc.document if isinstance(doc, RetrievedDoc) else doc for doc in documents)}
        evidence: list[tuple[str, str]] = []  # (sentence, its passage's topic context)
        for passage in live:
            topic = _topic(passage, by_id)
            evidence.extend((s.text, topic) for s in split_sentences(passage.text) if s.text.strip())
        no_evidence = passages is not None and not evidence
        unnamed = unnamed_names(question, _evidence_texts(by_id, live, answer_documents)) if self.names_required else ()
        unknown = self.unknown_words(question)
        answer = [s for s in answer_sentences if s.strip()]
        topics = [t for _, t in evidence if t] if self.context_weight else []
        texts = list(dict.fromkeys([question, *(t for t, _ in evidence), *topics, *answer]))
        if len(texts) == 1:
            return RelevanceReport(
                None, None, self.context_threshold, self.answer_threshold, no_evidence, unnamed, unknown
            )
        vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        row = {text: i for i, text in enumerate(texts)}
        q = vectors[0]
        context = None
        if evidence:
            w = self.context_weight
            best = 0.0
            for sentence, topic in evidence:
                own = float(vectors[row[sentence]] @ q)
                score = max(own, (1.0 - w) * own + w * float(vectors[row[topic]] @ q)) if topic and w else own
                best = max(best, score)
            context = _unit(best)
        answer_score = None
        if answer:
            mean = vectors[[row[t] for t in answer]].mean(axis=0)
            norm = float(np.linalg.norm(mean))
            answer_score = _unit(float(mean @ q) / norm) if norm > 0 else 0.0
        return RelevanceReport(
            context, answer_score, self.context_threshold, self.answer_threshold, no_evidence, unnamed, unknown
        )


_WORD = re.compile(r"[^\W_](?:[\w.+#'’-]*[^\W_+#.'’-]|[+#]+)?")
#: a word ending that is not part of a name ("Netflix's", "I'm", "Don't")
_CLITIC = re.compile(r"['’](?:s|m|t|re|ve|ll|d)$", re.IGNORECASE)


def _marked(word: str) -> bool:
    """A name by its form alone: letters with digits, an acronym, a capital after a small letter, C#, X-Frame."""
    mixed = any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
    acronym = sum(c.isupper() for c in word) >= 2 and not any(c.islower() for c in word[:2])
    # iPhone, eBay, MongoDB, PayPal, NoSQL, JavaScript
    inner_capital = any(a.islower() and b.isupper() for a, b in zip(word, word[1:], strict=False))
    symbol = word[:1].isupper() and not word[1:].replace("'", "").isalpha()  # C#, X-Frame-Options, Node.js
    return mixed or acronym or inner_capital or symbol


def question_names(question: str) -> list[str]:
    """The names of a question: capitalised words mid-sentence, acronyms, mixed words, iPhone-style words.

    A sentence's first word counts only when its form marks it (an acronym, MongoDB, MD5) or
    when it labels the question ("Netflix: how do I ...", "Docker, how ..."); one-letter
    words and function words are never names. A question written in Title Case (a function
    word capitalised mid-sentence: "What Is The Best Way") is read for marked words only.

    Example:
        >>> question_names("How do I reset the password of my Netflix account?")
        ['Netflix']
        >>> question_names("Is MD5 OK for AES-128 keys in C#?")
        ['MD5', 'OK', 'AES-128', 'C#']
        >>> question_names("Netflix: how do I secure MongoDB on an iPhone?")
        ['Netflix', 'MongoDB', 'iPhone']
    """
    words: list[tuple[str, bool]] = []
    title_case = False
    for sentence in split_sentences(question):
        text = sentence.text
        for n, m in enumerate(_WORD.finditer(text)):
            word = _CLITIC.sub("", m.group(0))
            if n > 0 and word[:1].isupper() and word.lower() in STOP_WORDS:
                title_case = True
            labels = n == 0 and text[m.end() : m.end() + 1] in (":", ",")
            words.append((word, n == 0 and not labels))
    names: list[str] = []
    for word, first in words:
        if len(word) < 2 or word.lower() in STOP_WORDS or word in names:
            continue
        if _marked(word) or (word[:1].isupper() and not first and not title_case):
            names.append(word)
    return names


def _name_patterns(name: str) -> list[re.Pattern[str]]:
    """The ways a text may write ``name``: the word (plural too), a marked letter part, an acronym's initials."""
    # an acronym's plural (JWTs) names the acronym; other words keep their "s" (Windows, CORS)
    stem = name[:-1] if len(name) > 2 and name[-1] == "s" and name[:-1].isupper() else name
    forms = [rf"{re.escape(stem.casefold())}(?:s|es)?"]
    # AES-128 -> AES, OAuth2 -> OAuth, SHA-256 -> SHA; not Node.js -> node, Log4j -> log, T-Mobile -> mobile
    parts = [part for part in re.split(r"[^A-Za-z]+", name) if len(part) >= 3 and part != name]
    marked = [part for part in parts if sum(c.isupper() for c in part) >= 2]
    if marked:
        forms.append(re.escape(max(marked, key=len).casefold()))
    patterns = [re.compile(rf"(?<!\w){form}(?!\w)", re.IGNORECASE) for form in forms]
    if 3 <= len(stem) <= 6 and stem.isalpha() and stem.isupper():  # JWT -> JSON Web Tokens
        initials = r"[\s-]+".join(rf"{c}\w*" for c in stem)
        patterns.append(re.compile(rf"(?<!\w){initials}(?!\w)"))
    return patterns


def unnamed_names(question: str, texts: Sequence[str]) -> tuple[str, ...]:
    """The question's names when none of them occurs in ``texts``; else ``()``.

    A name occurs when a text writes it as a whole word, case-insensitively, in the singular
    or the plural (JWT / JWTs), or writes its longest part of three letters or more (AES-128
    / "AES with a 128-bit key"), or, for an acronym, spells it out in capitalised words (JWT /
    "JSON Web Token"). One name found is enough.

    Example:
        >>> unnamed_names("How do I reset my Netflix password?", ["Reset passwords with a token."])
        ('Netflix',)
        >>> unnamed_names("Is MD5 OK for passwords?", ["Never store passwords with MD5."])
        ()
        >>> unnamed_names("Are JWTs safe?", ["A JSON Web Token carries claims."])
        ()
    """
    names = question_names(question)
    if not names or not texts:
        return ()
    for name in names:
        if any(pattern.search(text) for pattern in _name_patterns(name) for text in texts):
            return ()
    return tuple(names)


def _evidence_texts(
    documents: Mapping[str, Document], live: Sequence[Passage], answer_documents: Sequence[str] = ()
) -> list[str]:
    """What the names check reads, with titles: the answer's documents; else the live passages'; else all."""
    used = {span.doc_id for p in live for span in p.spans} | {p.doc_id for p in live if p.doc_id}
    chosen = [documents[doc_id] for doc_id in dict.fromkeys(answer_documents) if doc_id in documents]
    if not chosen:
        chosen = [d for doc_id, d in documents.items() if doc_id in used] if used else list(documents.values())
    texts = []
    for d in chosen:
        meta = [str(d.metadata.get(key, "")) for key in ("title", "heading", "question")]
        texts.append(" \n".join([*meta, d.text]))
    return texts


def _listed(names: Sequence[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _topic(passage: Passage, documents: Mapping[str, Document]) -> str:
    """The topic context of ``passage`` in its document ('' when the document is not given)."""
    span = passage.spans[0] if passage.spans else None
    doc_id = span.doc_id if span is not None else passage.doc_id
    document = documents.get(doc_id) if doc_id is not None else None
    if document is None:
        return ""
    if span is not None:
        offset = span.start
    else:
        found = document.text.find(passage.text)
        offset = max(found, 0)
    return sentence_context(document, offset)


def _unit(value: float) -> float:
    """A cosine clipped to [0, 1] (a negative cosine is no relevance at all)."""
    return min(1.0, max(0.0, value))


__all__ = ["RelevanceJudge", "RelevanceReport", "question_names", "unnamed_names"]
