"""LangChain adapter: screen and gate what any retriever found, attach the verdict to a chain's output.

``pip install 'ragtrust[langchain]'`` (``langchain-core`` only). Three pieces:

* :class:`TrustRetriever` wraps any LangChain retriever: the documents it returns are screened
  by ragtrust's Stage 1 and gated by the gate's ``screening.policy`` (``drop-suspicious``
  leaves the suspicious ones out, ``flag`` keeps them marked, ``block`` raises
  :class:`~ragtrust.integrations.ContextBlockedError` or returns no documents). Every
  document that comes back carries ``metadata["ragtrust"]``: its P_i, ``suspicious``, the
  gate's ``action``, each signal's score and the reasons of the signals that fired. If
  Stage 1 itself fails, the set is blocked under every policy (fail closed); a document with
  no visible text is left out with a logged warning.
* :func:`verify_answer` is a runnable for the end of a chain: it takes the chain's dict
  (``question``, ``context``, ``answer``), verifies the answer against the context (Stage 2)
  and returns the same dict with the full :class:`~ragtrust.documents.Verdict` under
  ``verdict``.
* :class:`RagTrustEmbeddings` exposes ragtrust's packaged, offline embedder (MiniLM int8
  ONNX) as LangChain ``Embeddings``, e.g. for an ``InMemoryVectorStore``.

Example:
    >>> from langchain_core.documents import Document as LCDocument
    >>> from langchain_core.retrievers import BaseRetriever
    >>> from ragtrust.documents import Document
    >>> from ragtrust.pipeline import TrustGate
    >>> from ragtrust.testing import HashingEmbedder, LexicalNLI
    >>> gate = TrustGate.from_settings(nli=LexicalNLI(), embedder=HashingEmbedder())
    >>> class Fixed(BaseRetriever):
    ...     def _get_relevant_documents(self, query, *, run_manager):
    ...         return [LCDocument(page_content="Store passwords with Argon2id.", id="kb-1")]
    >>> docs = TrustRetriever(retriever=Fixed(), gate=gate).invoke("How are passwords stored?")
    >>> docs[0].metadata["ragtrust"]["action"]
    'kept'
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pydantic import ConfigDict, field_validator

from ragtrust.errors import InputError, MissingDependencyError
from ragtrust.integrations._gate import (
    METADATA_KEY,
    ContextBlockedError,
    OnBlock,
    check_gate,
    logger,
    retrieved,
    screen_and_gate,
    unique_ids,
    without_blank,
)

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document as LCDocument
    from langchain_core.embeddings import Embeddings
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import Runnable, RunnableLambda
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("the LangChain adapter", "pip install 'ragtrust[langchain]'") from exc

from ragtrust.documents import RetrievedDoc, Verdict
from ragtrust.pipeline import TrustGate


class TrustRetriever(BaseRetriever):
    """Any LangChain retriever, its results screened (Stage 1) and gated by ragtrust's policy.

    Attributes:
        retriever: the retriever (or any runnable ``str -> list[Document]``) to wrap.
        gate: the :class:`~ragtrust.pipeline.TrustGate` whose models, thresholds and
            ``screening.policy`` decide.
        on_block: policy ``block`` with a suspicious document: ``"raise"``
            :class:`~ragtrust.integrations.ContextBlockedError` (default) or ``"empty"``
            (return no documents).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Runnable[str, list[LCDocument]]
    # Any: pydantic would try to build a schema for the TrustGate dataclass; checked below
    gate: Any
    on_block: OnBlock = "raise"

    @field_validator("gate")
    @classmethod
    def _is_gate(cls, value: Any) -> TrustGate:
        return check_gate(value)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[LCDocument]:
        found = self.retriever.invoke(query, config={"callbacks": run_manager.get_child()})
        return self._gate_documents(found, query)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[LCDocument]:
        found = await self.retriever.ainvoke(query, config={"callbacks": run_manager.get_child()})
        # the models run on CPU: off the event loop
        return await asyncio.to_thread(self._gate_documents, found, query)

    def _gate_documents(self, found: Sequence[LCDocument], query: str) -> list[LCDocument]:
        checked = _lc_documents(found)
        found = without_blank(checked, [d.page_content for d in checked], "document")
        if not found:
            return []
        docs = to_retrieved(found)
        gated = screen_and_gate(self.gate, docs, query)
        if gated.blocked:
            if self.on_block == "raise":
                raise ContextBlockedError(gated.verdict)
            return []
        out = []
        for doc, rd, keep, note in zip(found, docs, gated.keep, gated.annotations, strict=True):
            if keep:
                metadata = {**doc.metadata, METADATA_KEY: {"id": rd.id, **note}}
                out.append(LCDocument(page_content=doc.page_content, metadata=metadata, id=doc.id))
        return out


def _lc_documents(found: Any) -> list[LCDocument]:
    """The wrapped retriever's output, checked: a list of LangChain ``Document`` s, else InputError."""
    if isinstance(found, (str, bytes)) or not isinstance(found, Sequence):
        raise InputError(f"the wrapped retriever must return a list of LangChain Documents, got {type(found).__name__}")
    for i, doc in enumerate(found, start=1):
        if not isinstance(doc, LCDocument):
            raise InputError(
                f"the wrapped retriever must return LangChain Documents, got {type(doc).__name__} at position {i}"
            )
    return list(found)


def to_retrieved(documents: Sequence[LCDocument]) -> list[RetrievedDoc]:
    """LangChain documents as ragtrust's :class:`RetrievedDoc` (rank = position, URL = ``source``).

    The id is the one a :class:`TrustRetriever` screened the document under (else its ``id``,
    else ``metadata["id"]``, else ``lc-N``), made distinct (see
    :func:`~ragtrust.integrations._gate.unique_ids`); a retrieval score in ``metadata["score"]``
    within [0, 1] is kept as the similarity (a bool is not one: left out, with a warning on the
    ``ragtrust.integrations`` logger).
    """
    ids = unique_ids([_screened_id(d) or d.id or _str_or_none(d.metadata.get("id")) for d in documents], "lc")
    out = []
    for rank, (doc, doc_id) in enumerate(zip(documents, ids, strict=True), start=1):
        score = doc.metadata.get("score")
        if isinstance(score, bool):  # an int to Python: True would read as similarity 1.0
            logger.warning(
                "ragtrust: retrieved document %s: metadata['score'] is a bool (%s), "
                "not a similarity in [0, 1]: ignored",
                doc_id,
                score,
            )
        similarity = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None
        out.append(retrieved(doc_id, doc.page_content, doc.metadata, rank, similarity, "langchain"))
    return out


def verify_answer(
    gate: TrustGate,
    *,
    answer_key: str = "answer",
    context_key: str = "context",
    question_key: str = "question",
    output_key: str = "verdict",
) -> Runnable[dict[str, Any], dict[str, Any]]:
    """A runnable that verifies a chain's answer against its context and adds the verdict.

    Its input is the chain's dict: ``answer`` (a string or a chat message), ``context``
    (LangChain documents, e.g. from :class:`TrustRetriever`, or strings) and optionally
    ``question``; its output is the same dict with the :class:`~ragtrust.documents.Verdict`
    of :meth:`TrustGate.verify <ragtrust.pipeline.TrustGate.verify>` under ``verdict``.
    An empty context (everything withheld, or only documents with no visible text) gives the
    not-trusted "nothing was retrieved" verdict. Anything else (not a dict, a context that is
    not a list, an item that is neither a Document nor a string) is an
    :class:`~ragtrust.errors.InputError`.
    """

    def run(values: dict[str, Any]) -> dict[str, Any]:
        verdict = _verify(gate, values, answer_key, context_key, question_key)
        return {**values, output_key: verdict}

    async def arun(values: dict[str, Any]) -> dict[str, Any]:
        verdict = await asyncio.to_thread(_verify, gate, values, answer_key, context_key, question_key)
        return {**values, output_key: verdict}

    return RunnableLambda(run, afunc=arun, name="ragtrust_verify")


def _verify(gate: TrustGate, values: dict[str, Any], answer_key: str, context_key: str, question_key: str) -> Verdict:
    if not isinstance(values, dict) or answer_key not in values:
        got = f"a dict without {answer_key!r}" if isinstance(values, dict) else type(values).__name__
        raise InputError(
            f"verify_answer expects a dict with {answer_key!r} (and {context_key!r}, {question_key!r}), got {got}"
        )
    answer = values[answer_key]
    text = answer.content if hasattr(answer, "content") else answer
    if not isinstance(text, str):
        raise InputError(f"the answer must be a string or a chat message, got {type(answer).__name__}")
    question = values.get(question_key)
    question = question if isinstance(question, str) and question.strip() else None
    context = _context(values.get(context_key, []), context_key)
    if not context:
        if question is None:
            raise InputError(f"no documents under {context_key!r} and no question: nothing to verify against")
        return gate.answer_from(question, [])
    return gate.verify(text, to_retrieved(context), question)


class RagTrustEmbeddings(Embeddings):
    """ragtrust's embedder as LangChain ``Embeddings`` (the packaged MiniLM by default, offline).

    Args:
        embedder: any ragtrust :class:`~ragtrust.models.base.Embedder`, e.g. ``gate.embedder``;
            ``None`` builds the default one (loads on first use).
    """

    def __init__(self, embedder: Any = None) -> None:
        if embedder is None:
            from ragtrust.config import load_settings
            from ragtrust.models.embedder import default_embedder

            embedder = default_embedder(load_settings(env={}))
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One L2-normalised vector per text."""
        return [[float(x) for x in row] for row in self.embedder.embed(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        """The vector of one query."""
        return self.embed_documents([text])[0]


def _context(value: Any, context_key: str) -> list[LCDocument]:
    """The chain's context as LangChain documents, the blank ones left out; anything else is an InputError."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InputError(
            f"{context_key!r} must be a list of LangChain Documents or strings, got {type(value).__name__}"
        )
    docs = []
    for i, item in enumerate(value, start=1):
        if isinstance(item, LCDocument):
            docs.append(item)
        elif isinstance(item, str):
            docs.append(LCDocument(page_content=item))
        else:
            raise InputError(
                f"{context_key!r} item {i} must be a LangChain Document or a string, got {type(item).__name__}"
            )
    return without_blank(docs, [d.page_content for d in docs], "document")


def _screened_id(doc: LCDocument) -> str | None:
    """The id a :class:`TrustRetriever` screened ``doc`` under (two of them may both say ``lc-1``)."""
    note = doc.metadata.get(METADATA_KEY)
    return _str_or_none(note.get("id")) if isinstance(note, dict) else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


__all__ = ["ContextBlockedError", "RagTrustEmbeddings", "TrustRetriever", "to_retrieved", "verify_answer"]
