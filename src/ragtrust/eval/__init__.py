"""The benchmark harness of SPEC sections 7-8: reproduce the Evaluation Agent's tables.

Modules (import them directly; nothing heavy is imported here):

- :mod:`ragtrust.eval.datasets` - TruthfulQA, FEVER and the secure-coding knowledge base as
  :class:`~ragtrust.eval.datasets.Benchmark` corpora with seeded, disjoint query splits.
- :mod:`ragtrust.eval.attacks` - the seeded attack generator (contradiction, instruction
  injection, entity swap, subtle manipulation, mixed) with development / held-out template
  families and per-document ground truth.
- :mod:`ragtrust.eval.metrics` - accuracy, precision, recall, F1, Delta, ROC-AUC, PR-AUC,
  Wilson intervals, percentile bootstrap, the naive always-trust baseline.
- :mod:`ragtrust.eval.runner` - Part A / Part B protocol runs writing per-sample JSONL.
- :mod:`ragtrust.eval.analysis` - everything recomputed from stored samples: per-strategy
  tables, component ablation, weight sensitivity, calibration, K=3 vs K=5, attack success.
- :mod:`ragtrust.eval.report` - Markdown, JSON, PNG figures and a self-contained HTML page.
- :mod:`ragtrust.eval.evidence_metrics` - EvidenT's evidence metrics (SPEC section 9).

The command line is ``ragtrust attack`` and ``ragtrust eval run | report | calibrate``.
"""
