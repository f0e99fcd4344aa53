"""Build a store from the 40 bundled knowledge-base rules (vetted), for ``ragtrust eval relevance``.

Usage: python scripts/kb_store.py runs/kb-store
"""

from __future__ import annotations

import sys
from pathlib import Path

from ragtrust.config import load_settings
from ragtrust.data.kb import load_knowledge_base
from ragtrust.ingest.store import Store
from ragtrust.models.embedder import default_embedder


def main() -> None:
    """Create the store at the given path (refuses an existing one)."""
    root = Path(sys.argv[1])
    if root.exists():
        raise SystemExit(f"{root} exists: remove it first")
    settings = load_settings(env={})
    store = Store.open(root, default_embedder(settings), create=True, settings=settings)
    store.add(load_knowledge_base(), tier="vetted", source="ragtrust-kb")
    print(f"{root}: {len(load_knowledge_base())} rules")


if __name__ == "__main__":
    main()
