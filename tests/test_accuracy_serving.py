"""The serving simulator against published serving / offline points (benchmarks/accuracy_serving.py)."""

from __future__ import annotations

from benchmarks.accuracy_serving import median_abs_error_pct, rows


def test_simulator_median_error_on_the_published_serving_points():
    table = rows()
    assert len(table) == 18  # 16 serving rows (C178–C193) + 2 offline throughputs
    # measured 6.6% over the 14 modelled figures (README accuracy section); the aim is <= 10%
    assert median_abs_error_pct(table) <= 10.0
    offline = [row for row in table if row["id"] == "offline"]
    # offline (5,000 prompts at once, batch up to 256 on one A100): -25.0% / -23.7% with the v2 latency model's
    # per-sequence cost, a known miss stated in the README; a collapse (thrash) would be far outside 30%
    assert all(abs(row["error_pct"]) <= 30.0 for row in offline)
    e2e = [row for row in table if row["metric"] == "median_e2e_latency"]
    assert all(abs(row["error_pct"]) <= 25.0 for row in e2e)
