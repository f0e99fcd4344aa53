"""What the protocol runner runs queries through: a gate per corpus, over a shared embedding cache.

:func:`trustgate_factory` builds the default gate (:class:`ragtrust.pipeline.TrustGate` over an
in-memory index); :class:`CachingEmbedder` lets the clean and poisoned copies of a corpus
share the embeddings of the documents they have in common.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from ragtrust.config import Settings
from ragtrust.documents import Document
from ragtrust.models.base import Embedder, NLIModel
from ragtrust.pipeline.parts import Asks as Gate
from ragtrust.registry import warm_up

GateFactory = Callable[[Sequence[Document], Settings, NLIModel | None, Embedder | None], Gate]


def trustgate_factory(
    documents: Sequence[Document], settings: Settings, nli: NLIModel | None, embedder: Embedder | None
) -> Gate:
    """The default gate: :meth:`ragtrust.pipeline.TrustGate.from_documents` (in-memory index)."""
    from ragtrust.pipeline import TrustGate

    gate = TrustGate.from_documents(documents, settings, nli=nli, embedder=embedder)
    gate.warm_up()
    return gate


@dataclass
class CachingEmbedder:
    """Memoises embeddings by text: clean and poisoned corpora share most documents."""

    inner: Embedder
    _cache: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict, repr=False)

    @property
    def model_id(self) -> str:
        """The wrapped embedder's id."""
        return str(self.inner.model_id)

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return int(self.inner.dim)

    def warm_up(self) -> None:
        """Warm the wrapped embedder."""
        warm_up(self.inner)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors of ``texts``, embedding only those not seen before."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vectors = self.inner.embed(missing)
            for text, vec in zip(missing, vectors, strict=True):
                self._cache[text] = np.asarray(vec, dtype=np.float32)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts]).astype(np.float32)


def load_models(
    settings: Settings, embedder: Embedder | None, nli: NLIModel | None
) -> tuple[CachingEmbedder, NLIModel]:
    """The run's shared models, built from ``settings`` when not given, warmed, the embedder memoised."""
    if embedder is None:
        from ragtrust.models.embedder import default_embedder

        embedder = default_embedder(settings)
    if nli is None:
        from ragtrust.models.nli import default_nli

        nli = cast(NLIModel, default_nli(settings))
    warm_up(embedder, nli)
    return (embedder if isinstance(embedder, CachingEmbedder) else CachingEmbedder(embedder)), nli


def retrieved_records(verdict: Any, poisoned: Callable[[str], bool]) -> list[dict[str, Any]]:
    """Per retrieved document of a verdict, what the reports read (``poisoned(base_id)`` gives the label).

    Fields: ``id``, ``base_id`` (the parent of a ``<doc>#<n>`` chunk), ``rank``, ``similarity``,
    ``poisoned``, ``poison_probability``, ``suspicious``, ``action``, ``signals`` (name -> score,
    ``None`` when skipped).
    """
    out: list[dict[str, Any]] = []
    for rank, d in enumerate(verdict.documents, start=1):
        base = d.doc_id.split("#", 1)[0]
        out.append(
            {
                "id": d.doc_id,
                "base_id": base,
                "rank": rank,
                "similarity": d.similarity,
                "poisoned": poisoned(base),
                "poison_probability": d.poison_probability,
                "suspicious": d.suspicious,
                "action": d.action,
                "signals": {s.name: (None if s.skipped else s.score) for s in d.signals},
            }
        )
    return out


@contextmanager
def progress_bar(
    total: int, label: str, describe: Callable[[dict[str, Any]], str], *, enabled: bool = True
) -> Iterator[Callable[..., None]]:
    """A rich progress bar; yields ``advance(record | None, steps=1)`` (a no-op when not ``enabled``)."""
    if not enabled:
        yield lambda record, steps=1: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=False) as bar:
        task = bar.add_task(label, total=total)

        def advance(record: dict[str, Any] | None, steps: int = 1) -> None:
            if record is not None:
                bar.update(task, description=describe(record))
            bar.advance(task, steps)

        yield advance


def corpus_view(documents: Sequence[Document]) -> list[Document]:
    """Documents as the gate sees them: no metadata (it holds the attack's false claims)."""
    return [Document(id=d.id, text=d.text, url=d.url, source=d.source) for d in documents]


__all__ = [
    "CachingEmbedder",
    "Gate",
    "GateFactory",
    "corpus_view",
    "load_models",
    "progress_bar",
    "retrieved_records",
    "trustgate_factory",
]
