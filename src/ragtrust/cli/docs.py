"""``ragtrust docs``: the store's documents with their provenance, so ``vet`` / ``quarantine`` / ``ledger`` have ids.

It reads the store's provenance ledger only (no model is loaded): each document's id (never
cut: a long id folds onto the next line), tier, number of versions, whether its content
changed since it was vetted, whether it was deleted, and its source. Exit codes: 0 success;
2 no store, an unknown tier or a damaged ledger.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ragtrust.cli.common import StoreOption, console, handle_errors, print_json, store_path
from ragtrust.cli.render import plain
from ragtrust.errors import InputError

#: ``--tier`` values: the ledger's tiers, and ``none`` for documents whose tier was never set
TIER_CHOICES = ("vetted", "unvetted", "quarantined", "none")


def _deleted_ids(root: Path) -> list[str]:
    """Ids of deleted documents, read from the ledger file (its API lists live documents only)."""
    import sqlite3

    from ragtrust.ingest.sqlite_ro import connect_read_only
    from ragtrust.ingest.store_files import LEDGER_FILE

    conn = connect_read_only(root / LEDGER_FILE)
    try:
        rows = conn.execute("SELECT doc_id FROM documents WHERE deleted_at IS NOT NULL ORDER BY doc_id").fetchall()
    except sqlite3.Error as exc:
        raise InputError(f"cannot read the deleted documents of store {root}: {exc}") from None
    finally:
        conn.close()
    return [r[0] for r in rows]


def list_documents(root: Path, tier: str | None = None, *, deleted: bool = False) -> list[dict[str, Any]]:
    """The documents of the store at ``root`` as rows, by id (``deleted``: the deleted ones too).

    Raises:
        InputError: no store at ``root``, or an unknown tier.
    """
    from ragtrust.ingest.store import open_ledger

    if tier is not None and tier not in TIER_CHOICES:
        raise InputError(f"unknown tier {tier!r}; expected one of {', '.join(TIER_CHOICES)}")
    with open_ledger(root) as db:
        ids = db.ids()
        if deleted:
            ids = sorted({*ids, *_deleted_ids(root)})
        records = [db.get(i, include_deleted=True) for i in ids]
    rows = []
    for rec in records:
        if rec is None or (tier is not None and (rec.tier or "none") != tier):
            continue
        rows.append(
            {
                "id": rec.doc_id,
                "tier": rec.tier,
                "versions": rec.versions,
                "changed_since_vetted": rec.changed_since_vetted,
                "deleted": rec.deleted_at,
                "source": rec.source,
            }
        )
    return rows


@handle_errors
def docs_command(
    store: Path | None = StoreOption,
    tier: str | None = typer.Option(
        None, "--tier", help="only documents of this tier: vetted, unvetted, quarantined or none (never set)"
    ),
    deleted: bool = typer.Option(False, "--deleted", help="list deleted documents too"),
    as_json: bool = typer.Option(False, "--json", help="print the documents as JSON"),
) -> None:
    """List the store's documents: id, tier, versions, changed since vetted, deleted, source."""
    root = store_path(store)
    rows = list_documents(root, tier.strip().lower() if tier else None, deleted=deleted)
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print(plain(f"no documents in store {root}" + (f" with tier {tier}" if tier else "")), highlight=False)
        return
    changed = any(row["changed_since_vetted"] for row in rows)  # the note explains a YES: only under one
    table = Table(
        title=plain(f"{len(rows)} document(s) in store {root}"),
        title_justify="left",
        caption="changed: the content changed since it was vetted" if changed else None,
        caption_justify="left",
    )
    # the id is never cut (vet / quarantine / ledger need it whole): it folds onto the next line
    table.add_column("id", overflow="fold", min_width=16)
    table.add_column("tier", no_wrap=True)
    table.add_column("versions", justify="right", no_wrap=True)
    table.add_column("changed", no_wrap=True)
    table.add_column("deleted", no_wrap=True)
    table.add_column("source", overflow="fold", min_width=8, max_width=48)  # the id gets the room first
    for row in rows:
        table.add_row(
            plain(row["id"]),
            row["tier"] or "(none)",
            str(row["versions"]),
            "YES" if row["changed_since_vetted"] else "no",
            (row["deleted"] or "")[:19].replace("T", " ") or "no",
            plain(row["source"]),
        )
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``docs``."""
    app.command("docs")(docs_command)


__all__ = ["TIER_CHOICES", "docs_command", "list_documents", "register"]
