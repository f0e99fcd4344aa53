from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtrust.documents import Document
from ragtrust.errors import ConfigError, InputError
from ragtrust.testing import HashingEmbedder

pytest.importorskip("qdrant_client")

from ragtrust.retrieval.qdrant import QdrantRetriever  # noqa: E402

CORPUS = [
    Document(
        id="sqli#0",
        text="Parameterised queries keep attacker input out of SQL statements.",
        url="u1",
        metadata={"parent_id": "sqli"},
    ),
    Document(id="xss#0", text="Encode untrusted data for the HTML context before output to stop XSS.", url="u2"),
    Document(id="jwt#0", text="Verify the JWT signature and reject tokens signed with the none algorithm.", url="u3"),
]


@pytest.mark.slow
def test_embedded_local_mode_roundtrip(tmp_path: Path) -> None:
    qr = QdrantRetriever("kb", embedder=HashingEmbedder(), path=str(tmp_path / "qdrant"))
    assert qr.upsert(CORPUS) == 3 and qr.count() == 3
    hits = qr.retrieve("attacker input in SQL", top_k=2)
    assert hits[0].id == "sqli#0" and hits[0].document.metadata["parent_id"] == "sqli"
    assert hits[0].document.url == "u1" and hits[0].document.text == CORPUS[0].text
    assert all(0.0 <= h.score <= 1.0 for h in hits) and [h.rank for h in hits] == [1, 2]
    qr.upsert(CORPUS[:1])  # idempotent upsert by id
    assert qr.count() == 3
    qr.delete(["sqli#0"])
    assert "sqli#0" not in [h.id for h in qr.retrieve("attacker input in SQL", top_k=3)]


def test_configuration_errors() -> None:
    with pytest.raises(ConfigError, match="needs one of client="):
        QdrantRetriever("kb", embedder=HashingEmbedder())
    qr = QdrantRetriever("missing", embedder=HashingEmbedder(), path=":memory:")
    with pytest.raises(InputError, match="does not exist"):
        qr.retrieve("anything")


def test_missing_package_names_the_extra(monkeypatch) -> None:
    import builtins

    from ragtrust.errors import MissingDependencyError

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("qdrant_client"):
            raise ImportError("no qdrant")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(MissingDependencyError, match=r"ragtrust\[qdrant\]"):
        QdrantRetriever("kb", embedder=HashingEmbedder(), path=":memory:")


def _client_with(name: str, vectors: Any) -> Any:
    from qdrant_client import QdrantClient

    client = QdrantClient(location=":memory:")
    client.create_collection(name, vectors_config=vectors)
    return client


def test_a_collection_the_embedder_cannot_search_is_one_clear_configuration_error() -> None:
    from qdrant_client import models

    embedder = HashingEmbedder()  # 256 dimensions
    cases = [
        (models.VectorParams(size=384, distance=models.Distance.COSINE), r"384-dimensional vectors.*256"),
        # a Euclid score is a distance (0 = identical): read as a cosine it would call the
        # farthest document the best match
        (models.VectorParams(size=256, distance=models.Distance.EUCLID), r"Euclid distance.*cosine"),
        ({"dense": models.VectorParams(size=256, distance=models.Distance.COSINE)}, r"named vectors \('dense'\)"),
    ]
    for vectors, match in cases:
        qr = QdrantRetriever("kb", embedder=embedder, client=_client_with("kb", vectors))
        with pytest.raises(ConfigError, match=rf"Qdrant collection 'kb' .*{match}"):
            qr.retrieve("SQL injection")
        with pytest.raises(ConfigError, match=rf"Qdrant collection 'kb' .*{match}"):
            qr.upsert(CORPUS)


def test_points_without_text_are_a_backend_error_not_empty_documents() -> None:
    # e.g. a collection LangChain filled: its text is in "page_content"
    from qdrant_client import models

    from ragtrust.errors import BackendError

    embedder = HashingEmbedder()
    client = _client_with("lc", models.VectorParams(size=256, distance=models.Distance.COSINE))
    vector = embedder.embed(["SQL injection"])[0]
    payload = {"page_content": "Use parameterised queries.", "metadata": {}}
    client.upsert("lc", points=[models.PointStruct(id=1, vector=list(map(float, vector)), payload=payload)])
    qr = QdrantRetriever("lc", embedder=embedder, client=client)
    with pytest.raises(BackendError, match=r"point 1 of Qdrant collection 'lc' has no 'text'.*page_content"):
        qr.retrieve("SQL injection")


def test_a_timeout_under_a_second_is_not_truncated_to_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    # qdrant-client takes whole seconds; int(0.5) = 0 made every connection fail at once
    # ('[Errno 115] Operation now in progress')
    import qdrant_client

    seen: dict[str, Any] = {}
    monkeypatch.setattr(qdrant_client, "QdrantClient", lambda **kwargs: seen.update(kwargs))
    QdrantRetriever("kb", embedder=HashingEmbedder(), url="http://qdrant.test:6333", timeout_s=0.5).warm_up()
    assert seen["timeout"] == 1
    QdrantRetriever("kb", embedder=HashingEmbedder(), url="http://qdrant.test:6333", timeout_s=2.5).warm_up()
    assert seen["timeout"] == 3
