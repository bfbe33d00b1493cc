"""`python -m planner batching`: static against continuous batching on a CSV of requests (primer §6 step model)."""

from __future__ import annotations

import argparse
from pathlib import Path

from planner.batching.report import Summary, summarize
from planner.batching.requests import parse_requests_csv
from planner.batching.step_model import MAX_SLOTS, run_pair
from planner.cli import emit
from planner.core.errors import InputError
from planner.core.user_files import read_user_text

MAX_REQUESTS_CSV_BYTES = 64 * 2**20  # ~2 million request rows; /dev/zero and FIFOs are refused before reading


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "batching",
        help="static vs continuous batching on a CSV of requests (times in decode steps)",
        description="Simulate static and continuous batching in decode steps. CSV columns: "
        "name,arrival,output_tokens (optional prompt_tokens).",
    )
    parser.add_argument("--requests", required=True, metavar="FILE.csv", help="CSV of requests")
    parser.add_argument("--slots", required=True, type=int, help="requests that run at once")
    parser.add_argument(
        "--max-wait",
        required=True,
        type=int,
        help="static: steps the oldest request waits before a partial batch fires",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON contract")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.slots <= MAX_SLOTS:
        raise InputError("--slots", f"must be from 1 to {MAX_SLOTS:,}")
    if not 0 <= args.max_wait <= 10**12:
        raise InputError("--max-wait", "must be from 0 to 10^12 steps")
    path = Path(args.requests)
    text = read_user_text(path, "--requests", MAX_REQUESTS_CSV_BYTES)  # a regular file, at most 64 MiB
    requests = parse_requests_csv(text, source=str(path))
    results = {name: summarize(r) for name, r in run_pair(requests, args.slots, args.max_wait).items()}
    emit({name: s.to_dict() for name, s in results.items()}, args.json, _text(results, len(requests), args.slots))
    return 0


def _text(results: dict[str, Summary], num_requests: int, slots: int) -> str:
    lines = [
        f"{num_requests} requests on {slots} slots (times in decode steps)",
        f"{'policy':<11} {'end step':>9} {'GPU busy':>9} {'avg wait':>9} {'avg lat':>9} {'p95 lat':>9} {'p99 lat':>9}",
    ]
    for name, s in results.items():
        lines.append(
            f"{name:<11} {s.end_step:>9,} {s.gpu_busy:>9.1%} {s.avg_wait:>9.2f} "
            f"{s.avg_latency:>9.2f} {s.p95_latency:>9.2f} {s.p99_latency:>9.2f}"
        )
    return "\n".join(lines)
