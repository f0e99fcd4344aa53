"""The one exception tree of ragtrust.

::

    RagTrustError
    ├── ConfigError (ValueError)        the user's mistake: bad name, value, file
    ├── InputError (ValueError)         bad document / query / request payload
    │   ├── StoreDamagedError           a store file (ledger, manifest, segment) is missing or unreadable
    │   └── StoreReadOnlyError          a write (ingest, delete, vet) to a store without write access
    ├── MissingDependencyError          names the install command
    ├── BackendError                    retriever / LLM / HTTP failure, raised ``from`` the cause
    └── ModelError                      model load or inference failure

Messages say what was expected, what came, and how to fix it. Signals never raise on odd
text (they return ``skipped=True``); whether a failure is fatal is pipeline policy.
"""

from __future__ import annotations

import re


class RagTrustError(Exception):
    """Base class of every error ragtrust raises on purpose."""


class ConfigError(RagTrustError, ValueError):
    """A configuration value, name or file is wrong (the user's to fix)."""


class InputError(RagTrustError, ValueError):
    """A document, query, file or request payload is malformed."""


class StoreDamagedError(InputError):
    """A file of a store (ledger, manifest, segment) is missing or unreadable.

    The store refuses to answer until the damage is repaired: the message names the file
    and what is wrong with it (``store damaged: ledger.sqlite: missing; ...``).
    """

    def __init__(self, file: str, detail: str, hint: str = "") -> None:
        """Build the one-line message from the damaged file (relative to the store), what is wrong and the fix."""
        super().__init__(f"store damaged: {file}: {detail}" + (f"; {hint}" if hint else ""))
        self.file = file
        self.detail = detail


class StoreReadOnlyError(InputError):
    """A write (ingest, delete, vet, quarantine, repair) to a store opened read-only.

    A store folder without write permission (or on a read-only mount) still answers
    queries; only writes are refused: ``the store at kb is read-only: ...``. The store is
    named by its folder's name, never by its absolute path.
    """

    def __init__(self, store: str, detail: str) -> None:
        """Build the one-line message from the store's name and what was refused."""
        super().__init__(f"the store at {store} is read-only: {detail}")
        self.store = store


class MissingDependencyError(RagTrustError, ImportError):
    """An optional backend is not installed; the message names the install command."""

    def __init__(self, feature: str, install: str) -> None:
        """Build the message from the feature and the ``pip install`` line that fixes it."""
        super().__init__(f"{feature} needs an optional dependency: run `{install}`")
        self.feature = feature
        self.install = install


class BackendError(RagTrustError):
    """A retriever, LLM endpoint or other external backend failed."""


class ContextLengthError(BackendError):
    """An LLM server rejected a prompt as longer than the model's context window."""


class ModelError(RagTrustError):
    """A model could not be loaded, failed its checksum, or failed during inference."""


class DeadlineExceeded(RagTrustError):
    """A request's work stopped between stages: past its time budget, or its client left."""


#: an absolute path: a ``file://`` URI, a Windows drive path, or a POSIX path of two parts or
#: more not inside a URL (``http://host/a/b``) and not an API route (``/v1/ask``)
_ABSOLUTE_PATH = re.compile(
    r"file://(?:localhost)?/[^\s'\"`<>|]+"
    r"|\b[A-Za-z]:\\(?:[^\s'\"`<>|\\]+\\)*[^\s'\"`<>|\\]+"
    r"|(?<![\w.~:/-])/(?!v\d+/)(?:[^\s'\"`<>|/:;,()]+/)+[^\s'\"`<>|/:;,()]*"
)


def redact_paths(message: str) -> str:
    r"""Replace each absolute file path in ``message`` by its last part (the file or folder name).

    For messages that leave the machine (HTTP error bodies): they name ``ledger.sqlite`` or
    ``kb``, never ``/srv/data/kb/ledger.sqlite``. URLs and API routes are kept.

    Example:
        >>> redact_paths("store damaged: /srv/kb/ledger.sqlite: missing (see http://x.test/a/b, /v1/ask)")
        'store damaged: ledger.sqlite: missing (see http://x.test/a/b, /v1/ask)'
        >>> redact_paths("cannot read file:///home/me/kb/a.md or C:\\data\\kb\\b.md")
        'cannot read a.md or b.md'
    """

    def last_part(match: re.Match[str]) -> str:
        return re.split(r"[/\\]", match.group(0).rstrip("/\\"))[-1]

    return _ABSOLUTE_PATH.sub(last_part, message)


__all__ = [
    "ContextLengthError",
    "DeadlineExceeded",
    "BackendError",
    "ConfigError",
    "InputError",
    "MissingDependencyError",
    "ModelError",
    "RagTrustError",
    "StoreDamagedError",
    "StoreReadOnlyError",
    "redact_paths",
]
