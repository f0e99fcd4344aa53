"""The library's entry points take plain inputs (issue 21): documents as str / dict /
Document / RetrievedDoc in ``screen`` / ``verify`` / ``answer_from``, ``similarity`` as the
input name of the retrieval similarity (``score`` still read), ``Store.open`` without an
embedder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragtrust.config import Settings, load_settings
from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import ConfigError, InputError
from ragtrust.ingest.store import Store
from ragtrust.io import read_documents_jsonl
from ragtrust.pipeline import TrustGate
from ragtrust.pipeline.inputs import as_retrieved_docs
from ragtrust.testing import HashingEmbedder, LexicalNLI

SIGNALS = ["linguistic", "structural", "intra_consistency", "cross_consistency", "semantic_outlier", "provenance"]
BCRYPT = "Store passwords with bcrypt, scrypt or Argon2id and a unique salt per password."
SQL = "Use parameterised queries to prevent SQL injection."


def _settings() -> Settings:
    return load_settings(
        env={},
        overrides={"screening": {"signals": SIGNALS}, "relevance": {"context_threshold": 0.0, "answer_threshold": 0.0}},
    )


@pytest.fixture
def gate() -> TrustGate:
    return TrustGate.from_settings(_settings(), nli=LexicalNLI(), embedder=HashingEmbedder())


def test_screen_takes_plain_strings(gate: TrustGate) -> None:
    verdict = gate.screen([BCRYPT, SQL], query="How to store passwords?")
    assert [d.doc_id for d in verdict.documents] == ["doc-1", "doc-2"]


def test_screen_takes_one_string_as_one_document(gate: TrustGate) -> None:
    assert [d.doc_id for d in gate.screen(BCRYPT).documents] == ["doc-1"]


def test_screen_takes_dicts_of_the_jsonl_shape_and_similarity_round_trips(gate: TrustGate) -> None:
    verdict = gate.screen(
        [
            {"id": "kb-1", "text": BCRYPT, "url": "https://example.org/pw", "similarity": 0.8},
            {"id": "kb-2", "text": SQL, "score": 0.4},  # the older name is still read
        ]
    )
    out = verdict.to_dict()["documents"]
    assert [(d["doc_id"], d["similarity"]) for d in out] == [("kb-1", 0.8), ("kb-2", 0.4)]
    assert out[0]["url"] == "https://example.org/pw"


def test_mixed_items_documents_and_retrieved_docs(gate: TrustGate) -> None:
    items: list[Any] = [
        Document(id="a", text=BCRYPT),
        RetrievedDoc(document=Document(id="b", text=SQL), score=0.5, rank=2),
        "A third document about TLS.",
    ]
    verdict = gate.verify("Store passwords with bcrypt.", items)
    assert [d.doc_id for d in verdict.documents] == ["a", "b", "doc-3"]


def test_answer_from_takes_strings(gate: TrustGate) -> None:
    verdict = gate.answer_from("How should passwords be stored?", [BCRYPT])
    assert [d.doc_id for d in verdict.documents] == ["doc-1"]


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        ([42], "documents[0]: expected a str (document text), a dict"),
        ([BCRYPT, None], "documents[1]: expected"),
        (3.5, "documents must be a list of"),
        ([{"text": SQL}], "documents[0]: missing field(s) id"),
        ([{"id": "x", "text": SQL, "similarity": 2}], "'similarity' must be a number in [0, 1]"),
        ([{"id": "x", "text": SQL, "similarity": 0.5, "score": 0.6}], "'similarity' and 'score' differ"),
        (["  "], "documents[0]: the text is empty"),
        ([], "no documents given"),
        ([{"id": "x", "text": SQL}, {"id": "x", "text": BCRYPT}], "duplicate document id(s) x"),
    ],
)
def test_anything_else_is_one_clear_input_error(gate: TrustGate, docs: Any, message: str) -> None:
    with pytest.raises(InputError) as err:
        gate.screen(docs)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_from_documents_takes_the_same_kinds_of_documents() -> None:
    # was AttributeError: 'str' object has no attribute 'text' (and a lone str indexed its characters)
    items: list[Any] = [BCRYPT, {"id": "kb-2", "text": SQL, "url": "https://example.org/sql"}]
    gate = TrustGate.from_documents(items, _settings(), nli=LexicalNLI(), embedder=HashingEmbedder())
    verdict = gate.ask("How should passwords be stored?")
    assert {d.doc_id for d in verdict.documents} == {"doc-1", "kb-2"}
    one = TrustGate.from_documents(BCRYPT, _settings(), nli=LexicalNLI(), embedder=HashingEmbedder())
    assert [d.doc_id for d in one.ask("How should passwords be stored?").documents] == ["doc-1"]
    with pytest.raises(InputError, match=r"documents\[0\]: expected a str"):
        TrustGate.from_documents([42], _settings(), nli=LexicalNLI(), embedder=HashingEmbedder())


def test_retrieved_doc_similarity_is_its_score() -> None:
    doc = as_retrieved_docs([{"id": "x", "text": SQL, "similarity": 0.7}])[0]
    assert doc.score == doc.similarity == 0.7


def test_jsonl_reads_similarity(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    rows = [{"id": "a", "text": SQL, "similarity": 0.9}, {"id": "b", "text": BCRYPT, "score": 0.3}]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    assert [d.similarity for d in read_documents_jsonl(path)] == [0.9, 0.3]


# --------------------------------------------------------------------------- Store.open


def test_store_open_without_an_embedder_uses_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ragtrust.models.embedder.default_embedder", lambda settings=None: HashingEmbedder())
    Store.open(tmp_path / "kb", HashingEmbedder(), create=True).add([Document(id="kb-1", text=SQL)])
    store = Store.open(tmp_path / "kb")
    assert isinstance(store.embedder, HashingEmbedder)
    assert store.retriever().retrieve("SQL injection", top_k=1)[0].id == "kb-1#0"


def test_store_open_default_embedder_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    Store.open(tmp_path / "kb", HashingEmbedder(), create=True).add([Document(id="kb-1", text=SQL)])
    with pytest.raises(ConfigError) as err:
        Store.open(tmp_path / "kb")  # the default embedder is the packaged MiniLM, not HashingEmbedder
    message = str(err.value)
    assert "store kb was built with embedder 'hashing" in message
    assert "default embedder (models.embedder)" in message and "pass the store's embedder" in message
    assert str(tmp_path) not in message and "\n" not in message


# --------------------------------------------------------------------------- README

README = Path(__file__).resolve().parents[1] / "README.md"


def _answer_from_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("\nBring your own retriever", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the README has no answer_from example"
    return match.group(1)


def test_readme_links_stay_in_the_repository() -> None:
    text = README.read_text(encoding="utf-8")
    outside = re.findall(r"\]\((\.\./[^)]*|/[^)]*)\)", text)
    assert outside == [], f"README links outside the repository: {outside}"
    assert "../shared/SPEC.md" not in text and "../shared/STYLE.md" not in text
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (README.parent / target).exists(), f"README links to a missing file: {target}"


def test_readme_configuration_example_loads_and_its_commented_signals_line_builds() -> None:
    import tomllib

    from ragtrust.config import load_settings
    from ragtrust.screening.aggregate import build_screener
    from ragtrust.testing import HashingEmbedder, LexicalNLI

    section = README.read_text(encoding="utf-8").split("\n## Configuration", 1)[1]
    match = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert match, "the README has no configuration example"
    load_settings(env={}, overrides=tomllib.loads(match.group(1)))
    signals = next(line for line in match.group(1).splitlines() if line.startswith("# signals = "))
    settings = load_settings(env={}, overrides={"screening": tomllib.loads(signals.removeprefix("# "))})
    built = build_screener(settings, nli=LexicalNLI(), embedder=HashingEmbedder())
    assert [getattr(s, "nli_contradiction", None) for s in built.signals][1] is False


@pytest.mark.model
def test_readme_answer_from_example_runs(tmp_path: Path) -> None:
    code = _answer_from_example()
    assert "answer_from(" in code
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRUST_")}
    cmd = [sys.executable, "-c", code]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert any(level in done.stdout for level in ("HIGH", "MEDIUM", "LOW")), done.stdout
