"""validation/fit_efficiency.py reproduces data/efficiency.yaml: here on a subset that runs in seconds (an engine
fitted on published points alone, whose fit nothing else feeds); the whole fit (~10 min of CPU since the serving
rows are traced as `simulate` runs them) is `python -m validation.fit_reproduces`, which rewrites the file into a
temporary folder and compares it byte for byte."""

from __future__ import annotations

import yaml

from planner.latency.efficiency import EFFICIENCY_PATH
from validation import fit_efficiency as fe

# tensor-parallel points of its own and no serving rows: its constants depend on its points and the priors alone
SUBSET = ("lmdeploy",)


def test_the_fit_reproduces_a_published_only_engines_constants():
    points, resolved, key_of = fe.usable_points()
    pts = [p for p in points if p.engine in SUBSET]
    assert len(pts) == 19  # LMDeploy's static benchmark on A100 (data/measurements/published_points_2.csv)
    fitted, _ = fe.fit_all(pts, resolved, key_of, verbose=False, estimate_others=False)
    committed = yaml.safe_load(EFFICIENCY_PATH.read_text(encoding="utf-8"))["profiles"]
    assert fe.table(fitted) == {e: committed[e] for e in SUBSET}
