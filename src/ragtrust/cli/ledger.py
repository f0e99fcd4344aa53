"""Provenance commands: vet, quarantine and ledger (a document's history in the store's ledger).

They read and write the store's provenance ledger only: no model is loaded. They are
registered by :func:`ragtrust.cli.store.register`, beside the other store commands.
Each tier change is recorded with who made it: ``--by NAME``, else the OS user
(``getpass.getuser()``, ``unknown`` when there is none); ``ragtrust ledger`` shows it.
Exit codes (see :mod:`ragtrust.cli.common`): 0 success; 2 unknown ids, a missing store or
a damaged ledger.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ragtrust.cli.common import StoreOption, console, handle_errors, print_json, store_path
from ragtrust.cli.render import plain

_VET_IDS = typer.Argument(..., help="document ids (a chunk id vets its document)")
_QUARANTINE_IDS = typer.Argument(..., help="document ids (a chunk id quarantines its document)")
ByOption = typer.Option(
    None, "--by", help="who makes the change, recorded in the ledger (default: the OS user)", show_default=False
)


def cli_actor(by: str | None) -> str:
    """Who a CLI change is recorded as: ``--by NAME``, else the OS user, else ``unknown``.

    Example:
        >>> cli_actor("alice")
        'alice'
    """
    if by is not None:
        return by  # the ledger refuses an empty or multi-line name with a one-line error
    import getpass

    try:
        return getpass.getuser() or "unknown"
    except (KeyError, OSError):  # no user name in the environment nor the password database
        return "unknown"


@handle_errors
def vet(
    ids: list[str] = _VET_IDS,
    store: Path | None = StoreOption,
    reason: str = typer.Option("", "--reason", help="why (recorded in the ledger)"),
    by: str | None = ByOption,
) -> None:
    """Mark documents as vetted: their current content becomes the trusted version."""
    _set_tier(store_path(store), ids, "vetted", reason, cli_actor(by))


@handle_errors
def quarantine(
    ids: list[str] = _QUARANTINE_IDS,
    store: Path | None = StoreOption,
    reason: str = typer.Option("", "--reason", help="why (recorded in the ledger)"),
    by: str | None = ByOption,
) -> None:
    """Quarantine documents: the provenance signal then scores them as near-certain poison."""
    _set_tier(store_path(store), ids, "quarantined", reason, cli_actor(by))


@handle_errors
def ledger_command(
    doc_id: str = typer.Argument(..., help="document id (a chunk id shows its document)"),
    store: Path | None = StoreOption,
    json_out: bool = typer.Option(False, "--json", help="print as JSON"),
) -> None:
    """Show a document's provenance: source, hash, tier, versions and events."""
    from ragtrust.documents import shown_id
    from ragtrust.errors import InputError
    from ragtrust.ingest.store import open_ledger

    root = store_path(store)
    _check_ids([doc_id], root)
    with open_ledger(root) as db:
        key = _parent_key(db, doc_id, root)
        record = db.get(key, include_deleted=True)
        if record is None:
            hint = _did_you_mean(db, [(doc_id, key)], include_deleted=True)
            raise InputError(f"document {shown_id(doc_id)} is not in the provenance ledger{hint}")
        history = db.history(key)
        events = db.events(key)
    if json_out:
        print_json(
            {
                "record": record.to_dict(),
                "changed_since_vetted": record.changed_since_vetted,
                "versions": [v.to_dict() for v in history],
                "events": [e.to_dict() for e in events],
            }
        )
        return
    summary = Table(title=plain(f"Provenance of {key}"), title_justify="left", show_header=False)
    summary.add_column("field")
    summary.add_column("value")
    for name, value in (
        ("source", record.source),
        ("tier", record.tier or "(none)"),
        ("tier set", f"{record.tier_changed_at} by {record.tier_changed_by or 'unknown'}" if record.tier else "-"),
        ("content hash", record.content_hash[:16]),
        ("vetted hash", (record.vetted_hash or "")[:16] or "(never vetted)"),
        ("changed since vetted", "YES" if record.changed_since_vetted else "no"),
        ("first seen", record.first_seen),
        ("last changed", record.last_changed),
        ("deleted", record.deleted_at or "no"),
    ):
        summary.add_row(name, plain(str(value)))
    console.print(summary)
    versions = Table(title="Versions", title_justify="left")
    for col in ("version", "hash", "recorded", "source"):
        versions.add_column(col)
    for v in history:
        versions.add_row(str(v.version), v.content_hash[:16], v.recorded_at, plain(v.source))
    console.print(versions)
    log = Table(title="Events", title_justify="left")
    for col in ("at", "event", "by", "detail"):
        log.add_column(col)
    for e in events:
        log.add_row(e.at, e.kind, plain(e.actor), plain(e.detail))
    console.print(log)


def _check_ids(ids: list[str], root: Path) -> None:
    """Refuse an empty id (``vet ""``): it names no document, and the error had nothing to quote."""
    from ragtrust.documents import is_blank
    from ragtrust.errors import InputError

    if any(is_blank(i) for i in ids):
        raise InputError(f"a document id is empty: name a document (ragtrust docs --store {root} lists them)")


def _parent_key(db: Any, doc_id: str, root: Path) -> str:
    """Map a chunk id ``<id>#<n>`` to its parent when only the parent is in the ledger.

    Raises:
        InputError: the parent is live in the store but has no chunk ``n`` (``vet DOC#99``
            vetted DOC though DOC has 12 chunks: a typo passed for a real chunk).
    """
    from ragtrust.documents import shown_id
    from ragtrust.errors import InputError
    from ragtrust.ingest.store_files import current_generation, read_manifest_file

    if db.get(doc_id, include_deleted=True) is not None:
        return doc_id
    head, sep, tail = doc_id.rpartition("#")
    if not (sep and tail.isdigit()):
        return doc_id
    generation = current_generation(root)
    parent = read_manifest_file(root, generation)["parents"].get(head) if generation is not None else None
    chunks = parent.get("chunks") if isinstance(parent, dict) else None
    if isinstance(chunks, int) and int(tail) >= chunks:
        raise InputError(
            f"no chunk {shown_id(doc_id)} in store {root}: {shown_id(head)} has {chunks} chunk(s), #0 to #{chunks - 1}"
        )
    return head


def _did_you_mean(db: Any, unknown: list[tuple[str, str]], *, include_deleted: bool = False) -> str:
    """``"; did you mean X or Y?"`` from the ledger's closest ids, or ``""`` when none is close.

    ``unknown`` holds ``(typed id, ledger key)`` pairs; with several unknown ids each
    suggestion says which id it is for.
    """
    parts: list[str] = []
    for typed, key in unknown:
        matches = db.closest_ids(key, include_deleted=include_deleted)
        if matches:
            parts.append(" or ".join(matches) + (f" (for {typed})" if len(unknown) > 1 else ""))
    return f"; did you mean {', '.join(parts)}?" if parts else ""


def _tier_verb(tier: str) -> str:
    """The command that sets ``tier``: ``vetted`` -> ``vet``, ``quarantined`` -> ``quarantine``."""
    return {"vetted": "vet", "quarantined": "quarantine"}.get(tier, f"mark {tier}")


def _set_tier(root: Path, ids: list[str], tier: str, reason: str, actor: str) -> None:
    from ragtrust.errors import InputError
    from ragtrust.ingest.store import open_ledger

    _check_ids(ids, root)
    with open_ledger(root) as db:
        keys = [_parent_key(db, i, root) for i in ids]
        unknown = [(i, k) for i, k in zip(ids, keys, strict=True) if db.get(k) is None]
        deleted = [(i, r) for i, k in unknown if (r := db.get(k, include_deleted=True)) is not None]
        if deleted:
            # its history is still in the ledger (``ragtrust ledger``), but there is nothing to vet
            names = ", ".join(f"{i} (deleted {str(r.deleted_at)[:19].replace('T', ' ')})" for i, r in deleted)
            raise InputError(f"deleted from store {root}: {names}; ingest it again to {_tier_verb(tier)} it")
        if unknown:
            names = ", ".join(i for i, _ in unknown)
            hint = _did_you_mean(db, unknown) or " (see `ragtrust ingest`)"
            raise InputError(f"not in the ledger of store {root}: {names}{hint}")
        for key in dict.fromkeys(keys):
            db.set_tier(key, tier, reason, actor=actor)
    console.print(plain(f"{tier} by {actor}: {', '.join(dict.fromkeys(keys))}"), highlight=False)


__all__ = ["ByOption", "cli_actor", "ledger_command", "quarantine", "vet"]
