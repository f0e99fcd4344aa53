"""Encoded injections: what decoding base64, hex and percent-encoded runs buys, and what it costs on clean text.

Usage:
    python bench/bench_injection_encoded.py --data-dir ../shared/data [--split calib|eval] [--out FILE]

``calib`` (the default) reads the injection calibration documents (OWASP calibration chunks,
TruthfulQA and FEVER calibration splits) and the attack generator's *development* injection
families; ``eval`` reads the evaluation documents and the *held-out* families. Each poisoned
document is the clean one with a payload appended; the payload is cut out and appended
again, encoded (base64, hex, percent-encoding, ROT13, backwards, HTML character references,
upside-down letters, Morse code without punctuation), with nothing around it. Every set is scored
by the injection signal at the model's calibrated threshold with ``decode_encoded`` off and
on: clean documents flagged per source (the false-positive cost), and injections caught per
encoding (the plain payload as the reference).

Prints one JSON object (and writes it to ``--out``).
"""

from __future__ import annotations

import argparse
import base64
import codecs
import time
import urllib.parse
from pathlib import Path
from typing import Any

from bench_report import emit  # bench/, beside this script

from ragtrust.documents import Document
from ragtrust.record import versions
from ragtrust.screening import encoded
from ragtrust.screening.encoded import decoded_runs
from ragtrust.screening.injection import InjectionSignal
from ragtrust.training.injection_eval import (
    calibration_documents,
    evaluation_documents,
    injection_probabilities,
    poison_with_families,
)

#: the inverse of the decoder's tables (letters the decoder maps back; Morse without punctuation)
UPSIDE_DOWN = str.maketrans({v: k for k, v in reversed(encoded._UPSIDE_DOWN.items()) if len(v) == 1})
MORSE = {letter: code for code, letter in encoded._MORSE_CODE.items() if letter.isalnum()}

ENCODERS = {
    "plain": lambda s: s,
    "base64": lambda s: base64.b64encode(s.encode("utf-8")).decode("ascii"),
    "hex": lambda s: s.encode("utf-8").hex(),
    "percent": lambda s: urllib.parse.quote(s),
    "rot13": lambda s: codecs.encode(s, "rot13"),
    "reversed": lambda s: s[::-1],
    "html": lambda s: "".join(f"&#{ord(c)};" for c in s),
    "upside-down": lambda s: s.translate(UPSIDE_DOWN)[::-1],
    "morse": lambda s: " / ".join(" ".join(MORSE[c] for c in w.lower() if c in MORSE) for w in s.split()),
}


def payloads(clean: list[Document], families: str, seed: int) -> list[tuple[Document, str]]:
    """``(clean document, appended payload)`` for every document the families poisoned by appending."""
    poisoned, _ = poison_with_families(clean, families, seed)
    by_id = {d.id: d for d in clean}
    out = []
    for p in poisoned:
        base = by_id.get(p.id)
        if base is not None and p.text.startswith(base.text) and p.text[len(base.text) :].strip():
            out.append((base, p.text[len(base.text) :].strip()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--split", choices=("calib", "eval"), default="calib")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    started = time.monotonic()
    sources = (calibration_documents if args.split == "calib" else evaluation_documents)(args.data_dir)
    families = "development" if args.split == "calib" else "held_out"
    clean = [d for docs in sources.values() for d in docs]
    attacks = payloads(clean, families, args.seed)
    signal = InjectionSignal()
    threshold, origin = signal.resolved_threshold()
    report: dict[str, Any] = {
        "bench": "injection_encoded",
        "command": f"python bench/bench_injection_encoded.py --data-dir {args.data_dir} --split {args.split}"
        f" --seed {args.seed}",
        "split": args.split,
        "families": families,
        "threshold": threshold,
        "threshold_source": origin,
        "clean_documents": {name: len(docs) for name, docs in sources.items()},
        "clean_documents_with_a_decoded_run": sum(1 for d in clean if decoded_runs(d.text)),
        "injections": len(attacks),
    }
    for decode in (False, True):
        signal.decode_encoded = decode
        key = "decoding_on" if decode else "decoding_off"
        flagged: dict[str, Any] = {}
        for name, docs in sources.items():
            probs = injection_probabilities(signal, docs)
            hits = sum(1 for p in probs if p >= threshold)
            flagged[name] = {"flagged": hits, "rate": round(hits / max(1, len(docs)), 4)}
        caught: dict[str, float] = {}
        for encoding, encode in ENCODERS.items():
            docs = [Document(id=f"{c.id}~{encoding}", text=f"{c.text}\n\n{encode(p)}") for c, p in attacks]
            probs = injection_probabilities(signal, docs)
            caught[encoding] = round(sum(1 for p in probs if p >= threshold) / max(1, len(probs)), 4)
        report[key] = {"clean_flagged": flagged, "injections_caught": caught}
    report["seconds"] = round(time.monotonic() - started, 1)
    report["model"] = signal._model().model_id
    report["versions"] = versions("ragtrust", "onnxruntime", "tokenizers", "python", "platform")
    emit(report, args.out)


if __name__ == "__main__":
    main()
