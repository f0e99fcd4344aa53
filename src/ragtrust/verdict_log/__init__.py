"""The verdict log: every ``ragtrust ask`` and every API verdict, appended to a local SQLite file.

One row per verdict: when (UTC), the operation (``ask`` / ``screen`` / ``verify``), where it
came from (``cli`` / ``api``), the API principal when the request carried a key, the query and
answer, the trust score, level and decision with its reasons, the model ids and timings, and
the whole verdict JSON (zlib-compressed). The CLI and the server append to it; the pipeline
never does (it knows nothing of files). ``ragtrust log`` lists, shows and exports it;
``GET /v1/log`` serves it to the web UI.

Where it lives (:func:`default_log_path`): ``[log] path`` when set; else beside the store
(``<store>/verdicts.sqlite``); else the user data dir (``$XDG_DATA_HOME/ragtrust/verdicts.sqlite``,
``~/.local/share`` when unset). ``[log] enabled = false`` (``RAGTRUST_LOG__ENABLED=0``) turns it
off. Writing never fails or stalls a verdict: a problem is logged as a warning and the verdict
goes unlogged; a folder that cannot be written means no log, with one warning. ``[log] max_rows``
bounds it: past it the oldest rows are pruned.

The parts: :mod:`~ragtrust.verdict_log.log` (the file, appending, reading, filters) and
:mod:`~ragtrust.verdict_log.export` (JSONL / CSV / Parquet).

Example:
    >>> from ragtrust.config import load_settings
    >>> default_log_path(load_settings(env={"RAGTRUST_LOG__ENABLED": "0"}), "kb-store") is None
    True
"""

from ragtrust.verdict_log.export import EXPORT_FORMATS, export_log
from ragtrust.verdict_log.log import (
    LEVELS,
    LOG_FILE,
    OPERATIONS,
    LogEntry,
    VerdictLog,
    append_verdict,
    default_log_path,
    open_verdict_log,
    parse_level,
    parse_operation,
    parse_since,
    utc_now,
)

__all__ = [
    "EXPORT_FORMATS",
    "LEVELS",
    "LOG_FILE",
    "OPERATIONS",
    "LogEntry",
    "VerdictLog",
    "append_verdict",
    "default_log_path",
    "export_log",
    "open_verdict_log",
    "parse_level",
    "parse_operation",
    "parse_since",
    "utc_now",
]
