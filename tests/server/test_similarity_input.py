"""The HTTP API reads a document's retrieval similarity under the verdict's name (issue 21).

Input called it ``score`` and the verdict ``similarity``; the library and JSONL read both,
and so does the API.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.server.conftest import KB, InstrumentedGate

pytestmark = pytest.mark.anyio


async def test_screen_reads_similarity_and_the_older_score(gate: InstrumentedGate, make_client: Any) -> None:
    from ragtrust.server.app import create_app

    doc = {"id": KB[0].id, "text": KB[0].text}
    async with make_client(create_app(gate=gate)) as client:
        new = await client.post("/v1/screen", json={"documents": [{**doc, "similarity": 0.42}]})
        old = await client.post("/v1/screen", json={"documents": [{**doc, "score": 0.42}]})
        both = await client.post("/v1/screen", json={"documents": [{**doc, "similarity": 0.4, "score": 0.9}]})
    assert new.status_code == 200, new.text
    assert new.json()["documents"][0]["similarity"] == pytest.approx(0.42)
    assert old.json()["documents"][0]["similarity"] == pytest.approx(0.42)
    assert both.status_code == 422 and "differ" in both.json()["error"]["message"]
