"""The README's "Integrations" examples run as written against the installed libraries.

Each ```python block of the section runs in its own interpreter (the examples set process-wide
state: LlamaIndex's ``Settings.llm``, OpenTelemetry's tracer provider), offline, with the
packaged models, from an empty folder (no ``ragtrust.toml`` is picked up).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
#: the library each example needs, by its ### heading
NEEDS = {"LangChain": "langchain_core", "LlamaIndex": "llama_index.core", "OpenTelemetry": "opentelemetry.sdk"}
LEVELS = ("HIGH", "MEDIUM", "LOW", "VERY LOW")


def integration_examples(text: str) -> dict[str, str]:
    """The first ```python block under each ### heading of the ``## Integrations`` section."""
    section = text.split("\n## Integrations\n", 1)[1].split("\n## ", 1)[0]
    out = {}
    for part in section.split("\n### ")[1:]:
        heading = part.split("\n", 1)[0].split(" (")[0].strip()
        block = re.search(r"```python\n(.*?)```", part, re.DOTALL)
        if block:
            out[heading] = block.group(1)
    return out


EXAMPLES = integration_examples(README.read_text(encoding="utf-8"))


def test_the_section_has_one_short_example_per_integration() -> None:
    assert set(EXAMPLES) == set(NEEDS)
    for name, code in EXAMPLES.items():
        statements = [line for line in code.splitlines() if line.strip() and not line.startswith(("from ", "import "))]
        assert len(statements) <= 10, f"the {name} example has {len(statements)} lines besides its imports"


@pytest.mark.model
@pytest.mark.parametrize("name", sorted(NEEDS))
def test_the_example_runs(name: str, tmp_path: Path) -> None:
    pytest.importorskip(NEEDS[name])
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRUST_")}
    done = subprocess.run(
        [sys.executable, "-c", EXAMPLES[name]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout.strip().splitlines()[-1]
    assert any(level in printed for level in LEVELS), printed
