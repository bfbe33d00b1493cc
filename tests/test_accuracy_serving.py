"""The serving simulator against published serving / offline points (benchmarks/accuracy_serving.py)."""
from __future__ import annotations

from benchmarks.accuracy_serving import median_abs_error_pct, rows


def test_simulator_median_error_on_the_published_serving_points():
    table = rows()
    assert len(table) == 18  # 16 serving rows (C178–C193) + 2 offline throughputs
    # measured 9.6% (README accuracy section); pinned loosely so a model change that breaks it fails
    assert median_abs_error_pct(table) <= 15.0
    offline = [row for row in table if row["id"] == "offline"]
    assert all(abs(row["error_pct"]) <= 15.0 for row in offline)
    e2e = [row for row in table if row["metric"] == "median_e2e_latency"]
    assert all(abs(row["error_pct"]) <= 25.0 for row in e2e)
