"""Signal 3: intra-document consistency (SPEC section 3).

An appended payload ("It is a common misconception that X; in fact it does not") makes
a document disagree with itself. Three kinds of NLI check per document, all documents of a batch
in **one** ``nli.predict`` call:

* **halves**: premise = first half of the sentences, hypothesis = second half (split at a
  sentence bound, by sentence count as in the reference);
* **tail**: premise = everything before the last sentence(s), hypothesis = the last
  sentence (the last two when the last one has fewer than ``min_words`` words): an
  appended payload is usually at the end and is diluted in a whole "second half";
* **tail vs sentence**: the same tail against each of the ``max_sentence_pairs`` earlier
  sentences that share the most words with it (overlap coefficient at least
  ``min_overlap``): NLI models are trained on short premises, and the claim an appended
  payload negates is usually one sentence.

**Direction.** A contradiction is symmetric, but a small NLI model often sees it from one
side only, so a check may be scored both ways, its contradiction ``c`` being the larger of
the two. Three rules: ``forward`` (premise -> hypothesis only), ``sentences`` (the
sentence-against-sentence checks both ways) and ``both`` (every check both ways). The
model's calibration chooses (:mod:`ragtrust.eval.calibration`); for the shipped model
it chose ``both``, which at the same false-alarm budget catches 25.2% of the development
contradictions against 18.7% (``sentences``) and 9.9% (``forward``), for about ten more
NLI pairs per query at K = 5. Without a calibration the rule is ``sentences``.

The contradiction ``c`` of the strongest check becomes the score through the ramp
``clip((c - low) / (high - low))``. ``low`` / ``high`` default to the NLI model's
calibration (:func:`ragtrust.screening.ramp.resolve_ramp`: with the shipped model's
``low``, at most 5% of clean development retrieved sets of 5 have a document that scores at
all), and to
``low = 0.4``, ``high = 0.9`` for a model without one (the reference ignored ``c <= 0.5``).
The ramp is continuous, unlike the reference's step rule (``c > 0.7 -> 0.7c``,
``c > 0.5 -> 0.4c``).

**Instructions.** A check whose one side only forbids ("Never ...", "Do not ...", "Don't ...",
"Avoid ...") while the other side forbids nothing is left out (``instructions``): the NLI
model reads a prohibition as the negation of any sentence about the same thing ("The product
uses the class loader." / "Do not use the class loader.", 0.66 on a CWE entry). A
prohibition against its own near-identical positive ("Do not enable X." / "Enable X.") is
the claim-conflict diff's; one against a differently worded positive is no longer read.

A document with fewer than two sentences, or a half with fewer than ``min_words`` words
(reference: 5), is skipped with a reason (no score, not "clean"). The tail checks run only
when the tail reads as a statement and compare it only with earlier statements
(``prose_tail``): the last items of a chunk's reference list ("- [OWASP Testing Guide](...)
article on how to [Test for LDAP Injection](...)" against "- OWASP article on [LDAP
Injection](...)") scored a contradiction of 0.93 and withheld a clean OWASP chunk.

**Cost bound (issue 20).** The halves check is run only when the two halves fit the NLI model
together, in one pass each way (``whole_halves``, through the engine's
:meth:`~ragtrust.models.nli_engine.NLIEngine.premise_windows`). On a 512-token chunk each half
is about as long as the model's input: the engine would truncate the hypothesis and cut the
premise into windows of about 32 tokens, 8-16 pairs per chunk (two thirds of the signal's
pairs on OWASP chunks at K = 5) for a half that the model never reads whole. The tail check
against the whole rest of the document is bounded the same way (``whole_tail``): on OWASP
chunks it was 0.45 of the signal's 0.49 s per query at K = 5 (no NLI cache) and, on the calibration
corpus's 240 OWASP chunks with development contradictions appended, it caught nothing the other
checks missed at the calibrated threshold (7.9% of the poisoned chunks above it either way;
docs/benchmarks.md, "The intra tail check on long chunks"). A long document keeps its
tail-against-sentence checks, and its sentence-level contradictions are the claim-conflict
signal's (``claim_conflict`` aligns a document's claims with each other). ``details["halves"]``
and ``details["tail"]`` say when a check was left out; a document left with no check at all is
skipped with that reason.

Example:
    >>> from ragtrust.testing import LexicalNLI, retrieved
    >>> docs = retrieved(["Use parameterised queries for SQL. Parameterised queries prevent SQL "
    ...                   "injection attacks. Parameterised queries do not prevent SQL injection attacks."])
    >>> r = IntraConsistencySignal(nli=LexicalNLI()).score_batch(docs)[0]
    >>> r.score > 0.8
    True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from ragtrust.documents import RetrievedDoc, SignalResult, Span
from ragtrust.errors import ConfigError, ModelError
from ragtrust.models.base import CONTRADICTION, NLIModel
from ragtrust.registry import register, warm_up
from ragtrust.screening.base import Signal
from ragtrust.screening.claims import is_prose
from ragtrust.screening.ramp import calibrated_direction, contradiction_ramp, resolve_ramp
from ragtrust.text import Sentence, assertions, words

#: a sentence that opens with one of these (after a list marker) forbids something: an
#: instruction, not a statement of fact
_PROHIBITION = re.compile(
    r"^(?:(?:[-*+>\u2022]|\d+[.)]|[a-z][.)]|\[[ xX]\])\s+)*(?:\*\*|__)?"  # list and quote markers, emphasis
    r"(?:never(?![-\w])(?!\s+before\b)|do\s+not\b|don['\u2019]t\b|avoid\b)",
    re.IGNORECASE,
)


def prohibition(sentence: str) -> bool:
    """Whether ``sentence`` forbids something ("Never ...", "Do not ...", "Don't ...", "Avoid ...").

    Example:
        >>> prohibition("- Do not use the class loader."), prohibition("The product uses the class loader.")
        (True, False)
    """
    return bool(_PROHIBITION.match(sentence.strip()))


#: the direction rules, cheapest first
DIRECTIONS: tuple[str, ...] = ("forward", "sentences", "both")


#: ``details`` notes of the whole-part checks left out of a long document (cost bound)
_NOT_RUN = {
    "halves": "not run: the halves do not fit the NLI model together",
    "tail": "not run: the rest of the document does not fit the NLI model with its tail",
}


def _quote(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


@dataclass(frozen=True)
class _Check:
    doc: int
    kind: str  # "halves" | "tail" | "tail_sentence"
    premise: tuple[int, int]
    hypothesis: tuple[int, int]


@register("signal", "intra_consistency")
@dataclass
class IntraConsistencySignal(Signal):
    """NLI between a document's halves and between its last sentence(s) and the rest.

    Attributes:
        nli: the NLI model (one ``predict`` call per batch).
        min_words: minimum words in each side of a check (reference: 5).
        low / high: the contradiction ramp; ``None`` = the model's calibration (see module docstring).
        direction: ``sentences`` (sentence-pair checks scored both ways, the larger counts),
            ``both`` (every check both ways) or ``forward``; ``None`` = the model's
            calibration, else ``sentences``.
        check_tail: also run the last-sentence checks.
        max_sentence_pairs: earlier sentences the tail is also compared with, one by one.
        min_overlap: word overlap coefficient an earlier sentence needs to be compared.
        whole_halves: run the halves check only when the halves fit the model together (one
            window each way, see the module docstring); ``False`` runs it on any length.
        whole_tail: the same bound for the tail check against the whole rest of the document;
            the tail's checks against single earlier sentences always run (when the tail is
            the second half, the halves check stands for it and ``whole_halves`` decides).
        prose_tail: run the tail checks only when the tail reads as a statement, and compare
            it only with earlier sentences that do (:func:`~ragtrust.screening.claims.is_prose`:
            not a reference list item, table row, code line or lead-in); ``False`` checks any.
        instructions: leave out a check whose one side only forbids (:func:`prohibition`)
            while the other forbids nothing; ``False`` checks them.
    """

    nli: NLIModel
    min_words: int = 5
    low: float | None = None
    high: float | None = None
    direction: Literal["forward", "sentences", "both"] | None = None
    check_tail: bool = True
    max_sentence_pairs: int = 3
    min_overlap: float = 0.3
    whole_halves: bool = True
    whole_tail: bool = True
    prose_tail: bool = True
    instructions: bool = True

    name: ClassVar[str] = "intra_consistency"
    results_cacheable: ClassVar[bool] = True

    def warm_up(self) -> None:
        """Warm the NLI model when it has a ``warm_up``."""
        warm_up(self.nli)

    def _checks(self, i: int, sentences: list[Sentence]) -> list[_Check]:
        """The checks of document ``i`` (see the module docstring and ``instructions``)."""
        return self._instruction_filter(self._candidate_checks(i, sentences), sentences)

    def _instruction_filter(self, checks: list[_Check], sentences: list[Sentence]) -> list[_Check]:
        if not self.instructions:
            return checks
        return [c for c in checks if not self._prohibition_against_statement(c, sentences)]

    def _candidate_checks(self, i: int, sentences: list[Sentence]) -> list[_Check]:
        def n_words(a: int, b: int) -> int:
            return sum(len(words(s.text)) for s in sentences[a:b])

        n = len(sentences)
        checks: list[_Check] = []
        mid = n // 2
        if n_words(0, mid) >= self.min_words and n_words(mid, n) >= self.min_words:
            checks.append(_Check(i, "halves", (0, mid), (mid, n)))
        if self.check_tail and n >= 3:
            cut = n - 1 if n_words(n - 1, n) >= self.min_words else n - 2
            prose = not self.prose_tail or all(is_prose(s.text) for s in sentences[max(cut, 0) : n])
            if prose and cut >= 1 and n_words(0, cut) >= self.min_words and n_words(cut, n) >= self.min_words:
                if cut != mid:
                    checks.append(_Check(i, "tail", (0, cut), (cut, n)))
                # the tail against its most related earlier sentences: short premises are
                # what NLI models are trained on, and a long premise dilutes the claim
                tail_words = set(words(" ".join(s.text for s in sentences[cut:n])))
                related = []
                for j in range(cut):
                    own = set(words(sentences[j].text))
                    if self.prose_tail and not is_prose(sentences[j].text):
                        continue
                    if len(own) >= self.min_words and tail_words:
                        overlap = len(own & tail_words) / min(len(own), len(tail_words))
                        if overlap >= self.min_overlap:
                            related.append((overlap, j))
                for _, j in sorted(related, reverse=True)[: self.max_sentence_pairs]:
                    checks.append(_Check(i, "tail_sentence", (j, j + 1), (cut, n)))
        return checks

    @staticmethod
    def _prohibition_against_statement(check: _Check, sentences: list[Sentence]) -> bool:
        """Whether one side of ``check`` only forbids and the other forbids nothing.

        "Do not use the class loader." after "The product uses the class loader." (a CWE
        entry), or "Never store passwords in plain text." after "Store passwords with a slow,
        salted hash ...": an instruction has no truth value, and the NLI model reads a
        prohibition as the negation of any statement about the same thing. Two statements,
        or two sides that both forbid, are read as before; a prohibition against its own
        near-identical statement is the claim-conflict diff's.
        """
        sides = [[prohibition(s.text) for s in sentences[a:b]] for a, b in (check.premise, check.hypothesis)]
        return any(all(one) and one and not any(other) for one, other in (sides, sides[::-1]))

    def _fits(self, premise: str, hypothesis: str) -> bool:
        """Whether the pair is scored in one pass each way (always, for a model without windows)."""
        windows = getattr(self.nli, "premise_windows", None)
        if not callable(windows):
            return True
        return len(windows(premise, hypothesis)) == 1 and len(windows(hypothesis, premise)) == 1

    def _bounded(self, checks: list[_Check], sents: list[Sentence], doc_text: str) -> tuple[list[_Check], set[str]]:
        """``checks`` without the whole-part ones that do not fit the model, and the kinds left out."""

        def text(rng: tuple[int, int]) -> str:
            return doc_text[sents[rng[0]].start : sents[rng[1] - 1].end]

        bounded = ({"halves"} if self.whole_halves else set()) | ({"tail"} if self.whole_tail else set())
        left_out = {c.kind for c in checks if c.kind in bounded and not self._fits(text(c.premise), text(c.hypothesis))}
        return [c for c in checks if c.kind not in left_out], left_out

    def _why_none(self, left_out: set[str], instructions: bool = False) -> str:
        """The skip reason of a document with at least two sentences and no check to run.

        ``instructions``: some checks were left out for reading a prohibition against a statement.
        """
        prohibitions = "a prohibition against a statement (an instruction is no claim)"
        if left_out:
            rest = f"the other checks would read {prohibitions}" if instructions else "no sentence-level check applies"
            return f"too long for the {' and '.join(sorted(left_out))} check(s), and {rest}"
        if instructions:
            return f"every check would read {prohibitions}"
        return f"each half needs at least {self.min_words} words"

    def score_batch(self, docs: Sequence[RetrievedDoc], query: str | None = None) -> list[SignalResult]:
        """Score every document; the NLI model is called once for the whole batch."""
        results: list[SignalResult | None] = [None] * len(docs)
        sentences: list[list[Sentence]] = []
        checks: list[_Check] = []
        too_long: dict[int, set[str]] = {}

        def span_text(i: int, rng: tuple[int, int]) -> tuple[int, int, str]:
            s = sentences[i]
            start, end = s[rng[0]].start, s[rng[1] - 1].end
            return start, end, docs[i].document.text[start:end]

        for i, doc in enumerate(docs):
            # questions assert nothing: only claims can contradict each other
            sents = assertions(doc.document.text)
            sentences.append(sents)
            if len(sents) < 2:
                results[i] = self.skipped(f"needs at least 2 sentences, found {len(sents)}")
                continue
            candidates = self._candidate_checks(i, sents)
            kept = self._instruction_filter(candidates, sents)
            mine, too_long[i] = self._bounded(kept, sents, doc.document.text)
            if not mine:
                results[i] = self.skipped(self._why_none(too_long[i], len(kept) < len(candidates)))
            checks.extend(mine)

        direction = self.direction or calibrated_direction(self.nli) or "sentences"
        if direction not in DIRECTIONS:
            raise ConfigError(f"intra_consistency: direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
        low, high, ramp_source = resolve_ramp(self.nli, self.name, self.low, self.high)
        pairs = [(span_text(c.doc, c.premise)[2], span_text(c.doc, c.hypothesis)[2]) for c in checks]
        # reversed checks: (index of the forward pair, index of its reversed pair)
        both_ways = [
            k
            for k, c in enumerate(checks)
            if direction == "both" or (direction == "sentences" and c.kind == "tail_sentence")
        ]
        reverse_of = {k: len(pairs) + m for m, k in enumerate(both_ways)}
        pairs += [(pairs[k][1], pairs[k][0]) for k in both_ways]
        probs = self.nli.predict(pairs) if pairs else None
        best: dict[int, tuple[float, _Check]] = {}
        per_doc: dict[int, dict[str, float]] = {}
        if probs is not None and np.shape(probs) != (len(pairs), 3):
            raise ModelError(f"NLI model returned shape {np.shape(probs)}, expected ({len(pairs)}, 3)")
        for k, check in enumerate(checks):
            c = 0.0
            if probs is not None:
                c = float(probs[k, CONTRADICTION])
                if k in reverse_of:
                    c = max(c, float(probs[reverse_of[k], CONTRADICTION]))
            kinds = per_doc.setdefault(check.doc, {})
            kinds[check.kind] = max(kinds.get(check.kind, 0.0), round(c, 4))
            if check.doc not in best or c > best[check.doc][0]:
                best[check.doc] = (c, check)
        for i, (c, check) in best.items():
            score = contradiction_ramp(c, low, high)
            doc = docs[i]
            h_start, h_end, h_text = span_text(i, check.hypothesis)
            reasons: tuple[str, ...] = ()
            spans: tuple[Span, ...] = ()
            if score > 0:
                part = "its second half" if check.kind == "halves" else "its last part"
                if check.kind == "tail_sentence":
                    earlier = span_text(i, check.premise)[2]
                    what = f"the earlier statement '{_quote(earlier, 100)}'"
                else:
                    what = "the rest"
                reasons = (f"contradicts itself: {part} '{_quote(h_text)}' contradicts {what} (contradiction {c:.2f})",)
                spans = (Span(doc_id=doc.id, start=h_start, end=h_end, text=h_text, url=doc.document.url),)
            results[i] = SignalResult(
                name=self.name,
                score=score,
                reasons=reasons,
                spans=spans,
                details={
                    "contradiction": per_doc[i],
                    "strongest": check.kind,
                    "ramp": [low, high],
                    "ramp_source": ramp_source,
                    "direction": direction,
                    **{kind: _NOT_RUN[kind] for kind in sorted(too_long.get(i, ()))},
                },
            )
        return [r if r is not None else self.skipped("no check") for r in results]


__all__ = ["DIRECTIONS", "IntraConsistencySignal", "contradiction_ramp"]
