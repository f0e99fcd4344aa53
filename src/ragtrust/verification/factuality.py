"""Stage 2: NLI factuality of an answer against the retrieved documents (SPEC section 4).

1. The answer is split into sentences (:func:`ragtrust.text.split_sentences`, or taken as
   given when a sequence of sentences is passed); citation markers (``[1]``, ``[2, 3]``,
   ``[https://...]``, and ``[kb-17]`` when a document has that id or URL) are removed and
   markdown links reduced to their text before NLI, so a citation is not read as a claim
   (any other bracket, ``[MD5]``, is part of the claim).
2. **Premises.** Every document is cut into windows of at most ``premise_tokens`` (64)
   tokens at sentence bounds (:meth:`~ragtrust.models.nli_engine.NLIEngine.premise_windows`;
   with ``window_chars`` set, windows of at most that many characters). Short windows,
   not the 256 tokens the model can read: the shipped model entails a sentence far more
   reliably from the few sentences around it than from a long window, and it then also
   stops "supporting" what a long window merely resembles. Measured on 131 answer sentences
   over OWASP chunks (K = 5, ``bench/bench_verify_premises.py``): their negations were
   supported 67% of the time with 256-token windows and 30% with 64-token ones (ROC-AUC
   own vs negated 0.76 -> 0.92), another question's sentences 25% -> 4%, the answer's own
   sentences 89% -> 94%; each pair costs half as much. Each sentence
   (hypothesis) is scored against its ``max_premises`` *nearest* windows only: the ones
   that hold the largest share of its words, each word weighted by its rarity among the
   windows (inverse document frequency), ties to the better-ranked document. A sentence
   taken from a passage shares most of its words with that passage's window, so the
   window that entails it is usually among them, and a window that shares nothing with
   it rarely entails it. Usually, not always: on 131 answer sentences over OWASP chunks
   (K = 5, 256-token windows) 3 changed their support against the grid of every window.
   Over the same windows the bound only removes windows, so it can lower a support, never
   raise one (fail closed). With ``max_premises=None`` every sentence is scored against
   every window of every document, the all-pairs grid. All pairs of an answer go in
   **one** ``nli.predict`` call.
3. A sentence's **support** is its best entailment probability over the windows scored;
   ``best_doc_id`` names the document (``window`` the window's index in it). It is
   ``supported`` when the support reaches ``entail_threshold`` (0.5 by default: the model gives entailment at least even
   odds), which is what "a meaningful entailment signal" means here.
4. **F** is the mean over sentences of ``support`` for supported sentences and 0.5
   (inconclusive) for the others: an unsupported sentence costs relative to a grounded
   one but is not evidence of falsehood. Raw contradiction is never used as a negative
   signal (MNLI calls unrelated text a contradiction; negative evidence belongs to the
   poison pathway). When no sentence is supported, F = 0.5 and ``inconclusive`` is set.
   With the default threshold 0.5, F is continuous in every support value.

If the model raises, the report carries the error, ``F = 0.0`` and ``inconclusive``:
the pipeline fails closed and never reads a neutral default as support.

Example:
    >>> from ragtrust.testing import LexicalNLI, retrieved
    >>> docs = retrieved(["Passwords must be hashed with bcrypt or argon2."])
    >>> r = FactualityVerifier(nli=LexicalNLI()).verify("Passwords must be hashed with bcrypt [1].", docs)
    >>> r.sentences[0].text, r.sentences[0].supported, r.factuality > 0.8
    ('Passwords must be hashed with bcrypt.', True, True)
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from ragtrust.documents import RetrievedDoc, _JsonMixin
from ragtrust.errors import InputError
from ragtrust.models.base import ENTAILMENT, NLIModel
from ragtrust.registry import warm_up
from ragtrust.text import one_line, split_sentences, words

#: a bracket that is a citation whatever the documents: numbers ("[1]", "[2, 3]", "[1-3]") or a URL
_CITATION = re.compile(r"\s*\[(?:\s*\d+(?:\s*[,;\u2013-]\s*\d+)*\s*|(?:https?://|www\.)[^\]\s]+)\]")
#: any other bracket: a citation when it names the documents ("[kb-17]"), else the writer's text
_BRACKET = re.compile(r"\s*\[([^\[\]\n]{1,300})\]")
_MD_LINK = re.compile(r"\[([^\]]+)\]\((?:https?://|www\.)[^)\s]+\)")


def strip_citations(text: str, sources: Collection[str] = ()) -> str:
    """Remove citation markers and reduce markdown links to their text.

    A citation is a bracket of numbers or a URL, or one whose every part is in ``sources``
    (the documents' ids and URLs). Any other bracket is the writer's text and stays:
    "use [TLS1.0]" or "[MD5]" read as citations would leave the sentence without the value
    it claims ("use or later"), which its documents may well entail.

    Example:
        >>> strip_citations("Use bcrypt [1][2, 3]. See [the guide](https://x.test) [https://x.test/a].")
        'Use bcrypt. See the guide.'
        >>> strip_citations("Use bcrypt [kb-1].", {"kb-1"})
        'Use bcrypt.'
        >>> strip_citations("Use [MD5] [kb-1].")
        'Use [MD5] [kb-1].'
    """
    text = _MD_LINK.sub(r"\1", text)
    text = _CITATION.sub("", text)
    known = frozenset(sources)

    def cited(match: re.Match[str]) -> str:
        parts = [p.strip() for p in re.split(r"[,;]", match.group(1))]
        return "" if known and all(p in known for p in parts) else match.group(0)

    return one_line(_BRACKET.sub(cited, text))


@dataclass(frozen=True)
class SentenceSupport(_JsonMixin):
    """NLI support of one answer sentence.

    Attributes:
        text: the sentence as scored (citations removed).
        support: best entailment probability over documents (and windows).
        supported: ``support >= entail_threshold``.
        best_doc_id: the document that supports it best (``None`` without documents).
        window: index of the best window when the verifier windows documents, else ``None``.
    """

    text: str
    support: float
    supported: bool
    best_doc_id: str | None
    window: int | None


@dataclass(frozen=True)
class FactualityReport(_JsonMixin):
    """Factuality F of an answer with per-sentence support.

    Attributes:
        factuality: F in [0, 1].
        sentences: per-sentence support, in answer order.
        errors: model failures (F is then 0.0: fail closed).
        inconclusive: no sentence carried a meaningful entailment signal (F = 0.5).
    """

    factuality: float
    sentences: tuple[SentenceSupport, ...]
    errors: tuple[str, ...] = ()
    inconclusive: bool = False


def _windows(text: str, window_chars: int) -> list[str]:
    """Split at sentence bounds into windows of at most ``window_chars`` (one sentence overlap)."""
    sents = split_sentences(text)
    if not sents:
        return [text]
    out: list[str] = []
    start = 0
    while start < len(sents):
        end = start + 1
        while end < len(sents) and sents[end].end - sents[start].start <= window_chars:
            end += 1
        out.append(text[sents[start].start : sents[end - 1].end])
        if end >= len(sents):
            break
        start = max(start + 1, end - 1)
    return out


#: a premise: (index of the document, index of its window or ``None``, text)
Premise = tuple[int, int | None, str]


@dataclass
class FactualityVerifier:
    """Sentence-level NLI verification of an answer.

    Attributes:
        nli: the NLI model (one ``predict`` call per answer).
        entail_threshold: entailment probability from which a sentence counts as supported
            (a meaningful entailment signal); 0.5 keeps F continuous.
        window_chars: when set, documents longer than this are windowed here at sentence
            bounds (else at the NLI model's window, or by the NLI wrapper when
            ``max_premises`` is ``None``).
        min_words: sentences with fewer words (after removing citations) are not scored.
        max_premises: windows each sentence is scored against (its nearest, see the module
            docstring); ``None`` = every document (all pairs).
        premise_tokens: premise windows hold at most this many tokens (sentence bounds; the
            NLI engine's :meth:`~ragtrust.models.nli_engine.NLIEngine.premise_windows`; see the
            module docstring for why 64); ``None`` = as long as the model reads.
    """

    nli: NLIModel
    entail_threshold: float = 0.5
    window_chars: int | None = None
    min_words: int = 1
    max_premises: int | None = 3
    premise_tokens: int | None = 64

    def __post_init__(self) -> None:
        """Validate the threshold and the premise bound."""
        if not 0.0 < self.entail_threshold <= 1.0:
            raise InputError(f"entail_threshold must be in (0, 1], got {self.entail_threshold}")
        if self.max_premises is not None and (isinstance(self.max_premises, bool) or self.max_premises < 1):
            raise InputError(f"max_premises must be a positive integer or None, got {self.max_premises!r}")
        if self.premise_tokens is not None and (isinstance(self.premise_tokens, bool) or self.premise_tokens < 32):
            raise InputError(f"premise_tokens must be an integer of at least 32 or None, got {self.premise_tokens!r}")

    def warm_up(self) -> None:
        """Warm the NLI model when it has a ``warm_up``."""
        warm_up(self.nli)

    def sentences(self, answer: str | Sequence[str], sources: Collection[str] = ()) -> list[str]:
        """Split the answer into sentences, remove citations and drop empty ones.

        ``sources``: the documents' ids and URLs, which a bracket may cite (:func:`strip_citations`).
        """
        if isinstance(answer, str):
            raw = [s.text for s in split_sentences(answer)]
        elif isinstance(answer, Sequence) and all(isinstance(s, str) for s in answer):
            raw = list(answer)
        else:
            raise InputError(f"answer must be a string or a sequence of strings, got {type(answer).__name__}")
        cleaned = (strip_citations(s, sources) for s in raw)
        return [s for s in cleaned if len(words(s)) >= self.min_words]

    def verify(self, answer: str | Sequence[str], docs: Sequence[RetrievedDoc]) -> FactualityReport:
        """Score each answer sentence against its nearest premises (every document with ``max_premises=None``).

        Raises:
            InputError: ``answer`` is not text, or ``docs`` holds something else than RetrievedDoc.
        """
        if isinstance(docs, (str, bytes)) or not all(isinstance(d, RetrievedDoc) for d in docs):
            raise InputError("FactualityVerifier.verify expects a sequence of RetrievedDoc")
        sources = {d.id for d in docs} | {d.document.cite for d in docs}
        sentences = self.sentences(answer, sources)
        if not sentences or not docs:
            return FactualityReport(
                factuality=0.5,
                sentences=tuple(SentenceSupport(s, 0.0, False, None, None) for s in sentences),
                inconclusive=True,
            )
        try:
            vocab: dict[str, frozenset[str]] = {}  # a premise's words, read once for every sentence
            chosen = [self._nearest(sentence, self._premises(docs, sentence), vocab) for sentence in sentences]
            pairs = [(p[2], s) for s, row in zip(sentences, chosen, strict=True) for p in row]
            probs = np.asarray(self.nli.predict(pairs), dtype=np.float64)
            if probs.shape != (len(pairs), 3):
                raise ValueError(f"NLI model returned shape {probs.shape}, expected ({len(pairs)}, 3)")
        except Exception as exc:  # noqa: BLE001 - fail closed, reported in errors
            return FactualityReport(
                factuality=0.0,
                sentences=tuple(SentenceSupport(s, 0.0, False, None, None) for s in sentences),
                errors=(f"NLI verification failed: {type(exc).__name__}: {exc}",),
                inconclusive=True,
            )
        supports: list[SentenceSupport] = []
        first = 0
        for sentence, row in zip(sentences, chosen, strict=True):
            entail = probs[first : first + len(row), ENTAILMENT]
            first += len(row)
            best = int(np.argmax(entail))
            value = float(min(1.0, max(0.0, entail[best])))
            doc_index, window, _ = row[best]
            supports.append(
                SentenceSupport(sentence, value, value >= self.entail_threshold, docs[doc_index].id, window)
            )
        if not any(s.supported for s in supports):
            return FactualityReport(factuality=0.5, sentences=tuple(supports), inconclusive=True)
        f = sum(s.support if s.supported else 0.5 for s in supports) / len(supports)
        return FactualityReport(factuality=float(f), sentences=tuple(supports))

    def _premises(self, docs: Sequence[RetrievedDoc], sentence: str) -> list[Premise]:
        """Every premise ``sentence`` may meet: ``(document index, window index or None, text)``.

        The windows are the ones the NLI wrapper would score ``sentence`` in (the same texts,
        so the same results and cache entries as the all-pairs grid), each sent as it is.
        """
        premises: list[Premise] = []
        spans_of = getattr(self.nli, "premise_windows", None)
        for i, doc in enumerate(docs):
            text = doc.document.text
            if self.window_chars and len(text) > self.window_chars:
                premises.extend((i, w, chunk) for w, chunk in enumerate(_windows(text, self.window_chars)))
                continue
            own = self.max_premises is not None or self.premise_tokens is not None
            spans = spans_of(text, sentence, self.premise_tokens) if own and callable(spans_of) else []
            if len(spans) > 1:
                premises.extend((i, w, text[a:b]) for w, (a, b) in enumerate(spans))
            else:
                premises.append((i, None, text))
        return premises

    def _nearest(
        self, sentence: str, premises: list[Premise], known: dict[str, frozenset[str]] | None = None
    ) -> list[Premise]:
        """The premises ``sentence`` is scored against, in their order (see the module docstring).

        ``known``: the word sets of premise texts already read (filled here), shared by the
        sentences of one answer.
        """
        if self.max_premises is None or len(premises) <= self.max_premises:
            return premises
        known = {} if known is None else known
        vocab = []
        for p in premises:
            if p[2] not in known:
                known[p[2]] = frozenset(words(p[2]))
            vocab.append(known[p[2]])
        df: dict[str, int] = {}
        for own in vocab:
            for w in own:
                df[w] = df.get(w, 0) + 1
        mine = set(words(sentence))
        weight = {w: math.log(1.0 + len(premises) / df.get(w, 0.5)) for w in mine}
        # fsum: exactly rounded whatever the set's order, which varies per process (PYTHONHASHSEED);
        # a plain sum broke near-ties differently from run to run and so chose other premises
        share = [math.fsum(weight[w] for w in mine & own) for own in vocab]
        order = sorted(range(len(premises)), key=lambda j: (-share[j], j))
        return [premises[j] for j in sorted(order[: self.max_premises])]


__all__ = ["FactualityReport", "FactualityVerifier", "SentenceSupport", "strip_citations"]
