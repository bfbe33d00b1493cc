"""Simulator speed: what `python -m planner simulate --trace azure_conv --json` reports as wall_s (the Azure
conversation trace, 19,366 requests, Llama-3.1-8B on one H100-SXM under vLLM; target <= 1.0 s on a quiet
machine, median of 5 runs), a requests-vs-time scaling line (Poisson traffic at 20 req/s: the cost per request
should stay flat, i.e. time linear in requests), and the peak memory of 100,000 Poisson requests (<= 500 MB).

    python -m benchmarks.bench_simulator

Each figure is the simulation alone (SimResult.wall_s: the trace and the step-cost model are built first), with
the CPU time of the process beside it: on a shared machine the wall time waits for the CPU, the CPU time less so.
"""

from __future__ import annotations

import resource
import statistics
import time
import tracemalloc

from planner.core.scenario import Scenario, resolve
from planner.sim.records import summary
from planner.sim.serving import Replica, run_serving
from planner.traffic.generators import open_loop
from planner.traffic.traces import load_trace

RUNS = 5
SCALING = (2_500, 5_000, 10_000, 20_000, 40_000)


def timed_runs(r, workload, cost, runs: int) -> tuple[list[float], list[float], object]:
    walls, cpus = [], []
    for _ in range(runs):
        c0 = time.process_time()
        res = run_serving(r, workload)
        cpus.append(time.process_time() - c0)
        walls.append(res.wall_s)
    return walls, cpus, res


def main() -> None:
    r = Replica(resolve(Scenario()))  # the CLI's default scenario: Llama-3.1-8B, one H100-SXM, vLLM
    cost = None  # the replica derives its step cost once
    t0 = time.perf_counter()
    azure = load_trace("azure_conv")
    print(f"load Azure conv trace: {time.perf_counter() - t0:.2f} s")
    walls, cpus, res = timed_runs(r, azure, cost, RUNS)
    s = summary(res)
    print(
        f"simulate --trace azure_conv: {azure.num_requests:,} requests, {s['num_steps']:,} steps, wall_s median "
        f"{statistics.median(walls):.2f} s (runs {', '.join(f'{w:.2f}' for w in walls)}), CPU median "
        f"{statistics.median(cpus):.2f} s | TTFT p50 {s['ttft_p50_s'] * 1e3:.0f} ms, preemptions {s['num_preemptions']}"
    )
    line = []
    for n in SCALING:
        wl = open_loop(n, 20.0, "lognormal:mean=1000,sigma=0.8", "lognormal:mean=200,sigma=0.8", seed=0)
        walls, cpus, _ = timed_runs(r, wl, cost, 3)
        line.append(f"{n:,}: {statistics.median(walls):.2f} s ({statistics.median(cpus) / n * 1e6:.0f} µs CPU/request)")
    print("scaling, Poisson 20 req/s (requests: wall, CPU per request): " + "; ".join(line))
    poisson = open_loop(100_000, 20.0, "lognormal:mean=1000,sigma=0.8", "lognormal:mean=200,sigma=0.8", seed=0)
    tracemalloc.start()
    res = run_serving(r, poisson)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"100k Poisson at 20 req/s: {len(res.steps):,} steps; peak Python allocations (tracemalloc) "
        f"{peak / 2**20:.0f} MiB; peak RSS of this process {rss_mib:.0f} MiB"
    )


if __name__ == "__main__":
    main()
