"""TrustGate: one query through the whole trust layer (SPEC section 2).

::

    retrieve ─► Stage 1 screen (gate: flag / drop-suspicious / block)
             ─► extract passages ─► n-gram align ─► generate ─► citation guard ─► post-process
             ─► Stage 2 verify (NLI factuality per sentence) ─► Trust Index ─► Verdict

Every stage is a small component with its own contract (``screening.Screener``,
``evidence.ExtractiveExtractor``/``LLMExtractor``, ``evidence.NGramAligner``, a
``Generator``, ``evidence.CitationGuard``, ``verification.FactualityVerifier``) and is
usable on its own through :meth:`TrustGate.screen`, :meth:`TrustGate.verify` and
:meth:`TrustGate.align`. Construction is cheap; :meth:`TrustGate.warm_up` loads models.

The package, by job: ``gate`` (:class:`TrustGate`, the stages in order), ``parts`` (the
contract each stage keeps), ``gating`` (the document gate), ``checks`` (Stage 2 run fail
closed), ``decision`` (what the stages found, fused into a verdict), ``rules`` (the
suspicious-use and conflict rules of the decision), ``components`` (the default extractor
and writer as registry specs, model ids), ``calibration`` (a calibrated tau),
``stopwatch`` (timings).

The gate (``screening.policy``): ``drop-suspicious`` (default) withholds documents above
``drop_threshold`` from the generator and from the evidence; ``flag`` keeps them, and a
verdict whose context held one is never trusted; ``block`` gives no answer when any is
retrieved. A document quarantined in the store's ledger is withheld under every policy.

The decision (see :mod:`ragtrust.trust`): ``Verdict.trusted`` needs ``T >= tau`` *and* no
internal failure, an answer, a grounded sentence, no suspicious document in the context,
evidence about the question and an answer that addresses it (``relevance``: the RAG
triad's context and answer relevance, :mod:`ragtrust.verification.relevance`), and an
answer that does not say the documentation "does not explicitly state" one;
``Verdict.decision_reasons`` lists the conditions that failed.

Failure policy (fail closed): an exception inside a signal, the NLI model or the verifier
is recorded in ``Verdict.errors`` with a warning naming it, and such a verdict is never
trusted. Retrieval or generation failures raise :class:`~ragtrust.errors.BackendError`:
there is no answer to judge.

Example:
    >>> from ragtrust.documents import Document
    >>> from ragtrust.testing import HashingEmbedder, LexicalNLI
    >>> docs = [Document(id="kb-1", text="Store passwords with Argon2id, a slow adaptive hash.")]
    >>> gate = TrustGate.from_documents(docs, nli=LexicalNLI(), embedder=HashingEmbedder())
    >>> verdict = gate.ask("How should passwords be stored?")
    >>> verdict.trust_level in {"HIGH", "MEDIUM", "LOW", "VERY LOW"}
    True
"""

from __future__ import annotations

from ragtrust.pipeline.calibration import apply_calibration, load_calibration
from ragtrust.pipeline.gate import TrustGate

__all__ = ["TrustGate", "apply_calibration", "load_calibration"]
