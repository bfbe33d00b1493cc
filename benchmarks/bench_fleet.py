"""Time and memory of the fleet simulator: R replicas of Llama-3.1-8B on H100 behind each router, chat sessions
(4 turns, a shared 1,000-token system prompt) at about 3 requests/s per replica, over M minutes of traffic.

    python -m benchmarks.bench_fleet                      # 8 replicas x 5 minutes, every router
    python -m benchmarks.bench_fleet --replicas 64 --minutes 60 --routers round-robin

The issue's target is 64 replicas over an hour in <= 30 s. Prints, per router: requests, simulated seconds,
wall seconds, CPU seconds (the process's own: on a shared machine wall time also counts the others' work),
simulated requests per CPU second and the process's peak resident memory so far (ru_maxrss; tracemalloc would
slow the run several-fold).
"""

from __future__ import annotations

import argparse
import resource
import time

from planner.capacity.routing import run_fleet
from planner.core.scenario import Scenario, resolve
from planner.sim.router import ROUTERS
from planner.sim.serving import Replica
from planner.traffic.sessions import sessions

TURNS = 4
REQUESTS_PER_S_PER_REPLICA = 3.0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--replicas", type=int, default=8)
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--routers", nargs="+", default=list(ROUTERS), choices=ROUTERS)
    args = p.parse_args()
    r = Replica(resolve(Scenario()))
    session_rate = args.replicas * REQUESTS_PER_S_PER_REPLICA / TURNS
    n = int(args.replicas * REQUESTS_PER_S_PER_REPLICA * args.minutes * 60)
    wl = sessions(
        n, TURNS, 1000, "lognormal:mean=300,sigma=0.6", "lognormal:mean=250,sigma=0.6", 10.0, rate_per_s=session_rate
    )
    print(f"{args.replicas} replicas, {args.minutes:g} min of traffic: {n:,} requests ({wl.source})")
    print(
        f"{'router':<18} {'simulated s':>11} {'wall s':>8} {'CPU s':>8} {'req/CPU s':>10} {'peak RSS MB':>11} "
        f"{'hit rate':>8}"
    )
    for router in args.routers:
        t0, c0 = time.perf_counter(), time.process_time()
        res = run_fleet(r, wl, args.replicas, router)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
        fleet = res.fleet.requests
        hit = fleet.prefix_hit_tokens.sum() / fleet.prompt_tokens.sum()
        figures = f"{res.fleet.end_s:>11,.0f} {wall:>8.1f} {cpu:>8.1f} {n / cpu:>10,.0f}"
        figures += f" {peak / 1e6:>11,.0f} {hit:>8.1%}"
        print(f"{router:<18} {figures}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
