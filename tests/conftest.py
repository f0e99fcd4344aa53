from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

SCRAMBLED = {0: "CONTRADICTION", 1: "entailment", 2: "Neutral"}
#: a two-label head whose positive class is *not* the last column (found by name)
INJECTION_LABELS = {0: "INJECTION", 1: "SAFE"}


def _tiny_bert_classifier(out: Path, id2label: dict[int, str], seed: int, **config: Any) -> Path:
    """Save a tiny randomly initialised BERT sequence classifier with the shipped tokenizer."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from ragtrust.models.embedder import TOKENIZER_FILE

    torch.manual_seed(seed)
    bert = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
        **config,
    )
    transformers.BertForSequenceClassification(bert).save_pretrained(out)
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(TOKENIZER_FILE),
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
    )
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_nli_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised BERT NLI checkpoint with a scrambled label order."""
    return _tiny_bert_classifier(tmp_path_factory.mktemp("tiny-nli"), SCRAMBLED, seed=0)


@pytest.fixture(scope="session")
def tiny_injection_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised BERT injection classifier, labels ``{0: INJECTION, 1: SAFE}``.

    Dropout is off so a resumed training run can be compared with an uninterrupted one; the
    wide initialisation spreads the probabilities (at BERT's 0.02 every text gets ~0.506, so a
    swapped column or a skipped temperature would go unnoticed).
    """
    return _tiny_bert_classifier(
        tmp_path_factory.mktemp("tiny-injection"),
        INJECTION_LABELS,
        seed=1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        initializer_range=0.5,
    )


@pytest.fixture
def cli_fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The CLI on the shipped fakes (no models), no RAGTRUST_* variables, no verdict log, relevance off, in tmp_path."""
    import ragtrust.cli.store as store_cli
    import ragtrust.models.embedder as embedder_module
    import ragtrust.models.nli as nli_module
    from ragtrust.models.nli import NLIEngine
    from ragtrust.testing import HashingEmbedder, LexicalNLI

    monkeypatch.setattr(nli_module, "default_nli", lambda settings=None, *, cache_path=None: NLIEngine(LexicalNLI()))
    monkeypatch.setattr(embedder_module, "default_embedder", lambda settings=None: HashingEmbedder())
    monkeypatch.setattr(store_cli, "_embedder", lambda settings: HashingEmbedder())
    monkeypatch.setattr(store_cli, "_nli", lambda settings: LexicalNLI())
    for name in list(os.environ):
        if name.startswith("RAGTRUST_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RAGTRUST_LOG__ENABLED", "false")
    monkeypatch.setenv("RAGTRUST_RELEVANCE__CONTEXT_THRESHOLD", "0")
    monkeypatch.setenv("RAGTRUST_RELEVANCE__ANSWER_THRESHOLD", "0")
    monkeypatch.chdir(tmp_path)


def edited_nonce(ledger: Any) -> list[Any]:
    """A vetted document edited in place ("64-bit" -> "32-bit"), recorded in ``ledger``: its chunk and a clean one."""
    from ragtrust.documents import Document

    ledger.record(Document(id="kb", text="Use a 64-bit nonce."), "kb.md", tier="vetted")
    ledger.record(Document(id="kb", text="Use a 32-bit nonce."), "kb.md")
    return [
        Document(id="kb#0", text="Use a 32-bit nonce.", metadata={"parent_id": "kb"}),
        Document(id="other", text="Honey keeps for years in a sealed jar at room temperature."),
    ]
