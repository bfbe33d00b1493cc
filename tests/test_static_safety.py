"""Static safety checks over the repository's Python: YAML is read with the safe loader only, no raw HTML is
rendered (`unsafe_allow_html=True`, `st.html`, components.html), and no code is built from data (eval/exec/pickle,
shell=True). Every hit is listed with its file and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT

SELF = Path(__file__).resolve()  # this file spells the patterns out

SKIP_DIRS = {".venv", ".git", "artifacts", "build", "__pycache__", ".hypothesis", ".pytest_cache", "node_modules"}


def python_files() -> list:
    return sorted(
        p for p in ROOT.rglob("*.py") if not SKIP_DIRS & set(p.relative_to(ROOT).parts) and p.resolve() != SELF
    )


def hits(pattern: re.Pattern, allow=lambda line: False) -> list[str]:
    out = []
    for path in python_files():
        for num, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            code = line.split("#", 1)[0]
            if pattern.search(code) and not allow(code):
                out.append(f"{path.relative_to(ROOT)}:{num}: {line.strip()}")
    return out


CHECKS = {
    "yaml.load without SafeLoader (use yaml.safe_load)": (
        re.compile(r"\byaml\s*\.\s*(load|load_all)\s*\("),
        lambda code: "SafeLoader" in code,
    ),
    "unsafe YAML loaders": (
        re.compile(
            r"\byaml\s*\.\s*(unsafe_load|full_load|unsafe_load_all|full_load_all)\b|"
            r"\b(UnsafeLoader|FullLoader)\b|Loader\s*=\s*yaml\s*\.\s*Loader\b"
        ),
        None,
    ),
    "unsafe_allow_html=True (raw HTML; use markdown)": (re.compile(r"unsafe_allow_html\s*=\s*True"), None),
    # the one exception: ui/ranking.py's scroll back to the plan (Streamlit has no scroll API), a constant script
    # whose only input is a heading anchor from the code, checked against [a-z0-9-]+ before it is written
    "raw HTML components": (
        re.compile(r"\bst\s*\.\s*html\s*\(|components\s*\.\s*(v1\s*\.\s*)?html\s*\("),
        lambda code: code.strip() == "components.html(_SCROLL_SCRIPT % json.dumps(anchor), height=0)",
    ),
    "code from data (eval/exec/pickle)": (re.compile(r"(?<![\w.])(eval|exec)\s*\(|\bpickle\s*\.\s*loads?\s*\("), None),
    "shell=True in subprocess": (re.compile(r"shell\s*=\s*True"), None),
}


def test_scans_the_repository():
    files = {p.relative_to(ROOT).as_posix() for p in python_files()}
    assert {"app.py", "planner/core/catalog.py", "ui/sidebar.py"} <= files


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_no_unsafe_pattern(check):
    pattern, allow = CHECKS[check]
    found = hits(pattern, allow or (lambda code: False))
    assert not found, f"{check}:\n" + "\n".join(found)
