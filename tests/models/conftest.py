from __future__ import annotations

from pathlib import Path

import pytest

SCRAMBLED = {0: "CONTRADICTION", 1: "entailment", 2: "Neutral"}


@pytest.fixture(scope="session")
def tiny_nli_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised BERT NLI checkpoint with a scrambled label order."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from ragtrust.models.embedder import TOKENIZER_FILE

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=3,
        id2label=SCRAMBLED,
        label2id={v: k for k, v in SCRAMBLED.items()},
    )
    model = transformers.BertForSequenceClassification(config)
    out = tmp_path_factory.mktemp("tiny-nli")
    model.save_pretrained(out)
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


#: a two-label head whose positive class is *not* the last column (found by name)
INJECTION_LABELS = {0: "INJECTION", 1: "SAFE"}


@pytest.fixture(scope="session")
def tiny_injection_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised BERT injection classifier, labels ``{0: INJECTION, 1: SAFE}``.

    Dropout is off so a resumed training run can be compared with an uninterrupted one; the
    wide initialisation spreads the probabilities (at BERT's 0.02 every text gets ~0.506, so a
    swapped column or a skipped temperature would go unnoticed).
    """
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from ragtrust.models.embedder import TOKENIZER_FILE

    torch.manual_seed(1)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        initializer_range=0.5,
        num_labels=2,
        id2label=INJECTION_LABELS,
        label2id={v: k for k, v in INJECTION_LABELS.items()},
    )
    model = transformers.BertForSequenceClassification(config)
    out = tmp_path_factory.mktemp("tiny-injection")
    model.save_pretrained(out)
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
