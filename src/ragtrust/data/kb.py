"""The bundled secure-coding knowledge base: 40 rules in the project's own words.

Each rule paraphrases guidance from one OWASP Cheat Sheet (CC BY-SA 4.0) and is stored as a
JSONL row with ``id`` (``kb-01`` .. ``kb-40``), ``question``, ``answer`` (2-4 sentences),
``cwe`` (list such as ``["CWE-89"]``), ``owasp_top10`` (e.g. ``"A03:2021-Injection"``) and
``source_url`` (the cheat sheet page it paraphrases). It is the demo corpus and the
secure-coding benchmark corpus of SPEC section 8, where a document is the rule's question
followed by its answer.

Example:
    >>> rules = load_rules()
    >>> rules[0].id, rules[0].cwe
    ('kb-01', ('CWE-89',))
    >>> doc = load_knowledge_base()[0]
    >>> doc.url.endswith("SQL_Injection_Prevention_Cheat_Sheet.html#kb-01")
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ragtrust.documents import Document
from ragtrust.errors import InputError
from ragtrust.io import iter_jsonl

#: file name of the knowledge base inside the ``ragtrust.data`` package
KB_FILE = "secure_coding_kb.jsonl"
_FIELDS = ("id", "question", "answer", "cwe", "owasp_top10", "source_url")
_CWE = re.compile(r"^CWE-\d+$")
_SOURCE = "ragtrust:secure_coding_kb"


@dataclass(frozen=True)
class Rule:
    """One secure-coding rule of the knowledge base.

    Attributes:
        id: ``kb-NN``.
        question: the question the rule answers.
        answer: 2-4 concrete sentences (names, numbers, CWE ids).
        cwe: CWE identifiers, e.g. ``("CWE-89",)``.
        owasp_top10: OWASP Top 10 category, e.g. ``"A03:2021-Injection"``.
        source_url: the OWASP cheat sheet page the rule paraphrases.
    """

    id: str
    question: str
    answer: str
    cwe: tuple[str, ...]
    owasp_top10: str
    source_url: str

    @property
    def text(self) -> str:
        """Document text: question followed by answer (SPEC section 8)."""
        return f"{self.question} {self.answer}"

    @property
    def url(self) -> str:
        """A citation target unique to this rule: the cheat sheet URL plus ``#<id>``."""
        return f"{self.source_url}#{self.id}"

    def to_document(self) -> Document:
        """The rule as a corpus :class:`~ragtrust.documents.Document`."""
        return Document(
            id=self.id,
            text=self.text,
            url=self.url,
            source=_SOURCE,
            metadata={
                "question": self.question,
                "answer": self.answer,
                "cwe": list(self.cwe),
                "owasp_top10": self.owasp_top10,
                "source_url": self.source_url,
            },
        )


def _parse(row: Any, lineno: int) -> Rule:
    where = f"{KB_FILE}:{lineno}"
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected a JSON object")
    missing = [k for k in _FIELDS if k not in row]
    if missing:
        raise InputError(f"{where}: missing field(s) {', '.join(missing)}")
    cwe = row["cwe"]
    if not isinstance(cwe, list) or not all(isinstance(c, str) and _CWE.match(c) for c in cwe):
        raise InputError(f"{where}: 'cwe' must be a list like ['CWE-89'], got {cwe!r}")
    for key in ("id", "question", "answer", "owasp_top10", "source_url"):
        if not isinstance(row[key], str) or not row[key].strip():
            raise InputError(f"{where}: {key!r} must be a non-empty string")
    return Rule(
        id=row["id"],
        question=row["question"],
        answer=row["answer"],
        cwe=tuple(cwe),
        owasp_top10=row["owasp_top10"],
        source_url=row["source_url"],
    )


@lru_cache(maxsize=1)
def _rules() -> tuple[Rule, ...]:
    text = resources.files("ragtrust.data").joinpath(KB_FILE).read_text(encoding="utf-8")
    rules: list[Rule] = []
    for lineno, row in iter_jsonl(text.splitlines(), KB_FILE):
        rules.append(_parse(row, lineno))
    ids = [r.id for r in rules]
    if len(set(ids)) != len(ids):
        raise InputError(f"{KB_FILE}: duplicate rule ids")
    return tuple(rules)


def load_rules() -> list[Rule]:
    """The 40 rules of the bundled knowledge base, in file order.

    Raises:
        InputError: the packaged file is malformed (a packaging bug).
    """
    return list(_rules())


def load_knowledge_base() -> list[Document]:
    """The knowledge base as documents (text = question + answer, unique URL per rule)."""
    return [rule.to_document() for rule in _rules()]


__all__ = ["KB_FILE", "Rule", "load_knowledge_base", "load_rules"]
