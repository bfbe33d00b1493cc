"""planner/core is the bottom layer (docs/architecture.md, "Import direction"): its modules import no other package
of planner/, not even inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT


def _planner_packages(path: Path) -> set[str]:
    """The planner packages a module imports (`planner.latency.efficiency` → `latency`), wherever the import is."""
    modules = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.append(node.module)
    return {m.split(".")[1] for m in modules if m.startswith("planner.") and m.count(".") >= 1}


def test_core_imports_no_higher_package():
    files = sorted((ROOT / "planner" / "core").glob("*.py"))
    assert len(files) >= 10  # the check must actually look at the core
    offenders = {str(f.relative_to(ROOT)): sorted(_planner_packages(f) - {"core"}) for f in files}
    assert {f: higher for f, higher in offenders.items() if higher} == {}


def test_the_check_catches_an_upward_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import planner.core.units\nfrom planner.core.errors import InputError\n"
        "def f():\n    from planner.latency.efficiency import ENGINES\n    import planner.sim.records\n"
    )
    assert _planner_packages(bad) == {"core", "latency", "sim"}
