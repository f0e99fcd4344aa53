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
