"""Benchmark: the event-driven batching simulator against a plain per-step loop.

Prints the time for 100,000 requests (the "steady" scenario's mix: one every 10-50 steps, 8 slots, max wait 20)
through static and continuous (target: ≤ 1 s together), then the same run with the plain loop that visits
every decode step and keeps one record per step, and the ratio. Both runs must give identical timelines.

Usage: python -m benchmarks.bench_batching [--requests N]
"""

from __future__ import annotations

import argparse
import time

from planner.batching.requests import steady
from planner.batching.step_model import continuous_policy, run_batching, run_batching_stepwise, static_policy

SLOTS, MAX_WAIT = 8, 20  # the built-in "steady" scenario's settings


def best_of(repeats: int, fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def both(sim, requests):
    return [sim(requests, SLOTS, static_policy(MAX_WAIT)), sim(requests, SLOTS, continuous_policy())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    args = parser.parse_args()

    requests = steady(args.requests, seed=1)
    t_event, runs = best_of(3, lambda: both(run_batching, requests))
    steps = sum(r.end_step for r in runs)
    segments = sum(r.seg_start.size for r in runs)
    print(
        f"event-driven, {args.requests:,} requests, static + continuous: {t_event:.3f} s "
        f"({steps:,} steps simulated, {segments:,} per-step segments stored)"
        f"  [{'OK' if t_event <= 1.0 else 'OVER'} against the 1 s target]"
    )

    t_step, step_runs = best_of(1, lambda: both(run_batching_stepwise, requests))
    step_count = sum(len(per_step) for _, per_step in step_runs)
    same = all((a.finish == b.finish).all() and (a.admitted == b.admitted).all() for a, (b, _) in zip(runs, step_runs))
    print(
        f"per-step loop, {args.requests:,} requests, static + continuous: {t_step:.3f} s "
        f"({step_count:,} steps visited, one record each); identical timelines: {same}"
    )
    print(f"ratio per-step / event-driven: {t_step / t_event:.1f}x")


if __name__ == "__main__":
    main()
