"""Imports point one way: every ``ragtrust`` module imports only its own layer or the layers below.

The layers (STYLE.md section 1), lowest first; a name is the part after ``ragtrust.``
(a package or a top-level module):

0. ``errors``, ``deadline``, ``documents``, ``config``, ``text``, ``io``, ``http``, ``record``,
   ``registry``, ``prompts``, ``data`` - the vocabulary every layer speaks (``data`` is the
   packaged knowledge base, ``prompts`` the prompt texts, ``http`` the bearer HTTP client,
   ``record`` a run's provenance block, ``deadline`` a request's time budget, ``identity``
   the hashes that name a kept result's inputs);
1. ``models``, ``retrieval``, ``screening``, ``evidence``, ``verification``, ``generation``,
   ``ingest`` - the components, one stage each - ``testing``, the shipped fakes of their
   protocols, and ``verdict_log``, the SQLite log of verdicts the CLI and the server append to;
2. ``trust`` - the Trust Index, pure functions of numbers;
3. ``pipeline`` (a query through the stages), ``scan`` (a corpus through Stage 1) and the
   package itself (``ragtrust/__init__.py``, the curated public API);
4. ``eval``, ``training`` (offline procedures: benchmarks, calibration, model training),
   ``demo``, ``server`` (applications over the public API) and ``integrations`` (the
   LangChain / LlamaIndex adapters over :class:`~ragtrust.pipeline.TrustGate`);
5. ``cli`` - the outermost shell: it may import everything, nothing imports it.

Every import counts: at module level, inside functions (the lazy imports that hid the old
cycles) and under ``if TYPE_CHECKING:`` (a type-only dependency still points somewhere).
Cycles are searched among the imports that run (``TYPE_CHECKING`` ones do not), between
modules and between the top-level packages. There is no exception list: a new module must be
given a layer here, and an upward import is fixed by moving code, not by a waiver.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import ragtrust

ROOT = Path(ragtrust.__file__).parent
PACKAGE = "ragtrust"

LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "errors",
        "deadline",
        "documents",
        "config",
        "text",
        "io",
        "http",
        "record",
        "registry",
        "prompts",
        "data",
        "identity",
    ),
    ("models", "retrieval", "screening", "evidence", "verification", "generation", "ingest", "testing", "verdict_log"),
    ("trust",),
    ("pipeline", "scan", "__init__"),
    ("eval", "training", "demo", "server", "integrations"),
    ("cli",),
)
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}


@dataclass(frozen=True)
class Import:
    """One ``ragtrust`` import of a module: where it is and whether it runs."""

    target: str
    line: int
    runs: bool


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def top(module: str) -> str:
    """The layer name of a module: ``ragtrust.screening.intra`` -> ``screening``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, runs: bool = True) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement below ``node`` (functions and classes included)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, runs
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), runs=False)
            for stmt in child.orelse:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), runs=runs)
        else:
            yield from _walk(child, runs)


def imports_of(name: str, path: Path, known: Mapping[str, Path]) -> list[Import]:
    """The ``ragtrust`` modules ``name`` imports (``from pkg import sub`` counts as ``pkg.sub``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []
    for node, runs in _walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        for target in targets:
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                while target not in known and "." in target:  # ``import ragtrust.x.Name`` style
                    target = target.rpartition(".")[0]
                found.append(Import(target, node.lineno, runs))
    return list(dict.fromkeys(found))  # ``from ragtrust.x import a, b``: one import of ragtrust.x


def graph() -> dict[str, list[Import]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def upward_imports(edges: Mapping[str, list[Import]]) -> list[str]:
    out = []
    for source, imports in edges.items():
        for imp in imports:
            if LAYER_OF[top(imp.target)] > LAYER_OF[top(source)]:
                out.append(
                    f"{source}:{imp.line} imports {imp.target} "
                    f"(layer {LAYER_OF[top(source)]} -> {LAYER_OF[top(imp.target)]})"
                )
    return out


def cycles(adjacency: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node, or a node importing itself (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(adjacency.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in adjacency.get(v, ()):
                out.append(sorted(component))

    for v in sorted(adjacency):
        if v not in index:
            visit(v)
    return out


def module_adjacency(edges: Mapping[str, list[Import]]) -> dict[str, set[str]]:
    """What running each module imports: its explicit imports, and the parent packages of each.

    Importing ``ragtrust.a.b`` from outside ``ragtrust.a`` runs ``ragtrust/a/__init__.py``
    first, so a cycle through a package's ``__init__`` is a cycle. From inside the package the
    ``__init__`` is already running (or done), so it is not imported again. The root package is
    left out: every module is under it.
    """
    out: dict[str, set[str]] = {}
    for source, imports in edges.items():
        targets = set()
        for imp in imports:
            if not imp.runs:
                continue
            parts = imp.target.split(".")
            for n in range(2, len(parts) + 1):
                name = ".".join(parts[:n])
                if n == len(parts) or not (source == name or source.startswith(name + ".")):
                    targets.add(name)
        targets.discard(source)
        out[source] = targets
    return out


def package_adjacency(edges: Mapping[str, list[Import]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for source, imports in edges.items():
        targets = out.setdefault(top(source), set())
        targets.update(top(imp.target) for imp in imports if imp.runs and top(imp.target) != top(source))
    return out


EDGES = graph()


def test_every_module_has_a_layer() -> None:
    unplaced = sorted({top(m) for m in EDGES} - set(LAYER_OF))
    assert not unplaced, f"give these a layer in LAYERS: {unplaced}"


def test_no_module_imports_upward() -> None:
    assert upward_imports(EDGES) == []


def test_no_import_cycle_between_modules() -> None:
    assert cycles(module_adjacency(EDGES)) == []


def test_no_import_cycle_between_packages() -> None:
    assert cycles(package_adjacency(EDGES)) == []


# -- the checker itself finds what it is for ---------------------------------------------------
def _edges_from(tmp_path: Path, files: Mapping[str, str]) -> dict[str, list[Import]]:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    known = {
        ".".join([PACKAGE, *Path(rel).with_suffix("").parts]).removesuffix(".__init__"): tmp_path / rel for rel in files
    }
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_the_checker_sees_lazy_relative_and_type_only_imports(tmp_path: Path) -> None:
    edges = _edges_from(
        tmp_path,
        {
            "screening/__init__.py": "",
            "screening/intra.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from ragtrust.pipeline import TrustGate\n"
                "def f():\n    from ..eval import attacks\n    import ragtrust.scan.engine\n"
            ),
            "eval/__init__.py": "",
            "eval/attacks.py": "",
            "scan/__init__.py": "",
            "scan/engine.py": "",
            "pipeline.py": "",
        },
    )
    found = {(i.target, i.runs) for i in edges["ragtrust.screening.intra"]}
    assert found == {("ragtrust.pipeline", False), ("ragtrust.eval.attacks", True), ("ragtrust.scan.engine", True)}
    assert len(upward_imports(edges)) == 3


def test_the_checker_finds_a_cycle_through_a_package_init(tmp_path: Path) -> None:
    edges = _edges_from(
        tmp_path,
        {
            "generation/__init__.py": "from ragtrust.generation.post import x\n",
            "generation/base.py": "",
            "generation/post.py": "from ragtrust.evidence.cite import y\n",
            "evidence/__init__.py": "",
            "evidence/cite.py": "from ragtrust.generation.base import z\n",
        },
    )
    assert cycles(module_adjacency(edges)) == [
        ["ragtrust.evidence.cite", "ragtrust.generation", "ragtrust.generation.post"]
    ]
    assert cycles(package_adjacency(edges)) == [["evidence", "generation"]]


@pytest.mark.parametrize("name", ["ragtrust.screening.ramp", "ragtrust.scan.engine", "ragtrust.eval.calibration"])
def test_the_walk_finds_the_modules(name: str) -> None:
    assert name in EDGES
