"""Citation guard: no citation outside the retrieved set, every sentence traced to a span.

:class:`CitationGuard` takes a generator's raw answer and returns a :class:`GroundedAnswer`:

1. **Parse citations.** When the generator filled ``GeneratedAnswer.sentences`` those
   (sentence, targets) pairs are used; otherwise the text is split into sentences and
   bracketed markers are read: ``[n]`` (or ``[1, 2]``) names the n-th passage given to the
   generator (1-based, prompt order), ``[target]`` names a URL, document id or passage id.
   A bracket that is neither a number, a known id nor URL-like (``[sic]``) is ordinary
   text, and so is one a retrieved document has at that place, with the words either side
   (``[read/write]``, a Markdown link's ``[owner/repo]``, ``a[0]``): the writer quoted it.
   Markers written after the full stop (``"Text. [1]"``) belong to the sentence before them.
2. **Remove out-of-set citations.** A target that resolves to no retrieved document (a URL
   never retrieved, ``[7]`` with five passages) is removed and counted in
   ``removed_citations``; the final text therefore cites only retrieved documents.
3. **Map each sentence to its supporting span** with the same n-gram alignment as the
   passages (:meth:`NGramAligner.locate`): a sentence is ``supported`` when its overlap with
   a cited document is ``> threshold``. ``AnswerSentence.support`` holds that overlap,
   ``spans`` the verbatim regions of the best cited document (partial matches included).
   With ``reattribute=True`` a sentence whose cited documents do not support it, but that
   another retrieved document does support, is re-attributed to that document (citation
   drift at answer level; a warning says so).
4. **Renumber** the surviving sources in order of first use: the final text ends every
   cited sentence with its markers, ``"Sentence. [1][2]"``, and ``sources[n - 1]`` is the
   URL (or id) of ``[n]``.

Example:
    >>> from ragtrust.generation.base import GeneratedAnswer
    >>> from ragtrust.testing import retrieved
    >>> docs = retrieved(["Use parameterised queries to stop SQL injection attacks."])
    >>> raw = GeneratedAnswer("Use parameterised queries to stop SQL injection attacks [1]. Trust me [https://evil.test].")
    >>> passages = [Passage("p1", docs[0].document.text, url=docs[0].document.url, doc_id="doc-0")]
    >>> g = CitationGuard().apply(raw, passages, docs)
    >>> g.text, g.removed_citations, g.unsupported_sentences
    ('Use parameterised queries to stop SQL injection attacks. [1] Trust me.', 1, 1)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragtrust.documents import AnswerSentence, Passage, RetrievedDoc, Span
from ragtrust.evidence.align import NGramAligner, resolve_source
from ragtrust.text import one_line, split_sentences, word_tokens

if TYPE_CHECKING:  # generation imports evidence, not the other way round at run time
    from ragtrust.generation.base import GeneratedAnswer

_MARKER = re.compile(r"\[([^\[\]\n]{1,300})\]")
# markers after the sentence's final punctuation move before it: "Text. [1] Next" -> "Text [1]. Next"
_TRAILING_MARKERS = re.compile(r"([.!?])((?:[ \t]*\[[^\[\]\n]{1,300}\])+)")
_URLISH = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|www\.)\S+$|^\S*/\S*$", re.IGNORECASE)


@dataclass(frozen=True)
class GroundedAnswer:
    """An answer whose every citation points into the retrieved set.

    Attributes:
        text: the answer with ``[n]`` markers (``n`` indexes ``sources`` from 1).
        sentences: per sentence, its text (no markers), cited URLs / doc ids, verified
            spans, n-gram ``support`` and the ``supported`` flag.
        sources: citation number ``n`` -> URL (or doc id) at index ``n - 1``.
        removed_citations: citations that pointed outside the retrieved set and were removed.
        unsupported_sentences: sentences without a supporting span in a cited document.
        warnings: plain-language notes for the verdict.
        preface: text put before the sentences by post-processing (the "does not
            explicitly state" preface), part of ``text``; empty when none.
    """

    text: str
    sentences: tuple[AnswerSentence, ...] = ()
    sources: tuple[str, ...] = ()
    removed_citations: int = 0
    unsupported_sentences: int = 0
    warnings: tuple[str, ...] = ()
    preface: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "text": self.text,
            "sentences": [s.to_dict() for s in self.sentences],
            "sources": list(self.sources),
            "removed_citations": self.removed_citations,
            "unsupported_sentences": self.unsupported_sentences,
            "warnings": list(self.warnings),
            "preface": self.preface,
        }


def render_answer(
    sentences: Sequence[AnswerSentence], paragraph_starts: Sequence[int] = ()
) -> tuple[str, tuple[str, ...]]:
    """Text with ``[n]`` markers numbered by first use, and the ``sources`` it numbers.

    Args:
        sentences: the sentences; ``citations`` are the source URLs / ids.
        paragraph_starts: indexes of sentences that start a new paragraph (blank line).
    """
    sources: list[str] = []
    parts: list[str] = []
    starts = set(paragraph_starts)
    for i, sentence in enumerate(sentences):
        numbers = []
        for cite in sentence.citations:
            if cite not in sources:
                sources.append(cite)
            numbers.append(sources.index(cite) + 1)
        markers = "".join(f"[{k}]" for k in dict.fromkeys(numbers))
        piece = f"{sentence.text} {markers}" if markers else sentence.text
        if parts and i in starts:
            parts.append("\n\n")
        elif parts:
            parts.append(" ")
        parts.append(piece)
    return "".join(parts), tuple(sources)


def clean_sentence(text: str) -> str:
    """Collapse whitespace and remove spaces left before punctuation (:func:`~ragtrust.text.one_line`)."""
    return one_line(text)


@dataclass
class CitationGuard:
    """Enforce in-set citations and trace each answer sentence to a verified span.

    Args:
        n: n-gram length of the sentence-to-document alignment (SPEC 6.3).
        threshold: overlap above which a sentence counts as supported.
        reattribute: move a sentence's citation to the retrieved document that supports it
            when its cited documents do not (or add one when it cites nothing).
    """

    n: int = 5
    threshold: float = 0.7
    reattribute: bool = True
    _aligner: NGramAligner = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Build the aligner (validates ``n`` and ``threshold``)."""
        self._aligner = NGramAligner(n=self.n, threshold=self.threshold)

    def apply(
        self, answer: GeneratedAnswer, passages: Sequence[Passage], docs: Sequence[RetrievedDoc]
    ) -> GroundedAnswer:
        """Ground ``answer`` in ``docs`` (see the module docstring for the steps)."""
        warnings: list[str] = []
        removed = 0
        raw = list(answer.sentences) if answer.sentences else self._parse(answer.text, passages, docs)
        out: list[AnswerSentence] = []
        for i, (text, targets) in enumerate(raw, start=1):
            sentence = clean_sentence(
                _MARKER.sub(lambda m: m.group(0) if not _is_citation(m, passages, docs) else "", text)
            )
            cited: list[RetrievedDoc] = []
            for target in targets:
                doc = _resolve_target(target, passages, docs)
                if doc is None:
                    removed += 1
                    warnings.append(f"removed citation {target!r} of sentence {i}: it is not a retrieved document")
                elif doc.id not in {d.id for d in cited}:
                    cited.append(doc)
            if not word_tokens(sentence):
                continue
            out.append(self._support(i, sentence, cited, docs, warnings))
        unsupported = [k + 1 for k, s in enumerate(out) if not s.supported]
        if unsupported:
            warnings.append(
                f"{len(unsupported)} answer sentence(s) have no verbatim support in their cited documents: "
                f"sentence(s) {', '.join(map(str, unsupported))}"
            )
        text, sources = render_answer(out)
        return GroundedAnswer(
            text=text,
            sentences=tuple(out),
            sources=sources,
            removed_citations=removed,
            unsupported_sentences=len(unsupported),
            warnings=tuple(warnings),
        )

    def _support(
        self, index: int, sentence: str, cited: list[RetrievedDoc], docs: Sequence[RetrievedDoc], warnings: list[str]
    ) -> AnswerSentence:
        best_doc: RetrievedDoc | None = None
        best_score = 0.0
        best_spans: tuple[Span, ...] = ()
        for doc in cited:
            score, spans = self._aligner.locate(sentence, doc)
            if score > best_score or best_doc is None:
                best_doc, best_score, best_spans = doc, score, spans
        if best_score <= self.threshold and self.reattribute:
            for doc in docs:
                if any(doc.id == c.id for c in cited):
                    continue
                score, spans = self._aligner.locate(sentence, doc)
                if score > self.threshold and score > best_score:
                    best_doc, best_score, best_spans = doc, score, spans
            if best_doc is not None and best_score > self.threshold and all(best_doc.id != c.id for c in cited):
                warnings.append(_reattribution_warning(index, cited, best_doc))
                cited = [best_doc]
        return AnswerSentence(
            text=sentence,
            citations=tuple(d.document.cite for d in cited),
            spans=best_spans if best_doc is not None else (),
            support=best_score if cited else None,
            supported=bool(cited) and best_score > self.threshold,
            best_doc_id=best_doc.id if best_doc is not None and cited else None,
        )

    def _parse(
        self, text: str, passages: Sequence[Passage], docs: Sequence[RetrievedDoc]
    ) -> list[tuple[str, tuple[str, ...]]]:
        return parse_citations(text, passages, docs)


def parse_citations(
    text: str, passages: Sequence[Passage], docs: Sequence[RetrievedDoc]
) -> list[tuple[str, tuple[str, ...]]]:
    """``(sentence, citation targets)`` per sentence of ``text`` (step 1 of the module docstring).

    ``[n]`` becomes the n-th passage's source, or ``"[n]"`` when there is no n-th passage.
    """
    text = _TRAILING_MARKERS.sub(lambda m: m.group(2) + m.group(1), text)
    out: list[tuple[str, tuple[str, ...]]] = []
    for sentence in split_sentences(text):
        targets: list[str] = []
        for m in _MARKER.finditer(sentence.text):
            if _is_citation(m, passages, docs):
                targets.extend(_targets(m.group(1), passages))
        if not word_tokens(_MARKER.sub("", sentence.text)) and out:
            # a lone marker ("[1]") belongs to the sentence before it
            out[-1] = (out[-1][0], out[-1][1] + tuple(targets))
            continue
        out.append((sentence.text, tuple(targets)))
    return out


def citations_outside(text: str, docs: Sequence[RetrievedDoc]) -> list[str]:
    """The citations in ``text`` that name none of ``docs``, in order, each once.

    For an answer written elsewhere and checked against ``docs``: ``[n]`` names the n-th
    document as given (1-based), ``[id]`` / ``[url]`` a document's id or citation target;
    ``[7]`` with five documents, or a URL that is none of theirs, names a source that was not
    given. A bracket that is not a citation (``[sic]``, a document's own ``[read/write]``)
    is not counted.

    Example:
        >>> from ragtrust.testing import retrieved
        >>> citations_outside("Use TLS [1]. Set HSTS [7] [https://x.test/a].", retrieved(["Use TLS.", "Set HSTS."]))
        ['[7]', 'https://x.test/a']
    """
    passages = [Passage(d.id, d.document.text, url=d.document.url, doc_id=d.id) for d in docs]
    outside = [
        target
        for _, targets in parse_citations(text, passages, docs)
        for target in targets
        if _resolve_target(target, passages, docs) is None
    ]
    return list(dict.fromkeys(outside))


def _reattribution_warning(index: int, cited: Sequence[RetrievedDoc], best: RetrievedDoc) -> str:
    """Say where a sentence's citation went.

    Between chunks of one source (same URL) the move is named by chunk ids, since the URL
    alone would read the same on both sides.
    """
    source = best.document.cite
    if cited and all(c.document.cite == source for c in cited):
        name = source.rstrip("/").rsplit("/", 1)[-1] or source
        before = ", ".join(c.id for c in cited)
        return (
            f"sentence {index}: citation moved to another passage of the same source {name} "
            f"(cited {before}, its text comes from {best.id})"
        )
    before = ", ".join(c.document.cite for c in cited) or "nothing"
    return f"sentence {index}: cited {before} but its text comes from {source}; citation re-attributed"


def _parts(content: str) -> list[str]:
    return [p.strip() for p in re.split(r"[,;]", content) if p.strip()]


def _is_citation(match: re.Match[str], passages: Sequence[Passage], docs: Sequence[RetrievedDoc]) -> bool:
    """Tell whether a bracket is a citation: every part a number, URL-like, or a known id, and not quoted text."""
    parts = _parts(match.group(1))
    if not parts:
        return False
    known = {p.passage_id for p in passages}
    for part in parts:
        if part.isdigit() or _URLISH.match(part) or part in known or resolve_source(part, docs) is not None:
            continue
        return False
    return not _quoted(match, parts, docs)


def _quoted(match: re.Match[str], parts: Sequence[str], docs: Sequence[RetrievedDoc]) -> bool:
    """Tell whether a bracket is a document's own text: with the words either side of it, a document has it.

    ``"Grant the [read/write] scope"``, a Markdown link ``"[owner/repo](https://...)"`` or
    ``"a[0]"`` quoted from a document are its text; a marker the writer added (``"... scope
    [2]."``) is in no document. A number after a space or punctuation (a footnote,
    ``"blue.[1]"``) stays a marker: shown as text it would read as one of the answer's citations.
    """
    head, tail = match.string[: match.start()], match.string[match.end() :]
    if all(part.isdigit() for part in parts) and not (head[-1:].isalnum() or head[-1:] == "_"):
        return False
    left = (head.split() or [""])[-1] + (" " if head[-1:].isspace() else "")
    right = (" " if tail[:1].isspace() else "") + (tail.split() or [""])[0]
    context = " ".join(f"{left}{match.group(0)}{right}".split())
    return any(context in " ".join(d.document.text.split()) for d in docs)


def _targets(content: str, passages: Sequence[Passage]) -> list[str]:
    """Citation targets of one marker; ``[n]`` becomes the n-th passage's source (or ``#n``)."""
    out: list[str] = []
    for part in _parts(content):
        if part.isdigit():
            k = int(part)
            if 1 <= k <= len(passages):
                p = passages[k - 1]
                out.append(p.doc_id or p.url or p.passage_id)
            else:
                out.append(f"[{k}]")  # a passage number that does not exist: out of set
        else:
            out.append(part)
    return out


def _resolve_target(target: str, passages: Sequence[Passage], docs: Sequence[RetrievedDoc]) -> RetrievedDoc | None:
    doc = resolve_source(target, docs)
    if doc is not None:
        return doc
    for p in passages:
        if p.passage_id == target:
            for key in (p.doc_id, p.url):
                if key and (found := resolve_source(key, docs)) is not None:
                    return found
    return None


__all__ = ["CitationGuard", "GroundedAnswer", "citations_outside", "clean_sentence", "parse_citations", "render_answer"]
