"""Stage 2: NLI verification of the answer against the retrieved documents (SPEC section 4).

Example:
    >>> from ragtrust.testing import LexicalNLI, retrieved
    >>> FactualityVerifier(nli=LexicalNLI()).verify("", retrieved(["Use TLS."])).inconclusive
    True
"""

from __future__ import annotations

from ragtrust.verification.factuality import FactualityReport, FactualityVerifier, SentenceSupport, strip_citations

__all__ = ["FactualityReport", "FactualityVerifier", "SentenceSupport", "strip_citations"]
