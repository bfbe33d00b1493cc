"""Serving simulator speed with the REAL latency model (planner.sim.serving: PerfModel step costs, KV pool from the
memory plan) on Llama-3.1-8B / one H100-SXM. Targets: the Azure conversation trace (19,366 requests, one hour)
in <= 2 s; 100,000 Poisson requests in <= 10 s; peak memory <= 500 MB.

    python -m benchmarks.bench_serving
"""

from __future__ import annotations

import resource
import time
import tracemalloc

from planner.core.scenario import Scenario, resolve
from planner.sim.run_summary import result_summary
from planner.sim.serving import Replica, run_serving
from planner.traffic.generators import open_loop
from planner.traffic.traces import load_trace

SCENARIO = Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM")


def timed(label: str, r, workload) -> float:
    t0 = time.perf_counter()
    res = run_serving(r, workload)
    wall_s = time.perf_counter() - t0
    s = result_summary(res)
    print(
        f"{label}: {workload.num_requests:,} requests, {s.num_steps:,} steps, simulated {s.simulated_s:,.0f} s "
        f"in {wall_s:.2f} s wall | TTFT p50/p99 {s.ttft_s.p50 * 1e3:.0f}/{s.ttft_s.p99 * 1e3:.0f} ms, "
        f"TPOT p50 {s.tpot_s.p50 * 1e3:.1f} ms, {s.throughput_tokens_per_s:,.0f} tok/s, "
        f"mean batch {s.mean_running:.1f}, preemptions {s.preemptions}"
    )
    return wall_s


def main() -> None:
    r = Replica(resolve(SCENARIO))  # its step-cost model is built on the first run and shared
    t0 = time.perf_counter()
    azure = load_trace("azure_conv")
    print(f"load Azure conv trace: {time.perf_counter() - t0:.2f} s")
    azure_s = min(timed("Azure conv trace (x1)", r, azure) for _ in range(3))
    poisson = open_loop(100_000, 20.0, "lognormal:mean=1000,sigma=0.8", "lognormal:mean=200,sigma=0.8", seed=0)
    poisson_s = timed("100k Poisson at 20 req/s", r, poisson)
    tracemalloc.start()
    run_serving(r, azure)
    azure_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    run_serving(r, poisson)
    poisson_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(
        f"peak Python allocations during a run (tracemalloc): Azure {azure_peak / 2**20:.0f} MiB, "
        f"100k Poisson {poisson_peak / 2**20:.0f} MiB"
    )
    print(f"peak RSS of this whole process (imports, traces, all runs): {rss:.0f} MiB")
    print(
        f"SUMMARY Azure conv {azure_s:.2f} s (target 2), 100k Poisson {poisson_s:.2f} s (target 10), "
        f"peak RSS {rss:.0f} MiB (target 500 MB = {500e6 / 2**20:.0f} MiB)"
    )


if __name__ == "__main__":
    main()
