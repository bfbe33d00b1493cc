"""Per-page rerun time on defaults with AppTest: every page app.py registers reruns in ≤ 300 ms (median of 5,
after a warm-up run that fills the caches). Fails loudly with the page and its time."""

from __future__ import annotations

import statistics

import pytest

from benchmarks.bench_pages import BUDGET_S, RERUNS, registered_pages, rerun_times

pytestmark = pytest.mark.slow  # ~10 s of reruns against a timing budget a loaded machine can miss


@pytest.mark.parametrize("page", registered_pages())
def test_page_reruns_within_budget(page):
    times = rerun_times(page)
    median = statistics.median(times)
    shown = ", ".join(f"{t * 1000:.0f}" for t in times)
    assert median <= BUDGET_S, (
        f"PAGE TOO SLOW: {page} reruns in {median * 1000:.0f} ms (median of {RERUNS}: "
        f"{shown} ms) on defaults; the budget is {BUDGET_S * 1000:.0f} ms"
    )
