"""Per-page rerun time on defaults with AppTest (the app's pages as st.navigation registers them).

    python -m benchmarks.bench_pages

Each page: one warm-up run (imports, catalogues, st.cache_data), then the median of 5 reruns. The budget is
300 ms; the benchmark prints OVER for a page that exceeds it (a timing budget belongs here, not in the tests).
"""

from __future__ import annotations

import logging
import re
import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]

BUDGET_S = 0.300
RERUNS = 5


def registered_pages() -> list[str]:
    """Page scripts app.py hands to st.navigation, so new pages are timed as they land."""
    pages = re.findall(r"""st\.Page\(\s*["']([^"']+\.py)["']""", (ROOT / "app.py").read_text())
    assert pages, "found no st.Page(...) in app.py"
    return pages


def rerun_times(page: str, reruns: int = RERUNS) -> list[float]:
    """Seconds per rerun of `page` inside the app, after a warm-up run."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page(page).run()
    assert not at.exception, f"{page} raised on defaults: {at.exception[0].message}"
    times = []
    for _ in range(reruns):
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
    assert not at.exception, f"{page} raised on a rerun: {at.exception[0].message}"
    return times


if __name__ == "__main__":
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    for page in registered_pages():
        median = statistics.median(rerun_times(page))
        print(f"{page:28s} {median * 1000:7.0f} ms  {'ok' if median <= BUDGET_S else 'OVER'} (budget 300 ms)")
