"""Passage extraction: pick the query-relevant verbatim spans of the retrieved documents.

Two extractors share one contract, ``extract(query, docs) -> list[Passage]``:

- :class:`ExtractiveExtractor` (default, no LLM): scores every sentence of every retrieved
  document for relevance to the query and returns the best ones as passages. Passages are
  slices ``doc.text[start:end]``, verbatim by construction, with their span filled in.
- :class:`LLMExtractor` (in :mod:`ragtrust.evidence.extract_llm`, importable from here):
  asks a chat model for EvidenT's JSON contract
  ``{"collected_passages": [{"passage_id", "passage", "url"}]}``, validates it with a
  schema and gives a malformed reply one repair attempt before failing with
  :class:`~ragtrust.errors.BackendError`. Its passages are *claims*: run them through
  :class:`~ragtrust.evidence.align.NGramAligner` before use.

Passages given as JSON (:func:`passages_from_json`, :func:`read_passages_json`) are read by
:mod:`ragtrust.evidence.passages_json`.

Relevance (:func:`relevance_scores`) is ``lexical_weight * lexical + (1 - lexical_weight) *
cosine`` when an embedder is given and the lexical part alone otherwise. The lexical part is
the IDF-weighted share of the query's content terms (stop words removed, light suffix
stemming) that a sentence contains, IDF taken over the candidate sentences; the cosine is
that of the unit-norm embeddings, clipped at 0.

A sentence rarely repeats the topic of its section ("Build every query as a parameterised
statement" never says "SQL injection"; its document's question does). The extractor
therefore scores each sentence as ``(1 - context_weight) * relevance(sentence) +
context_weight * relevance(context)``, where the context (:func:`sentence_context`) is the
document's title and question (metadata), the chunk's heading and the nearest heading or
question line before the sentence in the text. The retriever's judgement of the whole
document counts too: the score is multiplied by ``1 - rank_weight + rank_weight * prior``,
where ``prior`` is the document's retrieval score over the best retrieval score (or
``1 / rank`` when the retriever gives no scores), so the top-ranked document wins ties
against a neighbour that merely shares words. Sentences are then kept only when they score
at least ``relative_cutoff`` times the best sentence, so weakly related sentences of other
documents do not pad the evidence.

Example:
    >>> from ragtrust.testing import retrieved
    >>> docs = retrieved(["SQL injection is stopped by parameterised queries. Cats purr."])
    >>> [p.text for p in ExtractiveExtractor().extract("How to stop SQL injection?", docs)]
    ['SQL injection is stopped by parameterised queries.']
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from ragtrust.documents import Document, Passage, RetrievedDoc, Span
from ragtrust.errors import ConfigError
from ragtrust.evidence.extract_llm import ChatModel, ExtractionError, LLMExtractor, parse_collected_passages
from ragtrust.evidence.passages_json import passages_from_json, read_passages_json
from ragtrust.models.base import Embedder
from ragtrust.registry import register, warm_up
from ragtrust.text import Sentence, distinct_words, is_front_matter, split_sentences, visible_words, word_tokens

_STOPWORD_TEXT = """a an the of to in on at is are was were be been being by for with and or as that this these those
it its from into than then there their them they he she we you your our i me my do does did doing done can could
should would will shall may might must have has had having not no nor but if so such what which who whom whose when
where why how about over under again further once here all any both each few more most other some own same too very
just also only s t am using use used"""
#: function words ignored by lexical relevance
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("ations", ""),
    ("ation", ""),
    ("ings", ""),
    ("ing", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ed", ""),
    ("es", ""),
    ("s", ""),
)


def stem(token: str) -> str:
    """Strip common suffixes: a light, deterministic stemmer (``queries`` -> ``query``, ``hashing`` -> ``hash``)."""
    for suffix, replacement in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)] + replacement
    return token


def content_terms(text: str) -> list[str]:
    """Stemmed, case-folded word tokens of ``text`` without stop words."""
    return [stem(t.text) for t in word_tokens(text) if t.text not in STOPWORDS]


#: question words that carry no topic (a question's form, not what it is about)
QUESTION_TERMS = frozenset(
    content_terms(
        "what which who how why when where explain describe tell list give recommend recommended "
        "best way ways good should need example examples difference mean meaning"
    )
)


def topic_terms(question: str) -> set[str]:
    """A question's topic terms: its :func:`content_terms` less :data:`QUESTION_TERMS`.

    Example:
        >>> sorted(topic_terms("What is the best way to store passwords?"))
        ['password', 'store']
    """
    return set(content_terms(question)) - QUESTION_TERMS


class Vocabulary(frozenset[str]):
    """The words of a corpus (stop words out) and their stems; ``terms``: how many distinct stems."""

    terms: int = 0


def vocabulary(texts: Iterable[str]) -> Vocabulary:
    """The words of ``texts`` (stop words out) and their stems: what :func:`in_vocabulary` looks in.

    Example:
        >>> known = vocabulary(["Hash the passwords.", "Cookies need flags"])
        >>> sorted(known), known.terms
        (['cookies', 'cooky', 'flag', 'flags', 'hash', 'need', 'password', 'passwords'], 5)
    """
    found = {w for w in distinct_words(texts) if w not in STOPWORDS}
    stems = {stem(w) for w in found}
    known = Vocabulary(found | stems)
    known.terms = len(stems)
    return known


def in_vocabulary(word: str, known: Collection[str]) -> bool:
    """Whether a (normalised) word or a form of it is in ``known`` (a :func:`vocabulary`).

    The stemmer is light, so singular and plural may stem apart ("cookie" / "cooky",
    "string" / "str"): the word, its stem, and the stems of its plural and of its singular
    are each looked up.

    Example:
        >>> known = vocabulary(["Cookies and string escapes"])
        >>> [in_vocabulary(w, known) for w in ("cookie", "strings", "escaping", "violin")]
        [True, True, True, False]
    """
    singular = word[:-1] if word.endswith("s") and len(word) > 3 else word
    return any(form in known for form in (word, stem(word), stem(word + "s"), singular, stem(singular)))


_NOT_EVIDENCE = re.compile(r"^\s*(?:#{1,6}\s|\||```|<!--)")


def is_evidence_sentence(text: str) -> bool:
    r"""Tell whether a sentence can serve as evidence.

    Markdown headings, table rows, code fences, HTML comments, front matter (a page's
    metadata) and questions (they state nothing) cannot.

    Example:
        >>> [is_evidence_sentence(t) for t in ("## Salting", "Why salt?", "---\ntitle: Salts\n---", "Salt every hash.")]
        [False, False, False, True]
    """
    stripped = text.strip()
    return (
        bool(stripped)
        and not _NOT_EVIDENCE.match(stripped)
        and not stripped.rstrip("*_)\"'").endswith("?")
        and not is_front_matter(stripped)
    )


#: metadata keys whose values describe a whole document (its topic), in this order
CONTEXT_METADATA_KEYS = ("title", "question", "heading")


def sentence_context(document: Document, offset: int, sentences: Sequence[Sentence] | None = None) -> str:
    r"""The topic context of the text at ``offset`` in ``document``.

    It joins, without repeats: the document's ``title``, ``question`` and ``heading``
    metadata (loaders set the title, the chunker the section heading, the knowledge base the
    rule's question) and the last non-evidence line before ``offset`` that names a topic
    (a Markdown heading or a question, see :func:`is_evidence_sentence`). Empty when the
    document has none of these.

    Args:
        document: the document the text belongs to.
        offset: a character offset into ``document.text`` (e.g. a span's start).
        sentences: ``split_sentences(document.text)`` when the caller has it already.

    Example:
        >>> doc = Document(id="d", text="# SQL injection\n\nBind every variable. Check names.")
        >>> sentence_context(doc, doc.text.index("Check"))
        'SQL injection'
    """
    sentences = split_sentences(document.text) if sentences is None else sentences
    nearest = ""
    for sentence in sentences:
        if sentence.start >= offset:
            break
        nearest = _topic_line(sentence.text) or nearest
    return _joined_context(_metadata_context(document), nearest)


def sentence_contexts(document: Document, sentences: Sequence[Sentence]) -> list[str]:
    r"""The :func:`sentence_context` of each of ``sentences`` (``split_sentences(document.text)``), in one pass.

    Reading the sentences once keeps a long document's cost linear: asking
    :func:`sentence_context` for every sentence reads all the sentences before each one again.

    Example:
        >>> doc = Document(id="d", text="# SQL injection\n\nBind every variable. Check names.")
        >>> sentence_contexts(doc, split_sentences(doc.text))
        ['', 'SQL injection', 'SQL injection']
    """
    metadata = _metadata_context(document)
    joined: dict[str, str] = {}
    out: list[str] = []
    nearest = ""
    for sentence in sentences:
        if nearest not in joined:
            joined[nearest] = _joined_context(metadata, nearest)
        out.append(joined[nearest])
        nearest = _topic_line(sentence.text) or nearest
    return out


def _metadata_context(document: Document) -> list[str]:
    """The document's topic metadata values (:data:`CONTEXT_METADATA_KEYS`), in that order."""
    parts: list[str] = []
    for key in CONTEXT_METADATA_KEYS:
        value = document.metadata.get(key)
        if isinstance(value, str) and value.strip():
            parts.append(value.strip())
    return parts


def _joined_context(metadata: Sequence[str], nearest: str) -> str:
    """``metadata`` and the nearest topic line joined with `` | ``, without repeats."""
    parts = [*metadata, nearest] if nearest else list(metadata)
    seen: set[tuple[str, ...]] = set()
    unique = []
    for part in parts:
        terms = tuple(content_terms(part))
        if terms and terms not in seen:
            seen.add(terms)
            unique.append(part)
    return " | ".join(unique)


_HEADING_MARK = re.compile(r"^\s*#{1,6}\s+")


def _topic_line(text: str) -> str:
    """A heading's title or a question's text; '' for evidence, table rows, code and comments."""
    if is_evidence_sentence(text):
        return ""
    stripped = text.strip()
    if _HEADING_MARK.match(stripped):
        return _HEADING_MARK.sub("", stripped.splitlines()[0]).strip(" #")
    if stripped.rstrip("*_)\"'").endswith("?") and not re.match(r"^\s*(?:\||```|<!--)", stripped):
        return stripped
    return ""


def relevance_scores(
    query: str, texts: Sequence[str], embedder: Embedder | None = None, lexical_weight: float = 0.5
) -> list[float]:
    """Relevance in [0, 1] of each text to the query (see the module docstring)."""
    if not texts:
        return []
    terms = sorted(set(content_terms(query)))
    bags = [set(content_terms(t)) for t in texts]
    if terms:
        n = len(texts)
        idf = {t: math.log(1.0 + n / (1.0 + sum(t in b for b in bags))) for t in terms}
        total = sum(idf.values())
        lexical = [sum(idf[t] for t in terms if t in bag) / total for bag in bags]
    else:
        lexical = [0.0] * len(texts)
    if embedder is None:
        return lexical
    vectors = embedder.embed([query, *texts])
    cosine = [max(0.0, float(v)) for v in vectors[1:] @ vectors[0]]
    return [lexical_weight * lx + (1.0 - lexical_weight) * c for lx, c in zip(lexical, cosine, strict=True)]


def retrieval_priors(docs: Sequence[RetrievedDoc]) -> list[float]:
    """A prior in [0, 1] per document from the retriever: score / best score, else 1 / rank.

    Scores are used when every document has one and the best is positive (cosine-like
    similarities); otherwise ``1 / rank`` (ranks from 1, as :class:`RetrievedDoc` defines).

    Example:
        >>> from ragtrust.testing import retrieved
        >>> retrieval_priors(retrieved(["a", "b"], scores=[0.8, 0.4]))
        [1.0, 0.5]
    """
    scores = [d.score for d in docs]
    if scores and all(s is not None for s in scores):
        best = max(float(s) for s in scores if s is not None)
        if best > 0:
            return [max(0.0, float(s)) / best for s in scores if s is not None]
    return [1.0 / max(1, d.rank) for d in docs]


@register("extractor", "extractive")
@dataclass
class ExtractiveExtractor:
    """Select query-relevant sentences of the retrieved documents as verbatim passages.

    Args:
        embedder: optional sentence embedder; without one relevance is lexical only.
        max_passages: most passages returned, best first.
        max_sentences_per_doc: most sentences taken from one document (adjacent chosen
            sentences merge into one passage).
        lexical_weight: weight of the lexical score when an embedder is given.
        min_tokens: sentences with fewer words a reader sees (headings, list bullets, a link alone:
            :func:`~ragtrust.text.visible_words`) are skipped.
        min_score: sentences scoring at or below this are never selected.
        context_weight: weight of the sentence's topic context (:func:`sentence_context`:
            title, question, section heading) in its score; 0 scores sentences alone.
        relative_cutoff: sentences scoring below this fraction of the best sentence's score
            are not selected (0 keeps every sentence above ``min_score``).
        rank_weight: how much the document's retrieval rank scales its sentences' scores
            (see :func:`retrieval_priors`; 0 ignores the retriever).
    """

    embedder: Embedder | None = None
    max_passages: int = 8
    max_sentences_per_doc: int = 3
    lexical_weight: float = 0.5
    min_tokens: int = 4
    min_score: float = 0.05
    context_weight: float = 0.5
    relative_cutoff: float = 0.6
    rank_weight: float = 0.5
    name: str = "extractive"

    def __post_init__(self) -> None:
        """Validate the parameters."""
        if self.max_passages < 1 or self.max_sentences_per_doc < 1:
            raise ConfigError("max_passages and max_sentences_per_doc must be >= 1")
        for label in ("lexical_weight", "context_weight", "relative_cutoff", "rank_weight"):
            value = getattr(self, label)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{label} must be in [0, 1], got {value}")

    def warm_up(self) -> None:
        """Load the embedder's model when it has a ``warm_up``."""
        warm_up(self.embedder)

    def score_sentences(
        self, query: str, docs: Sequence[RetrievedDoc], sentences_by_doc: Sequence[Sequence[Sentence]] | None = None
    ) -> list[tuple[int, int, float]]:
        """Score every evidence sentence of ``docs`` for ``query``.

        Returns:
            ``(doc index, sentence index in split_sentences(doc text), score)``, document order.
        """
        if sentences_by_doc is None:
            sentences_by_doc = [split_sentences(doc.document.text) for doc in docs]
        candidates: list[tuple[int, int, Sentence, str]] = []  # (doc index, sentence index, sentence, context)
        for d, doc in enumerate(docs):
            sentences = sentences_by_doc[d]
            contexts = sentence_contexts(doc.document, sentences) if self.context_weight else [""] * len(sentences)
            for k, sentence in enumerate(sentences):
                if len(visible_words(sentence.text)) >= self.min_tokens and is_evidence_sentence(sentence.text):
                    candidates.append((d, k, sentence, contexts[k]))
        # one pass over sentences and distinct contexts (embedding calls are the cost)
        contexts = list(dict.fromkeys(c[3] for c in candidates if c[3]))
        texts = [c[2].text for c in candidates]
        scores = relevance_scores(query, [*texts, *contexts], self.embedder, self.lexical_weight)
        by_context = dict(zip(contexts, scores[len(texts) :], strict=True))
        priors = retrieval_priors(docs)
        out = []
        for (d, k, _, context), own in zip(candidates, scores, strict=False):
            score = own
            if context:
                score = (1.0 - self.context_weight) * own + self.context_weight * by_context[context]
            out.append((d, k, score * (1.0 - self.rank_weight + self.rank_weight * priors[d])))
        return out

    def extract(self, query: str, docs: Sequence[RetrievedDoc]) -> list[Passage]:
        """Best ``max_passages`` verbatim passages, best first; ``Passage.url = doc.cite``.

        ``Passage.overlap`` carries the passage's relevance score until the aligner
        replaces it with the n-gram overlap.
        """
        sentences_by_doc = [split_sentences(doc.document.text) for doc in docs]
        scored = self.score_sentences(query, docs, sentences_by_doc)
        ranked = sorted(range(len(scored)), key=lambda i: (-scored[i][2], scored[i][0], scored[i][1]))
        best = scored[ranked[0]][2] if ranked else 0.0
        floor = max(self.min_score, self.relative_cutoff * best)
        chosen: dict[int, dict[int, float]] = {}
        for i in ranked:
            d, k, score = scored[i]
            if score <= self.min_score or score < floor:
                break
            per_doc = chosen.setdefault(d, {})
            if len(per_doc) < self.max_sentences_per_doc:
                per_doc[k] = score
        passages: list[tuple[float, int, int, Passage]] = []
        for d, picked in chosen.items():
            document = docs[d].document
            for run in _consecutive(sorted(picked)):
                first, last = sentences_by_doc[d][run[0]], sentences_by_doc[d][run[-1]]
                start, end = first.start, last.end
                span = Span(document.id, start, end, document.text[start:end], url=document.cite)
                passage = Passage("", span.text, url=document.cite, doc_id=document.id, spans=(span,))
                passages.append((max(picked[s] for s in run), d, run[0], passage))
        passages.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [
            Passage(f"p{i + 1}", p.text, p.url, p.doc_id, p.spans, p.status, round(score, 6))
            for i, (score, _, _, p) in enumerate(passages[: self.max_passages])
        ]


def _consecutive(indices: Sequence[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


__all__ = [
    "QUESTION_TERMS",
    "STOPWORDS",
    "ChatModel",
    "ExtractionError",
    "ExtractiveExtractor",
    "Vocabulary",
    "LLMExtractor",
    "CONTEXT_METADATA_KEYS",
    "content_terms",
    "in_vocabulary",
    "is_evidence_sentence",
    "parse_collected_passages",
    "passages_from_json",
    "read_passages_json",
    "relevance_scores",
    "retrieval_priors",
    "sentence_context",
    "sentence_contexts",
    "stem",
    "topic_terms",
    "vocabulary",
]
