"""planner/ is the engine: it must never import streamlit or plotly (pages and ui/ draw; planner computes)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

FORBIDDEN = {"streamlit", "plotly"}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_planner_never_imports_ui_libraries():
    files = sorted((ROOT / "planner").rglob("*.py"))
    assert len(files) >= 10  # the check must actually look at the engine
    offenders = {str(f.relative_to(ROOT)): sorted(_imports(f) & FORBIDDEN) for f in files if _imports(f) & FORBIDDEN}
    assert offenders == {}


def test_the_check_catches_an_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy\nfrom plotly import graph_objects as go\n")
    assert _imports(bad) & FORBIDDEN == {"plotly"}
