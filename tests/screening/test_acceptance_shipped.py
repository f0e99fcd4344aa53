"""Issue 4's acceptance with the shipped models: the scenario of ``scripts/reproduce.sh acceptance``.

Five knowledge-base rules for "How should passwords be stored?": kb-02 with an appended
override, kb-01 with an appended contradiction, three clean neighbours. The poisoned two
must be marked by the right signals and the clean ones stay below 0.3. With the fixed
0.4 contradiction ramp (before the per-model calibration) kb-03 reached 0.49 here.
"""

from __future__ import annotations

import pytest

from ragtrust.config import Settings
from ragtrust.data.kb import load_knowledge_base
from ragtrust.demo import DEMO_CONTRADICTION, DEMO_OVERRIDE
from ragtrust.documents import Document, RetrievedDoc
from ragtrust.models.embedder import default_embedder
from ragtrust.models.nli import default_nli
from ragtrust.screening.aggregate import build_screener

pytestmark = pytest.mark.model

SET = [("kb-02", DEMO_OVERRIDE, 0.78), ("kb-03", "", 0.66), ("kb-01", DEMO_CONTRADICTION, 0.52),
       ("kb-23", "", 0.49), ("kb-14", "", 0.44)]  # fmt: skip


def test_shipped_models_mark_the_poisoned_rules_and_spare_their_neighbours() -> None:
    kb = {d.id: d for d in load_knowledge_base()}
    docs = [
        RetrievedDoc(document=Document(id=i, text=kb[i].text + extra, url=kb[i].url), score=s, rank=r + 1)
        for r, (i, extra, s) in enumerate(SET)
    ]
    settings = Settings()
    screener = build_screener(settings, nli=default_nli(settings), embedder=default_embedder(settings))
    report = screener.screen(docs, "How should passwords be stored?")
    assert not report.errors
    by_id = {d.doc_id: d for d in report.documents}
    override = {s.name: s for s in by_id["kb-02"].signals}["linguistic"]
    assert by_id["kb-02"].suspicious and any("instruction override" in r for r in override.reasons)
    marker = {s.name: s for s in by_id["kb-01"].signals}["linguistic"]
    assert by_id["kb-01"].poison_probability > 0.3 and any("contradiction marker" in r for r in marker.reasons)
    for clean in ("kb-03", "kb-23", "kb-14"):
        assert by_id[clean].poison_probability < 0.3, (clean, by_id[clean].poison_probability)
    assert any(w.startswith("Document kb-02 contains an instruction override") for w in report.warnings)
