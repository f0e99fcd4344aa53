"""The HTTP service and web UI: ``create_app()`` builds a FastAPI app around a TrustGate.

Importing this package does not import FastAPI; ``create_app`` is loaded on first use so
that ``import ragtrust.server`` stays light.

Example:
    >>> from ragtrust.server import create_app  # doctest: +SKIP
    >>> app = create_app(store_path="kb-store")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtrust.server.app import create_app


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from ragtrust.server.app import create_app

        return create_app
    raise AttributeError(f"module 'ragtrust.server' has no attribute {name!r}")


__all__ = ["create_app"]
