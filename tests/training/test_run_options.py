"""Impossible training options fail at once, as one-line input errors, before any data or model work."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ragtrust.errors import InputError
from ragtrust.training.injection_data import DataConfig
from ragtrust.training.nli_data import TrainConfig

pytest.importorskip("torch")
pytest.importorskip("transformers")


def _configs(tmp_path: Path, base: Path) -> dict[str, Any]:
    from ragtrust.training.injection import InjectionTrainConfig

    out = str(tmp_path / "run")
    return {
        "nli": TrainConfig(data_dir=str(tmp_path / "no-data"), out_dir=out, base_model=str(base)),
        "injection": InjectionTrainConfig(out_dir=out, base_model=str(base), data=DataConfig(data_dir="")),
    }


@pytest.mark.parametrize("kind", ["nli", "injection"])
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"epochs": 0.0}, r"^--epochs must be above 0, got 0\.0$"),
        ({"lr": -1.0}, r"^--lr must be above 0, got -1\.0$"),
        ({"threads": 0}, r"^--threads must be above 0, got 0$"),
        ({"max_steps": 0}, r"^--max-steps must be above 0"),
        ({"time_budget_min": -5.0}, r"^--budget-min must be above 0"),
        ({"base_model": "/no/such/model"}, r"^--base-model /no/such/model: no such model folder$"),
        ({"init_from": "./no-such-run/final"}, r"^--init-from \./no-such-run/final: no such model folder$"),
    ],
)
def test_bad_options_fail_before_any_work(
    kind: str, change: dict[str, Any], message: str, tiny_nli_dir: Path, tmp_path: Path
) -> None:
    from ragtrust.training import injection, nli

    cfg = replace(_configs(tmp_path, tiny_nli_dir)[kind], **change)
    with pytest.raises(InputError, match=message):
        (nli.train if kind == "nli" else injection.train)(cfg, log=lambda _: None)
    assert not (tmp_path / "run").exists()  # nothing written, no data built


def test_a_folder_without_a_model_is_named(tmp_path: Path, tiny_nli_dir: Path) -> None:
    from ragtrust.training.loop import check_model_source

    check_model_source("--base-model", str(tiny_nli_dir))  # a model folder passes
    with pytest.raises(InputError, match=r"^--init-from .*: cannot load a model from it \("):
        check_model_source("--init-from", str(tmp_path))
