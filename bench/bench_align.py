"""Benchmark: align 20 passages against 5 documents (EvidenT target: a few ms per call).

Usage:
    python bench/bench_align.py [--data DIR] [--repeat 200]

Documents are five ~512-token chunks: from the OWASP cheat sheets when ``--data`` (or
../shared/data/owasp-cheatsheets) exists, else deterministic synthetic text. The 20 passages
mix exact copies, partial copies, wrong-URL copies and fabrications (5 of each). Prints the
mean and p95 milliseconds per ``NGramAligner.align`` call, cold (new aligner each call,
documents re-tokenised) and warm (one aligner, document index cached).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

from ragtrust.documents import Document, Passage, RetrievedDoc
from ragtrust.evidence.align import NGramAligner
from ragtrust.text import word_tokens

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "owasp-cheatsheets"


def load_docs(data: Path | None) -> list[RetrievedDoc]:
    texts: list[str] = []
    if data is not None and data.is_dir():
        for path in sorted(data.glob("*.md")):
            text = path.read_text(encoding="utf-8")
            tokens = word_tokens(text)
            if len(tokens) >= 512:  # five full 512-token chunks, like the retrieval protocol
                texts.append(text[: tokens[511].end])
            if len(texts) == 5:
                break
    while len(texts) < 5:
        i = len(texts)
        texts.append(" ".join(f"word{(i * 7919 + k * 104729) % 997} token{k % 13}." for k in range(256)))
    return [
        RetrievedDoc(Document(id=f"d{i}", text=t, url=f"https://bench.test/d{i}"), score=0.5, rank=i + 1)
        for i, t in enumerate(texts)
    ]


def make_passages(docs: list[RetrievedDoc]) -> list[Passage]:
    out: list[Passage] = []
    for i in range(5):
        doc = docs[i].document
        tokens = word_tokens(doc.text)
        a, b = tokens[20 * i + 10].start, tokens[20 * i + 50].end
        copy = doc.text[a:b]
        out.append(Passage(f"exact{i}", copy, url=doc.cite))
        out.append(
            Passage(
                f"partial{i}", copy[: len(copy) // 2] + " plus invented words that appear nowhere at all", url=doc.cite
            )
        )
        out.append(Passage(f"drift{i}", copy, url=docs[(i + 1) % 5].document.cite))
        out.append(
            Passage(
                f"fake{i}", f"fabricated claim number {i} about nothing in these documents whatsoever", url=doc.cite
            )
        )
    return out


def timed(fn, repeat: int) -> list[float]:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    docs = load_docs(args.data)
    passages = make_passages(docs)
    warm = NGramAligner()
    result = warm.align(passages, docs)
    cold = timed(lambda: NGramAligner().align(passages, docs), args.repeat)
    hot = timed(lambda: warm.align(passages, docs), args.repeat)
    source = "owasp" if args.data is not None and args.data.is_dir() else "synthetic"
    n_tokens = sum(len(word_tokens(d.document.text)) for d in docs)
    print(f"align: {len(passages)} passages x {len(docs)} docs ({n_tokens} doc tokens, {source}), n=5 t=0.7")
    statuses = {k: int(result.diagnostics[k]) for k in ("kept", "truncated", "reattributed", "dropped")}
    print(f"statuses: {statuses}")
    for name, samples in (("cold", cold), ("warm", hot)):
        p95 = statistics.quantiles(samples, n=20)[-1]
        print(f"{name}: {statistics.mean(samples):.2f} ms/call mean, {p95:.2f} ms p95 ({args.repeat} calls)")
    print(f"python {platform.python_version()} on {platform.machine()}")


if __name__ == "__main__":
    main()
