"""Fakes for the benchmark harness tests: a tiny deterministic gate (no models)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from ragtrust.config import Settings
from ragtrust.documents import Document, DocumentScreening, SignalResult, Verdict
from ragtrust.testing import LexicalNLI, StaticRetriever
from ragtrust.trust import compute_trust

_STEERING = re.compile(r"\b(tell the reader|replies are to state|reply using|now agree|concluded that)\b", re.I)


@dataclass
class FakeGate:
    """Retrieval by word overlap, a keyword poison score, LexicalNLI factuality.

    Deterministic and fast; enough to exercise the runner's bookkeeping (labels, records,
    policies), not a detector.
    """

    documents: Sequence[Document]
    settings: Settings
    nli: LexicalNLI = field(default_factory=LexicalNLI)
    asked: list[str] = field(default_factory=list)

    def ask(self, question: str) -> Verdict:
        self.asked.append(question)
        docs = StaticRetriever(self.documents).retrieve(question, top_k=self.settings.retrieval.top_k)
        screenings = []
        for d in docs:
            p = 0.9 if _STEERING.search(d.document.text) else 0.1
            suspicious = p > self.settings.screening.suspicious_threshold
            action = "kept"
            if suspicious:
                action = "dropped" if self.settings.screening.policy == "drop-suspicious" else "flagged"
            screenings.append(
                DocumentScreening(
                    doc_id=d.id,
                    url=d.document.url,
                    poison_probability=p,
                    signals=(SignalResult(name="keyword", score=p), SignalResult(name="outlier", skipped=True)),
                    similarity=d.score,
                    suspicious=suspicious,
                    action=action,
                )
            )
        kept = [d for d, s in zip(docs, screenings, strict=True) if s.action != "dropped"]
        answer = kept[0].document.text if kept else ""
        probs = self.nli.predict([(d.document.text, answer) for d in docs]) if answer else None
        factuality = float(probs[:, 0].max()) if probs is not None else 0.5
        scores = [d.score or 0.0 for d in docs]
        weights = [s / sum(scores) if sum(scores) else 1 / len(scores) for s in scores]
        poison = min(1.0, sum(w * s.poison_probability for w, s in zip(weights, screenings, strict=True)))
        consistency = 1.0 - max(s.poison_probability for s in screenings) / 2
        s_max = max(scores) if scores else None
        r = compute_trust(factuality, consistency, poison, s_max, self.settings.trust)
        return Verdict(
            query=question,
            trust_score=r.trust_score,
            trust_level=r.level,  # type: ignore[arg-type]
            trusted=r.trusted,
            tau=self.settings.trust.tau,
            factuality=factuality,
            consistency=consistency,
            poison_probability=poison,
            trust_raw=r.trust_raw,
            dampener=r.dampener,
            retrieval_modifier=r.retrieval_modifier,
            max_similarity=s_max,
            answer=answer,
            documents=tuple(screenings),
            timings_s={"retrieve": 0.001, "screen": 0.002},
            models={"nli": "lexical-nli", "embedder": "none", "generator": "first-doc"},
        )


@pytest.fixture
def fake_gate_factory():
    gates: list[FakeGate] = []

    def factory(documents, settings, nli, embedder):
        gate = FakeGate(documents=list(documents), settings=settings)
        gates.append(gate)
        return gate

    factory.gates = gates  # type: ignore[attr-defined]
    return factory
