"""Qdrant adapter: the same retriever contract over a Qdrant collection.

For corpora that outgrow one machine. The same code talks to Qdrant's embedded local mode
(``path=`` a folder, or ``":memory:"``), a Qdrant server (``url=``) or a cluster, or to a
``qdrant_client.QdrantClient`` you built yourself (``client=``). Collections use cosine
distance; scores are the cosine clipped to [0, 1], like the embedded dense index.

Needs the optional extra: ``pip install 'ragtrust[qdrant]'``.

Example:
    >>> from ragtrust.documents import Document
    >>> from ragtrust.testing import HashingEmbedder
    >>> qr = QdrantRetriever("kb", embedder=HashingEmbedder(), path=":memory:")
    >>> qr.upsert([Document(id="a", text="parameterised queries stop SQL injection")])
    1
    >>> qr.retrieve("SQL injection", top_k=1)[0].id
    'a'
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import BackendError, ConfigError, InputError, MissingDependencyError
from ragtrust.models.base import Embedder
from ragtrust.registry import register

_NAMESPACE = uuid.UUID("9b1f3f5e-2c1a-4f8e-9d43-6a0f3c2b7e11")


def point_id(doc_id: str) -> str:
    """Map a document id to its Qdrant point id (a UUID5, since Qdrant ids are UUIDs or ints)."""
    return str(uuid.uuid5(_NAMESPACE, doc_id))


@register("retriever", "qdrant")
@dataclass
class QdrantRetriever:
    """Cosine retrieval from a Qdrant collection.

    Attributes:
        collection: the collection name.
        embedder: embeds queries (and documents in :meth:`upsert`).
        client: a ready ``QdrantClient`` (wins over ``url`` / ``path``).
        url: a Qdrant server, e.g. ``http://localhost:6333``.
        path: embedded local mode: a folder, or ``":memory:"``.
        api_key: for Qdrant Cloud / secured servers.
        timeout_s: request timeout for servers (rounded up to whole seconds).
    """

    collection: str
    embedder: Embedder
    client: Any = None
    url: str | None = None
    path: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never in a repr, a log line or a traceback
    timeout_s: float = 30.0
    default_top_k: int = 5
    name: str = "qdrant"
    _models: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.collection or not isinstance(self.collection, str):
            raise ConfigError("QdrantRetriever needs a collection name")
        try:
            from qdrant_client import models
        except ImportError as exc:
            raise MissingDependencyError("Qdrant retrieval", "pip install 'ragtrust[qdrant]'") from exc
        self._models = models
        if self.client is None and self.url is None and self.path is None:
            raise ConfigError("QdrantRetriever needs one of client=, url= or path= (a folder or ':memory:')")

    def warm_up(self) -> None:
        """Connect (or open the local database)."""
        if self.client is not None:
            return
        from qdrant_client import QdrantClient

        try:
            if self.url is not None:
                # qdrant-client takes whole seconds: round up, never down to 0 (every call would fail)
                timeout = max(1, math.ceil(self.timeout_s))
                self.client = QdrantClient(url=self.url, api_key=self.api_key, timeout=timeout)
            elif self.path == ":memory:":
                self.client = QdrantClient(location=":memory:")
            else:
                self.client = QdrantClient(path=self.path)
        except Exception as exc:  # noqa: BLE001 - any client failure is a backend error
            raise BackendError(f"cannot open Qdrant ({self.url or self.path}): {exc}") from exc

    def ensure_collection(self) -> None:
        """Create the collection (cosine, the embedder's dimension) if it does not exist.

        Raises:
            ConfigError: an existing collection this embedder cannot search (see :meth:`_check_collection`).
        """
        self.warm_up()
        try:
            if not self.client.collection_exists(self.collection):
                self.client.create_collection(
                    self.collection,
                    vectors_config=self._models.VectorParams(
                        size=int(self.embedder.dim), distance=self._models.Distance.COSINE
                    ),
                )
            else:
                self._check_collection()
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"Qdrant collection {self.collection!r}: {exc}") from exc

    def upsert(self, documents: Sequence[Document], batch_size: int = 256) -> int:
        """Embed and upsert documents (payload: id, text, url, source, metadata); returns the count."""
        from ragtrust.retrieval.dense import embed_texts

        self.ensure_collection()
        docs = list(documents)
        for start in range(0, len(docs), batch_size):
            batch = docs[start : start + batch_size]
            vectors = embed_texts(self.embedder, [d.text for d in batch])
            points = [
                self._models.PointStruct(
                    id=point_id(d.id),
                    vector=v.tolist(),
                    payload={
                        "id": d.id,
                        "text": d.text,
                        "url": d.url,
                        "source": d.source,
                        "metadata": dict(d.metadata),
                    },
                )
                for d, v in zip(batch, vectors, strict=True)
            ]
            try:
                self.client.upsert(self.collection, points=points, wait=True)
            except Exception as exc:  # noqa: BLE001
                raise BackendError(f"Qdrant upsert into {self.collection!r} failed: {exc}") from exc
        return len(docs)

    def delete(self, doc_ids: Sequence[str]) -> None:
        """Delete documents by id."""
        self.warm_up()
        try:
            self.client.delete(
                self.collection,
                points_selector=self._models.PointIdsList(points=[point_id(i) for i in doc_ids]),
                wait=True,
            )
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"Qdrant delete from {self.collection!r} failed: {exc}") from exc

    def count(self) -> int:
        """Count the points in the collection."""
        self.warm_up()
        try:
            return int(self.client.count(self.collection, exact=True).count)
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"Qdrant count of {self.collection!r} failed: {exc}") from exc

    def _check_collection(self) -> None:
        """Refuse a collection whose vectors this retriever cannot search as cosine similarities.

        Raises:
            ConfigError: named vectors, another dimension than the embedder's, or a distance
                other than cosine (a Euclid or Manhattan score is a distance, 0 = identical:
                read as a similarity it would call the farthest document the best match).
        """
        vectors = self.client.get_collection(self.collection).config.params.vectors
        where = f"Qdrant collection {self.collection!r}"
        if not isinstance(vectors, self._models.VectorParams):
            names = ", ".join(repr(n) for n in vectors or {})
            raise ConfigError(
                f"{where} has named vectors ({names}); QdrantRetriever searches a collection with one unnamed "
                "vector per point (create it with QdrantRetriever.upsert)"
            )
        dim = int(self.embedder.dim)
        if int(vectors.size) != dim:
            raise ConfigError(
                f"{where} holds {vectors.size}-dimensional vectors but the embedder {self.embedder.model_id!r} "
                f"makes {dim}: query it with the embedder that filled it, or upsert into a new collection"
            )
        distance = getattr(vectors.distance, "value", vectors.distance)
        if distance != self._models.Distance.COSINE.value:
            raise ConfigError(
                f"{where} uses {distance} distance; ragtrust reads scores as cosine similarities: use a collection "
                "created with cosine distance (QdrantRetriever.upsert creates one)"
            )

    def _document(self, point: Any) -> Document:
        """The document a point's payload holds (the fields :meth:`upsert` writes).

        Raises:
            BackendError: a point without a non-empty ``text`` (a collection another tool filled,
                e.g. LangChain's ``page_content``), or with fields that are not a document's.
        """
        payload = point.payload or {}
        where = f"point {point.id} of Qdrant collection {self.collection!r}"
        text = payload.get("text")
        if not isinstance(text, str) or not text.strip():
            raise BackendError(
                f"{where} has no 'text' in its payload (it has {', '.join(map(repr, payload)) or 'none'}): "
                "QdrantRetriever reads the payload QdrantRetriever.upsert writes (id, text, url, source, metadata)"
            )
        try:
            return Document(
                id=str(payload.get("id", point.id)),
                text=text,
                url=payload.get("url"),
                source=payload.get("source"),
                metadata=payload.get("metadata") or {},
            )
        except InputError as exc:
            raise BackendError(f"{where}: {exc}") from exc

    def retrieve(self, query: str, top_k: int | None = None) -> list[RetrievedDoc]:
        """Return the ``top_k`` nearest documents; score = cosine clipped to [0, 1].

        Raises:
            InputError: an empty query, or no such collection.
            ConfigError: a collection this embedder cannot search (see :meth:`_check_collection`).
            BackendError: Qdrant failed, or a point holds no document (see :meth:`_document`).
        """
        from ragtrust.retrieval.dense import embed_texts

        if not isinstance(query, str) or not query.strip():
            raise InputError("the query is empty: pass a non-empty question text")
        self.warm_up()
        vector = embed_texts(self.embedder, [query])[0].tolist()
        try:
            if not self.client.collection_exists(self.collection):
                raise InputError(f"Qdrant collection {self.collection!r} does not exist: upsert documents first")
            self._check_collection()
            response = self.client.query_points(
                self.collection, query=vector, limit=top_k or self.default_top_k, with_payload=True
            )
        except (InputError, ConfigError):
            raise
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"Qdrant query on {self.collection!r} failed: {exc}") from exc
        out: list[RetrievedDoc] = []
        for point in response.points:
            doc = self._document(point)
            score = min(1.0, max(0.0, float(point.score)))
            out.append(RetrievedDoc(document=doc, score=score, rank=len(out) + 1, retriever=self.name))
        return out


__all__ = ["QdrantRetriever", "point_id"]
