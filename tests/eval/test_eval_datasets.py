from __future__ import annotations

import json
import re

import pytest

from ragtrust.errors import ConfigError, InputError
from ragtrust.eval.datasets import (
    _FEVER_VERDICTS,
    canonical_dataset,
    fever_document_text,
    load_benchmark,
    resolve_data_dir,
    split_sizes,
)

TQA_HEADER = "Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers,Source\n"


@pytest.fixture
def data_dir(tmp_path):
    rows = [
        f"Adversarial,Misc,What is item {i}?,Item {i} is a thing,Item {i} is a thing,"
        f"Item {i} is a cat; Item {i} is a dog,x\n"
        for i in range(30)
    ]
    (tmp_path / "truthfulqa").mkdir()
    (tmp_path / "truthfulqa" / "TruthfulQA.csv").write_text(TQA_HEADER + "".join(rows), encoding="utf-8")
    (tmp_path / "fever").mkdir()
    labels = ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]
    lines = [
        json.dumps({"id": i, "label": labels[i % 3], "claim": f"Person {i} was born in Town {i}."}) for i in range(60)
    ]
    (tmp_path / "fever" / "paper_dev.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def test_truthfulqa_documents_and_splits(data_dir):
    bench = load_benchmark("tqa", data_dir, n=10, n_calib=6, seed=42)
    assert bench.name == "truthfulqa" and len(bench.documents) == 30
    doc = bench.documents[0]
    assert doc.text == "What is item 0? Item 0 is a thing."
    assert doc.metadata["false_claims"] == ["Item 0 is a cat.", "Item 0 is a dog."]
    eval_ids = {q.doc_id for q in bench.eval_queries}
    calib_ids = {q.doc_id for q in bench.calib_queries}
    assert len(eval_ids) == 10 and len(calib_ids) == 6 and not eval_ids & calib_ids
    for q in bench.queries:
        assert bench.documents[q.doc_index].id == q.doc_id
        assert bench.documents[q.doc_index].text.startswith(q.text)
    again = load_benchmark("truthfulqa", data_dir, n=10, n_calib=6, seed=42)
    assert again.queries == bench.queries
    assert load_benchmark("truthfulqa", data_dir, n=10, n_calib=6, seed=1).queries != bench.queries
    assert list(bench.data_files.values())[0] and len(list(bench.data_files.values())[0]) == 64


def test_fever_uses_supports_refutes_without_a_fixed_label_phrase(data_dir):
    bench = load_benchmark("fever", data_dir, n=5, seed=42)
    labels = {d.metadata["label"] for d in bench.documents}
    assert labels == {"SUPPORTS", "REFUTES"} and len(bench.documents) == 40
    by_label = {"SUPPORTS": [], "REFUTES": []}
    for d in bench.documents:
        by_label[d.metadata["label"]].append(d.text)
        assert d.metadata["claim"].rstrip(".") in d.text
    # no verdict sentence is shared by every document of a label
    for label, texts in by_label.items():
        for verdict in _FEVER_VERDICTS[label]:
            assert sum(verdict in t for t in texts) < len(texts)
    # none of the detector's contradiction vocabulary is used in verdicts
    for verdict in _FEVER_VERDICTS["REFUTES"] + _FEVER_VERDICTS["SUPPORTS"]:
        assert not re.search(r"\b(false|misconception|actually|contrary)\b", verdict, re.I)
    refuted = next(d for d in bench.documents if d.metadata["label"] == "REFUTES")
    assert refuted.metadata["false_claims"] == [refuted.metadata["claim"]]


def test_fever_text_choice_depends_on_id_not_label():
    q1, t1 = fever_document_text(7, "A is B.", "SUPPORTS")
    q2, t2 = fever_document_text(7, "A is B.", "REFUTES")
    assert q1 == q2
    i1 = _FEVER_VERDICTS["SUPPORTS"].index(next(v for v in _FEVER_VERDICTS["SUPPORTS"] if v in t1))
    i2 = _FEVER_VERDICTS["REFUTES"].index(next(v for v in _FEVER_VERDICTS["REFUTES"] if v in t2))
    assert i1 == i2
    with pytest.raises(InputError):
        fever_document_text(1, "x", "NOT ENOUGH INFO")


def test_secure_coding_small_corpus_split():
    bench = load_benchmark("kb")
    assert len(bench.documents) == 40
    assert len(bench.eval_queries) == 30 and len(bench.calib_queries) == 10
    assert not {q.doc_id for q in bench.eval_queries} & {q.doc_id for q in bench.calib_queries}
    assert split_sizes(817, 50, None) == (50, 25)
    with pytest.raises(ConfigError):
        split_sizes(10, 0, None)


def test_missing_files_name_the_expected_paths(tmp_path):
    with pytest.raises(InputError, match=r"truthfulqa/TruthfulQA\.csv.*RAGTRUST_DATA_DIR"):
        load_benchmark("truthfulqa", tmp_path)
    with pytest.raises(InputError, match=r"fever/paper_dev\.jsonl"):
        load_benchmark("fever", tmp_path)
    with pytest.raises(ConfigError, match="valid"):
        canonical_dataset("squad")


def test_data_dir_resolution(tmp_path):
    assert resolve_data_dir(tmp_path, env={}) == tmp_path
    assert resolve_data_dir(None, env={"RAGTRUST_DATA_DIR": str(tmp_path)}) == tmp_path
