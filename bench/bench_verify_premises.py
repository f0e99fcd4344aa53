"""What Stage 2's nearest-premise bound loses: answer-sentence support with every window vs the m nearest (issue 20).

Usage:
    python bench/bench_verify_premises.py --store runs/owasp-store --k 5 --n 36 --m 1 2 3 \
        --out runs/bench/verify_premises.json
    python bench/bench_verify_premises.py --store runs/owasp-store --k 5 --n 36 --m 3 --premise-tokens 64 96 128

For each bundled OWASP question the gate answers from the store (extractive writer; Stage 1
reduced to the structural signal so that no retrieved document is withheld and the run is
fast), then :class:`~ragtrust.verification.FactualityVerifier` scores the answer against the
top-K documents with ``max_premises=None`` (every sentence against every window of every
document: the reference grid) and with each ``--m``; with ``--premise-tokens T``, also each m
over premise windows of at most T tokens (``FactualityVerifier(premise_tokens=T)``: shorter
pairs, each cheaper to score). Reported per setting: NLI pairs per query (median), the
verify time per query (median, the NLI pair cache off so every pair is run), sentences whose
``supported`` flag changes against the grid, the largest support drop, how many sentences drop
by more than 0.05 and how many gain more than 0.05 (a shorter window can also raise a support),
and the factuality F (median, largest change).

Agreement with the grid is not accuracy, so each bounded setting is also scored on labelled
sentences against the same documents: the answer's own sentences (taken verbatim from them:
should be supported), their negations (``ragtrust.eval.attack_edits.negate_statement``:
should not be) and the previous question's answer sentences (about another topic: should
not be). Reported: the share supported of each kind and the ROC-AUC of the support, own
sentences against each kind of negative. One JSON object with the machine, load and commit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from importlib import resources
from pathlib import Path
from typing import Any


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def _labelled(row: dict[str, Any]) -> dict[str, Any]:
    """Share supported per kind of labelled sentence, and ROC-AUC of own sentences vs each negative kind."""
    if not row["own"]:
        return {}
    from ragtrust.eval.metrics import roc_auc

    out: dict[str, Any] = {"labelled_sentences": {k: len(row[k]) for k in ("own", "negated", "other")}}
    for kind in ("own", "negated", "other"):
        out[f"supported_share_{kind}"] = round(sum(v >= 0.5 for v in row[kind]) / max(1, len(row[kind])), 3)
    for kind in ("negated", "other"):
        labels = [1] * len(row["own"]) + [0] * len(row[kind])
        out[f"auc_own_vs_{kind}"] = round(roc_auc(labels, [*row["own"], *row[kind]]), 4) if row[kind] else None
    return out


def main() -> None:
    """Print (and optionally write) the per-m comparison with the all-pairs grid."""
    from ragtrust.config import load_settings
    from ragtrust.eval.attack_edits import negate_statement
    from ragtrust.ingest.store import Store
    from ragtrust.models.embedder import default_embedder
    from ragtrust.models.nli import default_nli
    from ragtrust.pipeline import TrustGate
    from ragtrust.verification import FactualityVerifier

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, help="a store of the OWASP cheat sheets (ragtrust ingest)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--n", type=int, default=36, help="questions")
    ap.add_argument(
        "--questions",
        choices=("owasp", "store"),
        default="owasp",
        help="the 36 bundled OWASP questions, or questions written from the store's section headings "
        "(bench/load.py --questions store: questions no setting was chosen on)",
    )
    ap.add_argument("--m", type=int, nargs="+", default=[1, 2, 3], help="max_premises values to compare")
    ap.add_argument("--premise-tokens", type=int, nargs="*", default=[], help="premise window sizes (tokens) to add")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    if a.k < 1 or a.n < 1 or any(m < 1 for m in a.m) or any(t < 32 for t in a.premise_tokens):
        ap.error("--k, --n and --m must be at least 1, --premise-tokens at least 32")
    if not Path(a.store).is_dir():
        ap.error(f"--store {a.store}: no such folder (build it with `ragtrust ingest`)")
    load = os.getloadavg()
    started = time.perf_counter()
    settings = load_settings(
        env={},
        overrides={
            "retrieval": {"top_k": a.k},
            "screening": {"signals": ["structural"]},
            "models": {"nli_cache_size": 0},
        },
    )
    embedder = default_embedder(settings)
    store = Store.open(a.store, embedder, settings=settings, read_only=True)
    nli = default_nli(settings)
    gate = TrustGate.from_settings(settings, store=store, nli=nli, embedder=embedder)
    gate.warm_up()
    if a.questions == "store":
        from load import store_questions  # bench/load.py, beside this script

        questions = store_questions(Path(a.store))[: a.n]
    else:
        text = resources.files("ragtrust.data").joinpath("owasp_questions.jsonl").read_text(encoding="utf-8")
        questions = [json.loads(line)["question"] for line in text.splitlines() if line.strip()][: a.n]
    values: list[tuple[int | None, int | None]] = [(None, None), *((m, None) for m in a.m)]
    values += [(m, t) for t in a.premise_tokens for m in a.m]

    def name(m: int | None, t: int | None) -> str:
        return str(m) if t is None else f"{m} (windows <= {t} tokens)"

    rows: dict[str, dict[str, Any]] = {
        name(m, t): {"pairs": [], "flips": 0, "drops": [], "f": [], "s": [], "own": [], "negated": [], "other": []}
        for m, t in values
    }
    previous: list[str] = []
    answered = sentences = 0
    for question in questions:
        verdict = gate.ask(question)
        docs, _ = gate.retrieve(question)
        if not verdict.answer.strip():
            continue
        answered += 1
        grid = None
        own = FactualityVerifier(nli=nli).sentences(verdict.answer)
        negated = [n for n in (negate_statement(x) for x in own) if n not in own]
        for m, t in values:
            verifier = FactualityVerifier(nli=nli, max_premises=m, premise_tokens=t)
            before = nli.pairs_scored + nli.cache_hits
            t0 = time.perf_counter()
            report = verifier.verify(verdict.answer, docs)
            row = rows[name(m, t)]
            row["s"].append(time.perf_counter() - t0)
            row["pairs"].append(nli.pairs_scored + nli.cache_hits - before)
            row["f"].append(report.factuality)
            if grid is None:
                grid = report
                sentences += len(report.sentences)
                continue
            labelled = verifier.verify([*own, *negated, *previous], docs).sentences
            row["own"].extend(x.support for x in labelled[: len(own)])
            row["negated"].extend(x.support for x in labelled[len(own) : len(own) + len(negated)])
            row["other"].extend(x.support for x in labelled[len(own) + len(negated) :])
            for full, near in zip(grid.sentences, report.sentences, strict=True):
                row["flips"] += full.supported != near.supported
                row["drops"].append(full.support - near.support)
        previous = own
    grid_f = rows[name(None, None)]["f"]

    def f_change(f: list[float]) -> float:
        return round(max((abs(x - y) for x, y in zip(f, grid_f, strict=True)), default=0.0), 4)

    result: dict[str, Any] = {
        "command": "python bench/bench_verify_premises.py "
        + f"--store {a.store} --k {a.k} --n {a.n} --questions {a.questions} --m {' '.join(map(str, a.m))}"
        + (f" --premise-tokens {' '.join(map(str, a.premise_tokens))}" if a.premise_tokens else ""),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}",
        "load_average_at_start": load,
        "commit": _commit(),
        "questions_answered": answered,
        "sentences": sentences,
        "max_premises": {
            key: {
                "nli_pairs_median": statistics.median(row["pairs"]) if row["pairs"] else 0,
                "verify_s_median": round(statistics.median(row["s"]), 3) if row["s"] else None,
                "supported_changed": row["flips"],
                "support_drop_max": round(max(row["drops"], default=0.0), 4),
                "support_drops_over_0.05": sum(d > 0.05 for d in row["drops"]),
                "support_gains_over_0.05": sum(d < -0.05 for d in row["drops"]),
                "factuality_median": round(statistics.median(row["f"]), 4) if row["f"] else None,
                "factuality_change_max": f_change(row["f"]),
                **_labelled(row),
            }
            for key, row in rows.items()
        },
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    out = json.dumps(result, indent=2)
    print(out)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(out + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
