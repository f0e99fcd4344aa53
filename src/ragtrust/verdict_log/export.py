"""Export of the verdict log: JSONL, CSV and (with pyarrow) Parquet, oldest entry first.

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
        InputError: an unknown format or filter.
        MissingDependencyError: ``parquet`` without pyarrow.
    """
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}")
    entries = log.iter_entries(level=level, operation=operation, since=since)
    path = Path(out)
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
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
        return len(rows)
    with path.open("w", encoding="utf-8", newline="") as handle:
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


__all__ = ["EXPORT_FORMATS", "export_log"]
