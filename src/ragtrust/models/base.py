"""Model protocols: every NLI model and embedder implements one of these small contracts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

#: fixed column order of every NLI probability array
NLI_LABELS: tuple[str, str, str] = ("entailment", "neutral", "contradiction")
ENTAILMENT, NEUTRAL, CONTRADICTION = 0, 1, 2


@runtime_checkable
class NLIModel(Protocol):
    """Three-way natural language inference.

    ``predict`` returns an ``(n, 3)`` float array of calibrated probabilities in the order
    (entailment, neutral, contradiction), one row per (premise, hypothesis) pair.
    """

    @property
    def model_id(self) -> str:
        """A stable identifier of the model (recorded in verdicts and cache keys)."""
        ...

    def predict(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        """Probabilities for each pair (rows sum to 1)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Sentence embeddings: ``embed`` returns L2-normalised ``(n, dim)`` float32 rows."""

    @property
    def model_id(self) -> str:
        """A stable identifier of the model."""
        ...

    @property
    def dim(self) -> int:
        """Embedding dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-norm embeddings, one row per text."""
        ...


class ReloadsAfterPickle:
    """Mixin for models that load lazily: loaded state is dropped when pickled.

    A model that has served requests holds an ONNX Runtime session, a tokenizer, locks or a
    SQLite connection; none of them can (or should) cross a process boundary. Pickling (Ray
    actors, multiprocessing) keeps the configuration and resets each attribute named in
    ``_transient`` with its factory; the copy loads again on first use.
    """

    _transient: ClassVar[dict[str, Callable[[], Any]]] = {}

    def __getstate__(self) -> dict[str, Any]:
        """The configuration only."""
        state = dict(self.__dict__)
        for name in self._transient:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore the configuration; loaded state starts empty."""
        self.__dict__.update(state)
        for name, make in self._transient.items():
            self.__dict__[name] = make()


__all__ = ["CONTRADICTION", "ENTAILMENT", "NEUTRAL", "NLI_LABELS", "Embedder", "NLIModel", "ReloadsAfterPickle"]
