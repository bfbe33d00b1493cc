"""The Capacity page's "Rank all deployments" before and after bounding: the default scenario (Llama-3.1-8B, chat,
50 req/s), every GPU × precision × TP that fits, run serially so CPU seconds compare across a loaded machine.

    python -m benchmarks.bench_ranking [--old] [--workers N] [--gpus H100-SXM,L40S]

--old: what the page ran before (every candidate searched, 600 requests per probe); default: what it runs now
(bounded, the scenario's 1,000 requests per probe, the same computation as the capacity plan). Prints wall and CPU
seconds, simulations saved, and how far the progress bar's time-left estimate was from the truth at 25/50/75% of
the run.
"""

from __future__ import annotations

import argparse
import time

from planner.capacity.recommend import SEARCH_WEIGHT, recommend
from planner.core.scenario import Scenario


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", action="store_true")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--gpus", default=None)
    args = ap.parse_args()
    s = Scenario()
    traffic = s.traffic.model_copy(update={"num_requests": 600}) if args.old else s.traffic
    ticks: list[tuple[float, int, int]] = []
    t0, c0 = time.perf_counter(), time.process_time()
    rows = recommend(
        s,
        s.target_rate,
        traffic,
        s.slo,
        headroom=s.headroom,
        gpu_ids=args.gpus.split(",") if args.gpus else None,
        workers=args.workers,
        prune=not args.old,
        progress=lambda k, n: ticks.append((time.perf_counter() - t0, k, n)),
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    searched = sum(r.get("searched", True) for r in rows)
    print(
        f"{'old' if args.old else 'new'}: {len(rows)} deployments, {searched} searched, "
        f"{traffic.num_requests} requests per probe: {wall:.1f} s wall, {cpu:.1f} s CPU in this process "
        f"({args.workers} worker{'s' if args.workers > 1 else ''})"
    )
    print(f"cheapest: {rows[0]['id']}, {rows[0]['replicas']} replicas, ${rows[0]['usd_per_hour']:.2f}/hour")
    if len(rows) > 1:
        print(f"runner-up: {rows[1]['id']}, {rows[1]['replicas']} replicas, ${rows[1]['usd_per_hour']:.2f}/hour")
    if not args.old:  # what a bound run and a search cost here, against SEARCH_WEIGHT
        n = len(rows)
        phase1 = next(t for t, k, _ in ticks if k >= n)
        search_s = (wall - phase1) / max(searched, 1)
        print(
            f"  a bound run {phase1 / n:.2f} s, a search {search_s:.2f} s (= {search_s / (phase1 / n):.1f} bound "
            f"runs; the estimate assumes {SEARCH_WEIGHT})"
        )
    for share in (0.25, 0.5, 0.75):  # the page's estimate: elapsed × (total − done) / done
        t, k, n = next(x for x in ticks if x[0] >= share * wall)
        eta, truth = t * (n - k) / k, wall - t
        print(
            f"  at {share:.0%} of the run: estimated {eta:.1f} s left, actually {truth:.1f} s ({eta / truth - 1:+.0%})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
