"""The training data of the NLI cross-encoder (:mod:`ragtrust.training.nli`): pairs read and derived.

* ``train/`` files of ``shared/data/nli`` except SICK (non-commercial licence), read by
  :func:`read_jsonl_pairs`;
* RAG-shaped pairs derived here (:func:`derive_rag_pairs`: a premise buried among unrelated
  distractor passages, a sentence against the same sentence with a number changed, a
  negated clause, an exception to a rule);
* when available, HaluEval dialogue/summarisation pairs (MIT, :func:`read_halueval`) trained
  with an entailment-vs-not loss (label :data:`NOT_ENTAILMENT`). HaluEval QA is never used:
  it is the held-out RAG-shaped test.

Example:
    >>> negate("Passwords are hashed with bcrypt.")
    'Passwords are not hashed with bcrypt.'
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LABELS: tuple[str, str, str] = ("entailment", "neutral", "contradiction")
LABEL_TO_ID = {name: i for i, name in enumerate(LABELS)}
#: label id used for pairs that only say "not entailment" (2-way data, HaluEval)
NOT_ENTAILMENT = 3

DEFAULT_TRAIN_FILES = ("lingnli.jsonl", "vitaminc.jsonl", "snli_dev.jsonl", "cad_snli.jsonl")


@dataclass
class TrainConfig:
    """Parameters of one training run (all recorded in ``train_config.json``)."""

    data_dir: str
    out_dir: str
    base_model: str = ""
    train_files: tuple[str, ...] = DEFAULT_TRAIN_FILES
    halueval_dir: str | None = None
    epochs: float = 3.0
    batch_size: int = 32
    max_len: int = 192
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup_frac: float = 0.06
    seed: int = 42
    val_frac: float = 0.02
    time_budget_min: float | None = None
    max_steps: int | None = None
    checkpoint_every_min: float = 10.0
    threads: int = 2
    device: str = "cpu"
    derived_context: int = 12000
    derived_numbers: int = 8000
    derived_unrelated: int = 8000
    derived_negation: int = 5000
    derived_clause: int = 8000
    derived_exception: int = 8000
    #: drop SNLI-family contradictions whose two sides share no content word (see
    #: ``is_scene_contradiction``)
    drop_scene_contradictions: bool = True
    #: warm start: an HF model folder of an earlier run (fresh optimizer and schedule)
    init_from: str | None = None
    halueval_summary_max_chars: int = 1400
    log_every: int = 50
    #: train on a data set built earlier by :func:`save_dataset` (``--data-file``) instead
    #: of building one from ``data_dir``
    data_file: str | None = None
    #: keep the base model's word-piece embeddings (``--freeze-word-embeddings``)
    freeze_word_embeddings: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Pair:
    """One training pair; ``label`` is 0..2, or ``NOT_ENTAILMENT`` for 2-way data."""

    premise: str
    hypothesis: str
    label: int
    source: str


def read_jsonl_pairs(path: Path) -> list[Pair]:
    """Read NLI pairs in the ``{premise, hypothesis, label, source}`` JSONL format."""
    pairs: list[Pair] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            label = str(row["label"])
            if label in LABEL_TO_ID:
                lab = LABEL_TO_ID[label]
            elif label == "not_entailment":
                lab = NOT_ENTAILMENT
            else:
                continue
            pairs.append(Pair(row["premise"], row["hypothesis"], lab, row.get("source", path.stem)))
    return pairs


_NUMBER = re.compile(r"(?<![\w.])(\d{1,4}(?:[.,]\d+)?)(?![\w.])")


def _change_number(sentence: str, rng: random.Random) -> str | None:
    matches = list(_NUMBER.finditer(sentence))
    if not matches:
        return None
    m = rng.choice(matches)
    text = m.group(1)
    if "." in text or "," in text:
        value = float(text.replace(",", ""))
        new = f"{value * rng.choice([0.5, 1.5, 2.0, 3.0]) + 1:.1f}"
    else:
        value = int(text)
        delta = rng.choice([1, 2, 3, 5, 10, 100]) if value < 1900 or value > 2100 else rng.randint(3, 40)
        new = str(value + delta if rng.random() < 0.6 or value <= delta else value - delta)
    if new == text:
        return None
    return sentence[: m.start(1)] + new + sentence[m.end(1) :]


# Rule-based negation of a declarative sentence: the first auxiliary or modal gets "not"
# (or loses it), "always" and "never" swap. Pattern -> replacement, tried in order.
_NEGATIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(must|should|can|will|may|would|could) not\b"), r"\1"),
    (re.compile(r"\b(cannot)\b"), "can"),
    (re.compile(r"\b(is|are|was|were|has|have|had) not\b"), r"\1"),
    (re.compile(r"\bnever\b"), "always"),
    (re.compile(r"\balways\b"), "never"),
    (re.compile(r"\b(must|should|will|may|would|could)\b"), r"\1 not"),
    (re.compile(r"\bcan\b"), "cannot"),
    (re.compile(r"\b(is|are|was|were)\b"), r"\1 not"),
)
# a sentence end: two lower-case letters before the stop (so "S. Purdum" or "U.S." do not split)
_SENTENCE_END = re.compile(r"(?<=[a-z]{2}[.!?])\s+(?=[A-Z])")


def negate(sentence: str) -> str | None:
    """Flip the polarity of the first negatable verb phrase; None when there is none."""
    for pattern, repl in _NEGATIONS:
        new, n = pattern.subn(repl, sentence, count=1)
        if n:
            return new
    return None


_CLAUSE_SPLIT = re.compile(r";\s+|,\s+(?:but|and|while|whereas)\s+")
_NEGATION_WORD = re.compile(r"\b(?:not|never|no|cannot|without)\b|n't\b", re.IGNORECASE)


def _clauses(premise: str) -> list[str]:
    """Independent pieces of a premise: its sentences, split again at "; " and ", but/and ..."."""
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(premise.strip()):
        pieces.extend(part.strip() for part in _CLAUSE_SPLIT.split(sentence))
    cleaned = []
    for piece in pieces:
        if len(piece) < 25 or len(piece.split()) < 5 or piece.endswith("?"):
            continue
        piece = piece[0].upper() + piece[1:]
        cleaned.append(piece if piece[-1] in ".!?" else piece + ".")
    return cleaned


def _edited_pairs(
    sentences: list[str],
    count: int,
    edit: Callable[[str, random.Random], str | None],
    rng: random.Random,
    make: Callable[[str, str, bool], Pair],
) -> list[Pair]:
    """``count`` pairs of a random sentence and its edited form (``make(s, edited, coin)``).

    Sentences the edit cannot change are redrawn, up to ``5 * count`` draws in all.
    """
    pairs: list[Pair] = []
    attempts = 0
    while len(pairs) < count and sentences and attempts < count * 5:
        attempts += 1
        sentence = rng.choice(sentences)
        edited = edit(sentence, rng)
        if edited is None or edited == sentence:
            continue
        pairs.append(make(sentence, edited, rng.random() < 0.5))
    return pairs


_STOPWORDS = frozenset(
    "a an the is are was were be been being of in on at to for with and or but not no by as it its "
    "this that these those there their his her he she they them some one two man woman men women "
    "person people".split()
)
_SNLI_SOURCES = ("snli", "cad_snli", "snli_dev")


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2 and w not in _STOPWORDS}


def is_scene_contradiction(pair: Pair) -> bool:
    """An SNLI-family contradiction whose premise and hypothesis share no content word.

    SNLI annotators assume both captions describe one photo, so "A cat sits on a mat" vs
    "A dog is hungry" is labelled contradiction. For a RAG answer checked against a passage
    such a hypothesis is unrelated (neutral); these pairs teach "no overlap means
    contradiction", so training drops them (about 2,600 of SNLI dev + CAD-SNLI).
    """
    return (
        pair.label == LABEL_TO_ID["contradiction"]
        and pair.source in _SNLI_SOURCES
        and not (_content_words(pair.premise) & _content_words(pair.hypothesis))
    )


def _exception_pairs(base: list[Pair], count: int, rng: random.Random) -> list[Pair]:
    """Premises that state a fact and deny another ("A; not X"), with several hypotheses.

    From one premise group of the training data (a premise A with an entailed hypothesis E
    and a neutral N and/or contradicting C one) the new premise is A joined to the negation
    of N or of C (both consistent with A). Against "A; not N": E and not-N are entailed, N
    and C contradicted. Against "A; not C": E and not-C are entailed, C contradicted, N stays
    neutral. A negation word in only one side is thus as often entailment as contradiction,
    and E, often a near copy of C with one entity changed, must be matched to the clause
    that supports it, not to the denied clause it resembles ("use A; never use B" vs "use A").
    """
    groups: dict[str, dict[int, str]] = {}
    for p in base:
        if p.label < 3 and len(p.premise) <= 250:
            groups.setdefault(p.premise, {}).setdefault(p.label, p.hypothesis)
    entailment, neutral, contradiction = (LABEL_TO_ID[name] for name in LABELS)
    usable: list[tuple[str, dict[int, str], list[int]]] = []
    for premise, group in groups.items():
        deniable = [label for label in (neutral, contradiction) if label in group and negate(group[label])]
        if entailment in group and deniable:
            usable.append((premise, group, deniable))
    pairs: list[Pair] = []
    for _ in range(count if usable else 0):
        premise, group, deniable = rng.choice(usable)
        target = rng.choice(deniable)
        denied = str(negate(group[target])).rstrip(".!?")
        joiner = rng.choice(("; ", ", but ", ". "))
        stem = premise.rstrip(".!?")
        if joiner == ". ":
            combined = f"{stem}. {denied[0].upper() + denied[1:]}."
        elif rng.random() < 0.5:
            combined = f"{stem}{joiner}{denied[0].lower() + denied[1:]}."
        else:
            combined = f"{denied}{joiner}{stem[0].lower() + stem[1:]}."
        # (hypothesis, label, weight); the denied clause's own hypothesis is contradicted
        choices = [(group[entailment], entailment, 4), (group[target], contradiction, 3), (denied + ".", entailment, 1)]
        other = contradiction if target == neutral else neutral
        if other in group:
            choices.append((group[other], other, 2 if other == contradiction else 1))
        hypothesis, label, _ = rng.choices(choices, weights=[c[2] for c in choices])[0]
        pairs.append(Pair(combined, hypothesis, label, "derived_exception"))
    return pairs


def derive_rag_pairs(base: list[Pair], cfg: TrainConfig, rng: random.Random) -> list[Pair]:
    """Derive RAG-shaped pairs from the sentence-level training data.

    * context: the premise is hidden among 1-2 premises of other pairs (different topics),
      so the model learns that extra, unrelated context keeps the original label;
    * numbers: a premise sentence vs itself (entailment) or with one number changed
      (contradiction), the signature of an in-place entity swap;
    * unrelated: a premise vs the hypothesis of another, random pair (neutral): an answer
      about something the passage does not mention;
    * negation: a premise sentence vs the same sentence with its polarity flipped
      (contradiction), the signature of a reversed rule;
    * clause: a multi-sentence premise vs one of its sentences or "; " halves (entailment):
      a restatement of part of a passage;
    * exception: a premise that states one fact and denies a related one, against either
      (see ``_exception_pairs``).
    """
    derived: list[Pair] = []
    pool = [p for p in base if p.label != NOT_ENTAILMENT and 40 <= len(p.premise) <= 400]
    for _ in range(cfg.derived_context):
        target = rng.choice(pool)
        context = [rng.choice(pool).premise for _ in range(rng.randint(1, 2))]
        context = [c for c in context if c != target.premise]
        context.insert(rng.randint(0, len(context)), target.premise)
        derived.append(Pair(" ".join(context), target.hypothesis, target.label, "derived_context"))
    numeric = [p.premise for p in pool if _NUMBER.search(p.premise)]
    contradiction, entailment = LABEL_TO_ID["contradiction"], LABEL_TO_ID["entailment"]
    derived += _edited_pairs(
        numeric,
        cfg.derived_numbers,
        _change_number,
        rng,
        # half contradictions (a number changed), half the sentence against itself
        lambda s, edited, coin: Pair(s, edited if coin else s, contradiction if coin else entailment, "derived_number"),
    )
    for _ in range(cfg.derived_unrelated):
        target, other = rng.choice(pool), rng.choice(base)
        if other.premise != target.premise:
            derived.append(Pair(target.premise, other.hypothesis, LABEL_TO_ID["neutral"], "derived_unrelated"))
    short = [p.premise for p in pool if len(p.premise) <= 250]
    derived += _edited_pairs(
        short,
        cfg.derived_negation,
        lambda s, _rng: negate(s),
        rng,
        # either side may carry the negation
        lambda s, edited, coin: (
            Pair(s, edited, contradiction, "derived_negation")
            if coin
            else Pair(edited, s, contradiction, "derived_negation")
        ),
    )
    if cfg.derived_clause:
        # Half of the clause pairs come from premises where another clause carries a
        # negation the chosen one lacks ("use A; never use B" -> "use A"): a negation word
        # in only one side must not by itself mean contradiction (the negation pairs above
        # would otherwise teach exactly that shortcut).
        split = {}
        for premise in dict.fromkeys(p.premise for p in base):
            pieces = _clauses(premise)
            if len(pieces) >= 2:
                split[premise] = pieces
        plain = list(split)
        negated = [
            (premise, [c for c in pieces if not _NEGATION_WORD.search(c)])
            for premise, pieces in split.items()
            if any(_NEGATION_WORD.search(c) for c in pieces) and not all(_NEGATION_WORD.search(c) for c in pieces)
        ]
        for k in range(cfg.derived_clause if plain else 0):
            if k % 2 and negated:
                premise, choices = rng.choice(negated)
            else:
                premise = rng.choice(plain)
                choices = split[premise]
            derived.append(Pair(premise, rng.choice(choices), LABEL_TO_ID["entailment"], "derived_clause"))
    derived += _exception_pairs(base, cfg.derived_exception, rng)
    return derived


def read_halueval(directory: Path, cfg: TrainConfig) -> list[Pair]:
    """HaluEval dialogue and (short) summarisation pairs as entailment vs not-entailment."""
    pairs: list[Pair] = []
    dialogue = directory / "dataset_halueval_dialogue.jsonl"
    if dialogue.exists():
        for line in dialogue.open(encoding="utf-8"):
            row = json.loads(line)
            premise = row["knowledge"]
            pairs.append(Pair(premise, row["right_response"], LABEL_TO_ID["entailment"], "halueval_dialogue"))
            pairs.append(Pair(premise, row["hallucinated_response"], NOT_ENTAILMENT, "halueval_dialogue"))
    summary = directory / "dataset_halueval_summarization.jsonl"
    if summary.exists():
        for line in summary.open(encoding="utf-8"):
            row = json.loads(line)
            document = row["document"]
            if len(document) > cfg.halueval_summary_max_chars:
                continue
            pairs.append(Pair(document, row["right_summary"], LABEL_TO_ID["entailment"], "halueval_summary"))
            pairs.append(Pair(document, row["hallucinated_summary"], NOT_ENTAILMENT, "halueval_summary"))
    return pairs


#: the fields of :class:`TrainConfig` that decide what :func:`build_dataset` returns
DATA_FIELDS = (
    "data_dir",
    "train_files",
    "halueval_dir",
    "seed",
    "val_frac",
    "derived_context",
    "derived_numbers",
    "derived_unrelated",
    "derived_negation",
    "derived_clause",
    "derived_exception",
    "drop_scene_contradictions",
    "halueval_summary_max_chars",
)


def data_recipe(cfg: TrainConfig) -> dict[str, Any]:
    """What :func:`build_dataset` reads from ``cfg`` (the header of a saved data set).

    The HaluEval folder is recorded by name: it sits inside an installed package, whose
    absolute path says nothing about the data and differs between machines.
    """
    recipe = {name: getattr(cfg, name) for name in DATA_FIELDS}
    if cfg.halueval_dir:
        recipe["halueval_dir"] = Path(cfg.halueval_dir).name
    return recipe


def save_dataset(cfg: TrainConfig, path: str | Path) -> dict[str, int]:
    """Build the data set of ``cfg`` and write it (train and validation split) to ``path``; the counts."""
    from ragtrust.training.loop import write_prepared

    train, val, counts = build_dataset(cfg)
    rows = (
        {"premise": p.premise, "hypothesis": p.hypothesis, "label": p.label, "source": p.source, "split": split}
        for split, part in (("train", train), ("val", val))
        for p in part
    )
    write_prepared(path, "nli", data_recipe(cfg), rows)
    return {"train": len(train), "val": len(val)}


def load_dataset(path: str | Path) -> tuple[list[Pair], list[Pair], dict[str, int], dict[str, Any]]:
    """A data set written by :func:`save_dataset`: (train, val, counts, recipe)."""
    from ragtrust.errors import InputError
    from ragtrust.training.loop import read_prepared

    recipe, rows = read_prepared(path, "nli")
    train: list[Pair] = []
    val: list[Pair] = []
    for n, row in enumerate(rows, start=2):  # line 1 is the header
        try:
            pair = Pair(str(row["premise"]), str(row["hypothesis"]), int(row["label"]), str(row["source"]))
            split = row["split"]
        except KeyError as exc:
            raise InputError(f"{path}:{n}: a prepared NLI row needs premise, hypothesis, label, source, split") from exc
        except (TypeError, ValueError) as exc:
            raise InputError(f"{path}:{n}: the label of a prepared NLI row is not a number ({exc})") from exc
        if not 0 <= pair.label <= NOT_ENTAILMENT or split not in ("train", "val"):
            raise InputError(f"{path}:{n}: label {pair.label} / split {split!r} (want 0-{NOT_ENTAILMENT} / train, val)")
        (val if split == "val" else train).append(pair)
    counts: dict[str, int] = {}
    for p in train:
        counts[p.source] = counts.get(p.source, 0) + 1
    return train, val, counts, recipe


def build_dataset(cfg: TrainConfig) -> tuple[list[Pair], list[Pair], dict[str, int]]:
    """Load, derive, shuffle and split the training data; returns (train, val, counts)."""
    rng = random.Random(cfg.seed)
    base: list[Pair] = []
    for name in cfg.train_files:
        base.extend(read_jsonl_pairs(Path(cfg.data_dir) / "train" / name))
    if cfg.drop_scene_contradictions:
        base = [p for p in base if not is_scene_contradiction(p)]
    derived = derive_rag_pairs(base, cfg, rng)
    halu = read_halueval(Path(cfg.halueval_dir), cfg) if cfg.halueval_dir else []
    pairs = base + derived + halu
    rng.shuffle(pairs)
    # at least 500 validation pairs, but never more than a fifth of a (small) dataset
    n_val = min(max(500, int(len(pairs) * cfg.val_frac)), len(pairs) // 5)
    val, train = pairs[:n_val], pairs[n_val:]
    counts: dict[str, int] = {}
    for p in train:
        counts[p.source] = counts.get(p.source, 0) + 1
    return train, val, counts
