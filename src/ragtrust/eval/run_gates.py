"""What the protocol runner runs queries through: a gate per corpus, over a shared embedding cache.

:func:`trustgate_factory` builds the default gate (:class:`ragtrust.pipeline.TrustGate` over an
in-memory index); :class:`CachingEmbedder` lets the clean and poisoned copies of a corpus
share the embeddings of the documents they have in common.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

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


def corpus_view(documents: Sequence[Document]) -> list[Document]:
    """Documents as the gate sees them: no metadata (it holds the attack's false claims)."""
    return [Document(id=d.id, text=d.text, url=d.url, source=d.source) for d in documents]


__all__ = ["CachingEmbedder", "Gate", "GateFactory", "corpus_view", "trustgate_factory"]
