from __future__ import annotations

import pytest

from ragtrust.documents import Document
from ragtrust.errors import ConfigError
from ragtrust.ingest.chunker import chunk_document, default_tokenizer, token_offsets
from ragtrust.ingest.loaders import markdown_metadata


def _doc(text: str, **meta) -> Document:
    return Document(id="guide.md", text=text, url="file:///guide.md", metadata=meta)


LONG = " ".join(f"Sentence {i} explains why secrets must never be logged in plain text." for i in range(120))


def test_chunks_cover_the_text_with_exact_offsets_and_bounded_size() -> None:
    doc = _doc(LONG)
    chunks = chunk_document(doc, chunk_tokens=64, overlap_tokens=10)
    assert len(chunks) > 5
    tok = default_tokenizer()
    for i, c in enumerate(chunks):
        assert c.id == f"guide.md#{i}"
        assert c.text == doc.text[c.metadata["start"] : c.metadata["end"]]
        assert c.metadata["parent_id"] == "guide.md" and c.metadata["parent_hash"] == doc.content_hash
        assert len(tok.encode(c.text, add_special_tokens=False).ids) <= 64
        assert c.url == doc.url
    assert chunks[0].metadata["start"] == 0 and chunks[-1].metadata["end"] == len(doc.text)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert not doc.text[a.metadata["end"] : b.metadata["start"]].strip()  # no text is lost
        assert b.metadata["start"] > a.metadata["start"]


def test_chunks_end_and_start_on_sentences_and_overlap_at_most_n_tokens() -> None:
    chunks = chunk_document(_doc(LONG), chunk_tokens=64, overlap_tokens=20)
    for c in chunks:
        assert c.text.startswith("Sentence ")
        assert c.text.endswith(".")
    for a, b in zip(chunks, chunks[1:], strict=False):
        shared = LONG[b.metadata["start"] : a.metadata["end"]]
        assert shared.startswith("Sentence ")  # one whole sentence of overlap
        assert 0 < len(token_offsets(shared)) <= 20
    # overlap shorter than any sentence: no fragments, chunks simply follow each other
    tight = chunk_document(_doc(LONG), chunk_tokens=64, overlap_tokens=5)
    assert all(c.text.startswith("Sentence ") for c in tight)
    assert all(b.metadata["start"] > a.metadata["end"] for a, b in zip(tight, tight[1:], strict=False))


def test_ids_are_stable_and_headings_respected() -> None:
    text = "# Guide\n\n" + "\n\n".join(
        f"## Section {s}\n\n" + " ".join(f"Point {s}.{i} is a rule about input validation." for i in range(12))
        for s in range(4)
    )
    doc = _doc(text, **markdown_metadata(text))
    first = chunk_document(doc, chunk_tokens=160, overlap_tokens=20)
    again = chunk_document(Document(id="guide.md", text=text, metadata=markdown_metadata(text)), 160, 20)
    assert [(c.id, c.text) for c in first] == [(c.id, c.text) for c in again]
    # every section fits in a chunk: each chunk after the first starts exactly at a heading
    assert all(c.text.startswith("## Section") for c in first[1:])
    assert [c.metadata["heading"] for c in first[1:]] == [f"Section {s}" for s in range(1, len(first))]
    assert "headings" not in first[0].metadata


def test_sentence_longer_than_a_chunk_is_split_on_tokens_and_empty_text_gives_nothing() -> None:
    doc = _doc("word " * 300)
    chunks = chunk_document(doc, chunk_tokens=50, overlap_tokens=5)
    assert len(chunks) >= 6 and all(c.metadata["tokens"] <= 50 for c in chunks)
    assert chunk_document(_doc("   \n  "), 50, 5) == []


def test_bad_sizes_and_truncating_tokenizer() -> None:
    with pytest.raises(ConfigError):
        chunk_document(_doc("x"), chunk_tokens=10, overlap_tokens=10)
    from tokenizers import Tokenizer

    from ragtrust.ingest.chunker import TOKENIZER_PATH

    truncating = Tokenizer.from_file(str(TOKENIZER_PATH))  # ships with truncation at 128
    assert truncating.truncation is not None
    chunks = chunk_document(_doc(LONG), chunk_tokens=300, overlap_tokens=20, tokenizer=truncating)
    assert chunks[-1].metadata["end"] == len(LONG)  # the whole text, not the first 128 tokens


def test_text_without_heading_metadata_is_read_as_markdown_so_code_comments_are_not_headings() -> None:
    """Text sent to the API has no heading list: a ``# comment`` in fenced code must not start a section."""
    intro = " ".join(f"Step {i} prepares the host before the service starts." for i in range(4))
    text = (
        "# Setup\n\n" + intro + "\n\n```bash\n# install the package and its models\npip install ragtrust\n"
        "# start the server on the loopback address\nragtrust serve --host 127.0.0.1 --port 8080\n```\n\n"
        + " ".join(f"Check {i} confirms the service answers." for i in range(8))
        + "\n"
    )
    bare = chunk_document(Document(id="guide.md", text=text), chunk_tokens=64, overlap_tokens=10)
    assert len(bare) > 2
    assert {c.metadata["heading"] for c in bare} == {"Setup"}
    assert not any(c.text.startswith("# start") for c in bare)  # the regex fallback cut the fence here
    # the same chunks (ids, offsets, headings) as the same text loaded from a .md file
    loaded = chunk_document(_doc(text, **markdown_metadata(text)), chunk_tokens=64, overlap_tokens=10)

    def key(chunks: list[Document]) -> list[tuple[str, str, str]]:
        return [(c.id, c.text, c.metadata["heading"]) for c in chunks]

    assert key(bare) == key(loaded)
    # a loader that found no headings (an HTML page without h1-h6) is believed
    page = chunk_document(_doc("# not a heading\n\n" + LONG, headings=[]), chunk_tokens=64, overlap_tokens=10)
    assert {c.metadata["heading"] for c in page} == {None}
