"""Stage 1: poison screening of retrieved documents (SPEC section 3).

One module per signal, each registered under its name in :mod:`ragtrust.registry`:

=====================  ==============================================  =====================
name                   class                                           needs
=====================  ==============================================  =====================
``injection``          :class:`~.injection.InjectionSignal`            the injection classifier
``linguistic``         :class:`~.linguistic.LinguisticSignal`          text only
``structural``         :class:`~.structural.StructuralSignal`          text only
``intra_consistency``  :class:`~.intra.IntraConsistencySignal`         ``nli``
``cross_consistency``  :class:`~.cross.CrossConsistencySignal`         ``nli``
``semantic_outlier``   :class:`~.outlier.SemanticOutlierSignal`        ``embedder``
=====================  ==============================================  =====================

:class:`~.aggregate.Screener` runs them and fuses the results into per-document poison
probabilities, the batch P and the consistency C; :func:`~.aggregate.build_screener`
builds one from :class:`~ragtrust.config.Settings`.

Example:
    >>> from ragtrust.testing import retrieved
    >>> report = Screener([LinguisticSignal(), StructuralSignal()]).screen(retrieved(["Use TLS 1.3."]))
    >>> report.poison_probability, report.errors
    (0.0, ())
"""

from __future__ import annotations

from ragtrust.screening.aggregate import (
    DEFAULT_SIGNAL_WEIGHTS,
    Screener,
    ScreeningReport,
    batch_poison,
    build_screener,
    fuse,
    relevance_weights,
)
from ragtrust.screening.base import Signal
from ragtrust.screening.cross import CrossConsistencySignal, consistency_from
from ragtrust.screening.injection import InjectionSignal
from ragtrust.screening.intra import IntraConsistencySignal
from ragtrust.screening.linguistic import LinguisticSignal
from ragtrust.screening.outlier import SemanticOutlierSignal
from ragtrust.screening.structural import StructuralSignal

__all__ = [
    "DEFAULT_SIGNAL_WEIGHTS",
    "CrossConsistencySignal",
    "InjectionSignal",
    "IntraConsistencySignal",
    "LinguisticSignal",
    "Screener",
    "ScreeningReport",
    "SemanticOutlierSignal",
    "Signal",
    "StructuralSignal",
    "batch_poison",
    "build_screener",
    "consistency_from",
    "fuse",
    "relevance_weights",
]
