"""Capacity search and ranking speed on Llama-3.1-8B. Targets: one capacity search (1,000 requests per probe) <= 3 s;
the ranking of every GPU × precision × TP that fits (>= 40 deployments, 600 requests per probe) <= 30 s on the
local cores.

    python -m benchmarks.bench_capacity [--workers N]
"""

from __future__ import annotations

import argparse
import os
import time

from planner.capacity.recommend import recommend
from planner.capacity.replicas import find_capacity, traffic_replica
from planner.core.scenario import Scenario, resolve
from planner.core.workload import TrafficSpec


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    traffic = TrafficSpec(num_requests=1000)
    cap = find_capacity(traffic_replica(resolve(Scenario()), traffic), traffic)
    print(
        f"one capacity search (chat profile, 1,000 requests per probe): {cap.wall_s:.2f} s, "
        f"{len(cap.probes)} probes, {cap.max_rate_per_replica:.2f} req/s per replica "
        f"[{'ok' if cap.wall_s <= 3 else 'SLOW'}: <= 3 s]"
    )
    t0 = time.perf_counter()
    rows = recommend(Scenario(), 50, TrafficSpec(num_requests=600), workers=args.workers)
    wall = time.perf_counter() - t0
    ok = wall <= 30 and len(rows) >= 40
    print(
        f"ranking: {len(rows)} deployments ({sum(r['feasible'] for r in rows)} feasible) in {wall:.1f} s on "
        f"{args.workers or os.cpu_count()} workers [{'ok' if ok else 'SLOW'}: >= 40 in <= 30 s]"
    )
    print(f"cheapest: {rows[0]['id']}, {rows[0]['replicas']} replicas, ${rows[0]['usd_per_hour']:.2f}/hour")
    return 0 if ok and cap.wall_s <= 3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
