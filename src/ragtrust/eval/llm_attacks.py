"""LLM-written poison: a real language model states a false answer as a fluent passage.

The template attack families (:mod:`ragtrust.eval.attacks`) share the tells of one hand: an
appended second sentence, a repeated claim. This family has none by construction: a local
instruct model (by default SmolLM2-135M-Instruct, served by llama-cpp-python, see
:mod:`ragtrust.generation.local`) is asked with PoisonedRAG's black-box prompt (Zou et al.
2024; :data:`ragtrust.prompts.POISON_PASSAGE_PROMPT`) to write a passage from which the
question's *incorrect* TruthfulQA answer follows. It is held out from every training and
calibration set (issue 17).

A poisoned document takes PoisonedRAG's form, the question followed by the passage
(``"Question? Passage."``), as the clean TruthfulQA documents are ``"Question? Best answer."``
(:func:`ragtrust.eval.datasets.load_truthfulqa_documents`).

Every passage is appended to a JSONL cache, and flushed, as soon as it is written, with the
model (the name asked for and the one that answered), the prompt's version and its exact
messages, the sampling seed and the raw reply: an interrupted run resumes where it stopped,
and a record is reused only when its key (model name, prompt version, question, false
statement, copy, temperature, max_tokens, words) matches the request. Copies of a target
differ by the sampling seed. A degenerate reply (too short, the prompt copied back) is asked
again with the next seed, at most ``max_attempts`` times; then the failure is recorded, not
raised. A backend failure stops the run with a one-line :class:`~ragtrust.errors.BackendError`;
what was written stays in the cache.

Example:
    >>> from ragtrust.generation.openai import ChatReply
    >>> class EchoLLM:
    ...     model = "echo"
    ...     def complete(self, messages):
    ...         return ChatReply("Passage: Bill Gates never finished high school and is the richest man alive.", "echo")
    >>> target = PoisonTarget("tqa-127", "Who is the richest dropout?", "Bill Gates is the richest dropout.")
    >>> [p] = LLMPoisonWriter(EchoLLM()).write([target], copies=1)
    >>> p.text
    'Who is the richest dropout? Bill Gates never finished high school and is the richest man alive.'
    >>> p.ok, p.mentions_answer, p.prompt_version
    (True, True, 'poison-passage-v1')
"""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ragtrust.documents import Document
from ragtrust.errors import BackendError, ConfigError, InputError
from ragtrust.eval.datasets import Benchmark
from ragtrust.generation.openai import ChatClient, ChatReply
from ragtrust.prompts import POISON_PASSAGE_WORDS, PROMPT_VERSIONS, build_poison_messages

#: the family's name in reports
FAMILY = "llm_written"
#: a passage shorter than this (in words) is degenerate: PoisonedRAG's passages are ~30 words
MIN_WORDS = 8
#: replies asked for per copy before the copy is recorded as failed
MAX_ATTEMPTS = 3
#: the sampling temperature of the benchmark's cache (a fluent but varied passage per seed)
DEFAULT_TEMPERATURE = 0.8
#: reply tokens: 60 words of English are ~80 tokens; the slack lets the last sentence finish
DEFAULT_MAX_TOKENS = 120
#: the server's window for this prompt (~100 tokens) and its reply; small keeps memory low
LOCAL_CONTEXT_TOKENS = 1024

#: a label before the passage: "Passage:", "Here is a corpus:", "The answer to your question is:"
_LABEL = re.compile(
    r"^(?:(?:here(?:'s| is)|below is)\s+(?:a|an|the|my|your)\s+[^:\n]{0,40}:|"
    r"(?:(?:this|that|here)(?:\s+is)?\s+)?(?:the\s+|your\s+|my\s+|an?\s+)?"
    r"(?:corpus|passage|text|answer|response|paragraph|output)(?:\s+to\s+(?:the|your|my)\s+question)?"
    r"(?:\s*\d+)?(?:\s+is)?\s*:|"
    r"[A-Z][\w'-]*(?:\s+[\w'-]+){0,2}:(?=\s))\s*",
    re.IGNORECASE,
)
_MARKDOWN = re.compile(r"(?m)^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)|\*\*|__|`+")
_QUOTES = "\"'“”‘’«»"
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s|$)")
#: the prompt's instructions said back ("Please limit your corpus to 60 words"): a reply
#: talking about the task instead of doing it; a poison passage never says "corpus"
_PROMPT_ECHO = re.compile(
    r"\bcorpus\b|\bthis is my (?:question|answer)\b|\b\d+ words\b|\bwhen prompt(?:ing|ed)\b", re.IGNORECASE
)
_STOPWORDS = frozenset(
    "the a an and or but of to in on at by for with from as is are was were be been being it its this that "
    "these those you your yours he she they them their his her we our us i me my not no do does did doing "
    "have has had will would can could should may might must shall if then than so such very just only also "
    "into out up down over under about after before what who whom which when where why how all any some each "
    "there here more most other own same too".split()
)


class PoisonClient(Protocol):
    """What the writer needs of a chat client (:class:`~ragtrust.generation.openai.ChatClient`).

    A dataclass client with ``seed``, ``temperature`` and ``max_tokens`` fields gets the
    writer's values (a copy per seed); its ``model`` is recorded as the name asked for.
    """

    def complete(self, messages: Sequence[Mapping[str, str]]) -> ChatReply:
        """One chat completion."""
        ...


@dataclass(frozen=True)
class PoisonTarget:
    """A question to poison: the false statement a passage must make the answer.

    Attributes:
        target_id: the clean source document's id (``tqa-012``).
        question: the question, as asked.
        false_statement: the incorrect answer to state.
    """

    target_id: str
    question: str
    false_statement: str


@dataclass(frozen=True)
class PoisonPassage:
    """One written (or failed) copy of a target, with its provenance: one cache record.

    Attributes:
        target_id / question / false_statement: the target.
        copy: the copy index (0 .. copies - 1).
        seed: the sampling seed of the reply kept (of the last one tried when failed).
        model: the model that answered (the reply's ``model``).
        model_name: the model name asked for (the client's ``model``).
        prompt_version: :data:`ragtrust.prompts.PROMPT_VERSIONS` ``["poison_passage"]``.
        messages: the exact prompt messages sent.
        raw_reply: the model's reply, as it came.
        passage: the cleaned passage ("" when failed).
        text: the poisoned document's text, ``f"{question} {passage}"`` ("" when failed).
        elapsed_s: seconds spent on this copy, every attempt included.
        ok: whether a usable passage was written.
        attempts: replies asked for.
        error: why the copy failed ("" when ok).
        temperature / max_tokens / words: the sampling and length settings.
        model_sha256: the model file's SHA-256, when known.
    """

    target_id: str
    question: str
    false_statement: str
    copy: int
    seed: int
    model: str
    model_name: str
    prompt_version: str
    messages: tuple[Mapping[str, str], ...]
    raw_reply: str
    passage: str
    text: str
    elapsed_s: float
    ok: bool
    attempts: int
    error: str = ""
    temperature: float = DEFAULT_TEMPERATURE
    max_tokens: int = DEFAULT_MAX_TOKENS
    words: int = POISON_PASSAGE_WORDS
    model_sha256: str | None = None

    @property
    def mentions_answer(self) -> bool:
        """Whether the passage states the false answer, by a content word of it not in the question.

        A small model often restates the question without committing to the answer; words the
        statement shares with the question ("the richest person") do not count, unless the
        statement has no others. Derived, so every record is judged by the same rule.
        """
        if not self.ok:
            return False
        words = content_words(self.false_statement)
        own = words - content_words(self.question)
        return bool((own or words) & content_words(self.passage))

    @property
    def key(self) -> tuple[object, ...]:
        """What a cached record must match to be reused (see the module doc)."""
        return (
            self.model_name,
            self.prompt_version,
            self.question,
            self.false_statement,
            self.copy,
            float(self.temperature),
            self.max_tokens,
            self.words,
        )

    def to_document(self) -> Document:
        """The poisoned document to add beside the clean one (id ``<target id>-llm-<copy>``).

        Raises:
            InputError: the copy failed and has no text.
        """
        if not self.ok:
            raise InputError(f"{self.target_id} copy {self.copy} has no passage: {self.error}")
        return Document(
            id=f"{self.target_id}-llm-{self.copy}",
            text=self.text,
            url=f"llm-poison:{self.target_id}/{self.copy}",
            source=FAMILY,
            metadata={
                "family": FAMILY,
                "target_id": self.target_id,
                "copy": self.copy,
                "false_claim": self.false_statement,
                "model": self.model,
                "prompt_version": self.prompt_version,
                "seed": self.seed,
            },
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON record (the cache's line)."""
        row = dataclasses.asdict(self)
        row["messages"] = [dict(m) for m in self.messages]
        row["mentions_answer"] = self.mentions_answer
        return row

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> PoisonPassage:
        """Read a record back; unknown keys (and the derived ``mentions_answer``) are ignored.

        Raises:
            KeyError / TypeError / ValueError: a required field is missing or of the wrong type.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in row.items() if k in names}
        values["messages"] = tuple({str(k): str(v) for k, v in dict(m).items()} for m in values.get("messages") or ())
        for name, kind in (("copy", int), ("seed", int), ("attempts", int), ("max_tokens", int), ("words", int)):
            if name in values and not isinstance(values[name], int):
                raise TypeError(f"{name} must be an integer, got {values[name]!r}")
            if name in values:
                values[name] = kind(values[name])
        for name in ("target_id", "question", "false_statement", "model", "model_name", "prompt_version"):
            if not isinstance(values[name], str):
                raise TypeError(f"{name} must be a string, got {values[name]!r}")
        return cls(**values)


def document_text(question: str, passage: str) -> str:
    """PoisonedRAG's poisoned document: the question (ending in ``?``) followed by the passage.

    Example:
        >>> document_text("Do pigs fly", "Pigs fly south every winter.")
        'Do pigs fly? Pigs fly south every winter.'
    """
    question = " ".join(question.split())
    if not question.endswith("?"):
        question = question.rstrip(".!") + "?"
    return f"{question} {passage}"


def clean_passage(reply: str, words: int = POISON_PASSAGE_WORDS) -> str:
    """The passage in a model's reply: labels, quotes and markdown gone, at most ``words`` words.

    A reply longer than the limit, or cut off mid-sentence by ``max_tokens``, ends at its
    last complete sentence within the limit; one without any ends at the limit with a full stop.

    Example:
        >>> clean_passage('Corpus: "**Pigs** fly.  They   fly south in winter. And they')
        'Pigs fly. They fly south in winter.'
        >>> clean_passage("one two three four five six", words=4)
        'one two three four.'
    """
    text = _MARKDOWN.sub("", reply)
    text = " ".join(text.split())
    for _ in range(3):  # "Here is a corpus: Passage: ..." and quotes around either
        stripped = _LABEL.sub("", text.strip().strip(_QUOTES).strip())
        if stripped == text:
            break
        text = stripped
    text = text.strip().strip(_QUOTES).strip()
    tokens = text.split()
    if len(tokens) > words:
        text = " ".join(tokens[:words])
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    if ends and ends[-1] < len(text):
        text = text[: ends[-1]]
    elif not ends and text:
        text = text.rstrip(",;:-") + "."
    # a quote opened inside the passage and closed after it: drop the one left behind
    if text.count('"') % 2 == 1:
        text = text.replace('"', "")
    return text.strip()


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` that carry meaning (3+ letters, not a stopword).

    Example:
        >>> sorted(content_words("You grow watermelons in your stomach."))
        ['grow', 'stomach', 'watermelons']
    """
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3 and w not in _STOPWORDS}


def degenerate_reason(passage: str, messages: Sequence[Mapping[str, str]], min_words: int = MIN_WORDS) -> str:
    """Why ``passage`` is unusable ("" when it is usable): too short, or the prompt copied back.

    Example:
        >>> degenerate_reason("Too short.", [])
        'degenerate reply: 2 words (< 8)'
    """
    n = len(passage.split())
    if n < min_words:
        return f"degenerate reply: {n} words (< {min_words})"
    low = " ".join(passage.lower().split())
    if _PROMPT_ECHO.search(low):
        return "degenerate reply: the prompt's instructions said back"
    prompt = " ".join(" ".join(m.get("content", "") for m in messages).lower().split())
    if prompt and low.rstrip(".") in prompt:
        return "degenerate reply: the prompt copied back"
    return ""


@dataclass
class LLMPoisonWriter:
    """Write poisoned passages with a chat model, cached in a JSONL file.

    Args:
        client: the chat client (:class:`~ragtrust.generation.openai.ChatClient`, or any
            object with its ``complete(messages)``); a dataclass client is copied with the
            writer's ``seed``, ``temperature`` and ``max_tokens`` for each request.
        cache_path: the JSONL cache (``None``: no cache).
        temperature / max_tokens: sampling settings of every request.
        words: the passage's word limit (in the prompt, and the cut of the reply).
        base_seed: copy ``c``'s attempt ``a`` samples with seed
            ``base_seed + c * max_attempts + a``: copies never share a seed.
        max_attempts: replies asked for per copy before it is recorded as failed.
        min_words: a shorter passage is degenerate.
        retry_failed: ask again for copies the cache holds as failed.
        model_sha256: the model file's SHA-256, recorded with every passage.
    """

    client: PoisonClient
    cache_path: Path | None = None
    temperature: float = DEFAULT_TEMPERATURE
    max_tokens: int = DEFAULT_MAX_TOKENS
    words: int = POISON_PASSAGE_WORDS
    base_seed: int = 0
    max_attempts: int = MAX_ATTEMPTS
    min_words: int = MIN_WORDS
    retry_failed: bool = False
    model_sha256: str | None = None
    _cache: dict[tuple[object, ...], PoisonPassage] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.words < self.min_words:
            raise ConfigError(f"words must be >= min_words ({self.min_words}), got {self.words}")

    @property
    def model_name(self) -> str:
        """The model name asked for (the client's ``model``)."""
        return str(getattr(self.client, "model", "") or "")

    @property
    def prompt_version(self) -> str:
        """The version of the poison prompt."""
        return PROMPT_VERSIONS["poison_passage"]

    def seed_for(self, copy: int, attempt: int) -> int:
        """The sampling seed of ``copy``'s ``attempt`` (both from 0)."""
        return self.base_seed + copy * self.max_attempts + attempt

    def write(
        self,
        targets: Iterable[PoisonTarget],
        copies: int = 1,
        progress: Callable[[PoisonPassage, bool], None] | None = None,
    ) -> list[PoisonPassage]:
        """One passage per target and copy, in that order; cached ones are reused.

        Args:
            targets: what to poison.
            copies: passages per target (PoisonedRAG injects up to 5).
            progress: called with each passage and whether it came from the cache.

        Raises:
            ConfigError: ``copies`` < 1.
            BackendError: the model's server failed; the passages written so far are cached.
        """
        if copies < 1:
            raise ConfigError(f"copies must be >= 1, got {copies}")
        if self.cache_path is not None:
            self._cache = {p.key: p for p in load_cached(self.cache_path)}
        out: list[PoisonPassage] = []
        for target in targets:
            for copy in range(copies):
                key = self._key(target, copy)
                cached = self._cache.get(key)
                if cached is not None and (cached.ok or not self.retry_failed):
                    out.append(cached)
                    if progress is not None:
                        progress(cached, True)
                    continue
                passage = self._write_one(target, copy)
                self._store(passage)
                out.append(passage)
                if progress is not None:
                    progress(passage, False)
        return out

    def _key(self, target: PoisonTarget, copy: int) -> tuple[object, ...]:
        return (
            self.model_name,
            self.prompt_version,
            target.question,
            target.false_statement,
            copy,
            float(self.temperature),
            self.max_tokens,
            self.words,
        )

    def _client_for(self, seed: int) -> PoisonClient:
        """The client with this writer's sampling settings and ``seed``."""
        if not dataclasses.is_dataclass(self.client) or isinstance(self.client, type):
            return self.client
        names = {f.name for f in dataclasses.fields(self.client) if f.init}
        wanted = {"seed": seed, "temperature": self.temperature, "max_tokens": self.max_tokens}
        changes = {k: v for k, v in wanted.items() if k in names}
        return dataclasses.replace(self.client, **changes) if changes else self.client

    def _write_one(self, target: PoisonTarget, copy: int) -> PoisonPassage:
        messages = build_poison_messages(target.question, target.false_statement, self.words)
        started = time.monotonic()
        raw, model, passage, error, seed = "", self.model_name, "", "", self.seed_for(copy, 0)
        attempts = 0
        for attempt in range(self.max_attempts):
            seed = self.seed_for(copy, attempt)
            attempts = attempt + 1
            client = self._client_for(seed)
            try:
                reply = client.complete(messages)
            except BackendError as exc:
                raise BackendError(
                    f"writing the poison passage of {target.target_id} (copy {copy}, seed {seed}) failed: {exc}"
                ) from exc
            finally:
                if client is not self.client and hasattr(client, "close"):
                    client.close()
            raw, model = reply.text, reply.model or self.model_name
            passage = clean_passage(raw, self.words)
            error = degenerate_reason(passage, messages, self.min_words)
            if not error:
                break
        ok = not error
        return PoisonPassage(
            target_id=target.target_id,
            question=target.question,
            false_statement=target.false_statement,
            copy=copy,
            seed=seed,
            model=model,
            model_name=self.model_name,
            prompt_version=self.prompt_version,
            messages=tuple(messages),
            raw_reply=raw,
            passage=passage if ok else "",
            text=document_text(target.question, passage) if ok else "",
            elapsed_s=round(time.monotonic() - started, 3),
            ok=ok,
            attempts=attempts,
            error=error,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            words=self.words,
            model_sha256=self.model_sha256,
        )

    def _store(self, passage: PoisonPassage) -> None:
        self._cache[passage.key] = passage
        if self.cache_path is None:
            return
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        with self.cache_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(passage.to_dict(), ensure_ascii=False) + "\n")
            handle.flush()


def load_cached(path: str | Path) -> list[PoisonPassage]:
    """The passages of a cache file, in file order; a later record of the same key wins.

    A missing file is an empty cache; a line that is not a valid record is skipped with a warning.

    Example:
        >>> load_cached("no/such/cache.jsonl")
        []
    """
    path = Path(path)
    if not path.is_file():
        return []
    records: dict[tuple[object, ...], PoisonPassage] = {}
    with path.open(encoding="utf-8", errors="replace") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise TypeError(f"expected a JSON object, got {type(row).__name__}")
                passage = PoisonPassage.from_dict(row)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                warnings.warn(f"{path}:{lineno}: skipped, not a poison passage record ({exc})", stacklevel=2)
                continue
            records.pop(passage.key, None)
            records[passage.key] = passage
    return list(records.values())


def passages_by_target(passages: Iterable[PoisonPassage]) -> dict[str, list[PoisonPassage]]:
    """The usable passages of each target id, by copy.

    Example:
        >>> passages_by_target([])
        {}
    """
    out: dict[str, list[PoisonPassage]] = {}
    for p in sorted((p for p in passages if p.ok), key=lambda p: (p.target_id, p.copy)):
        out.setdefault(p.target_id, []).append(p)
    return out


def truthfulqa_targets(benchmark: Benchmark, n: int | None = None) -> list[PoisonTarget]:
    """The targets of a TruthfulQA benchmark's evaluation queries (its first incorrect answer each).

    Documents without an incorrect answer are skipped.

    Args:
        benchmark: :func:`ragtrust.eval.datasets.load_benchmark` ``("truthfulqa", ...)``.
        n: at most this many targets (``None``: every evaluation query).
    """
    out: list[PoisonTarget] = []
    for query in benchmark.eval_queries:
        doc = benchmark.documents[query.doc_index]
        claims = doc.metadata.get("false_claims") or []
        if not claims:
            continue
        question = str(doc.metadata.get("question") or query.text)
        out.append(PoisonTarget(target_id=doc.id, question=question, false_statement=str(claims[0])))
        if n is not None and len(out) >= n:
            break
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_with_local_llm(
    targets: Sequence[PoisonTarget],
    copies: int,
    cache_path: str | Path,
    *,
    base_url: str | None = None,
    model: str | None = None,
    model_path: Path | None = None,
    threads: int = 1,
    context_tokens: int = LOCAL_CONTEXT_TOKENS,
    temperature: float = DEFAULT_TEMPERATURE,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    words: int = POISON_PASSAGE_WORDS,
    timeout_s: float = 300.0,
    log_path: Path | None = None,
    progress: Callable[[PoisonPassage, bool], None] | None = None,
) -> tuple[list[PoisonPassage], dict[str, object]]:
    """Write the passages with the packaged local LLM (or a server already running).

    Without ``base_url`` a :class:`~ragtrust.generation.local.LocalLLM` server over
    ``model_path`` (default: the packaged SmolLM2 GGUF) is started on a free loopback port
    with ``threads`` CPU threads, and stopped at the end.

    Args:
        targets: what to poison.
        copies: passages per target.
        cache_path: the JSONL cache (resumed when it exists).
        base_url: an OpenAI-compatible server already running (nothing is started).
        model: the model name to ask for (default: the local server's alias, ``smollm2``).
        model_path: the GGUF file (default: the packaged SmolLM2); with ``base_url``, only
            read for its SHA-256.
        threads: the local server's CPU threads (1 leaves the other cores free).
        context_tokens: the local server's window (the prompt and reply need ~250 tokens).
        temperature: sampling temperature (see :class:`LLMPoisonWriter`).
        max_tokens: reply tokens.
        words: the passage's word limit.
        timeout_s: per-request timeout.
        log_path: where the local server's output goes (default: discarded).
        progress: see :meth:`LLMPoisonWriter.write`.

    Returns:
        The passages and what was recorded of the model (file, sha256, server, threads).

    Raises:
        ConfigError: no model or runtime (the message says how to install them).
        BackendError: the server failed to start or answer.
    """
    from ragtrust.generation.local import DEFAULT_ALIAS, LocalLLM, default_model_path, sha256_of

    cache = Path(cache_path)

    def run(url: str, name: str, info: dict[str, object]) -> list[PoisonPassage]:
        client = ChatClient(url, name, timeout_s=timeout_s, max_retries=1, max_concurrency=1)
        sha = info.get("sha256")
        writer = LLMPoisonWriter(
            client,
            cache_path=cache,
            temperature=temperature,
            max_tokens=max_tokens,
            words=words,
            model_sha256=sha if isinstance(sha, str) else None,
        )
        try:
            return writer.write(targets, copies, progress)
        finally:
            client.close()

    if base_url is not None:
        name = model or DEFAULT_ALIAS
        info: dict[str, object] = {"base_url": base_url, "alias": name}
        if model_path is not None and model_path.is_file():
            info.update(file=model_path.name, sha256=sha256_of(model_path))
        return run(base_url, name, info), info
    path = model_path or default_model_path()
    server = LocalLLM(path, port=_free_port(), context_tokens=context_tokens, threads=threads, log_path=log_path)
    if model:
        server.alias = model
    info = server.describe()
    with server:
        return run(server.base_url, server.alias, info), info


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
    "FAMILY",
    "MAX_ATTEMPTS",
    "MIN_WORDS",
    "LLMPoisonWriter",
    "PoisonClient",
    "PoisonPassage",
    "PoisonTarget",
    "clean_passage",
    "content_words",
    "degenerate_reason",
    "document_text",
    "load_cached",
    "passages_by_target",
    "truthfulqa_targets",
    "write_with_local_llm",
]
