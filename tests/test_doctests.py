"""Every docstring example in ``src/ragtrust`` runs and gives the output it shows.

The examples are the first documentation a reader tries; a wrong one is a bug. One test per
module (an import error fails the test: it is not a reason to skip).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import ragtrust

MODULES = sorted(m.name for m in pkgutil.walk_packages(ragtrust.__path__, "ragtrust."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples failed in {name}"


def test_the_walk_finds_the_packages() -> None:
    assert "ragtrust.screening.conflicts" in MODULES and "ragtrust.ingest.loaders" in MODULES
