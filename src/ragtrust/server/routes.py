"""The server's endpoints: the trust API under ``/v1``, the ops probes and the web UI.

Each endpoint validates its body (the schemas), takes the :class:`~ragtrust.server.runtime.Runtime`
of its app and runs one gate or store call through it; the answer is a response model
built from the domain types.

Example:
    >>> _as_dict({"n": 1, "tags": ("a", "b")})
    {'n': 1, 'tags': ['a', 'b']}
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, PlainTextResponse
from prometheus_client import generate_latest
from starlette.concurrency import run_in_threadpool

from ragtrust import __version__
from ragtrust.documents import Document, is_blank, shown_id
from ragtrust.errors import InputError, StoreDamagedError
from ragtrust.ingest.documents_office import with_pages
from ragtrust.server import schemas as S
from ragtrust.server.auth import principal_of
from ragtrust.server.errors import ERROR_RESPONSES, ApiError, error_responses, map_exception
from ragtrust.server.log_routes import add_log_routes, logged
from ragtrust.server.metrics import CONTENT_TYPE
from ragtrust.server.runtime import runtime_of

STATIC_DIR = Path(__file__).parent / "static"
#: Content-Security-Policy of the web UI: everything from this origin, nothing inline
UI_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


def _plain(value: Any) -> Any:
    """JSON-safe copy of reports and diagnostics (numpy scalars, dataclasses, tuples)."""

    def default(obj: Any) -> Any:
        if hasattr(obj, "to_dict"):
            return obj.to_dict()
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return dataclasses.asdict(obj)
        if hasattr(obj, "item"):
            return obj.item()
        if isinstance(obj, (set, frozenset)):
            return sorted(obj, key=str)
        if isinstance(obj, Path):
            return str(obj)
        return repr(obj)

    return json.loads(json.dumps(value, default=default))


def _as_dict(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    plain = _plain(value)
    return plain if isinstance(plain, dict) else {"value": plain}


def add_routes(app: FastAPI) -> None:  # noqa: C901 - one small function per endpoint
    """Add the API, ops and UI endpoints to ``app``."""
    # routes go straight on the app (not an included APIRouter) so that the metrics
    # middleware can match a route template for requests answered before routing

    @app.post(
        "/v1/ask",
        responses=error_responses(400, 413, 415, 422, 502, 503),
        response_model=S.VerdictOut,
        tags=["trust"],
        summary="Full pipeline on the store",
    )
    async def ask(body: S.AskRequest, request: Request) -> S.VerdictOut:
        """Retrieve from the store, screen, ground, answer, verify: one Verdict."""
        rt = runtime_of(request)
        if is_blank(body.question):  # zero-width / bidi characters alone are empty too
            raise ApiError(422, "invalid_input", "the question is empty: send a non-empty 'question'")
        store = rt.require_store()
        gate = rt.require_gate()
        # a span into a PDF carries its page (the web UI shows "p. N")
        answer = rt.verdict_of(lambda: with_pages(gate.ask(body.question), store), lane="ask", request=request)
        return await logged(request, "ask", answer)

    @app.post(
        "/v1/screen",
        responses=ERROR_RESPONSES,
        response_model=S.VerdictOut,
        tags=["trust"],
        summary="Stage 1: screen documents",
    )
    async def screen(body: S.ScreenRequest, request: Request) -> S.VerdictOut:
        """Poison probability per document and for the set (no answer)."""
        rt = runtime_of(request)
        gate = rt.require_gate()
        docs = S.to_retrieved(body.documents)
        # a span into a PDF (one sent whole, or a chunk of the store's) carries its page
        pending = rt.verdict_of(
            lambda: with_pages(gate.screen(docs, query=body.query), gate.store, docs), request=request
        )
        return await logged(request, "screen", pending)

    @app.post(
        "/v1/verify",
        responses=ERROR_RESPONSES,
        response_model=S.VerdictOut,
        tags=["trust"],
        summary="Stage 2: verify an answer",
    )
    async def verify(body: S.VerifyRequest, request: Request) -> S.VerdictOut:
        """NLI factuality of an answer against the documents, fused into a Verdict."""
        rt = runtime_of(request)
        gate = rt.require_gate()
        docs = S.to_retrieved(body.documents)
        pending = rt.verdict_of(
            lambda: with_pages(gate.verify(body.answer, docs, query=body.query), gate.store, docs), request=request
        )
        return await logged(request, "verify", pending)

    @app.post(
        "/v1/align",
        responses=ERROR_RESPONSES,
        response_model=S.AlignResponse,
        tags=["evidence"],
        summary="Align passages",
    )
    async def align(body: S.AlignRequest, request: Request) -> S.AlignResponse:
        """Keep, truncate, re-attribute or drop extracted passages (EvidenT n-gram alignment)."""
        rt = runtime_of(request)
        gate = rt.require_gate()
        docs = S.to_retrieved(body.documents)
        passages = S.to_passages(body.passages)
        result = await rt.call(lambda: gate.align(passages, docs), request=request)
        return S.AlignResponse(
            passages=[S.PassageOut.model_validate(p.to_dict()) for p in result.passages],
            dropped=[S.PassageOut.model_validate(p.to_dict()) for p in result.dropped],
            diagnostics=_as_dict(result.diagnostics) or {},
        )

    @app.post(
        "/v1/documents",
        responses=error_responses(400, 403, 409, 413, 415, 422, 503),
        response_model=S.IngestResponse,
        tags=["store"],
        summary="Ingest documents",
    )
    async def ingest(body: S.IngestRequest, request: Request) -> S.IngestResponse:
        """Add documents to the store, all or nothing; returns their ids.

        Needs ``write``; a ``tier`` other than ``unvetted`` needs ``vet`` too, and so does
        ``unvetted`` over a document that has another tier (it would lift a quarantine).
        New content over a vetted document keeps the old vetting, which no longer matches:
        the provenance signal reports the edit ("content changed since vetted").
        """
        rt = runtime_of(request)
        store = rt.require_store()
        documents = S.to_documents(body.documents)
        who = principal_of(request)
        if body.tier not in (None, "unvetted") and not who.can("vet"):
            raise ApiError(403, "forbidden", who.refusal("vet", f"ingesting with tier {body.tier!r}"))

        def add() -> Any:
            if body.tier is not None and not who.can("vet"):  # "unvetted": checked under the write lock
                # a deleted document keeps its tier in the ledger, and an ingest brings it back with it
                records = store.ledger.get_many([d.id for d in documents], include_deleted=True)
                tiered = [i for i, rec in records.items() if rec.tier not in (None, body.tier)]
                if tiered:
                    raise ApiError(403, "forbidden", who.refusal("vet", f"changing the tier of {shown_id(tiered[0])}"))
            return store.add(documents, tier=body.tier, actor=who.name)

        report = await rt.call(add, write=True)
        rt.metrics.documents_ingested.inc(len(documents))
        return S.IngestResponse(ids=[d.id for d in documents], report=_as_dict(report) or {})

    @app.post(
        "/v1/documents/{doc_id:path}/tier",
        responses=error_responses(400, 403, 404, 409, 413, 415, 422, 503),
        response_model=S.ProvenanceOut,
        tags=["store"],
        summary="Set a document's trust tier",
    )
    async def set_tier(doc_id: str, body: S.TierRequest, request: Request) -> S.ProvenanceOut:
        """Vet, unvet or quarantine a stored document (needs ``vet``); the ledger records who and when.

        ``vetted`` makes the document's current content the trusted version. A chunk id
        (``<id>#<n>``) sets the tier of its document.
        """
        rt = runtime_of(request)
        store = rt.require_store(warm=False)
        who = principal_of(request)
        if not who.can("vet"):  # the middleware checked already; a route never trusts that alone
            raise ApiError(403, "forbidden", who.refusal("vet", "changing a trust tier"))

        def change() -> Any:
            ledger = store.ledger
            key = doc_id
            head, sep, tail = doc_id.rpartition("#")
            if ledger.get(doc_id) is None and sep and tail.isdigit():
                key = head
            record = ledger.get(key, include_deleted=True)
            if record is None:
                raise ApiError(404, "not_found", f"document {shown_id(doc_id)} is not in the store's provenance ledger")
            if record.deleted_at:  # its history is in the ledger, but there is nothing to vet (as `ragtrust vet` says)
                then = {"vetted": "vet it", "quarantined": "quarantine it"}.get(body.tier, "change its tier")
                deleted = str(record.deleted_at)[:19].replace("T", " ")
                raise ApiError(
                    404,
                    "not_found",
                    f"document {shown_id(doc_id)} was deleted from the store (deleted {deleted}); "
                    f"ingest it again to {then}",
                )
            ledger.set_tier(key, body.tier, body.reason, actor=who.name)
            return ledger.get(key)

        record = await rt.call(change, write=True)
        return S.ProvenanceOut(**record.to_dict(), changed_since_vetted=record.changed_since_vetted)

    @app.get(
        "/v1/documents/{doc_id:path}",
        responses=error_responses(404, 503),
        response_model=S.DocumentOut,
        tags=["store"],
        summary="One document",
    )
    async def get_document(doc_id: str, request: Request) -> S.DocumentOut:
        """Return a stored document's text, metadata and provenance record (for the span viewer)."""
        rt = runtime_of(request)
        store = rt.require_store(warm=False)

        def load() -> tuple[Document, Any]:
            try:
                doc: Document = store.get(doc_id)
            except InputError as exc:
                raise ApiError(404, "not_found", str(exc)) from None
            ledger = getattr(store, "ledger", None)
            parent = str(doc.metadata.get("parent_id") or doc.id.split("#", 1)[0])
            return doc, ledger.get(parent) if ledger is not None else None

        doc, record = await rt.call(load, lane="light")
        return S.DocumentOut(
            id=doc.id,
            text=doc.text,
            url=doc.url,
            source=doc.source,
            metadata=_as_dict(dict(doc.metadata)) or {},
            content_hash=doc.content_hash,
            provenance=_as_dict(record),
        )

    @app.get("/healthz", response_model=S.HealthOut, tags=["ops"], summary="Liveness")
    async def healthz() -> S.HealthOut:
        """200 while the process serves requests."""
        return S.HealthOut(version=__version__)

    @app.get(
        "/readyz",
        responses=error_responses(503),
        response_model=S.ReadyOut,
        tags=["ops"],
        summary="Readiness (models warm, store readable)",
    )
    async def readyz(request: Request) -> S.ReadyOut:
        """200 once the models are warm and the store reads; 503 before, when warm-up failed or the store is damaged."""
        rt = runtime_of(request)
        gate = rt.require_gate()
        check = getattr(gate.store, "check_readable", None)
        if check is not None:  # damaged since warm-up (CURRENT, manifest, ledger): every ask would be a 503
            try:
                await run_in_threadpool(check)
            except StoreDamagedError as exc:
                raise map_exception(exc) from None
        return S.ReadyOut(ready=True, store=gate.store is not None)

    # load balancers probe with HEAD: the same status and headers (the server sends no body);
    # left out of the schema, which lists each probe once
    for path, probe in (("/healthz", healthz), ("/readyz", readyz)):
        app.add_api_route(path, probe, methods=["HEAD"], include_in_schema=False)

    @app.get(
        "/metrics",
        response_class=PlainTextResponse,
        tags=["ops"],
        summary="Prometheus metrics",
    )
    async def metrics(request: Request) -> PlainTextResponse:
        """Request counts, latencies, verdict levels (Prometheus text format 0.0.4)."""
        rt = runtime_of(request)
        return PlainTextResponse(generate_latest(rt.metrics.registry), media_type=CONTENT_TYPE)

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        """Serve the web UI."""
        return FileResponse(
            STATIC_DIR / "index.html",
            headers={
                "Content-Security-Policy": UI_CSP,
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "no-cache",
            },
        )

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        """The UI's icon, where browsers look for it (an SVG: every current browser reads it)."""
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")

    add_log_routes(app)  # GET /v1/log and /v1/log/{id}: the verdict log (ragtrust.server.log_routes)


__all__ = ["STATIC_DIR", "UI_CSP", "add_routes"]
