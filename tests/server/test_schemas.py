"""The API schemas against the domain types, field by field.

The server's pydantic response models copy the frozen dataclasses of
:mod:`ragtrust.documents` (and :class:`~ragtrust.evidence.align.AlignmentResult`): a field
added, renamed, retyped or given another default on one side and not the other fails here,
not in a client. Each field must have the same name, the same type (a tuple is a JSON list,
a nested dataclass its ``...Out`` model), the same required-ness and the same default.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from ragtrust import documents as D
from ragtrust.evidence.align import AlignmentResult
from ragtrust.server import schemas as S

#: response model -> the domain type it mirrors, and the fields only the response has
PAIRS: dict[type[BaseModel], tuple[type[Any], frozenset[str]]] = {
    S.SpanOut: (D.Span, frozenset()),
    S.SignalOut: (D.SignalResult, frozenset()),
    S.DocumentScreeningOut: (D.DocumentScreening, frozenset()),
    S.AnswerSentenceOut: (D.AnswerSentence, frozenset()),
    S.PassageOut: (D.Passage, frozenset()),
    S.ClaimRefOut: (D.ClaimRef, frozenset()),
    S.ConflictOut: (D.Conflict, frozenset()),
    S.VerdictOut: (D.Verdict, frozenset({"decision"})),  # Verdict.decision is a property
    S.AlignResponse: (AlignmentResult, frozenset()),
}
DOMAIN_OF = {model: domain for model, (domain, _) in PAIRS.items()}

_NONE = type(None)


def shape(tp: Any) -> str:
    """A type in words both sides can be compared in (tuple and Sequence read as list)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(sorted(shape(a) for a in args))
    if origin is Literal:
        return f"Literal{sorted(args)}"
    if origin in (tuple, list, Sequence) or tp in (tuple, list):
        items = [a for a in args if a is not Ellipsis]
        return f"list[{shape(items[0]) if items else 'Any'}]"
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        return f"dict[{', '.join(shape(a) for a in args) or 'Any'}]"
    if tp is _NONE:
        return "None"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return DOMAIN_OF.get(tp, tp).__name__
    if tp is Any:
        return "Any"
    return getattr(tp, "__name__", repr(tp))


def _json_default(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else dict(value) if isinstance(value, Mapping) else value


def domain_fields(cls: type[Any]) -> dict[str, tuple[str, bool, Any]]:
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            default = _json_default(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = _json_default(f.default_factory())
        else:
            default = PydanticUndefined
        out[f.name] = (shape(hints[f.name]), default is PydanticUndefined, default)
    return out


def schema_fields(model: type[BaseModel], extra: frozenset[str]) -> dict[str, tuple[str, bool, Any]]:
    out = {}
    for name, info in model.model_fields.items():
        if name in extra:
            continue
        default = info.get_default(call_default_factory=True) if not info.is_required() else PydanticUndefined
        out[name] = (shape(info.annotation), info.is_required(), default)
    return out


@pytest.mark.parametrize("model", list(PAIRS), ids=lambda m: m.__name__)
def test_each_response_schema_has_the_domain_type_fields(model: type[BaseModel]) -> None:
    domain, extra = PAIRS[model]
    ours, theirs = schema_fields(model, extra), domain_fields(domain)
    assert list(ours) == list(theirs), f"{model.__name__} and {domain.__name__} name different fields (or order)"
    for name in theirs:
        assert ours[name][0] == theirs[name][0], f"{model.__name__}.{name}: type {ours[name][0]} != {theirs[name][0]}"
        assert ours[name][1] == theirs[name][1], f"{model.__name__}.{name}: required differs"
        assert ours[name][2] == theirs[name][2], (
            f"{model.__name__}.{name}: default {ours[name][2]!r} != {theirs[name][2]!r}"
        )


def test_the_extra_response_fields_are_properties_of_the_domain_type() -> None:
    for model, (domain, extra) in PAIRS.items():
        for name in extra:
            assert isinstance(getattr(domain, name, None), property), f"{model.__name__}.{name}"


def test_every_nested_response_model_is_paired() -> None:
    nested = set()
    for model in PAIRS:
        for info in model.model_fields.values():
            nested |= {
                a
                for a in (info.annotation, *typing.get_args(info.annotation))
                if isinstance(a, type) and issubclass(a, BaseModel)
            }
    assert nested <= set(PAIRS)


def test_the_checker_sees_a_difference() -> None:
    class Drifted(BaseModel):
        doc_id: str
        start: int
        end: float  # Span.end is an int
        text: str
        url: str | None = None

    assert schema_fields(Drifted, frozenset())["end"][0] != domain_fields(D.Span)["end"][0]
    assert shape(tuple[D.Span, ...]) == shape(list[S.SpanOut]) == "list[Span]"
