"""scripts/fit_efficiency.py reproduces data/efficiency.yaml byte for byte (the fit is deterministic; ~5 min of CPU
since issue 24 added aiconfigurator's serving rows, 16 min wall at a load of 15 on 2 cores)."""

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
