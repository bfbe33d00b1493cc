"""CLI start-up: wall time of `servingplan memory --model meta-llama/Llama-3.1-8B --gpu H100-SXM`, start to exit.

Target (issue 13): median <= 0.35 s on the development machine. Each run is a fresh interpreter, so the figure
includes Python start-up and every import the subcommand needs; only the chosen subcommand's module is imported
(planner/cli/__init__.py), so pandas, numpy and the simulator stay out of it.

    python -m benchmarks.bench_cli_start [--runs 15] [--max-median-s 0.35]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMAND = ["memory", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-SXM"]
TARGET_S = 0.35


def wall_times(runs: int, cwd: Path) -> list[float]:
    """Seconds from spawning `python -m planner memory ...` to its exit, once per run (one warm-up run first)."""
    argv = [sys.executable, "-m", "planner", *COMMAND]
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)  # warm the OS file cache
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--max-median-s", type=float, default=TARGET_S, help="exit 1 when the median is above")
    args = parser.parse_args()
    times = wall_times(args.runs, Path(__file__).resolve().parents[1])
    median_s = statistics.median(times)
    load_1min = os.getloadavg()[0]  # timings scale with the machine's load: print it beside them
    print(f"servingplan {' '.join(COMMAND)}  (load average {load_1min:.1f} on {os.cpu_count()} cores)")
    print(
        f"  runs {args.runs}: median {median_s:.3f} s, min {min(times):.3f} s, max {max(times):.3f} s "
        f"(target <= {args.max_median_s:.2f} s)"
    )
    return 0 if median_s <= args.max_median_s else 1


if __name__ == "__main__":
    sys.exit(main())
