"""Speed of the latency model: the vectorised sweep, the simulator's StepCost call, and a page rerun.

    python -m benchmarks.bench_latency

Targets (issue): batch sizes 1-1024 × 8 context lengths in ≤ 50 ms; the page reruns in ≤ 300 ms on defaults.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from planner.core.scenario import Scenario, resolve
from planner.latency.metrics import step_grid, sweep
from planner.latency.perf_model import PerfModel

ROOT = Path(__file__).resolve().parents[1]

CONTEXTS = [128, 512, 1024, 2048, 4096, 8192, 16384, 32768]


def best_of(fn, repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    r = resolve(Scenario())
    pm = PerfModel(r)
    batches = np.arange(1, 1025)
    grid_s = best_of(lambda: step_grid(pm, batches, CONTEXTS))
    sweep_s = best_of(lambda: [sweep(pm, batches, c, 256) for c in CONTEXTS])
    build_s = best_of(lambda: PerfModel(r))
    calls = 200_000
    t = time.perf_counter()
    for i in range(calls):
        pm.step_time_s(32 + (i & 7), 32, 32 * 1500, 32 * 1501)
    per_call = (time.perf_counter() - t) / calls
    print(f"scenario: {r.model.name} on {r.gpu.id}")
    print(f"decode step grid, 1024 batches × 8 contexts      {grid_s * 1e3:7.2f} ms  (target ≤ 50 ms)")
    print(f"full static-batch sweep (TTFT, TPOT, e2e, tput) × 8 {sweep_s * 1e3:7.2f} ms  (target ≤ 50 ms)")
    print(f"PerfModel construction                           {build_s * 1e3:7.3f} ms")
    print(f"StepCost.step_time_s                             {per_call * 1e6:7.2f} µs per call")
    page_s = page_rerun()
    print(f"page rerun on defaults (AppTest, median of 5)    {page_s * 1e3:7.1f} ms  (target ≤ 300 ms)")
    return 0 if grid_s <= 0.050 and sweep_s <= 0.050 and page_s <= 0.300 else 1


def page_rerun() -> float:
    from streamlit.testing.v1 import AppTest

    import tests.conftest  # noqa: F401  (silences the bare-mode warning)

    at = AppTest.from_file(str(ROOT / "app_pages" / "latency.py"), default_timeout=30).run()
    times = []
    for batch in (16, 32, 16, 32, 16, 32):
        t = time.perf_counter()
        at.slider(key="latency_batch").set_value(batch).run()
        times.append(time.perf_counter() - t)
    return float(np.median(times[1:]))


if __name__ == "__main__":
    raise SystemExit(main())
