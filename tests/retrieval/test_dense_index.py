from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtrust import registry
from ragtrust.documents import Document
from ragtrust.errors import ConfigError, InputError
from ragtrust.retrieval.dense import DenseIndex, DenseRetriever
from ragtrust.testing import HashingEmbedder

CORPUS = [
    Document(id="sqli", text="Parameterised queries keep attacker input out of SQL statements."),
    Document(id="xss", text="Encode untrusted data for the HTML context before output to stop XSS."),
    Document(id="jwt", text="Verify the JWT signature and reject tokens signed with the none algorithm."),
    Document(id="upload", text="Restrict uploaded file types, rename files and store uploads outside the web root."),
    Document(id="logs", text="Never write secrets or session identifiers into application logs."),
]
PARAPHRASES = {
    "stop attacker input reaching SQL queries": "sqli",
    "how to encode output against XSS in HTML": "xss",
    "JWT tokens with the none algorithm": "jwt",
    "where to store uploaded files": "upload",
    "secrets in logs": "logs",
}


def test_paraphrased_queries_find_the_right_document_in_top3() -> None:
    index = DenseIndex.from_documents(CORPUS, HashingEmbedder())
    retriever = DenseRetriever(index=index)
    for query, expected in PARAPHRASES.items():
        hits = retriever.retrieve(query, top_k=3)
        assert expected in [h.id for h in hits]
        assert hits[0].score >= hits[-1].score
        assert all(0.0 <= h.score <= 1.0 and h.retriever == "dense" for h in hits)


def test_scores_are_cosine_and_clipped() -> None:
    emb = HashingEmbedder()
    index = DenseIndex.from_documents(CORPUS, emb)
    hit = index.retrieve(CORPUS[2].text, top_k=1)[0]
    assert hit.id == "jwt" and hit.score == pytest.approx(1.0, abs=1e-5)
    q = emb.embed(["secrets in logs"])[0]
    expected = float(np.clip(emb.embed([CORPUS[4].text])[0] @ q, 0, 1))
    assert index.similarities("secrets in logs", ["logs"])["logs"] == pytest.approx(expected, abs=1e-6)
    with pytest.raises(InputError, match="query is empty"):
        index.retrieve("  ")


def test_save_load_roundtrip_and_model_check(tmp_path: Path) -> None:
    index = DenseIndex.from_documents(CORPUS, HashingEmbedder())
    index.save(tmp_path / "idx")
    loaded = DenseIndex.load(tmp_path / "idx", HashingEmbedder())
    assert [d.id for d in loaded.documents] == [d.id for d in CORPUS]
    assert loaded.retrieve("JWT none algorithm", 1)[0].id == "jwt"
    with pytest.raises(ConfigError, match="use the same embedding model"):
        DenseIndex.load(tmp_path / "idx", HashingEmbedder(model_id="other"))
    with pytest.raises(InputError, match="not a saved dense index"):
        DenseIndex.load(tmp_path / "nothing", HashingEmbedder())


def test_ivf_above_threshold_agrees_with_flat_on_top1() -> None:
    rng = np.random.default_rng(0)
    docs = [Document(id=f"d{i}", text=f"doc {i}") for i in range(400)]
    vectors = rng.normal(size=(400, 32)).astype(np.float32)
    emb = HashingEmbedder(dim=32)
    flat = DenseIndex.from_vectors(docs, vectors, emb)
    ivf = DenseIndex.from_vectors(docs, vectors, emb)
    ivf.ivf_threshold, ivf.nprobe = 100, 80  # force IVF; probe every list: exact
    assert (flat.kind, ivf.kind) == ("flat", "ivf")
    queries = vectors[:20] + 0.01
    _, flat_rows = flat.search(queries, 1)
    _, ivf_rows = ivf.search(queries, 1)
    assert flat_rows[:, 0].tolist() == ivf_rows[:, 0].tolist() == list(range(20))


def test_registered_as_builtins() -> None:
    names = registry.registered("retriever")
    assert {"dense", "bm25", "hybrid", "qdrant"} <= set(names)
    index = DenseIndex.from_documents(CORPUS, HashingEmbedder())
    built = registry.build("retriever", "dense", index=index)
    assert isinstance(built, DenseRetriever) and built.retrieve("secrets in logs", 1)[0].id == "logs"
