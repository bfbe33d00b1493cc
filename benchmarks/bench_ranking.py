"""The Capacity page's "Rank all deployments" before and after bounding: the default scenario (Llama-3.1-8B, chat,
50 req/s), every GPU × precision × TP that fits, run serially so CPU seconds compare across a loaded machine.

    python -m benchmarks.bench_ranking [--old] [--workers N] [--gpus H100-SXM,L40S]

--old: what the page ran before (every candidate searched, 600 requests per probe); default: what it runs now
(bounded, the scenario's 1,000 requests per probe, the same computation as the capacity plan). Prints wall and CPU
seconds, simulations saved, and how far the progress bar's time-left estimate was from the truth at 25/50/75% of
the run (in CPU seconds when serial, so that other work on the machine does not bend it).
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
    clock = time.process_time if args.workers == 1 else time.perf_counter
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
        # CPU seconds when serial (other sessions' load does not bend the estimate), else wall seconds
        progress=lambda k, n: ticks.append((clock() - (c0 if args.workers == 1 else t0), k, n)),
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
    if not args.old:  # how many saturation runs and searches the bounds left, against SEARCH_WEIGHT
        bound_runs = sum(r.get("bound_run", True) for r in rows)
        unit = cpu / (bound_runs + SEARCH_WEIGHT * searched)
        print(
            f"  {bound_runs} saturation runs (bounds), {len(rows) - bound_runs} ruled out by price alone; "
            f"{unit:.2f} s CPU per bound run if a search weighs {SEARCH_WEIGHT}"
        )
    for share in (0.25, 0.5, 0.75):  # the page's estimate: elapsed × (total − done) / done
        span = cpu if args.workers == 1 else wall
        t, k, n = next(x for x in ticks if x[0] >= share * span)
        eta, truth = t * (n - k) / k, span - t
        print(
            f"  at {share:.0%} of the run: estimated {eta:.1f} s left, actually {truth:.1f} s ({eta / truth - 1:+.0%})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
