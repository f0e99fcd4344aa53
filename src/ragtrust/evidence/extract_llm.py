"""The LLM extractor: a chat model asked for verbatim passages in EvidenT's JSON contract.

:class:`LLMExtractor` asks for ``{"collected_passages": [{"passage_id", "passage", "url"}]}``,
validates the reply with a schema (:func:`parse_collected_passages`) and gives a malformed
reply one repair attempt before failing with :class:`ExtractionError`. Its passages are
*claims*: run them through :class:`~ragtrust.evidence.align.NGramAligner` before use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragtrust.documents import Passage, RetrievedDoc
from ragtrust.errors import BackendError, ContextLengthError
from ragtrust.evidence.passages_json import to_passages
from ragtrust.prompts import (
    EXTRACTION_REPAIR_PROMPT,
    PROMPT_VERSIONS,
    ContextBudget,
    build_extraction_messages,
)
from ragtrust.registry import register


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: ``chat(messages) -> reply text`` (``messages`` in OpenAI's role/content form)."""

    def chat(self, messages: Sequence[Mapping[str, str]]) -> str:
        """Return the assistant's reply to ``messages``."""
        ...


class _PassageItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    passage_id: str = ""
    passage: str = Field(min_length=1)
    url: str | None = None

    @field_validator("passage_id", mode="before")
    @classmethod
    def _id_to_str(cls, value: Any) -> str:
        return "" if value is None else str(value)


class _Collected(BaseModel):
    model_config = ConfigDict(extra="ignore")

    collected_passages: list[_PassageItem]


_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_collected_passages(reply: str) -> list[dict[str, Any]]:
    """Parse and validate a reply against the extraction contract.

    Code fences and prose around the outermost JSON object are tolerated.

    Raises:
        ValueError: the reply is not JSON or does not match the schema (the message says why).
    """
    text = reply.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise ValueError(f"no JSON object in the reply ({exc.msg})") from exc
        try:
            data = json.loads(text[start : end + 1])
        except json.JSONDecodeError as inner:
            raise ValueError(f"invalid JSON: {inner.msg} at position {inner.pos}") from inner
    try:
        parsed = _Collected.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise ValueError(f"JSON does not match the schema: {problems}") from exc
    return [item.model_dump() for item in parsed.collected_passages]


class ExtractionError(BackendError):
    """The model's reply was not valid extraction JSON, even after the repair attempt."""


@register("extractor", "llm")
@dataclass
class LLMExtractor:
    """Ask a chat model for verbatim passages in EvidenT's JSON contract.

    Args:
        client: anything with ``chat(messages) -> str``, e.g.
            :class:`ragtrust.generation.openai.ChatClient`.
        max_passages: most passages kept from the reply.
        max_doc_chars: each document is cut to this many characters in the prompt.
        context_tokens: the model's context window; the documents are fitted into it
            (lowest-ranked cut first, with a warning); 0 = no fitting.
        reply_tokens: tokens reserved for the reply when fitting.
        response_format: sent with each request as OpenAI's ``response_format`` (the
            pipeline sends :data:`ragtrust.prompts.EXTRACTION_SCHEMA` so that servers with
            constrained decoding can only reply in the contract); ``None`` sends nothing.

    Example:
        >>> from ragtrust.testing import retrieved
        >>> class Fake:
        ...     def chat(self, messages):
        ...         return '{"collected_passages": [{"passage_id": "a", "passage": "x y", "url": "u"}]}'
        >>> [p.text for p in LLMExtractor(Fake()).extract("q", retrieved(["x y z"]))]
        ['x y']
    """

    client: ChatModel
    max_passages: int = 8
    max_doc_chars: int = 6000
    context_tokens: int = 0
    reply_tokens: int = 512
    response_format: Mapping[str, Any] | None = None
    name: str = "llm"

    @property
    def prompt_version(self) -> str:
        """Versions of the extraction and repair prompts (:data:`ragtrust.prompts.PROMPT_VERSIONS`)."""
        return f"{PROMPT_VERSIONS['extraction']}+{PROMPT_VERSIONS['extraction_repair']}"

    def extract(self, query: str, docs: Sequence[RetrievedDoc]) -> list[Passage]:
        """Passages as the model claims them (``status="unverified"``); align them next.

        Raises:
            ExtractionError: the reply was malformed twice.
            BackendError: the model failed.
        """
        return self.extract_with_warnings(query, docs)[0]

    def extract_with_warnings(self, query: str, docs: Sequence[RetrievedDoc]) -> tuple[list[Passage], tuple[str, ...]]:
        """:meth:`extract`, with what the user should know (a trimmed prompt, a repaired reply)."""
        if not docs:
            return [], ()
        budget = ContextBudget(self.context_tokens, self.reply_tokens)
        messages, notes = build_extraction_messages(query, docs, self.max_doc_chars, budget)
        try:
            reply = self._chat(messages)
        except ContextLengthError:
            retry = budget.after_rejection(messages)
            messages, notes = build_extraction_messages(query, docs, self.max_doc_chars, retry)
            retried = (
                "The model's server said the extraction prompt exceeds its context window: it was sent again shorter."
            )
            notes = (retried, *notes)
            reply = self._chat(messages)
        try:
            items = parse_collected_passages(reply)
        except ValueError as first:
            repair = [
                *messages,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": EXTRACTION_REPAIR_PROMPT.format(error=first)},
            ]
            reply = self._chat(repair)
            try:
                items = parse_collected_passages(reply)
            except ValueError as second:
                raise ExtractionError(
                    f"LLM extractor: the model's reply is not valid extraction JSON after one repair attempt "
                    f"({second}); expected {{'collected_passages': [{{'passage_id', 'passage', 'url'}}]}}"
                ) from second
            notes = (*notes, f"The extractor's first reply was not valid JSON ({first}); the repaired reply was used.")
        return to_passages(items[: self.max_passages], docs), notes

    def _chat(self, messages: Sequence[Mapping[str, str]]) -> str:
        if self.response_format is None:
            return self.client.chat(messages)
        return self.client.chat(messages, response_format=self.response_format)  # type: ignore[call-arg]


def extract_or_report(
    extractor: Any, query: str, docs: Sequence[RetrievedDoc]
) -> tuple[list[Passage], tuple[str, ...], str | None]:
    """Run any extractor: its passages, its warnings, and why there are none when an LLM's reply was unusable.

    An :class:`ExtractionError` (a malformed reply after the repair attempt) is returned as
    the third item instead of raised, so that a caller can report it as a failed condition;
    every other error (an unreachable server, a timeout) raises.

    Example:
        >>> class Broken:
        ...     def chat(self, messages):
        ...         return "not JSON"
        >>> from ragtrust.testing import retrieved
        >>> passages, notes, failure = extract_or_report(LLMExtractor(Broken()), "q", retrieved(["x y z"]))
        >>> passages, failure.startswith("LLM extractor: the model's reply is not valid extraction JSON")
        ([], True)
    """
    try:
        with_warnings = getattr(extractor, "extract_with_warnings", None)
        if callable(with_warnings):
            passages, notes = with_warnings(query, docs)
            return list(passages), tuple(notes), None
        return list(extractor.extract(query, docs)), (), None
    except ExtractionError as exc:
        return [], (), str(exc)


__all__ = ["ChatModel", "ExtractionError", "LLMExtractor", "extract_or_report", "parse_collected_passages"]
