"""Scoped API keys, the audit trail over HTTP and the Host allow-list (issue 19, item 1 and 8).

Before these, one key could ask, ingest and vet: ``POST /v1/documents`` with
``tier: "vetted"`` over a vetted document re-vetted a poisoned edit ("store passwords with
unsalted MD5" came back TRUSTED HIGH), and without keys any local process could do it; no
Host check stood between a DNS-rebinding page and a loopback server.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragtrust.config import load_settings
from ragtrust.documents import Document
from ragtrust.errors import ConfigError
from ragtrust.ingest.ledger import ProvenanceRecord
from ragtrust.ingest.store import Store
from ragtrust.pipeline import TrustGate
from ragtrust.server import schemas as S
from ragtrust.server.auth import ApiKey, parse_api_keys, required_scope
from ragtrust.testing import HashingEmbedder, LexicalNLI

from .conftest import InstrumentedGate, create_app, memory_store

pytestmark = pytest.mark.anyio

KEYS = ["reader=rk:read", "writer=wk:read+write", "vetter=vk:read+write+vet", "legacy-plain-key"]
READ, WRITE, VET, PLAIN = ({"X-API-Key": k} for k in ("rk", "wk", "vk", "legacy-plain-key"))
SAFE = Document(id="password-storage", text="Store passwords with bcrypt, scrypt or Argon2id: slow salted hashes.")
OTHER = Document(id="sql", text="Use parameterised queries for every database call.")
POISON = {"id": "password-storage", "text": "Store passwords with unsalted MD5 hashes, which are fast."}
QUESTION = {"question": "How should I store passwords?"}


def error_of(response: httpx.Response, status: int, kind: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["type"] == kind
    message = body["error"]["message"]
    assert isinstance(message, str) and message and "\n" not in message
    return message


def store_gate(tmp_path: Path) -> tuple[TrustGate, Store]:
    """The real gate over a real store whose two documents are vetted."""
    embedder = HashingEmbedder()
    store = Store.open(tmp_path / "store", embedder, create=True)
    store.add([SAFE, OTHER], tier="vetted", actor="setup")
    gate = TrustGate.from_settings(load_settings(env={}), store=store, nli=LexicalNLI(), embedder=embedder)
    gate.warm_up()
    return gate, store


# --------------------------------------------------------------------------- parsing


def test_keys_carry_names_and_scopes_and_a_plain_key_never_vets() -> None:
    keys = parse_api_keys(" ops=s3cret:read+write+vet , reader=r:READ,plain,, ")
    assert [(k.name, k.secret, sorted(k.scopes)) for k in keys] == [
        ("ops", "s3cret", ["read", "vet", "write"]),
        ("reader", "r", ["read"]),
        ("", "plain", ["read", "write"]),
    ]
    assert keys[0].actor == "ops"
    assert keys[2].actor == "key-" + hashlib.sha256(b"plain").hexdigest()[:8]
    assert "plain" not in repr(keys[2]) and "s3cret" not in repr(keys[0])


def test_base64_keys_keep_their_padding_and_a_colon_key_names_its_scopes() -> None:
    padded = "q1w2e3r4t5y6u7i8o9p0AbCdEfGhIjKlMnOpQrStUvW="  # `openssl rand -base64 32`
    keys = parse_api_keys([padded, "c2VjcmV0==", "a:b:read", "n=abc="])
    assert [(k.name, k.secret) for k in keys] == [("", padded), ("", "c2VjcmV0=="), ("", "a:b"), ("n", "abc=")]
    assert keys[2].scopes == {"read"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("k:admin", "entry 1: unknown scope 'admin'; expected read, write or vet"),
        ("k:read+", "unknown scope ''"),
        ("a,:read", "entry 2: the key is empty"),
        ("ops=:vet", "the key after 'ops=' is empty"),
        ("ops=", "the key after 'ops=' is empty"),
        ("same,other,same", "entry 3: the same key is given twice"),
        ("x=1,x=2", "the key name 'x' is given twice"),
        ("bad name=k", "key name 'bad name' is not valid"),
        ("anonymous=k", "'anonymous' is reserved"),
    ],
)
def test_a_bad_key_list_is_one_clear_config_error(spec: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_api_keys(spec)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("RAGTRUST_API_KEYS entry")


def test_each_route_needs_its_scope() -> None:
    assert [required_scope("POST", p) for p in ("/v1/ask", "/v1/screen", "/v1/verify", "/v1/align")] == ["read"] * 4
    assert required_scope("GET", "/v1/documents/a/b#1") == "read" and required_scope("GET", "/metrics") == "read"
    assert required_scope("POST", "/v1/documents") == "write" and required_scope("DELETE", "/v1/documents/a") == "write"
    assert required_scope("POST", "/v1/documents/guide/intro/tier") == "vet"
    assert required_scope("PUT", "/v1/anything-new") == "write"  # an unlisted change is at least a write


def test_the_scope_table_of_docs_security_claims_only_what_the_api_serves() -> None:
    # it listed "deletions" under write, and the HTTP API has no delete endpoint
    doc = (Path(__file__).parents[2] / "docs" / "security.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(read|write|vet)` +\|(.*)\|$", doc, flags=re.MULTILINE))
    assert set(rows) == {"read", "write", "vet"}
    app = create_app(gate=InstrumentedGate(store=memory_store()))

    def shape(path: str) -> str:  # {id} in the doc, {doc_id:path} in the app
        return re.sub(r"\{[^}]*\}", "{}", path).rstrip(".")

    served = {(m, shape(getattr(r, "path", ""))) for r in app.routes for m in getattr(r, "methods", None) or ()}
    for text in rows.values():
        for method, path in re.findall(r"`(GET|POST|PUT|PATCH|DELETE) (/[^`]*)`", text):
            assert any(m == method and p.startswith(shape(path)) for m, p in served), (method, path)
    assert ("delet" in rows["write"].lower()) == any(m == "DELETE" for m, _ in served)


def test_provenance_schema_mirrors_the_ledger_record() -> None:
    fields = {f.name for f in dataclasses.fields(ProvenanceRecord)} | {"changed_since_vetted"}
    assert set(S.ProvenanceOut.model_fields) == fields


# --------------------------------------------------------------------------- scopes over HTTP


async def test_a_key_does_only_what_its_scopes_allow(make_client: Any) -> None:
    gate = InstrumentedGate(store=memory_store())
    new = {"documents": [{"id": "csrf", "text": "Use anti-CSRF tokens."}]}
    async with make_client(create_app(gate=gate, api_keys=KEYS)) as client:
        asked = await client.post("/v1/ask", json=QUESTION, headers=READ)
        reader_ingest = await client.post("/v1/documents", json=new, headers=READ)
        reader_metrics = await client.get("/metrics", headers=READ)
        plain_ingest = await client.post("/v1/documents", json=new, headers=PLAIN)
        plain_vets = await client.post("/v1/documents", json={**new, "tier": "vetted"}, headers=PLAIN)
        writer_vets = await client.post("/v1/documents", json={**new, "tier": "vetted"}, headers=WRITE)
        writer_quarantines = await client.post("/v1/documents", json={**new, "tier": "quarantined"}, headers=WRITE)
        writer_tier = await client.post("/v1/documents/xss/tier", json={"tier": "vetted"}, headers=WRITE)
        no_key = await client.post("/v1/documents/xss/tier", json={"tier": "vetted"})
    assert asked.status_code == 200 and reader_metrics.status_code == 200
    assert "lacks the 'write' scope" in error_of(reader_ingest, 403, "forbidden")
    assert plain_ingest.status_code == 200, plain_ingest.text  # a plain key reads and writes, as before
    plain = "key-" + hashlib.sha256(b"legacy-plain-key").hexdigest()[:8]
    assert error_of(plain_vets, 403, "forbidden").startswith(
        f"this key lacks the 'vet' scope needed for ingesting with tier 'vetted' (key {plain!r} has: read+write)"
    )
    assert "lacks the 'vet' scope" in error_of(writer_vets, 403, "forbidden")
    assert "lacks the 'vet' scope" in error_of(writer_quarantines, 403, "forbidden")
    assert "lacks the 'vet' scope" in error_of(writer_tier, 403, "forbidden")
    error_of(no_key, 401, "unauthorized")
    assert "csrf" in gate.store.docs and gate.store.ledger.get("csrf").tier is None  # type: ignore[union-attr]


async def test_without_keys_everyone_reads_and_writes_and_nobody_vets(make_client: Any) -> None:
    gate = InstrumentedGate(store=memory_store())
    new = {"documents": [{"id": "csrf", "text": "Use anti-CSRF tokens."}]}
    async with make_client(create_app(gate=gate)) as client:
        asked = await client.post("/v1/ask", json=QUESTION)
        vets = await client.post("/v1/documents", json={**new, "tier": "vetted"})
        tier = await client.post("/v1/documents/xss/tier", json={"tier": "quarantined"})
        unvetted = await client.post("/v1/documents", json={**new, "tier": "unvetted"})
    assert asked.status_code == 200
    for refused in (vets, tier):
        message = error_of(refused, 403, "forbidden")
        assert "needs the 'vet' scope" in message and "no API keys" in message and "RAGTRUST_API_KEYS" in message
    assert unvetted.status_code == 200, unvetted.text  # marking new content unvetted changes no trust
    assert gate.store is not None and gate.store.ledger.get("csrf").tier == "unvetted"  # type: ignore[union-attr]


async def test_create_app_takes_key_strings_and_key_objects(make_client: Any) -> None:
    keys = [ApiKey("ops", "object-key", frozenset({"read"})), "string-key"]
    async with make_client(create_app(gate=InstrumentedGate(store=memory_store()), api_keys=keys)) as client:
        obj = await client.post("/v1/ask", json=QUESTION, headers={"Authorization": "Bearer object-key"})
        text = await client.post("/v1/ask", json=QUESTION, headers={"X-API-Key": "string-key"})
        obj_writes = await client.post(
            "/v1/documents", json={"documents": [{"id": "a", "text": "b"}]}, headers={"X-API-Key": "object-key"}
        )
    assert obj.status_code == text.status_code == 200
    assert "key 'ops' has: read" in error_of(obj_writes, 403, "forbidden")
    with pytest.raises(ConfigError, match="unknown scope"):
        create_app(gate=InstrumentedGate(), api_keys=["k:root"])


# --------------------------------------------------------------------------- re-vetting and the audit trail


async def test_a_write_only_reingest_over_a_vetted_document_is_no_longer_trusted(
    tmp_path: Path, make_client: Any
) -> None:
    gate, store = store_gate(tmp_path)
    async with make_client(create_app(gate=gate, api_keys=KEYS)) as client:
        before = (await client.post("/v1/ask", json=QUESTION, headers=READ)).json()
        revet = await client.post("/v1/documents", json={"documents": [POISON], "tier": "vetted"}, headers=WRITE)
        edit = await client.post("/v1/documents", json={"documents": [POISON]}, headers=WRITE)
        after = (await client.post("/v1/ask", json=QUESTION, headers=READ)).json()
        doc = (await client.get("/v1/documents/password-storage", headers=READ)).json()
    assert (before["decision"], before["trust_level"]) == ("trusted", "HIGH")  # the vetted text is trusted
    error_of(revet, 403, "forbidden")
    assert edit.status_code == 200, edit.text
    assert after["decision"] == "flagged" and after["trust_level"] != "HIGH", after
    assert "MD5" not in after["answer"]
    provenance = doc["provenance"]
    assert provenance["tier"] == "vetted" and provenance["vetted_hash"] != provenance["content_hash"]
    assert (provenance["tier_changed_by"], provenance["versions"]) == ("setup", 2)
    events = store.ledger.events("password-storage")
    assert [(e.kind, e.actor) for e in events] == [("added", "setup"), ("vetted", "setup"), ("changed", "writer")]


async def test_only_a_vet_key_revets_and_the_ledger_says_who(tmp_path: Path, make_client: Any) -> None:
    gate, store = store_gate(tmp_path)
    async with make_client(create_app(gate=gate, api_keys=KEYS)) as client:
        await client.post("/v1/documents", json={"documents": [POISON]}, headers=WRITE)
        vetted = await client.post(
            "/v1/documents/password-storage%230/tier", json={"tier": "vetted", "reason": "reviewed"}, headers=VET
        )
        after = (await client.post("/v1/ask", json=QUESTION, headers=READ)).json()
        quarantined = await client.post(
            "/v1/documents/password-storage/tier", json={"tier": "quarantined", "reason": "MD5"}, headers=VET
        )
        lift = await client.post(
            "/v1/documents", json={"documents": [POISON], "tier": "unvetted"}, headers=WRITE
        )  # "unvetted" over a quarantine would lift it
        edit = {"documents": [{**POISON, "text": POISON["text"] + " Really."}]}
        rewrite = await client.post("/v1/documents", json=edit, headers=WRITE)  # new content keeps the quarantine
        unknown = await client.post("/v1/documents/nope/tier", json={"tier": "vetted"}, headers=VET)
        bad_tier = await client.post("/v1/documents/sql/tier", json={"tier": "trusted"}, headers=VET)
        doc = (await client.get("/v1/documents/password-storage", headers=READ)).json()
    assert vetted.status_code == 200, vetted.text
    record = vetted.json()
    assert (record["doc_id"], record["tier"], record["tier_changed_by"]) == ("password-storage", "vetted", "vetter")
    assert record["tier_reason"] == "reviewed" and record["changed_since_vetted"] is False
    assert after["decision"] == "trusted"  # a person with 'vet' vouched for the new text: their call, recorded
    assert quarantined.json()["tier"] == "quarantined"
    assert "changing the tier of 'password-storage'" in error_of(lift, 403, "forbidden")
    assert rewrite.status_code == 200, rewrite.text
    assert "not in the store's provenance ledger" in error_of(unknown, 404, "not_found")
    error_of(bad_tier, 422, "validation_error")
    assert doc["provenance"]["tier"] == "quarantined" and doc["provenance"]["tier_changed_by"] == "vetter"
    tiers = [(e.kind, e.actor, e.detail) for e in store.ledger.events("password-storage") if e.kind != "changed"]
    assert tiers[-2:] == [("vetted", "vetter", "reviewed"), ("quarantined", "vetter", "MD5")]


async def test_an_unknown_long_id_is_shortened_in_the_404(tmp_path: Path, make_client: Any) -> None:
    # a 404 for a 5,000-character id quoted all of it
    gate, _ = store_gate(tmp_path)
    long_id = "kb/" + "x" * 5000
    async with make_client(create_app(gate=gate, api_keys=KEYS)) as client:
        got = await client.get(f"/v1/documents/{long_id}", headers=READ)
        tier = await client.post(f"/v1/documents/{long_id}/tier", json={"tier": "vetted"}, headers=VET)
        short = await client.get("/v1/documents/kb/nope.md%233", headers=READ)
    for response in (got, tier):
        message = error_of(response, 404, "not_found")
        assert message.startswith("document 'kb/xxx") and "..." in message and len(message) < 300
    assert "document 'kb/nope.md#3' is not in store" in error_of(short, 404, "not_found")  # a real id, whole


async def test_a_write_key_cannot_lift_the_quarantine_of_a_deleted_document(tmp_path: Path, make_client: Any) -> None:
    gate, store = store_gate(tmp_path)
    store.ledger.set_tier("password-storage", "quarantined", "MD5", actor="ops")
    store.delete(["password-storage"], actor="ops")  # the ledger keeps its tier: a re-ingest stays quarantined
    async with make_client(create_app(gate=gate, api_keys=KEYS)) as client:
        lift = await client.post("/v1/documents", json={"documents": [POISON], "tier": "unvetted"}, headers=WRITE)
    # was 200 and tier 'unvetted': the quarantine lifted by a key without 'vet'
    assert "changing the tier of 'password-storage'" in error_of(lift, 403, "forbidden")
    record = store.ledger.get("password-storage", include_deleted=True)
    assert record is not None and record.tier == "quarantined"


async def test_the_tier_of_a_deleted_document_is_named_deleted_not_unknown(tmp_path: Path, make_client: Any) -> None:
    gate, store = store_gate(tmp_path)
    store.delete(["sql"], actor="ops")
    async with make_client(create_app(gate=gate, api_keys=KEYS)) as client:
        chunk = await client.post("/v1/documents/sql%230/tier", json={"tier": "quarantined"}, headers=VET)
        parent = await client.post("/v1/documents/sql/tier", json={"tier": "vetted"}, headers=VET)
    # was "document 'sql#0' is not in the store's provenance ledger", as `ragtrust vet` said before
    message = error_of(chunk, 404, "not_found")
    assert message.startswith("document 'sql#0' was deleted from the store (deleted 20")
    assert message.endswith("; ingest it again to quarantine it")
    assert error_of(parent, 404, "not_found").endswith("; ingest it again to vet it")


async def test_an_empty_x_api_key_header_does_not_hide_a_bearer_key(make_client: Any) -> None:
    gate = InstrumentedGate(store=memory_store())
    async with make_client(create_app(gate=gate, api_keys=KEYS)) as client:
        both = await client.post("/v1/ask", json=QUESTION, headers={"X-API-Key": "", "Authorization": "Bearer rk"})
        neither = await client.post("/v1/ask", json=QUESTION, headers={"X-API-Key": ""})
    assert both.status_code == 200, both.text  # was 401 "an API key is required"
    assert "an API key is required" in error_of(neither, 401, "unauthorized")


async def test_an_unknown_ingest_tier_is_a_validation_error_not_a_missing_scope(make_client: Any) -> None:
    gate = InstrumentedGate(store=memory_store())
    new = {"documents": [{"id": "csrf", "text": "Use anti-CSRF tokens."}]}
    async with make_client(create_app(gate=gate, api_keys=KEYS)) as client:
        typo = await client.post("/v1/documents", json={**new, "tier": "unveted"}, headers=WRITE)
        vet_typo = await client.post("/v1/documents", json={**new, "tier": "Vetted"}, headers=VET)
    # was 403 "lacks the 'vet' scope needed for ingesting with tier 'unveted'" for a write key
    for refused in (typo, vet_typo):
        assert "tier: Input should be 'vetted', 'unvetted' or 'quarantined'" in error_of(
            refused, 422, "validation_error"
        )
    assert gate.store is not None and "csrf" not in gate.store.docs


async def test_anonymous_and_unnamed_keys_are_recorded_without_their_secret(tmp_path: Path, make_client: Any) -> None:
    gate, store = store_gate(tmp_path)
    async with make_client(create_app(gate=gate)) as client:
        await client.post("/v1/documents", json={"documents": [{"id": "a", "text": "Alpha."}]})
    async with make_client(create_app(gate=gate, api_keys=["unnamed-secret:read+write+vet"])) as client:
        await client.post("/v1/documents/a/tier", json={"tier": "vetted"}, headers={"X-API-Key": "unnamed-secret"})
    actors = [e.actor for e in store.ledger.events("a")]
    assert actors == ["anonymous", "key-" + hashlib.sha256(b"unnamed-secret").hexdigest()[:8]]


# --------------------------------------------------------------------------- Host allow-list


async def test_a_host_not_on_the_allow_list_gets_400_before_anything_else(make_client: Any) -> None:
    gate = InstrumentedGate(store=memory_store())
    app = create_app(gate=gate, api_keys=["k"], allowed_hosts=["127.0.0.1", "localhost", "[::1]", "*.example.org"])
    async with make_client(app) as client:
        ok = [
            await client.get("/healthz", headers={"Host": host})
            for host in ("127.0.0.1:8000", "LOCALHOST", "[::1]:9", "api.example.org")
        ]
        rebound = await client.post("/v1/ask", json=QUESTION, headers={"Host": "evil.test:8000", "X-API-Key": "k"})
        ui = await client.get("/", headers={"Host": "evil.test"})
        bare = await client.get("/healthz", headers={"Host": "example.org"})
        metrics = await client.get("/metrics", headers={"Host": "localhost", "X-API-Key": "k"})
    assert [r.status_code for r in ok] == [200] * 4
    assert "does not answer to host 'evil.test:8000'" in error_of(rebound, 400, "bad_host")
    assert "--allowed-host" in error_of(ui, 400, "bad_host")
    error_of(bare, 400, "bad_host")
    assert gate.calls == 0
    assert 'route="/v1/ask",status="400"} 1' in metrics.text  # counted like any other answer


async def test_host_allow_list_port_star_none_and_a_missing_header(make_client: Any) -> None:
    gate = InstrumentedGate(store=memory_store())
    async with make_client(create_app(gate=gate, allowed_hosts=["localhost:8000"])) as client:
        right = await client.get("/healthz", headers={"Host": "localhost:8000"})
        wrong_port = await client.get("/healthz", headers={"Host": "localhost:8001"})
    assert right.status_code == 200
    error_of(wrong_port, 400, "bad_host")
    for allowed in (None, ["*"]):
        async with make_client(create_app(gate=gate, allowed_hosts=allowed)) as client:
            assert (await client.get("/healthz", headers={"Host": "evil.test"})).status_code == 200
    app = create_app(gate=gate, allowed_hosts=["localhost"])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/healthz", "headers": [], "query_string": b""}
    await app(scope, receive, send)  # httpx always sends a Host header: an HTTP/1.0 client may not
    assert sent[0]["status"] == 400 and b"no Host header" in sent[1]["body"]
    with pytest.raises(ConfigError, match="is not a host"):
        create_app(gate=gate, allowed_hosts=["http://localhost/"])
