"""Deterministic fakes that implement ragtrust's protocols, shipped for tests and examples.

They are product code: no randomness, no network, no model files. Use them to test a
pipeline wiring or a custom signal without the real models.

Example:
    >>> nli = LexicalNLI()
    >>> p = nli.predict([("The cat sat on the mat.", "The cat sat on the mat.")])
    >>> bool(p[0, 0] > 0.8)
    True
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ragtrust.documents import Document, Passage, RetrievedDoc
from ragtrust.errors import BackendError, ModelError
from ragtrust.generation.base import GeneratedAnswer

_WORD = re.compile(r"[a-z0-9]+")
_NEGATIONS = frozenset({"not", "no", "never", "none", "cannot", "nothing", "false", "nor", "neither"})
_STOP = frozenset("a an the of to in on at is are was were be been by for with and or as that this it its from".split())


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@dataclass
class HashingEmbedder:
    """Bag-of-words embeddings by feature hashing (deterministic, unit norm)."""

    dim: int = 256
    model_id: str = "hashing-embedder"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-norm hashed word-count vectors."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _words(text):
                if word in _STOP:
                    continue
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 40) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out


@dataclass
class LexicalNLI:
    """A rule-based stand-in for an NLI model.

    Entailment grows with the share of the hypothesis' content words found in the premise;
    a negation present on one side only, or a number in the hypothesis that the premise
    does not contain, turns covered hypotheses into contradictions.
    """

    model_id: str = "lexical-nli"
    calls: int = field(default=0, init=False)
    pairs_seen: int = field(default=0, init=False)

    def predict(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        """Deterministic (entailment, neutral, contradiction) rows."""
        self.calls += 1
        self.pairs_seen += len(pairs)
        out = np.zeros((len(pairs), 3), dtype=np.float32)
        for i, (premise, hypothesis) in enumerate(pairs):
            pw, hw = set(_words(premise)), _words(hypothesis)
            content = [w for w in hw if w not in _STOP and w not in _NEGATIONS]
            coverage = sum(w in pw for w in content) / len(content) if content else 0.0
            neg_mismatch = bool(_NEGATIONS & set(hw)) != bool(_NEGATIONS & pw)
            numbers_h = {w for w in hw if w.isdigit()}
            number_mismatch = bool(numbers_h - pw) and any(w.isdigit() for w in pw)
            if coverage >= 0.5 and (neg_mismatch or number_mismatch):
                row = (0.05, 0.10, 0.85)
            elif coverage >= 0.8:
                row = (0.85 + 0.1 * (coverage - 0.8) / 0.2, 0.1, 0.05)
            elif coverage >= 0.5:
                row = (0.5, 0.4, 0.1)
            else:
                row = (0.05 + 0.2 * coverage, 0.9 - 0.2 * coverage, 0.05)
            total = sum(row)
            out[i] = [v / total for v in row]
        return out


@dataclass
class RaisingNLI:
    """An NLI model that always fails: for fail-closed tests."""

    model_id: str = "raising-nli"
    message: str = "simulated NLI failure"

    def predict(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        """Always raises :class:`~ragtrust.errors.ModelError`."""
        raise ModelError(self.message)


@dataclass
class KeywordInjectionModel:
    """An injection classifier that flags text addressing an assistant, model or AI by word.

    P(injection) is 0.95 when a text names ``assistant``, ``model``, ``AI`` or ``system``
    *and* uses an override verb (``ignore``, ``disregard``, ``forget``, ``reveal``), 0.05
    otherwise: enough to test windowing, caching, spans and policies without a model file.
    """

    model_id: str = "keyword-injection"
    calls: list[int] = field(default_factory=list, compare=False)

    def predict(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One probability per text; records the batch size in ``calls``."""
        self.calls.append(len(texts))
        out = np.full(len(texts), 0.05, dtype=np.float32)
        for i, text in enumerate(texts):
            found = set(_WORD.findall(text.lower()))
            if found & {"assistant", "model", "ai", "system"} and found & {"ignore", "disregard", "forget", "reveal"}:
                out[i] = 0.95
        return out


@dataclass
class StaticRetriever:
    """Returns a fixed document list, scored by word overlap with the query (cosine-like)."""

    documents: Sequence[Document]
    name: str = "static"
    fail: bool = False

    def retrieve(self, query: str, top_k: int = 5) -> list[RetrievedDoc]:
        """Top-k documents by Jaccard overlap of words (deterministic)."""
        if self.fail:
            raise BackendError(f"retriever {self.name!r} is down (simulated)")
        q = set(_words(query)) - _STOP
        scored = []
        for doc in self.documents:
            d = set(_words(doc.text)) - _STOP
            score = len(q & d) / len(q | d) ** 0.5 / max(1, len(q)) ** 0.5 if q and d else 0.0
            scored.append((min(1.0, score), doc))
        scored.sort(key=lambda t: (-t[0], t[1].id))
        return [
            RetrievedDoc(document=doc, score=score, rank=i + 1, retriever=self.name)
            for i, (score, doc) in enumerate(scored[:top_k])
        ]


@dataclass
class ScriptedGenerator:
    """A generator that returns a fixed answer, or one computed by ``script(query, passages)``."""

    answer: str = ""
    script: Callable[[str, Sequence[Passage]], str] | None = None
    name: str = "scripted"

    def generate(self, query: str, passages: Sequence[Passage]) -> GeneratedAnswer:
        """The scripted text."""
        text = self.script(query, passages) if self.script else self.answer
        return GeneratedAnswer(text=text, model=self.name)


def retrieved(texts: Sequence[str], scores: Sequence[float] | None = None, prefix: str = "doc") -> list[RetrievedDoc]:
    """Wrap plain texts as retrieved documents ``doc-0, doc-1, ...`` (for tests)."""
    return [
        RetrievedDoc(
            document=Document(id=f"{prefix}-{i}", text=t, url=f"https://example.test/{prefix}-{i}"),
            score=None if scores is None else scores[i],
            rank=i + 1,
        )
        for i, t in enumerate(texts)
    ]


__all__ = [
    "HashingEmbedder",
    "KeywordInjectionModel",
    "LexicalNLI",
    "RaisingNLI",
    "ScriptedGenerator",
    "StaticRetriever",
    "retrieved",
]
