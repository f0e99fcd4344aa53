"""Per-query cost with a real local LLM: the LLM's share vs ragtrust's, and the overhead ratio.

Usage (numbers go to docs/benchmarks.md with the machine and load noted):
    ragtrust ingest ../shared/data/owasp-cheatsheets --store runs/owasp-store   # once
    python bench/bench_llm.py --store runs/owasp-store --out runs/bench/llm.json

Starts the packaged local model (llama-cpp-python's server over SmolLM2-135M-Instruct,
``ragtrust.generation.local.LocalLLM``) on a free loopback port, then for each bundled OWASP
question (``ragtrust/data/owasp_questions.jsonl``, ``--limit`` of them):

* ``plain``: what a RAG app without ragtrust does: dense top-K retrieval, then one LLM
  answer from the retrieved chunks (the same answer prompt, every chunk as a passage);
* ``ragtrust``: ``TrustGate.ask`` with the LLM answer writer (``generator.type = openai``)
  and the extractive extractor (the default), i.e. Stage 1 screening, extraction,
  alignment, generation, the citation guard, Stage 2 NLI and relevance.

Both run warm (models loaded, one warm-up question first); ragtrust's NLI pair cache is
off (``models.nli_cache_size = 0``), so every pair is scored. Reported per pass: median / p95 seconds; for ``ragtrust``
the split between the LLM (the ``generate`` stage, plus ``extract`` with ``--llm-extractor``)
and ragtrust's own stages (everything else), and the overhead ratio
ragtrust-own-seconds / plain-seconds (the paper reports about 17x a plain answer for its
verifier). Generation is greedy (temperature 0) with ``--max-tokens`` (default 256).
One JSON object with the machine, the load average, the model file's sha256 and versions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import time
from importlib import metadata, resources
from pathlib import Path
from typing import Any

LLM_STAGES = ("generate",)


def _quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median": round(statistics.median(ordered), 3),
        "p95": round(p95, 3),
        "mean": round(statistics.fmean(ordered), 3),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    """Print (and optionally write) one JSON object of timings."""
    from ragtrust.config import load_settings
    from ragtrust.documents import Passage
    from ragtrust.generation.local import LocalLLM, default_model_path
    from ragtrust.generation.openai import OpenAICompatibleGenerator
    from ragtrust.ingest.store import Store
    from ragtrust.models.embedder import default_embedder
    from ragtrust.models.nli import default_nli
    from ragtrust.pipeline import TrustGate

    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True, help="a store of the OWASP cheat sheets (ragtrust ingest)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--limit", type=int, default=12, help="questions")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--context-tokens", type=int, default=4096)
    ap.add_argument("--llm-extractor", action="store_true", help="the LLM extracts passages too")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()

    text = resources.files("ragtrust.data").joinpath("owasp_questions.jsonl").read_text(encoding="utf-8")
    questions = [json.loads(line)["question"] for line in text.splitlines() if line.strip()][: a.limit + 1]
    server = LocalLLM(default_model_path(), port=_free_port(), context_tokens=a.context_tokens)
    with server:
        overrides: dict[str, Any] = {
            "retrieval": {"top_k": a.k},
            "models": {"nli_cache_size": 0},
            "generator": {**server.settings()["generator"], "max_tokens": a.max_tokens, "timeout_s": 600},
        }
        if a.llm_extractor:
            overrides["evidence"] = {"extractor": "llm"}
        settings = load_settings(env={}, overrides=overrides)
        embedder = default_embedder(settings)
        store = Store.open(a.store, embedder, settings=settings)
        nli = default_nli(settings, cache_path=None)
        gate = TrustGate.from_settings(settings, store=store, nli=nli, embedder=embedder)
        gate.warm_up()
        writer = OpenAICompatibleGenerator.from_config(settings.generator)
        llm_stages = ("extract", "generate") if a.llm_extractor else LLM_STAGES

        def plain(question: str) -> float:
            t0 = time.perf_counter()
            docs, _ = gate.retrieve(question)
            passages = [Passage(f"p{i}", d.document.text, url=d.document.cite, doc_id=d.id) for i, d in enumerate(docs)]
            writer.generate(question, passages)
            return time.perf_counter() - t0

        plain(questions[0])  # warm-up: the server's first request, the retriever's index
        gate.ask(questions[0])
        rows = []
        for question in questions[1:]:
            plain_s = plain(question)
            t0 = time.perf_counter()
            verdict = gate.ask(question)
            total = time.perf_counter() - t0
            llm_s = sum(verdict.timings_s.get(s, 0.0) for s in llm_stages)
            rows.append(
                {
                    "question": question,
                    "plain_s": round(plain_s, 3),
                    "ragtrust_total_s": round(total, 3),
                    "llm_s": round(llm_s, 3),
                    "ragtrust_own_s": round(total - llm_s, 3),
                    "stages_s": {k: round(v, 3) for k, v in verdict.timings_s.items()},
                    "trusted": verdict.trusted,
                    "sentences": len(verdict.sentences),
                }
            )
        own = [r["ragtrust_own_s"] for r in rows]
        plain_all = [r["plain_s"] for r in rows]
        llm_all = [r["llm_s"] for r in rows]
        result: dict[str, Any] = {
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}",
            "load_average_at_start": os.getloadavg(),
            "command": "python bench/bench_llm.py "
            + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(a).items() if v not in (None, False, True))
            + (" --llm-extractor" if a.llm_extractor else ""),
            "llm": server.describe(),
            "max_tokens": a.max_tokens,
            "k": a.k,
            "questions": len(rows),
            "llm_stages": list(llm_stages),
            "versions": {p: metadata.version(p) for p in ("ragtrust", "onnxruntime", "numpy", "llama-cpp-python")},
            "plain_s": _quantiles(plain_all),
            "ragtrust_total_s": _quantiles([r["ragtrust_total_s"] for r in rows]),
            "llm_s": _quantiles(llm_all),
            "ragtrust_own_s": _quantiles(own),
            "overhead_vs_plain": {
                "median_of_ratios": round(statistics.median(o / p for o, p in zip(own, plain_all, strict=True)), 3),
                "ratio_of_sums": round(sum(own) / sum(plain_all), 3),
            },
            "own_share_of_total": round(sum(own) / sum(r["ragtrust_total_s"] for r in rows), 3),
            "stage_medians_s": {
                stage: round(statistics.median(r["stages_s"].get(stage, 0.0) for r in rows), 3)
                for stage in sorted({s for r in rows for s in r["stages_s"]})
            },
            "rows": rows,
        }
        store.close()
    text_out = json.dumps(result, indent=2)
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text_out + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=2))


if __name__ == "__main__":
    main()
