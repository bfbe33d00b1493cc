"""The target, SLO and price flags of `capacity`, `recommend`, `disagg` and `report`, and their checks."""

from __future__ import annotations

import argparse
import math

from pydantic import ValidationError

from planner.capacity.cost import DEFAULT_HEADROOM
from planner.capacity.replicas import DEFAULT_REL_TOL
from planner.cli.scenario_args import add_scenario_args
from planner.cli.traffic_args import add_traffic_args
from planner.core.catalog import gpus
from planner.core.errors import InputError, from_validation_error
from planner.core.workload import SLO
from planner.traffic.generators import MAX_RATE_PER_S, MIN_RATE_PER_S

MAX_HEADROOM = 100.0  # provisioning 100× the target is already a typo; beyond it replica counts overflow


def _add_common(p: argparse.ArgumentParser, num_requests: int) -> None:
    add_scenario_args(p)
    add_traffic_args(p, num_requests)
    s = p.add_argument_group("target, SLO and price")
    s.add_argument("--target-rate", type=float, required=True, help="fleet traffic to serve, requests/s")
    s.add_argument("--slo-ttft-p95", type=float, default=2.0, metavar="S", help="p95 TTFT target, s (default 2)")
    s.add_argument("--slo-tpot-p95", type=float, default=0.1, metavar="S", help="p95 TPOT target, s (default 0.1)")
    s.add_argument("--slo-e2e-p99", type=float, default=None, metavar="S", help="optional p99 end-to-end target, s")
    s.add_argument(
        "--headroom",
        type=float,
        default=DEFAULT_HEADROOM,
        help=f"provision target × headroom (default {DEFAULT_HEADROOM:g})",
    )
    s.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="GPU=USD",
        help="$ per GPU-hour for a GPU id (repeatable; default data/gpus.yaml)",
    )
    s.add_argument("--rel-tol", type=float, default=DEFAULT_REL_TOL, help="search tolerance on the rate (0.02 = 2%%)")


def _slo(args) -> SLO:
    try:
        return SLO(ttft_p95_s=args.slo_ttft_p95, tpot_p95_s=args.slo_tpot_p95, e2e_p99_s=args.slo_e2e_p99)
    except ValidationError as err:
        field = from_validation_error(err).field
        flag = {"ttft_p95_s": "--slo-ttft-p95", "tpot_p95_s": "--slo-tpot-p95", "e2e_p99_s": "--slo-e2e-p99"}
        raise InputError(flag.get(field, field), "must be a number of seconds > 0") from None


def _prices(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        gid, eq, usd = item.partition("=")
        if not eq:
            raise InputError("--price", f"{item!r}: use GPU=USD, e.g. H100-SXM=2.5")
        match = [g for g in gpus() if g.lower() == gid.strip().lower()]
        if not match:
            raise InputError("--price", f"unknown GPU {gid.strip()!r}; known: {', '.join(gpus())}")
        try:
            value = float(usd)
        except ValueError:
            raise InputError("--price", f"{usd!r} is not a number of dollars") from None
        if not (math.isfinite(value) and value >= 0):
            raise InputError("--price", f"{gid}: the price must be >= 0")
        out[match[0]] = value
    return out


def _check(args) -> None:
    if not (math.isfinite(args.target_rate) and MIN_RATE_PER_S <= args.target_rate <= MAX_RATE_PER_S):
        raise InputError(
            "--target-rate",
            f"must be from {MIN_RATE_PER_S:g} to {MAX_RATE_PER_S:g} requests/s, got {args.target_rate:.3g}",
        )
    if not (math.isfinite(args.headroom) and 1 <= args.headroom <= MAX_HEADROOM):
        raise InputError("--headroom", f"must be from 1 to {MAX_HEADROOM:g} (1.2 = 20% spare)")
    if not 1e-4 <= args.rel_tol < 0.5:
        raise InputError("--rel-tol", "must be from 0.0001 to 0.5 (each halving of it costs one more simulation)")
    if args.seed < 0:
        raise InputError("--seed", "must be 0 or more")
