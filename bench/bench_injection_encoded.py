"""Encoded injections: what decoding base64, hex and percent-encoded runs buys, and what it costs on clean text.

Usage:
    python bench/bench_injection_encoded.py --data-dir ../shared/data [--split calib|eval] [--out FILE]

``calib`` (the default) reads the injection calibration documents (OWASP calibration chunks,
TruthfulQA and FEVER calibration splits) and the attack generator's *development* injection
families; ``eval`` reads the evaluation documents and the *held-out* families. Each poisoned
document is the clean one with a payload appended; the payload is cut out and appended
again, encoded (base64, hex, percent-encoding, ROT13, backwards, HTML character references,
upside-down letters, Morse code without punctuation, base32, byte lists, escapes, UTF-16 hex,
dashed base64, Caesar shift 3, Atbash, letters split apart or in small capitals), with nothing
around it. Every set is scored
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
from collections import Counter
from pathlib import Path
from typing import Any

from bench_report import emit  # bench/, beside this script

from ragtrust.documents import Document
from ragtrust.record import versions
from ragtrust.screening import encoded, injection
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
#: small capitals: the letter styles that are neither Braille nor regional indicators
SMALL_CAPS = str.maketrans(
    {v: k for k, v in injection._LETTER_STYLES.items() if not "\u2800" <= k <= "\u28ff" and ord(k) < 0x1F1E6}
)


LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: not decoded (see docs/benchmarks.md): kept to show what that costs
CAESAR_3 = str.maketrans(LETTERS, LETTERS[3:26] + LETTERS[:3] + LETTERS[29:] + LETTERS[26:29])


def _chunks(text: str, n: int) -> list[str]:
    return [text[i : i + n] for i in range(0, len(text), n)]


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
    "base32": lambda s: base64.b32encode(s.encode("utf-8")).decode("ascii"),
    "decimal-bytes": lambda s: " ".join(str(b) for b in s.encode("utf-8")),
    "binary-bytes": lambda s: " ".join(f"{b:08b}" for b in s.encode("utf-8")),
    "0x-bytes": lambda s: " ".join(f"0x{b:02x}" for b in s.encode("utf-8")),
    "unicode-escapes": lambda s: "".join(f"\\u{ord(c):04x}" for c in s),
    "utf16-hex": lambda s: s.encode("utf-16-be").hex(),
    "base64-dashed": lambda s: "-".join(_chunks(base64.b64encode(s.encode("utf-8")).decode("ascii"), 12)),
    "caesar-3": lambda s: s.translate(CAESAR_3),
    "atbash": lambda s: s.translate(encoded._SUBSTITUTIONS["atbash"]),
    "spaced-letters": lambda s: "   ".join(" ".join(w) for w in s.split()),
    "dotted-letters": lambda s: " ".join(".".join(w) for w in s.split()),
    "emoji-letters": lambda s: " ".join("\U0001f41d".join(w) for w in s.split()),
    "small-caps": lambda s: s.lower().translate(SMALL_CAPS),
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
        "clean_decoded_runs_by_encoding": dict(
            Counter(r.encoding for d in clean for r in decoded_runs(d.text)).most_common()
        ),
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
