"""Embedder variants on the OWASP store: ingest speed side by side, and what retrieval keeps.

Usage (the variants from ``scripts/embedder_variants.py build``; numbers go to
docs/benchmarks.md, "The embedder: int8 arithmetic and a 3-layer student"):
    python bench/bench_embedder_variants.py --store runs/owasp-store --data-dir ../shared/data \
        --variant l6-fp32=runs/embedder-variants/l6-fp32 --variant l3-int8w=runs/embedder-variants/l3-int8w ...

For each variant (a folder holding an ONNX file and its ``embedder_manifest.json``), against
the shipped embedder, all served by the same :class:`~ragtrust.models.embedder.OnnxEmbedder`:

* **speed**: the same ``--speed-chunks`` chunks of the store (their full text, as ingest
  embeds them) and the same number of their sentences (claim-sized texts, as the scan embeds
  them), embedded uncached by each model in alternating rounds; chunks/s, sentences/s and the
  ratio to the shipped model;
* **vectors**: cosine of each chunk's vector to the shipped one (mean, 1st percentile, min);
* **retrieval** over the store's chunks, every vector (queries and chunks) from the model
  measured: gold hit@5 on the 36 OWASP questions (a chunk of a gold sheet in the top 5), and
  for four question sets (OWASP, off-topic, the first 200 TruthfulQA questions, the 100
  PoisonedRAG NQ questions) the share of the shipped model's top 5 it also returns and how
  often its top 1 is the shipped model's.

The int8-arithmetic variants quantise activations per call, so their vectors depend a little
on which texts share a batch: these figures are for the embedder's own batches (64 texts,
length batching), as ingest and queries run them.

Prints one JSON object (``--out`` writes it too).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from ragtrust.eval.evidence_data import source_name
from ragtrust.ingest.store import Store
from ragtrust.io import atomic_write_text
from ragtrust.models.embedder import EMBEDDER_MANIFEST, OnnxEmbedder
from ragtrust.text import split_sentences

DATA = Path(__file__).resolve().parents[1] / "src" / "ragtrust" / "data"


def question_sets(data_dir: Path) -> dict[str, list[str]]:
    """The four question sets, by name."""
    owasp = [json.loads(line)["question"] for line in (DATA / "owasp_questions.jsonl").open(encoding="utf-8")]
    off = [json.loads(line)["question"] for line in (DATA / "offtopic_questions.jsonl").open(encoding="utf-8")]
    with (data_dir / "truthfulqa" / "TruthfulQA.csv").open(encoding="utf-8") as handle:
        tqa = [row["Question"] for row in csv.DictReader(handle)][:200]
    nq = [
        str(v["question"])
        for v in json.loads((data_dir / "poisonedrag" / "nq.json").read_text(encoding="utf-8")).values()
    ]
    return {"owasp": owasp, "offtopic": off, "truthfulqa200": tqa, "nq100": nq}


def variant(folder: Path, threads: int) -> OnnxEmbedder:
    """An uncached embedder over the ONNX file a variant folder's manifest names."""
    manifest = json.loads((folder / "embedder_manifest.json").read_text())
    return OnnxEmbedder(
        model_path=str(folder / manifest["onnx_file"]),
        threads=threads,
        cache_size=0,
        cache_bytes=0,
        model_id=manifest["model_id"],
    )


def timed(models: dict[str, OnnxEmbedder], texts: list[str], rounds: int) -> dict[str, float]:
    """Texts per second of each model over ``texts`` split into ``rounds`` slices, models alternated.

    Each round runs the models in turn, starting one place further each time, so every model
    goes first equally often when ``rounds`` is a multiple of their number.
    """
    names = list(models)
    spent = dict.fromkeys(models, 0.0)
    size = max(1, len(texts) // rounds)
    for r in range(rounds):
        part = texts[r * size : (r + 1) * size]
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            models[name].embed(part)
            spent[name] += time.perf_counter() - start
    return {name: round(size * rounds / spent[name], 2) for name in models}


def file_bytes(model: OnnxEmbedder) -> int:
    """Size of the model's ONNX file (the shipped one's from its manifest)."""
    if model.model_path:
        return Path(model.model_path).stat().st_size
    return int(json.loads(EMBEDDER_MANIFEST.read_text())["size_bytes"])


def top5(queries: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """Indices of the 5 nearest chunks of each query."""
    return np.argsort(-(queries @ chunks.T), axis=1)[:, :5]


def main() -> None:
    """Measure and print one JSON object."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--variant", action="append", default=[], help="NAME=FOLDER (repeatable)")
    ap.add_argument("--speed-chunks", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=0, help="default: 2 per model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    models = {"shipped": OnnxEmbedder(threads=args.threads, cache_size=0, cache_bytes=0)}
    for spec in args.variant:
        name, _, folder = spec.partition("=")
        models[name] = variant(Path(folder), args.threads)
    for model in models.values():
        model.warm_up()
    rounds = args.rounds or 2 * len(models)
    store = Store.open(args.store, read_only=True)
    docs = store.documents()
    texts = [d.text for d in docs]
    step = max(1, len(texts) // args.speed_chunks)
    sample = texts[::step][: args.speed_chunks]
    sentences = [s.text for t in sample for s in split_sentences(t)][: len(sample) * 4]
    speed = {
        "chunks_per_s": timed(models, sample, rounds),
        "sentences_per_s": timed(models, sentences, rounds),
    }
    vectors = {name: m.embed(texts) for name, m in models.items()}
    sets = question_sets(args.data_dir)
    gold = [json.loads(line)["gold"] for line in (DATA / "owasp_questions.jsonl").open(encoding="utf-8")]
    sheets = [source_name(str(d.metadata.get("parent_id") or d.id)) for d in docs]
    tops = {name: {s: top5(m.embed(qs), vectors[name]) for s, qs in sets.items()} for name, m in models.items()}
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, {args.threads} threads",
        "store_chunks": len(texts),
        "speed_sample": {"chunks": len(sample), "sentences": len(sentences), "rounds": rounds},
        "models": {},
    }
    for name, model in models.items():
        cosine = (vectors[name] * vectors["shipped"]).sum(1)
        hits = sum(any(sheets[i] in g for i in row) for row, g in zip(tops[name]["owasp"], gold, strict=True))
        agreement = {
            s: {
                "top5": round(
                    float(np.mean([len(set(a) & set(b)) / 5 for a, b in zip(tops[name][s], ref, strict=True)])), 3
                ),
                "top1": round(float(np.mean(tops[name][s][:, 0] == ref[:, 0])), 3),
            }
            for s, ref in tops["shipped"].items()
        }
        report["models"][name] = {
            "model_id": model.model_id or "shipped",
            "file_mb": round(file_bytes(model) / 1e6, 1),
            "chunks_per_s": speed["chunks_per_s"][name],
            "speed_vs_shipped": round(speed["chunks_per_s"][name] / speed["chunks_per_s"]["shipped"], 2),
            "sentences_per_s": speed["sentences_per_s"][name],
            "sentence_speed_vs_shipped": round(speed["sentences_per_s"][name] / speed["sentences_per_s"]["shipped"], 2),
            "cosine_to_shipped": {
                "mean": round(float(cosine.mean()), 5),
                "p01": round(float(np.percentile(cosine, 1)), 5),
                "min": round(float(cosine.min()), 5),
            },
            "gold_hit_at_5": f"{hits}/{len(gold)}",
            "agreement_with_shipped": agreement,
        }
    text = json.dumps(report, indent=2)
    if args.out:
        atomic_write_text(args.out, text + "\n")
    print(text)  # noqa: T201 - the benchmark's report


if __name__ == "__main__":
    main()
