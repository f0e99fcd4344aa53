"""Offline training of the packaged models: data recipes, training loops, calibration and evaluation.

Nothing here runs at query time: the run-time wrappers of the trained models live in
:mod:`ragtrust.models`. Training needs the optional ``[train]`` extra (``torch``,
``transformers``, ``onnx``); the data and evaluation modules read the attack generator and
the benchmark corpora of :mod:`ragtrust.eval`, so this package sits beside ``eval``, above
the pipeline. Modules (import them directly; nothing heavy is imported here):

- :mod:`ragtrust.training.nli` - fine-tune the NLI cross-encoder (``ragtrust nli train``);
  its pairs come from :mod:`ragtrust.training.nli_data`.
- :mod:`ragtrust.training.injection` - fine-tune the injection classifier
  (``ragtrust injection train``); its data recipe and splits are
  :mod:`ragtrust.training.injection_data`, the text written for it
  :mod:`ragtrust.training.injection_texts`.
- :mod:`ragtrust.training.injection_eval` - calibrate and evaluate the injection signal
  (``ragtrust injection calibrate | eval``).
- :mod:`ragtrust.training.loop` - what both trainings share: length-bucketed batches, a
  resumable AdamW run, temperature scaling, and the prepared data files of ``--save-data`` /
  ``--data-file`` (built where the corpora are, trained on elsewhere).
"""
