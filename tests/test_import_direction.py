"""Imports run one way (docs/architecture.md, "Import direction"): every package of planner/ imports only packages
of a lower layer, not even inside a function, and no two modules import each other, directly or through others."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

# layer of each package (and top-level module) of planner/: a package may import only packages of a LOWER layer
LAYERS = {
    "core": 0,
    "memory": 1,
    "traffic": 1,
    "batching": 1,
    "latency": 2,
    "sim": 3,
    "techniques": 4,
    "accuracy": 4,
    "capacity": 4,
    "teaching": 5,
    "report_plan": 6,
    "report": 7,
    "cli": 8,
    "__main__": 9,
    "__init__": 9,
}


def _imports(path: Path) -> set[str]:
    """The planner modules a file imports (`planner.latency.efficiency`), wherever the import is."""
    modules = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return {m for m in modules if m.startswith("planner.")}


def _package(module: str) -> str:
    return module.split(".")[1]


def _planner_modules() -> dict[str, Path]:
    files = sorted((ROOT / "planner").rglob("*.py"))
    return {".".join(f.relative_to(ROOT).with_suffix("").parts): f for f in files}


def _upward(modules: dict[str, Path]) -> dict[str, list[str]]:
    out = {}
    for name, path in modules.items():
        here = _package(name)
        bad = sorted(
            {_package(m) for m in _imports(path) if _package(m) != here and LAYERS[_package(m)] >= LAYERS[here]}
        )
        if bad:
            out[name] = bad
    return out


def _cycles(modules: dict[str, Path]) -> list[list[str]]:
    """Module-level import cycles (Tarjan's strongly connected components of more than one module)."""
    graph = {n: sorted({m for m in _imports(p) if m in modules and m != n}) for n, p in modules.items()}
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_every_package_has_a_layer():
    modules = _planner_modules()
    assert len(modules) >= 80  # the check must actually look at the whole engine
    assert {_package(m) for m in modules} - set(LAYERS) == set()


def test_no_package_imports_its_own_layer_or_above():
    assert _upward(_planner_modules()) == {}


def test_no_import_circles():
    assert _cycles(_planner_modules()) == []


def test_the_checks_catch_an_upward_import_and_a_circle(tmp_path):
    pkg = tmp_path / "planner"
    (pkg / "core").mkdir(parents=True)
    (pkg / "sim").mkdir()
    (pkg / "core" / "a.py").write_text("def f():\n    from planner.sim.b import g\n")
    (pkg / "sim" / "b.py").write_text("from planner.core.a import f\nimport planner.core.errors\n")
    modules = {
        "planner.core.a": pkg / "core" / "a.py",
        "planner.sim.b": pkg / "sim" / "b.py",
    }
    assert _upward(modules) == {"planner.core.a": ["sim"]}
    assert _cycles(modules) == [["planner.core.a", "planner.sim.b"]]
