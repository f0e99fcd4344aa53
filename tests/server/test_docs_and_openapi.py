"""The favicon, the offline API docs and an OpenAPI document that says what each route returns (issue 21)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ragtrust.server.app import create_app

from .conftest import InstrumentedGate

pytestmark = pytest.mark.anyio

EXTERNAL_URL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.IGNORECASE)


async def test_favicon_is_served_and_linked_from_the_ui(gate: InstrumentedGate, make_client: Any) -> None:
    async with make_client(create_app(gate=gate)) as client:
        icon = await client.get("/favicon.ico")
        index = await client.get("/")
        linked = re.search(r'<link rel="icon" href="([^"]+)"', index.text)
        assert linked is not None, "the UI's <head> links no icon"
        static_icon = await client.get("/" + linked.group(1))
    assert icon.status_code == 200
    assert icon.headers["content-type"] == "image/svg+xml"
    assert icon.text.lstrip().startswith("<svg")
    assert static_icon.status_code == 200 and static_icon.content == icon.content


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_api_docs_load_every_asset_from_the_server(gate: InstrumentedGate, make_client: Any, page: str) -> None:
    async with make_client(create_app(gate=gate)) as client:
        html = await client.get(page)
        assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html.text)
        fetched = {url: await client.get(url) for url in assets}
    assert html.status_code == 200
    assert not EXTERNAL_URL.search(html.text), f"{page} loads from another host: {assets}"
    assert "https://" not in html.text and "http://" not in html.text
    assert assets and all(r.status_code == 200 and r.content for r in fetched.values())
    scripts = [u for u in assets if u.endswith(".js")]
    assert scripts and all("javascript" in fetched[u].headers["content-type"] for u in scripts)


async def test_the_ui_footer_links_to_the_docs_only_when_they_work(gate: InstrumentedGate, make_client: Any) -> None:
    async with make_client(create_app(gate=gate)) as client:
        index = await client.get("/")
        for href in re.findall(r"<footer.*?</footer>", index.text, re.S)[0].split('href="')[1:]:
            target = href.split('"', 1)[0]
            assert (await client.get("/" + target)).status_code == 200, target


def _responses(spec: dict[str, Any], path: str, method: str) -> set[str]:
    return set(spec["paths"][path][method]["responses"])


async def test_openapi_declares_only_the_errors_each_route_can_return(gate: InstrumentedGate, make_client: Any) -> None:
    async with make_client(create_app(gate=gate)) as client:
        spec = (await client.get("/openapi.json")).json()
    assert _responses(spec, "/v1/ask", "post") == {"200", "400", "413", "415", "422", "502", "503"}
    for path in ("/v1/screen", "/v1/verify", "/v1/align"):
        assert _responses(spec, path, "post") == {"200", "400", "413", "415", "422", "503"}, path
    # a tier needs the vet scope (403); a read-only store refuses writes (409)
    assert _responses(spec, "/v1/documents", "post") == {"200", "400", "403", "409", "413", "415", "422", "503"}
    tier = {"200", "400", "403", "404", "409", "413", "415", "422", "503"}
    assert _responses(spec, "/v1/documents/{doc_id}/tier", "post") == tier
    assert _responses(spec, "/v1/documents/{doc_id}", "get") == {"200", "404", "503"}
    assert _responses(spec, "/healthz", "get") == {"200"}
    assert _responses(spec, "/readyz", "get") == {"200", "503"}
    assert _responses(spec, "/metrics", "get") == {"200"}
    # no keys: nothing requires one, and no route answers 401
    assert all("security" not in op for ops in spec["paths"].values() for op in ops.values())
    # the schemes are declared all the same, so a client knows how a key is sent
    assert spec["components"]["securitySchemes"]["apiKey"] == {"type": "apiKey", "in": "header", "name": "X-API-Key"}
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    # FastAPI's own validation-error schema is never returned (every error is ErrorOut)
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    error_ref = spec["paths"]["/v1/documents/{doc_id}"]["get"]["responses"]["404"]["content"]["application/json"]
    assert error_ref["schema"]["$ref"].endswith("/ErrorOut")


async def test_openapi_with_keys_requires_them_on_the_protected_routes_only(
    gate: InstrumentedGate, make_client: Any
) -> None:
    async with make_client(create_app(gate=gate, api_keys=["k"])) as client:
        spec = (await client.get("/openapi.json")).json()
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            protected = path.startswith(("/v1/", "/metrics"))
            assert ("401" in op["responses"]) is protected, (method, path)
            # a key without the scope a route needs gets 403: declared wherever a key is checked
            assert ("403" in op["responses"]) is protected, (method, path)
            assert (op.get("security") == [{"bearer": []}, {"apiKey": []}]) is protected, (method, path)
    assert _responses(spec, "/metrics", "get") == {"200", "401", "403"}
    assert _responses(spec, "/v1/documents/{doc_id}", "get") == {"200", "401", "403", "404", "503"}
