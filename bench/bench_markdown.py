"""Markdown metadata before and after markdown-it-py (issue 21): time and headings over a folder.

"Before" is ``markdown_metadata`` of ``src/ragtrust/ingest/markup.py`` at a git revision (the
hand-written ATX scan, by default at the commit before markdown-it-py), read with ``git show``;
"after" is the installed package. Both read every ``*.md`` file of the folder; the time is the
least of ``--repeats`` passes over all files. The headings that differ are listed per file.
Claims: those of each whole file with and without the labelled-fence filter of
:func:`ragtrust.screening.claims.extract_claims` (the code lines it leaves out).

Usage:
    python bench/bench_markdown.py --data ../shared/data/owasp-cheatsheets

Prints one JSON object (config, versions, numbers, differences).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragtrust.ingest.markup import markdown_code_ranges, markdown_metadata
from ragtrust.screening.claims import extract_claims, is_prose
from ragtrust.text import assertions

#: the last commit whose markup.py has the hand-written scan
BEFORE = "9a7fdf9"


def _before(revision: str) -> Callable[[str], dict[str, Any]]:
    source = subprocess.run(
        ["git", "show", f"{revision}:src/ragtrust/ingest/markup.py"], capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType("markup_before")
    exec(compile(source, f"markup.py@{revision}", "exec"), module.__dict__)  # noqa: S102 - our own file at a commit
    return module.markdown_metadata  # type: ignore[no-any-return]


def _best_seconds(parse: Callable[[str], object], texts: list[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for text in texts:
            parse(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="Folder of Markdown files.")
    parser.add_argument("--before", default=BEFORE, help="Git revision of the hand-written scan.")
    parser.add_argument("--repeats", type=int, default=5, help="Passes over all files; the least time counts.")
    args = parser.parse_args()
    files = sorted(args.data.glob("*.md"))
    if not files:
        sys.exit(f"no *.md files in {args.data}")
    texts = [f.read_text(encoding="utf-8") for f in files]
    before = _before(args.before)
    differences: list[dict[str, Any]] = []
    counts = {"before": 0, "after": 0}
    claims = {"without_filter": 0, "with_filter": 0, "in_labelled_fences": 0}
    for file, text in zip(files, texts, strict=True):
        old = [tuple(h) for h in before(text)["headings"]]
        new = [tuple(h) for h in markdown_metadata(text)["headings"]]
        counts["before"] += len(old)
        counts["after"] += len(new)
        prose = [s for s in assertions(text) if is_prose(s.text)]
        fenced = markdown_code_ranges(text, labelled_only=True)
        claims["without_filter"] += len(prose)
        claims["in_labelled_fences"] += sum(any(a <= s.start < b for a, b in fenced) for s in prose)
        claims["with_filter"] += len(extract_claims(0, text, max_claims=len(prose) + 1))
        if old != new:
            differences.append(
                {
                    "file": file.name,
                    "only_before": [list(h) for h in old if h not in set(new)],
                    "only_after": [list(h) for h in new if h not in set(old)],
                }
            )
    import markdown_it

    print(
        json.dumps(
            {
                "config": {"data": args.data.name, "files": len(files), "bytes": sum(len(t.encode()) for t in texts)},
                "versions": {"python": platform.python_version(), "markdown-it-py": markdown_it.__version__},
                "machine": {"platform": platform.platform(), "cpus": __import__("os").cpu_count()},
                "before_revision": args.before,
                "seconds": {
                    "before": round(_best_seconds(before, texts, args.repeats), 4),
                    "after": round(_best_seconds(markdown_metadata, texts, args.repeats), 4),
                },
                "headings": counts,
                "claims": claims,
                "files_that_differ": len(differences),
                "differences": differences,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
