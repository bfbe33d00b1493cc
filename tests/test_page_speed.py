"""Per-page rerun time on defaults with AppTest: every page app.py registers reruns in ≤ 300 ms (median of 5,
after a warm-up run that fills the caches). Fails loudly with the page and its time."""
from __future__ import annotations

import re
import statistics
import time

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT

BUDGET_S = 0.300
RERUNS = 5


def registered_pages() -> list[str]:
    """Page scripts app.py hands to st.navigation, so new pages are timed as they land."""
    pages = re.findall(r"""st\.Page\(\s*["']([^"']+\.py)["']""", (ROOT / "app.py").read_text())
    assert pages, "found no st.Page(...) in app.py"
    return pages


def rerun_times(page: str) -> list[float]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page(page).run()  # warm-up: imports, catalogues, st.cache_data
    assert not at.exception, f"{page} raised on defaults: {at.exception[0].message}"
    times = []
    for _ in range(RERUNS):
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
    assert not at.exception, f"{page} raised on a rerun: {at.exception[0].message}"
    return times


@pytest.mark.parametrize("page", registered_pages())
def test_page_reruns_within_budget(page):
    times = rerun_times(page)
    median = statistics.median(times)
    shown = ", ".join(f"{t * 1000:.0f}" for t in times)
    assert median <= BUDGET_S, (f"PAGE TOO SLOW: {page} reruns in {median * 1000:.0f} ms (median of {RERUNS}: "
                                f"{shown} ms) on defaults; the budget is {BUDGET_S * 1000:.0f} ms")
