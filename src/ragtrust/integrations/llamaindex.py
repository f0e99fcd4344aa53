"""LlamaIndex adapter: screen and gate retrieved nodes, attach the verdict to a query's response.

``pip install 'ragtrust[llamaindex]'`` (``llama-index-core`` only). Three pieces:

* :class:`TrustNodePostprocessor` screens the retrieved nodes with ragtrust's Stage 1 and
  gates them by the gate's ``screening.policy`` (``drop-suspicious`` leaves the suspicious
  ones out, ``flag`` keeps them marked, ``block`` raises
  :class:`~ragtrust.integrations.ContextBlockedError` or returns no nodes). Every node that
  comes back carries ``metadata["ragtrust"]`` (P_i, ``suspicious``, the gate's ``action``,
  each signal's score, the reasons of the signals that fired), kept out of the LLM's and
  the embedder's view of the node. If Stage 1 itself fails, the nodes are blocked under
  every policy (fail closed); a node with no visible text is left out with a logged warning.
* :class:`TrustQueryEngine` wraps any query engine: the response comes back with the
  :class:`~ragtrust.documents.Verdict` of its answer verified against its source nodes
  (Stage 2) under ``response.metadata["ragtrust_verdict"]``.
* :class:`RagTrustEmbedding` exposes ragtrust's packaged, offline embedder (MiniLM int8
  ONNX) as a LlamaIndex embedding model, e.g. for a ``VectorStoreIndex``.

Example:
    >>> from llama_index.core.schema import NodeWithScore, TextNode
    >>> from ragtrust.pipeline import TrustGate
    >>> from ragtrust.testing import HashingEmbedder, LexicalNLI
    >>> gate = TrustGate.from_settings(nli=LexicalNLI(), embedder=HashingEmbedder())
    >>> nodes = [NodeWithScore(node=TextNode(text="Store passwords with Argon2id.", id_="kb-1"))]
    >>> kept = TrustNodePostprocessor(gate=gate).postprocess_nodes(nodes, query_str="How are passwords stored?")
    >>> kept[0].node.metadata["ragtrust"]["action"]
    'kept'
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any

from pydantic import ConfigDict, PrivateAttr, field_validator

from ragtrust.errors import MissingDependencyError
from ragtrust.integrations._gate import (
    METADATA_KEY,
    ContextBlockedError,
    OnBlock,
    check_gate,
    retrieved,
    screen_and_gate,
    unique_ids,
    without_blank,
)

try:
    from llama_index.core.base.base_query_engine import BaseQueryEngine
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.base.response.schema import (
        RESPONSE_TYPE,
        AsyncStreamingResponse,
        PydanticResponse,
        Response,
        StreamingResponse,
    )
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.prompts.mixin import PromptMixinType
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("the LlamaIndex adapter", "pip install 'ragtrust[llamaindex]'") from exc

from ragtrust.documents import RetrievedDoc, Verdict
from ragtrust.pipeline import TrustGate

#: the response metadata key :class:`TrustQueryEngine` puts the verdict under
VERDICT_KEY = "ragtrust_verdict"


class TrustNodePostprocessor(BaseNodePostprocessor):
    """Screen retrieved nodes (Stage 1) and gate them by ragtrust's policy.

    Attributes:
        gate: the :class:`~ragtrust.pipeline.TrustGate` whose models, thresholds and
            ``screening.policy`` decide.
        on_block: policy ``block`` with a suspicious node: ``"raise"``
            :class:`~ragtrust.integrations.ContextBlockedError` (default) or ``"empty"``
            (return no nodes).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # Any: pydantic would try to build a schema for the TrustGate dataclass; checked below
    gate: Any
    on_block: OnBlock = "raise"

    @field_validator("gate")
    @classmethod
    def _is_gate(cls, value: Any) -> TrustGate:
        return check_gate(value)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serialises this component under."""
        return "RagTrustNodePostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        nodes = _visible(nodes)
        if not nodes:
            return []
        docs = to_retrieved(nodes)
        gated = screen_and_gate(self.gate, docs, query_bundle.query_str if query_bundle else None)
        if gated.blocked:
            if self.on_block == "raise":
                raise ContextBlockedError(gated.verdict)
            return []
        out = []
        for scored, doc, keep, note in zip(nodes, docs, gated.keep, gated.annotations, strict=True):
            if keep:
                out.append(_annotated(scored, {"id": doc.id, **note}))
        return out


def _annotated(scored: NodeWithScore, note: dict[str, Any]) -> NodeWithScore:
    """A copy of the node with the screening in its metadata, hidden from the LLM and the embedder."""
    node = scored.node.model_copy()  # shallow: its lists are the input node's, so new ones are set
    node.metadata = {**scored.node.metadata, METADATA_KEY: note}
    node.excluded_llm_metadata_keys = _with_key(node.excluded_llm_metadata_keys)
    node.excluded_embed_metadata_keys = _with_key(node.excluded_embed_metadata_keys)
    return NodeWithScore(node=node, score=scored.score)


def _with_key(keys: list[str]) -> list[str]:
    """A new list of excluded metadata keys that holds :data:`METADATA_KEY`."""
    return keys if METADATA_KEY in keys else [*keys, METADATA_KEY]


def _visible(nodes: Sequence[NodeWithScore]) -> list[NodeWithScore]:
    """``nodes`` less those whose text shows nothing (logged: nothing to screen or answer from)."""
    return without_blank(nodes, [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes], "node")


def to_retrieved(nodes: Sequence[NodeWithScore]) -> list[RetrievedDoc]:
    """LlamaIndex nodes as ragtrust's :class:`RetrievedDoc` (id = node id, URL = ``source`` / ``url``).

    The text is the node's content without metadata; a node score within [0, 1] (a cosine
    from a vector index) is kept as the similarity.
    """
    ids = unique_ids([n.node.node_id for n in nodes], "node")
    out = []
    for rank, (scored, doc_id) in enumerate(zip(nodes, ids, strict=True), start=1):
        text = scored.node.get_content(metadata_mode=MetadataMode.NONE)
        out.append(retrieved(doc_id, text, scored.node.metadata, rank, scored.score, "llamaindex"))
    return out


class TrustQueryEngine(BaseQueryEngine):
    """Any query engine, its response verified against its source nodes (Stage 2).

    The response is returned with ``metadata["ragtrust_verdict"]``, the
    :class:`~ragtrust.documents.Verdict` of :meth:`TrustGate.verify
    <ragtrust.pipeline.TrustGate.verify>` (answer vs source nodes, with the question); with
    no answer text, the Stage 1 verdict of the source nodes made not trusted (level at most
    LOW, reason "the engine returned no answer"); with no source nodes (or only nodes with
    no visible text), the not-trusted "nothing was retrieved" verdict. A streaming response is read to the end
    first (the answer must be complete to be verified). Put a :class:`TrustNodePostprocessor`
    in the engine's ``node_postprocessors`` to gate the context before the LLM sees it.

    Args:
        engine: the query engine to wrap.
        gate: the :class:`~ragtrust.pipeline.TrustGate` that verifies.
    """

    def __init__(self, engine: BaseQueryEngine, gate: TrustGate) -> None:
        super().__init__(callback_manager=engine.callback_manager)
        self.engine = engine
        self.gate = check_gate(gate)

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"engine": self.engine}

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        response = self.engine.query(query_bundle)
        if isinstance(response, StreamingResponse):
            response = response.get_response()
        return self._with_verdict(response, query_bundle.query_str)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        response = await self.engine.aquery(query_bundle)
        if isinstance(response, AsyncStreamingResponse):
            response = await response.get_response()
        elif isinstance(response, StreamingResponse):
            response = await asyncio.to_thread(response.get_response)
        # the models run on CPU: off the event loop
        return await asyncio.to_thread(self._with_verdict, response, query_bundle.query_str)

    def _with_verdict(self, response: RESPONSE_TYPE, question: str) -> RESPONSE_TYPE:
        if not isinstance(response, (Response, PydanticResponse)):
            raise TypeError(f"TrustQueryEngine cannot verify a {type(response).__name__}")
        verdict = self.verdict(str(response) if response.response is not None else "", response.source_nodes, question)
        response.metadata = {**(response.metadata or {}), VERDICT_KEY: verdict}
        return response

    def verdict(self, answer: str, nodes: Sequence[NodeWithScore], question: str | None) -> Verdict:
        """The verdict of ``answer`` against ``nodes`` (see the class docstring for the edge cases)."""
        question = question if question and question.strip() else None
        nodes = _visible(nodes)
        if not nodes:
            return self.gate.answer_from(question or "(no question)", [])
        docs = to_retrieved(nodes)
        if not answer.strip():
            return _no_answer(self.gate.screen(docs, question))
        return self.gate.verify(answer, docs, question)


#: why a response without an answer text is never trusted
NO_ANSWER_REASON = "the engine returned no answer"


def _no_answer(screened: Verdict) -> Verdict:
    """The Stage 1 verdict of the source nodes, not trusted: there is no answer to trust.

    Its level is capped at LOW, as for every not-trusted verdict (see :mod:`ragtrust.trust`).
    """
    level = "LOW" if screened.trust_level in ("HIGH", "MEDIUM") else screened.trust_level
    return dataclasses.replace(
        screened,
        trusted=False,
        trust_level=level,
        decision_reasons=(NO_ANSWER_REASON, *screened.decision_reasons),
        warnings=(*screened.warnings, f"Not trusted: {NO_ANSWER_REASON}."),
    )


class RagTrustEmbedding(BaseEmbedding):
    """ragtrust's embedder as a LlamaIndex embedding model (the packaged MiniLM by default, offline).

    Args:
        embedder: any ragtrust :class:`~ragtrust.models.base.Embedder`, e.g. ``gate.embedder``;
            ``None`` builds the default one (loads on first use).
    """

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: Any = None, **kwargs: Any) -> None:
        if embedder is None:
            from ragtrust.config import load_settings
            from ragtrust.models.embedder import default_embedder

            embedder = default_embedder(load_settings(env={}))
        super().__init__(model_name=str(getattr(embedder, "model_id", "ragtrust")), **kwargs)
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serialises this component under."""
        return "RagTrustEmbedding"

    def _embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed(texts)]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts)


__all__ = [
    "VERDICT_KEY",
    "ContextBlockedError",
    "RagTrustEmbedding",
    "TrustNodePostprocessor",
    "TrustQueryEngine",
    "to_retrieved",
]
