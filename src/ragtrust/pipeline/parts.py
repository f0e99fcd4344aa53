"""The gate's view of its parts, and the applications' view of the gate (typing only).

Any object with these methods can stand in for a stage (the shipped components do; so do
the fakes of :mod:`ragtrust.testing` and a plugin's). A store is anything that publishes
generations and builds retrievers over them, like :class:`~ragtrust.ingest.store.Store`.
:class:`Asks` (what the benchmark runner needs) and :class:`Gate` (what the server needs)
are what :class:`~ragtrust.pipeline.TrustGate` offers the applications built on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ragtrust.documents import Passage, RetrievedDoc, Verdict
from ragtrust.retrieval.base import Retriever

if TYPE_CHECKING:
    from ragtrust.evidence.align import AlignmentResult
    from ragtrust.evidence.citations import GroundedAnswer
    from ragtrust.generation.base import GeneratedAnswer
    from ragtrust.screening.aggregate import ScreeningReport
    from ragtrust.verification.factuality import FactualityReport
    from ragtrust.verification.relevance import RelevanceReport


class GateStore(Protocol):
    """A store the gate follows: it publishes generations and builds retrievers over them."""

    @property
    def generation(self) -> str:
        """The id of the live generation."""
        ...

    def refresh(self) -> bool:
        """Pick up a generation another writer published; whether it changed."""
        ...

    def retriever(self, mode: str = "dense", top_k: int = 5) -> Retriever:
        """A retriever over the live generation."""
        ...


class Screens(Protocol):
    """Stage 1: a screening report on a retrieved set."""

    def screen(
        self, docs: Sequence[RetrievedDoc], query: str | None = None, witnesses: Sequence[RetrievedDoc] = ()
    ) -> ScreeningReport:
        """Screen ``docs``; ``witnesses`` go to the signals that read them."""
        ...


class Extracts(Protocol):
    """Evidence extraction: passages of the documents relevant to the query."""

    def extract(self, query: str, docs: Sequence[RetrievedDoc]) -> list[Passage]:
        """The passages, verbatim or claimed (aligned next)."""
        ...


class Aligns(Protocol):
    """The n-gram aligner: passages checked against the documents."""

    def align(self, passages: Sequence[Passage], docs: Sequence[RetrievedDoc]) -> AlignmentResult:
        """Keep, truncate, re-attribute or drop each passage."""
        ...


class Grounds(Protocol):
    """The citation guard: an answer's citations checked against the passages and documents."""

    def apply(
        self, answer: GeneratedAnswer, passages: Sequence[Passage], docs: Sequence[RetrievedDoc]
    ) -> GroundedAnswer:
        """The grounded answer."""
        ...


class Verifies(Protocol):
    """Stage 2: NLI factuality of an answer against documents."""

    def verify(self, answer: str, docs: Sequence[RetrievedDoc]) -> FactualityReport:
        """F and per-sentence support."""
        ...


class JudgesRelevance(Protocol):
    """Context and answer relevance to the question."""

    def judge(
        self,
        question: str,
        passages: Sequence[Passage] | None,
        answer_sentences: Sequence[str] = (),
        documents: Sequence[RetrievedDoc] = (),
        answer_documents: Sequence[str] = (),
    ) -> RelevanceReport:
        """The relevance report (``documents``: the passages' documents; ``answer_documents``: the answer's)."""
        ...


class Asks(Protocol):
    """A pipeline that answers a question with a verdict (what the benchmark runner needs)."""

    def ask(self, question: str) -> Verdict:
        """A full verdict for one question."""
        ...


class Gate(Asks, Protocol):
    """What the server needs from :class:`ragtrust.pipeline.TrustGate`."""

    @property
    def store(self) -> Any:
        """The document store, or ``None``."""
        ...

    def warm_up(self) -> None:
        """Load the models."""
        ...

    def screen(self, docs: Sequence[RetrievedDoc], query: str | None = None) -> Verdict:
        """Stage 1 only."""
        ...

    def verify(self, answer: str, docs: Sequence[RetrievedDoc], query: str | None = None) -> Verdict:
        """Stage 2 (with Stage 1 for P and C)."""
        ...

    def align(self, passages: Sequence[Passage], docs: Sequence[RetrievedDoc]) -> AlignmentResult:
        """EvidenT alignment: ``passages``, ``dropped``, ``diagnostics``."""
        ...


__all__ = [
    "Aligns",
    "Asks",
    "Extracts",
    "Gate",
    "GateStore",
    "Grounds",
    "JudgesRelevance",
    "Screens",
    "Verifies",
]
