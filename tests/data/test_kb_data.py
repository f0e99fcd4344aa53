from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragtrust.data import Rule, load_knowledge_base, load_rules
from ragtrust.text import split_sentences

CHEATSHEETS = Path(__file__).resolve().parents[3] / "shared" / "data" / "owasp-cheatsheets"


def test_forty_rules_with_sequential_ids():
    rules = load_rules()
    assert len(rules) == 40
    assert [r.id for r in rules] == [f"kb-{i:02d}" for i in range(1, 41)]
    assert all(isinstance(r, Rule) for r in rules)


@pytest.mark.parametrize("rule", load_rules(), ids=lambda r: r.id)
def test_rule_fields(rule):
    assert rule.question.endswith("?")
    assert 2 <= len(split_sentences(rule.answer)) <= 4, rule.answer
    assert rule.cwe and all(re.fullmatch(r"CWE-\d+", c) for c in rule.cwe)
    assert re.fullmatch(r"(A\d\d:2021|LLM\d\d:2025)-.+", rule.owasp_top10)
    assert re.fullmatch(
        r"https://cheatsheetseries\.owasp\.org/cheatsheets/[A-Za-z0-9_\-]+_Cheat_Sheet\.html", rule.source_url
    )


def test_documents_are_question_plus_answer_with_unique_urls():
    docs = load_knowledge_base()
    rules = load_rules()
    assert [d.text for d in docs] == [f"{r.question} {r.answer}" for r in rules]
    assert len({d.url for d in docs}) == 40
    assert docs[0].url.endswith("#kb-01")
    assert docs[0].metadata["cwe"] == ["CWE-89"]
    assert docs[0].metadata["owasp_top10"] == "A03:2021-Injection"


def test_core_topics_are_covered():
    cwes = {c for r in load_rules() for c in r.cwe}
    for needed in ("CWE-89", "CWE-916", "CWE-79", "CWE-352", "CWE-918", "CWE-502", "CWE-798", "CWE-347", "CWE-434"):
        assert needed in cwes
    text = " ".join(r.answer for r in load_rules())
    for name in ("Argon2id", "bcrypt", "scrypt", "PBKDF2", "TLS 1.3", "600,000"):
        assert name in text


@pytest.mark.skipif(not CHEATSHEETS.is_dir(), reason="OWASP cheat sheets not available")
def test_sources_exist_and_text_is_paraphrased():
    def grams(text: str, n: int = 10) -> set[tuple[str, ...]]:
        tokens = re.findall(r"[a-z0-9]+", text.lower())
        return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}

    for rule in load_rules():
        name = rule.source_url.rsplit("/", 1)[1].replace(".html", ".md")
        source = CHEATSHEETS / name
        assert source.is_file(), name
        # our own words: no 10-word run copied from the cheat sheet it paraphrases
        assert not grams(rule.answer) & grams(source.read_text(encoding="utf-8")), rule.id
