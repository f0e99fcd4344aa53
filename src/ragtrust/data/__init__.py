"""Data shipped inside the package: the secure-coding knowledge base (SPEC section 8).

Example:
    >>> from ragtrust.data import load_knowledge_base
    >>> len(load_knowledge_base())
    40
"""

from __future__ import annotations

from ragtrust.data.kb import KB_FILE, Rule, load_knowledge_base, load_rules

__all__ = ["KB_FILE", "Rule", "load_knowledge_base", "load_rules"]
