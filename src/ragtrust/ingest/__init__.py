"""Ingestion: file loaders, token-based chunking, the provenance ledger and the store.

Only light modules are imported here; the store imports FAISS lazily when an index is
built.
"""

from __future__ import annotations

from ragtrust.ingest.chunker import chunk_document, chunk_documents
from ragtrust.ingest.ledger import Ledger, LedgerEvent, ProvenanceRecord, Tier, VersionRecord
from ragtrust.ingest.loaders import LoadReport, load_paths
from ragtrust.ingest.store import IngestReport, Store

__all__ = [
    "IngestReport",
    "Ledger",
    "LedgerEvent",
    "LoadReport",
    "ProvenanceRecord",
    "Store",
    "Tier",
    "VersionRecord",
    "chunk_document",
    "chunk_documents",
    "load_paths",
]
