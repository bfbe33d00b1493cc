"""Simulator speed: the Azure conversation trace (19,366 requests, one hour) on Llama-3.1-8B / H100-SXM, and
100,000 Poisson requests. Targets: <= 2 s, <= 10 s, peak memory <= 500 MB.

    python -m benchmarks.bench_simulator
"""

from __future__ import annotations

import resource
import time
import tracemalloc

from planner.sim.config import LLAMA31_8B_H100_KV_TOKENS, llama31_8b_h100_cost
from planner.sim.records import summary
from planner.sim.simulator import simulate
from planner.traffic.generators import open_loop
from planner.traffic.traces import load_trace

CONFIG = dict(
    num_gpu_blocks=LLAMA31_8B_H100_KV_TOKENS // 16, block_size=16, max_num_seqs=256, max_num_batched_tokens=8192
)


def timed(label: str, workload) -> None:
    t0 = time.perf_counter()
    res = simulate(workload, CONFIG, llama31_8b_h100_cost(), seed=0)
    wall_s = time.perf_counter() - t0
    s = summary(res)
    print(
        f"{label}: {workload.num_requests:,} requests, {s['num_steps']:,} steps, simulated {res.end_s:,.0f} s "
        f"in {wall_s:.2f} s wall | TTFT p50/p99 {s['ttft_p50_s'] * 1e3:.0f}/{s['ttft_p99_s'] * 1e3:.0f} ms, "
        f"TPOT p50 {s['tpot_p50_s'] * 1e3:.1f} ms, {s['throughput_tokens_per_s']:,.0f} tok/s, "
        f"mean batch {s['mean_running']:.1f}, preemptions {s['num_preemptions']}"
    )


def main() -> None:
    t0 = time.perf_counter()
    azure = load_trace("azure_conv")
    print(f"load Azure conv trace: {time.perf_counter() - t0:.2f} s")
    timed("Azure conv trace (x1)", azure)
    poisson = open_loop(100_000, 20.0, "lognormal:mean=1000,sigma=0.8", "lognormal:mean=200,sigma=0.8", seed=0)
    timed("100k Poisson at 20 req/s", poisson)
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    tracemalloc.start()
    simulate(poisson, CONFIG, llama31_8b_h100_cost(), seed=0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"peak Python allocations during the 100k run (tracemalloc): {peak / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
