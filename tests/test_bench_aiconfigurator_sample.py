"""The aiconfigurator benchmark's sample: aggregated rows only, at most k per (engine, model, GPU), the same on
every run (the "before" and "after" figures compare the same rows)."""

from __future__ import annotations

from collections import Counter

from planner.accuracy.aiconfigurator_rows import read_aiconfigurator
from validation.accuracy_aiconfigurator import CSV, reason_kind, sample


def test_sample_is_stratified_aggregated_and_reproducible():
    points = read_aiconfigurator(CSV.read_text(encoding="utf-8"))
    assert len(points) == 3833 and sum("disaggregated" in p.excluded for p in points) == 1123
    a, b = sample(points, 3, seed=0), sample(points, 3, seed=0)
    assert [p.id for p in a] == [p.id for p in b]
    assert max(Counter((p.engine, p.model, p.gpu) for p in a).values()) == 3
    assert all("disaggregated" not in p.excluded for p in a)
    assert len(sample(points, None, 0)) == 2710


def test_skip_reasons_are_counted_by_kind():
    assert reason_kind("unknown model 'openai/gpt-oss-120b' (no preset)") == "unknown model"
    assert reason_kind("") == ""
