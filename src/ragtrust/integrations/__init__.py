"""Adapters for the frameworks RAG engineers already use, each an optional extra.

* :mod:`ragtrust.integrations.langchain` (``pip install 'ragtrust[langchain]'``): a
  ``BaseRetriever`` that screens and gates any retriever's documents, a runnable that adds
  the verdict to a chain's output, and ragtrust's embedder as LangChain ``Embeddings``.
* :mod:`ragtrust.integrations.llamaindex` (``pip install 'ragtrust[llamaindex]'``): a node
  postprocessor that screens and gates nodes, a query-engine wrapper that attaches the
  verdict to the response, and ragtrust's embedder as a LlamaIndex embedding model.

OpenTelemetry spans (``pip install 'ragtrust[otel]'``, ``[telemetry] enabled = true``) are
emitted by the pipeline itself, see :mod:`ragtrust.pipeline.telemetry`.

Importing this package imports no framework; each adapter module imports its own and fails
with the ``pip install`` line when it is missing.

Example:
    >>> from ragtrust.integrations import ContextBlockedError
    >>> issubclass(ContextBlockedError, Exception)
    True
"""

from __future__ import annotations

from ragtrust.integrations._gate import METADATA_KEY, ContextBlockedError

__all__ = ["METADATA_KEY", "ContextBlockedError"]
