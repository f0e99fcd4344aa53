from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from ragtrust.data import load_knowledge_base
from ragtrust.documents import Document
from ragtrust.errors import ConfigError, InputError
from ragtrust.eval.attacks import (
    ATTACK_STRATEGIES,
    FAMILIES,
    STRATEGIES,
    AttackGenerator,
    apply_replacements,
    families_for,
    held_out_triggers,
    negate_statement,
)

CORPUS = [
    Document(id="d0", text="Where is the Eiffel Tower? The Eiffel Tower is in Paris and opened in 1889."),
    Document(id="d1", text="Who wrote Hamlet? William Shakespeare wrote Hamlet around 1600."),
    Document(id="d2", text="What is the boiling point of water? Water boils at 100 degrees Celsius at sea level."),
    Document(id="d3", text="Who painted the Mona Lisa? Leonardo da Vinci painted the Mona Lisa in Florence."),
    Document(id="d4", text="What is the capital of Japan? Tokyo is the capital of Japan since 1868."),
    Document(id="d5", text="How many legs does a spider have? A spider has 8 legs and you should never touch it."),
    Document(id="d6", text="When did the Berlin Wall fall? The Berlin Wall fell in November 1989 in Germany."),
    Document(id="d7", text="Who discovered penicillin? Alexander Fleming discovered penicillin in London in 1928."),
    Document(id="d8", text="What is the largest ocean? The Pacific Ocean is the largest ocean on Earth."),
    Document(id="d9", text="How fast is light? Light travels at about 300,000 kilometres per second."),
]
HAS_SPACY = importlib.util.find_spec("spacy") is not None


def _records_equal(a, b):
    return [r.to_dict() for r in a.records] == [r.to_dict() for r in b.records]


@pytest.mark.parametrize("strategy", [s for s in ATTACK_STRATEGIES if s not in ("entity_swap", "mixed")])
def test_deterministic_paired_and_rate(strategy):
    gen = AttackGenerator(strategy=strategy, rate=0.3, seed=42)
    first, second = gen.attack(CORPUS), gen.attack(CORPUS)
    assert _records_equal(first, second)
    assert len(first.records) == 3
    assert [d.id for d in first.poisoned] == [d.id for d in first.clean] == [d.id for d in CORPUS]
    for i, (clean, poisoned) in enumerate(zip(first.clean, first.poisoned, strict=True)):
        assert (clean.text != poisoned.text) == (i in first.poisoned_indices)
    other = AttackGenerator(strategy=strategy, rate=0.3, seed=7).attack(CORPUS)
    assert not _records_equal(first, other)


@pytest.mark.parametrize("selection", ["held_out", "development", "all"])
def test_ground_truth_span_really_differs(selection):
    kb = load_knowledge_base()
    for strategy in STRATEGIES:
        result = AttackGenerator(strategy=strategy, rate=0.5, seed=3, families=selection, use_spacy=False).attack(kb)
        assert result.records
        for r in result.records:
            start, end = r.span
            assert r.poisoned[start:end] == r.edited_text
            o_start, o_end = r.original_span
            assert r.original[o_start:o_end] == r.original_text
            assert r.edited_text != r.original_text
            # outside the edited region both texts agree
            assert r.poisoned[:start] == r.original[:o_start]
            assert r.poisoned[end:] == r.original[o_end:]
            assert r.false_statement.strip()
            assert selection == "all" or r.split == selection
            assert result.poisoned[r.index].text == r.poisoned


def test_appended_strategies_keep_clean_prefix():
    result = AttackGenerator(strategy="instruction_injection", rate=0.5, seed=1).attack(CORPUS)
    for r in result.records:
        assert r.appended
        assert r.poisoned.startswith(r.original.rstrip())
        assert r.false_statement.rstrip(".").lower() in r.edited_text.lower().replace('"', "")


def test_rule_based_entity_swap_is_in_place():
    kb = load_knowledge_base()
    result = AttackGenerator(strategy="entity_swap", rate=0.3, seed=42, use_spacy=False).attack(kb)
    assert len(result.records) == 12
    for r in result.records:
        assert not r.appended
        assert r.family in {"security_identifier", "date_shift"}
        # same number of sentences, nothing appended after the original end
        assert r.poisoned.rstrip()[-1] == r.original.rstrip()[-1]
        assert r.original_span[1] <= len(r.original)
        assert abs(len(r.poisoned) - len(r.original)) < 40
        for e in r.edits:
            assert e.before and e.after and e.before != e.after


@pytest.mark.skipif(not HAS_SPACY, reason="spaCy (the eval extra) is not installed")
def test_spacy_entity_swap_uses_corpus_entities_in_place():
    result = AttackGenerator(strategy="entity_swap", rate=0.5, seed=42).attack(CORPUS)
    assert len(result.records) == 5
    families = {r.family for r in result.records}
    assert "named_entity" in families
    corpus_text = " ".join(d.text for d in CORPUS)
    for r in result.records:
        assert not r.appended
        assert len(r.poisoned.split(". ")) == len(r.original.split(". "))
        if r.family == "named_entity":
            for e in r.edits:
                assert e.after in corpus_text  # replacement comes from the corpus, not a dictionary
                assert e.after != e.before


def test_security_specific_forms():
    kb = load_knowledge_base()
    password = next(d for d in kb if d.id == "kb-02")
    gen = AttackGenerator(strategy="instruction_injection", families="development", seed=5)
    seen = set()
    for i in range(30):
        r = gen.poison(password, index=i)
        assert r is not None
        seen.add(r.family)
        assert "MD5" in r.false_statement
    assert "correction_directive" in seen
    subtle = AttackGenerator(strategy="subtle_manipulation", families="held_out", seed=5)
    families = {subtle.poison(password, index=i).family for i in range(40)}
    assert {"acceptable_shortcut", "narrow_scope"} <= families


def test_mixed_draws_several_strategies():
    kb = load_knowledge_base()
    result = AttackGenerator(strategy="mixed", rate=1.0, seed=42, use_spacy=False).attack(kb)
    assert len({r.strategy for r in result.records}) == 4
    assert result.summary()["n_poisoned"] == 40


def test_family_split_is_documented_and_each_strategy_has_both():
    for strategy in STRATEGIES:
        dev, held = families_for(strategy, "development"), families_for(strategy, "held_out")
        assert dev and held
        assert not {f.name for f in dev} & {f.name for f in held}
    assert len({(f.strategy, f.name) for f in FAMILIES}) == len(FAMILIES)
    import ragtrust.eval.attacks as module

    for f in FAMILIES:
        assert f.name in module.__doc__


def test_held_out_triggers_are_not_literals_in_detector_patterns():
    import ragtrust.screening.patterns as patterns

    # every file of the patterns package: the patterns, their word classes and the damping cues
    files = sorted(Path(patterns.__file__).parent.glob("*.py"))
    assert len(files) >= 5
    source = "\n".join(f.read_text(encoding="utf-8") for f in files).lower()
    # read regex sources as plain text: whitespace classes and escapes become spaces
    plain = re.sub(r"\\s[+*?]?|\\b|\(\?:|[()?]", " ", source)
    plain = " ".join(plain.split())
    triggers = held_out_triggers()
    assert len(triggers) >= 6
    for name, phrase in triggers.items():
        assert phrase.lower() not in plain, f"held-out family {name} trigger {phrase!r} appears in screening/patterns/"
    # the check would catch a literal: the development markers are allowed to be there
    dev = [f.trigger for f in FAMILIES if f.split == "development" and f.trigger]
    assert dev


def test_negation_and_replacements():
    assert negate_statement("Tokyo is the capital of Japan.") == "Tokyo is not the capital of Japan."
    assert negate_statement("Birds can fly") == "Birds cannot fly."
    assert negate_statement("It was not raining.") == "It was raining."
    assert negate_statement("The bees make honey.") == "It is not true that the bees make honey."
    assert negate_statement("Bees make honey.") == "It is not true that Bees make honey."  # names keep case
    with pytest.raises(InputError):
        negate_statement("  ")
    p = apply_replacements("a 1 b 22 c", [(6, 8, "3"), (2, 3, "444")])
    assert p.text == "a 444 b 3 c"
    assert [(e.before, e.after) for e in p.edits] == [("1", "444"), ("22", "3")]
    with pytest.raises(ValueError):
        apply_replacements("abcdef", [(0, 3, "x"), (2, 4, "y")])


def test_bad_parameters():
    with pytest.raises(ConfigError):
        AttackGenerator(strategy="nope")
    with pytest.raises(ConfigError):
        AttackGenerator(rate=0.0)
    with pytest.raises(ConfigError):
        AttackGenerator(families="secret")
    with pytest.raises(InputError):
        AttackGenerator().attack([])
    with pytest.raises(InputError):
        AttackGenerator().attack([Document(id="x", text="a"), Document(id="x", text="b")])
