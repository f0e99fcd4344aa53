"""What every benchmark script ends with: the report as JSON on stdout and, when asked, in a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit(report: Any, out: Path | None) -> None:
    """Print ``report`` as indented JSON and write the same text to ``out`` when given."""
    text = json.dumps(report, indent=2)
    print(text)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
