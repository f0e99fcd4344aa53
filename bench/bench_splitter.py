"""Sentence splitters on real text: ragtrust's regex vs blingfire, pysbd and spaCy's sentencizer.

Usage (numbers go to docs/benchmarks.md with the machine and load noted):
    pip install blingfire==0.1.8 pysbd==0.3.4      # spaCy 3.8 comes with the eval extra
    python bench/bench_splitter.py [--data ../shared/data] [--repeat 3] [--out runs/bench/splitter.json]
    python bench/bench_splitter.py --splitters ragtrust      # just the checked-out splitter

Corpora (read in place): the OWASP cheat sheets cut into 512-token chunks by
:func:`ragtrust.ingest.chunker.chunk_document` (LICENSE.md left out), the 817 TruthfulQA
"question + best answer" documents and the 1,000 seeded FEVER documents of
:mod:`ragtrust.eval.datasets` (seed 42). A candidate that is missing is reported as such.

Splitters, each returning trimmed ``(start, end)`` offsets into the text:

* ``ragtrust``: :func:`ragtrust.text.split_sentences` as checked out;
* ``blingfire``: ``blingfire.text_to_sentences_and_offsets`` on the whole text;
* ``pysbd``: ``pysbd.Segmenter(language="en", clean=False, char_span=True)``;
* ``spacy``: ``spacy.blank("en")`` with the rule-based ``sentencizer``;
* ``<name>+md``: the same candidate run inside the Markdown blocks ragtrust needs as
  boundaries (blank lines and list items), i.e. what it would be as the engine of
  ``split_sentences``.

Per corpus and splitter: sentences, throughput (sentences/s and characters/s, the best of
``--repeat`` passes over the corpus, so other load on the shared host shows as less noise),
milliseconds per document (per 512-token chunk for OWASP), the fragment rate and the
agreement with ``ragtrust`` (identical sentence starts / the union of both splitters' starts).

A sentence is a *fragment* when, its ATX heading lines left out (``assertions`` drops them;
a splitter that runs a heading into the text below is judged on that text), it has fewer
than 3 word tokens; or its first letter (after a list marker, quotes, brackets and emphasis)
is lower-case, i.e. it continues a sentence cut before it; or it ends on a comma or a
dangling "and" / "or" / "but" / "nor", i.e. it was cut in the middle. ``fragments`` counts
every sentence, code blocks and tables too (the same text for every splitter);
``prose`` only the sentences that start outside a fenced code block and not on a table row.
Fewer, longer sentences make fewer fragments, so ``merged`` is the other side: the share of
prose sentences that run over a blank line or hold two or more list items (a heading run
into its paragraph, a whole list as one claim).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from ragtrust.documents import Document
from ragtrust.text import is_heading, split_sentences, word_tokens

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
Spans = list[tuple[int, int]]
Splitter = Callable[[str], Spans]

# the Markdown block boundaries split_sentences keeps: a blank line, a new list item
_MD_BLOCK = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+[.)])\s)")
_LEAD = re.compile(r"""\s*(?:(?:[-*+]|\d+[.)])\s+)?[\s"'(\[*_>]*""")
_DANGLING = re.compile(r"(?:,|\b(?:and|or|but|nor))$", re.IGNORECASE)
_BLANK = re.compile(r"\n\s*\n")
_ITEM_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)", re.MULTILINE)


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def _spans(text: str, pairs: list[tuple[int, int]]) -> Spans:
    return [s for a, b in pairs if (s := _trim(text, a, b)) is not None]


def ragtrust_splitter() -> Splitter:
    return lambda text: [(s.start, s.end) for s in split_sentences(text)]


def blingfire_splitter() -> Splitter:
    import blingfire

    def split(text: str) -> Spans:
        if not text.strip():
            return []
        _, offsets = blingfire.text_to_sentences_and_offsets(text)
        return _spans(text, [(int(a), int(b)) for a, b in offsets])

    return split


def pysbd_splitter() -> Splitter:
    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    return lambda text: _spans(text, [(s.start, s.end) for s in segmenter.segment(text)])


def spacy_splitter() -> Splitter:
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return lambda text: _spans(text, [(s.start_char, s.end_char) for s in nlp(text).sents])


def within_blocks(inner: Splitter) -> Splitter:
    """Run ``inner`` inside each Markdown block and shift its offsets back."""

    def split(text: str) -> Spans:
        out: Spans = []
        start = 0
        for cut in [*_MD_BLOCK.finditer(text), None]:
            end = len(text) if cut is None else cut.start()
            out.extend((start + a, start + b) for a, b in inner(text[start:end]))
            start = len(text) if cut is None else cut.end()
        return out

    return split


CANDIDATES: dict[str, tuple[Callable[[], Splitter], str]] = {
    "blingfire": (blingfire_splitter, "blingfire"),
    "pysbd": (pysbd_splitter, "pysbd"),
    "spacy": (spacy_splitter, "spacy"),
}


def without_headings(sentence: str) -> str:
    """The sentence's lines that are not ATX headings, joined ("" for a heading alone)."""
    return "\n".join(line for line in sentence.split("\n") if not is_heading(line)).strip()


def is_fragment(sentence: str) -> bool:
    """Fewer than 3 words, a lower-case start (a continuation) or a dangling end (a cut)."""
    if len(word_tokens(sentence)) < 3:
        return True
    lead = _LEAD.match(sentence)
    rest = sentence[lead.end() if lead else 0 :]
    if rest[:1].isalpha() and rest[:1].islower():
        return True
    return _DANGLING.search(sentence.rstrip()) is not None


def in_code_or_table(text: str) -> Callable[[int, int], bool]:
    """Whether the sentence at ``(start, end)`` of ``text`` is code (fenced) or a table row."""
    fences = [m.start() for m in _FENCE.finditer(text)]
    blocks = [(a, b) for a, b in zip(fences[::2], [*fences[1::2], len(text)], strict=False)]

    def check(start: int, end: int) -> bool:
        snippet = text[start:end]
        if snippet.startswith("|") or _FENCE.search(snippet):
            return True
        return any(a <= start < b for a, b in blocks)

    return check


def load_corpora(data: Path) -> dict[str, list[str]]:
    from ragtrust.eval.datasets import load_fever_documents, load_truthfulqa_documents
    from ragtrust.ingest.chunker import chunk_document

    sheets = sorted(p for p in (data / "owasp-cheatsheets").glob("*.md") if p.name != "LICENSE.md")
    if not sheets:
        raise SystemExit(f"no OWASP cheat sheets under {data / 'owasp-cheatsheets'}: pass --data")
    owasp = [
        chunk.text
        for path in sheets
        for chunk in chunk_document(Document(id=path.stem, text=path.read_text(encoding="utf-8")))
    ]
    truthfulqa = [d.text for d in load_truthfulqa_documents(data)[0]]
    fever = [d.text for d in load_fever_documents(data, seed=42)[0]]
    return {"owasp-chunks": owasp, "truthfulqa": truthfulqa, "fever": fever}


def measure(split: Splitter, texts: list[str], reference: list[Spans] | None, repeat: int) -> dict[str, Any]:
    best = float("inf")
    found: list[Spans] = []
    for _ in range(repeat):
        start = time.perf_counter()
        found = [split(t) for t in texts]
        best = min(best, time.perf_counter() - start)
    sentences = [t[a:b] for t, spans in zip(texts, found, strict=True) for a, b in spans]
    claims = [c for s in sentences if (c := without_headings(s))]
    fragments = [s for s in claims if is_fragment(s)]
    prose = [
        t[a:b]
        for t, spans in zip(texts, found, strict=True)
        for code in [in_code_or_table(t)]
        for a, b in spans
        if not code(a, b) and without_headings(t[a:b])
    ]
    prose_fragments = [s for s in prose if is_fragment(without_headings(s))]
    merged = [s for s in prose if _BLANK.search(s) or len(_ITEM_LINE.findall(s)) >= 2]
    row: dict[str, Any] = {
        "sentences": len(sentences),
        "sentences_per_s": round(len(sentences) / best),
        "chars_per_s": round(sum(map(len, texts)) / best),
        "ms_per_doc": round(1000 * best / len(texts), 3),
        "fragment_rate": round(len(fragments) / max(1, len(claims)), 4),
        "fragments": len(fragments),
        "prose_fragment_rate": round(len(prose_fragments) / max(1, len(prose)), 4),
        "prose_sentences": len(prose),
        "prose_fragments": len(prose_fragments),
        "merged_rate": round(len(merged) / max(1, len(prose)), 4),
    }
    if reference is not None:
        same = union = 0
        for ours, theirs in zip(reference, found, strict=True):
            a, b = {s for s, _ in ours}, {s for s, _ in theirs}
            same, union = same + len(a & b), union + len(a | b)
        row["agreement"] = round(same / max(1, union), 4)
    return row


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--repeat", type=int, default=3, help="passes per splitter; the fastest counts")
    parser.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")
    parser.add_argument(
        "--splitters", default="ragtrust,blingfire,pysbd,spacy", help="comma-separated: ragtrust and candidates"
    )
    args = parser.parse_args()
    if args.repeat < 1:
        raise SystemExit(f"--repeat must be at least 1, got {args.repeat}")

    wanted = [w.strip() for w in args.splitters.split(",") if w.strip()]
    unknown = sorted(set(wanted) - {"ragtrust", *CANDIDATES})
    if unknown or "ragtrust" not in wanted:
        raise SystemExit(f"--splitters: expected ragtrust plus any of {sorted(CANDIDATES)}, got {args.splitters!r}")
    splitters: dict[str, Splitter] = {"ragtrust": ragtrust_splitter()}
    missing: list[str] = []
    for name, (make, dist) in CANDIDATES.items():
        if name not in wanted:
            continue
        try:
            inner = make()
        except ImportError:
            missing.append(f"{name} (pip install {dist})")
            continue
        splitters[name] = inner
        splitters[f"{name}+md"] = within_blocks(inner)

    corpora = load_corpora(args.data)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for corpus, texts in corpora.items():
        reference = [splitters["ragtrust"](t) for t in texts]
        results[corpus] = {
            name: measure(split, texts, None if name == "ragtrust" else reference, args.repeat)
            for name, split in splitters.items()
        }

    header = f"{'corpus':<13} {'splitter':<13} {'sents':>7} {'sents/s':>9} {'chars/s':>10} {'ms/doc':>8} "
    print(header + f"{'fragments':>10} {'prose':>7} {'merged':>7} {'agreement':>9}")
    for corpus, rows in results.items():
        n_chars = sum(map(len, corpora[corpus]))
        print(f"# {corpus}: {len(corpora[corpus])} documents, {n_chars:,} characters")
        for name, r in rows.items():
            agreement = f"{r['agreement']:.1%}" if "agreement" in r else "-"
            print(
                f"{corpus:<13} {name:<13} {r['sentences']:>7} {r['sentences_per_s']:>9,} {r['chars_per_s']:>10,} "
                f"{r['ms_per_doc']:>8.3f} {r['fragment_rate']:>10.1%} {r['prose_fragment_rate']:>7.1%} "
                f"{r['merged_rate']:>7.1%} {agreement:>9}"
            )
    versions = {d: _version(d) for d in ("ragtrust", "blingfire", "pysbd", "spacy")}
    load = os.getloadavg()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, load {load[0]:.2f}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    if missing:
        print("not measured: " + ", ".join(missing))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "command": f"python bench/bench_splitter.py --repeat {args.repeat} --splitters {','.join(wanted)}",
            "machine": {"python": platform.python_version(), "arch": platform.machine(), "cores": os.cpu_count()},
            "load_average": [round(x, 2) for x in load],
            "versions": versions,
            "results": results,
        }
        args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
