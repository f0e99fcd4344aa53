"""Retrieval: the Retriever contract and its built-in implementations.

Importing this package registers the built-in retrievers (``dense``, ``bm25``,
``hybrid``, ``qdrant``, and the federated / remote ones) in :mod:`ragtrust.registry`.
Heavy libraries (faiss, bm25s, qdrant-client) are imported only when an index is built.
"""

from __future__ import annotations

import ragtrust.retrieval.federated
import ragtrust.retrieval.remote  # noqa: F401 - registers the remote retriever
from ragtrust.retrieval.base import Retriever
from ragtrust.retrieval.bm25 import BM25Retriever
from ragtrust.retrieval.dense import DenseIndex, DenseRetriever
from ragtrust.retrieval.hybrid import HybridRetriever
from ragtrust.retrieval.qdrant import QdrantRetriever

__all__ = ["BM25Retriever", "DenseIndex", "DenseRetriever", "HybridRetriever", "QdrantRetriever", "Retriever"]
