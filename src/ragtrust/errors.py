"""The one exception tree of ragtrust.

::

    RagTrustError
    ├── ConfigError (ValueError)        the user's mistake: bad name, value, file
    ├── InputError (ValueError)         bad document / query / request payload
    │   └── StoreDamagedError           a store file (ledger, manifest, segment) is missing or unreadable
    ├── MissingDependencyError          names the install command
    ├── BackendError                    retriever / LLM / HTTP failure, raised ``from`` the cause
    └── ModelError                      model load or inference failure

Messages say what was expected, what came, and how to fix it. Signals never raise on odd
text (they return ``skipped=True``); whether a failure is fatal is pipeline policy.
"""

from __future__ import annotations


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
]
