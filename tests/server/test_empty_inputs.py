"""Answers with nothing to check and invisible questions over HTTP (the gate's rules, through the API)."""

from __future__ import annotations

from typing import Any

import pytest

from ragtrust.server.app import create_app

from .conftest import InstrumentedGate

pytestmark = pytest.mark.anyio

DOCS = [
    {"id": "a", "text": "Use parameterised queries for every database call.", "score": 0.9},
    {"id": "b", "text": "Store passwords with Argon2id and a unique salt.", "score": 0.6},
]


@pytest.mark.parametrize("answer", ["...", "[1]", "?"])
async def test_verify_does_not_trust_an_answer_with_no_checkable_sentence(
    gate: InstrumentedGate, make_client: Any, answer: str
) -> None:
    async with make_client(create_app(gate=gate)) as client:
        r = await client.post("/v1/verify", json={"answer": answer, "documents": DOCS, "query": "database"})
    assert r.status_code == 200, r.text
    v = r.json()
    assert v["sentences"] == [] and v["trusted"] is False and v["decision"] == "flagged"
    assert "the answer has no sentence that can be checked against the evidence" in v["decision_reasons"]
    assert v["trust_level"] in {"LOW", "VERY LOW"}


@pytest.mark.parametrize(
    ("route", "body", "says_empty", "gate_calls"),
    [
        ("/v1/ask", {"question": "\u200b\u202e"}, True, 0),
        # the gate refuses the answer itself, before any model runs
        ("/v1/verify", {"answer": "\u200b\u202e", "documents": DOCS}, True, 1),
        ("/v1/ask", {"question": "\u0000\u0001"}, True, 0),
        ("/v1/screen", {"documents": [{"id": "a", "text": "\u0000"}]}, False, 0),
        ("/v1/verify", {"answer": "Use bcrypt.", "documents": [{"id": "a", "text": "\u0000\u007f"}]}, False, 0),
    ],
)
async def test_invisible_or_control_text_alone_is_an_empty_input(
    gate: InstrumentedGate, make_client: Any, route: str, body: dict[str, Any], says_empty: bool, gate_calls: int
) -> None:
    async with make_client(create_app(gate=gate)) as client:
        r = await client.post(route, json=body)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_input"
    assert "empty" in error["message"] or not says_empty
    assert gate.calls == gate_calls


@pytest.mark.parametrize("value", [True, "0.5", [0.5]])
async def test_a_similarity_must_be_a_json_number(gate: InstrumentedGate, make_client: Any, value: object) -> None:
    body = {"documents": [{"id": "a", "text": "Use bcrypt.", "similarity": value}]}
    async with make_client(create_app(gate=gate)) as client:
        r = await client.post("/v1/screen", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["type"] == "validation_error" and gate.calls == 0


async def test_an_integer_similarity_is_still_a_number(gate: InstrumentedGate, make_client: Any) -> None:
    body = {"documents": [{"id": "a", "text": "Use bcrypt to hash passwords.", "similarity": 1}]}
    async with make_client(create_app(gate=gate)) as client:
        r = await client.post("/v1/screen", json=body)
    assert r.status_code == 200, r.text
