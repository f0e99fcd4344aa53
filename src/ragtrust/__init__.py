"""ragtrust: a trust layer for retrieval-augmented generation."""

from __future__ import annotations

__version__ = "0.1.0"
