"""Export of the verdict log: JSONL, CSV and (with pyarrow) Parquet, oldest entry first.

The export is written to a temporary file beside ``out`` that replaces it only once every
entry is written, and an ``out`` that is the log itself (or its ``-wal`` / ``-shm``) is
refused before anything is opened: an export never costs the audit history it reads.

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> log = VerdictLog(folder / "verdicts.sqlite")
    >>> _ = log.append({"query": "q", "trust_score": 0.2, "trust_level": "VERY LOW"}, operation="screen")
    >>> export_log(log, folder / "out.csv", "csv")
    1
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ragtrust.errors import InputError, MissingDependencyError
from ragtrust.io import atomic_open, check_output_file, same_file
from ragtrust.verdict_log.log import LogEntry, VerdictLog

#: the formats of :func:`export_log`; parquet needs pyarrow
EXPORT_FORMATS = ("jsonl", "csv", "parquet")
_FLAT = ("id", "at", "operation", "source", "principal", "decision", "level", "trust_score", "query", "answer")


def _flat(entry: LogEntry) -> dict[str, Any]:
    """One row for CSV / Parquet: scalars, with the lists and mappings as JSON text."""
    row = {name: getattr(entry, name) for name in _FLAT}
    row["trusted"] = entry.trusted
    for name, value in (
        ("reasons", list(entry.reasons)),
        ("models", dict(entry.models)),
        ("timings_s", dict(entry.timings_s)),
        ("verdict", entry.verdict),
    ):
        row[name] = json.dumps(value, ensure_ascii=False)
    return row


def export_log(
    log: VerdictLog,
    out: str | Path,
    fmt: str = "jsonl",
    *,
    level: str | None = None,
    operation: str | None = None,
    since: str | None = None,
) -> int:
    """Write the matching entries, oldest first, with their full verdicts; the number written.

    ``jsonl``: one entry per line, the verdict as an object. ``csv`` and ``parquet``: one flat
    row per entry (``reasons``, ``models``, ``timings_s`` and ``verdict`` as JSON text), which
    ``pandas.read_csv`` / ``pandas.read_parquet`` read as they are.

    Raises:
        InputError: an unknown format or filter; ``out`` is the log being read, a folder,
            or cannot be written (nothing is written then).
        MissingDependencyError: ``parquet`` without pyarrow.
    """
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}")
    path = Path(out)
    check_export_path(path, log.path)
    entries = log.iter_entries(level=level, operation=operation, since=since)
    n = 0
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise MissingDependencyError("parquet export", "pip install pyarrow") from exc
        rows = [_flat(e) for e in entries]
        names = [*_FLAT, "trusted", "reasons", "models", "timings_s", "verdict"]
        types = {"id": pa.int64(), "trust_score": pa.float64(), "trusted": pa.bool_()}
        schema = pa.schema([(name, types.get(name, pa.string())) for name in names])
        with atomic_open(path, "wb") as raw:
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), raw)
        return len(rows)
    with atomic_open(path, newline="") as handle:
        if fmt == "jsonl":
            for entry in entries:
                handle.write(json.dumps(entry.to_dict(), ensure_ascii=False) + "\n")
                n += 1
            return n
        writer = csv.DictWriter(handle, fieldnames=[*_FLAT, "trusted", "reasons", "models", "timings_s", "verdict"])
        writer.writeheader()
        for entry in entries:
            writer.writerow(_flat(entry))
            n += 1
    return n


def check_export_path(out: Path, log_path: Path) -> None:
    """Refuse an export file that is the log being read (or its ``-wal`` / ``-shm``), or cannot be written.

    Raises:
        InputError: naming ``out`` and what to do.
    """
    for suffix in ("", "-wal", "-shm", "-journal"):
        if same_file(out, log_path.with_name(log_path.name + suffix)):
            raise InputError(
                f"--out {out} is the verdict log being exported ({log_path.name}{suffix}): writing it would "
                "destroy the log; name another file"
            )
    check_output_file(out, f"--out {out}")


__all__ = ["EXPORT_FORMATS", "check_export_path", "export_log"]
