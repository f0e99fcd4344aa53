"""Domain model, configuration precedence, import hygiene, file helpers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ragtrust
from ragtrust.config import Settings, load_settings
from ragtrust.documents import (
    AnswerSentence,
    Document,
    DocumentScreening,
    Passage,
    RetrievedDoc,
    SignalResult,
    Span,
    Verdict,
    content_hash,
    is_blank,
)
from ragtrust.errors import ConfigError, InputError
from ragtrust.io import read_documents_jsonl, read_text_file, write_jsonl


def test_import_loads_no_model_runtime() -> None:
    code = (
        "import sys, ragtrust; heavy = [m for m in ('torch', 'onnxruntime', 'faiss', 'transformers', 'sklearn')"
        " if m in sys.modules]; assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_run_time_paths_import_no_scientific_extra() -> None:
    """The CLI, the demo, the server and the corpus scan run on a base install (no ``[eval]``)."""
    code = (
        "import sys, ragtrust.cli.main, ragtrust.demo, ragtrust.server.app, ragtrust.scan, ragtrust.pipeline;"
        " extra = [m for m in ('sklearn', 'scipy', 'matplotlib') if m in sys.modules]; assert not extra, extra"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_public_api_is_sorted_and_resolvable() -> None:
    assert ragtrust.__all__ == sorted(ragtrust.__all__)
    for name in ragtrust.__all__:
        assert getattr(ragtrust, name) is not None
    with pytest.raises(AttributeError):
        ragtrust.does_not_exist  # noqa: B018


def test_document_hash_ignores_whitespace_and_roundtrips() -> None:
    a = Document(id="d1", text="Use  parameterised\nqueries.", url="https://x/1", metadata={"k": 1})
    b = Document(id="d1", text="Use parameterised queries.")
    assert a.content_hash == b.content_hash == content_hash("Use parameterised queries.")
    assert Document.from_dict(a.to_dict()) == a
    assert a.cite == "https://x/1" and b.cite == "d1"
    with pytest.raises(InputError):
        Document(id="", text="x")
    with pytest.raises(InputError, match="unknown field"):
        Document.from_dict({"id": "x", "text": "y", "bogus": 1})


def test_document_with_an_unpaired_surrogate_is_an_input_error(tmp_path: Path) -> None:
    # JSON may carry "\ud800", which decodes to a lone surrogate: one clear line, not a crash
    with pytest.raises(InputError, match="unpaired surrogate at offset 4"):
        Document(id="d", text="abc \ud800 def")
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "d", "text": "abc \\ud800 def"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="unpaired surrogate"):
        read_documents_jsonl(path)


def test_verdict_json_roundtrip_keeps_nested_types() -> None:
    span = Span(doc_id="d1", start=0, end=3, text="Use")
    verdict = Verdict(
        query="q",
        trust_score=0.61,
        trust_level="MEDIUM",
        trusted=True,
        tau=0.5,
        factuality=0.7,
        consistency=0.8,
        poison_probability=0.1,
        sentences=(AnswerSentence(text="Use it.", citations=("d1",), spans=(span,), support=0.9, supported=True),),
        documents=(
            DocumentScreening(
                doc_id="d1",
                url=None,
                poison_probability=0.1,
                signals=(SignalResult(name="linguistic", score=0.1, reasons=("x",), spans=(span,)),),
            ),
        ),
        timings_s={"screen": 0.01},
    )
    data = json.loads(verdict.to_json())
    back = Verdict.from_dict(data)
    assert back == verdict
    assert back.sentences[0].spans[0] == span
    assert back.decision == "trusted"
    for key in (
        "trust_score",
        "trust_level",
        "trusted",
        "factuality",
        "consistency",
        "poison_probability",
        "documents",
        "warnings",
        "answer",
        "sentences",
    ):
        assert key in data


def test_span_and_signal_validate() -> None:
    with pytest.raises(InputError):
        Span(doc_id="d", start=5, end=2, text="")
    with pytest.raises(ValueError):
        SignalResult(name="x", score=1.5)


def test_config_defaults_match_spec() -> None:
    s = Settings()
    assert (s.trust.alpha, s.trust.beta, s.trust.gamma) == (0.40, 0.35, 0.25)
    assert (s.trust.dampener_threshold, s.trust.dampener_max_drop, s.trust.tau) == (0.70, 0.40, 0.5)
    assert s.trust.low_retrieval_threshold == 0.30
    assert (s.evidence.ngram_n, s.evidence.overlap_threshold) == (5, 0.7)
    assert (s.chunking.chunk_tokens, s.chunking.overlap_tokens) == (512, 50)
    assert s.retrieval.top_k == 5 and s.eval.attack_rate == 0.30 and s.seed == 42


def test_config_precedence_file_env_flags(tmp_path: Path) -> None:
    cfg = tmp_path / "ragtrust.toml"
    cfg.write_text("seed = 7\n[retrieval]\ntop_k = 3\n[trust]\ntau = 0.6\n")
    s = load_settings(cfg, env={})
    assert (s.seed, s.retrieval.top_k, s.trust.tau) == (7, 3, 0.6)
    s = load_settings(cfg, env={"RAGTRUST_RETRIEVAL__TOP_K": "4", "RAGTRUST_DATA_DIR": "/x"})
    assert s.retrieval.top_k == 4 and s.seed == 7
    s = load_settings(cfg, env={"RAGTRUST_RETRIEVAL__TOP_K": "4"}, overrides={"retrieval": {"top_k": 9}})
    assert s.retrieval.top_k == 9
    assert Settings.model_validate(s.to_dict()) == s


@pytest.mark.parametrize(
    ("text", "env", "match"),
    [
        ("bogus = 1\n", {}, "bogus"),
        ("[trust]\nalpha = 0.9\n", {}, "alpha \\+ beta \\+ gamma"),
        ("[retrieval]\ntop_k = 'many'\n", {}, "top_k"),
        ("", {"RAGTRUST_TRUST__NOPE": "1"}, "nope"),
        ("", {"RAGTRUST_WHATEVER": "1"}, "unknown environment variable"),
        ("not = [toml", {}, "not valid TOML"),
    ],
)
def test_config_errors_are_clear(tmp_path: Path, text: str, env: dict[str, str], match: str) -> None:
    cfg = tmp_path / "ragtrust.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_settings(cfg, env=env)


def test_documents_jsonl_validation(tmp_path: Path) -> None:
    good = tmp_path / "docs.jsonl"
    write_jsonl(good, [{"id": "a", "text": "alpha", "score": 0.5}, {"id": "b", "text": "beta", "url": "u"}])
    docs = read_documents_jsonl(good)
    assert [d.id for d in docs] == ["a", "b"] and docs[0].score == 0.5 and docs[1].rank == 2
    cases = {
        "missing.jsonl": None,
        "nofield.jsonl": '{"id": "a"}\n',
        "badjson.jsonl": "{not json}\n",
        "score.jsonl": '{"id": "a", "text": "x", "score": 3}\n',
        "empty.jsonl": "\n",
        "dup.jsonl": '{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n',
    }
    for name, content in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_text(content)
        with pytest.raises(InputError):
            read_documents_jsonl(path)


def test_read_text_file_rejects_binary_and_bad_utf8(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "latin").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(InputError, match="binary"):
        read_text_file(tmp_path / "bin")
    with pytest.raises(InputError, match="UTF-8"):
        read_text_file(tmp_path / "latin")


def test_retrieved_doc_id_shortcut() -> None:
    rd = RetrievedDoc(document=Document(id="x", text="t"), score=0.3)
    assert rd.id == "x" and RetrievedDoc.from_dict(rd.to_dict()) == rd


def test_document_from_dict_checks_metadata_and_missing_fields() -> None:
    assert Document.from_dict({"id": "x", "text": "y", "metadata": None}).metadata == {}
    with pytest.raises(InputError, match="metadata must be an object"):
        Document.from_dict({"id": "x", "text": "y", "metadata": [1]})
    with pytest.raises(InputError, match="text"):
        Document.from_dict({"id": "x"})
    with pytest.raises(InputError, match="expected a JSON object"):
        Document.from_dict(["x"])  # type: ignore[arg-type]


# --------------------------------------------------------------------------- library types validate their fields


@pytest.mark.parametrize("rank", ["one", [1], float("inf"), 1.0, True, 0, -2, None])
def test_retrieved_doc_rank_must_be_a_positive_integer(rank: object) -> None:
    with pytest.raises(InputError, match="rank must be a positive integer"):
        RetrievedDoc(document=Document(id="a", text="x"), rank=rank)  # type: ignore[arg-type]


@pytest.mark.parametrize("score", [5.0, -0.1, float("nan"), True, "0.5", [0.5]])
def test_retrieved_doc_similarity_must_be_in_the_unit_interval(score: object) -> None:
    with pytest.raises(InputError, match=r"score \(similarity\) must be a number in \[0, 1\]"):
        RetrievedDoc(document=Document(id="a", text="x"), score=score)  # type: ignore[arg-type]


def test_retrieved_doc_takes_numpy_numbers_as_plain_ones() -> None:
    np = pytest.importorskip("numpy")
    doc = RetrievedDoc(document=Document(id="a", text="x"), score=np.float32(0.5), rank=np.int64(2))
    assert (doc.score, doc.rank) == (0.5, 2) and type(doc.score) is float and type(doc.rank) is int
    assert json.loads(doc.to_json())["score"] == 0.5


def test_retrieved_doc_document_must_be_a_document() -> None:
    with pytest.raises(InputError, match="RetrievedDoc.document must be a Document, got dict"):
        RetrievedDoc(document={"id": "a", "text": "t"})  # type: ignore[arg-type]
    with pytest.raises(InputError, match="expected an object for Document, got str"):
        RetrievedDoc.from_dict({"document": "a"})


@pytest.mark.parametrize("url", [5, {"href": "x"}, ["x"]])
def test_a_url_is_a_string_or_none(url: object) -> None:
    with pytest.raises(InputError, match="url must be a string or null"):
        Document(id="a", text="x", url=url)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="url must be a string or null"):
        Document.from_dict({"id": "a", "text": "x", "url": url})
    with pytest.raises(InputError, match="url must be a string or null"):
        Passage(passage_id="p", text="x", url=url)  # type: ignore[arg-type]
    assert Document(id="a", text="x", url=None).cite == "a"


def test_passage_fields_are_strings() -> None:
    with pytest.raises(InputError, match="Passage.text must be a string, got int"):
        Passage(passage_id="p", text=5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="doc_id must be a string or null"):
        Passage(passage_id="p", text="x", doc_id=3)  # type: ignore[arg-type]


def test_is_blank_counts_format_characters_as_nothing() -> None:
    assert is_blank("") and is_blank(" \n\t") and is_blank("\u200b\u200d\ufeff\u202e")
    assert not is_blank("x") and not is_blank("\u200b x") and not is_blank("\u00a0.")


def test_is_blank_counts_control_characters_as_nothing() -> None:
    assert is_blank("\x00") and is_blank("\x00\x01\x7f") and is_blank("\u200b\x00 \x85\x9f")
    assert not is_blank("\x00x") and not is_blank("a\x00b")


def test_document_metadata_nested_too_deeply_is_an_input_error() -> None:
    deep: list[object] = []
    for _ in range(900):
        deep = [deep]
    with pytest.raises(InputError, match="nested more than 32 levels deep"):
        Document(id="d", text="Use TLS.", metadata={"x": deep})
    with pytest.raises(InputError, match="nested more than 32 levels deep"):
        Document.from_dict({"id": "d", "text": "Use TLS.", "metadata": {"x": deep}})
    shallow: dict[str, object] = {"x": [[{"y": [1]}]]}
    assert Document.from_dict(Document(id="d", text="t", metadata=shallow).to_dict()).metadata == shallow
