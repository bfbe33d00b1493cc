"""scripts/fit_efficiency.py reproduces data/efficiency.yaml byte for byte (the fit is deterministic; ~4 min)."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

from planner.latency.efficiency import EFFICIENCY_PATH


@pytest.mark.slow
def test_fit_script_reproduces_the_committed_constants(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    import fit_efficiency

    out = tmp_path / "efficiency.yaml"
    assert fit_efficiency.main(["--out", str(out)]) == 0
    assert out.read_bytes() == EFFICIENCY_PATH.read_bytes()
