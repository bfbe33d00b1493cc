"""`python -m planner fleet`: N replicas of one deployment behind a router, serving the traffic `simulate` takes
(open loop, closed loop, a trace, or sessions). Reports fleet TTFT, TPOT, e2e and queue-wait percentiles (the
keys of `simulate --json`), the prefix-cache hit rate, imbalance and every replica's own summary (a contract:
keep the JSON keys)."""

from __future__ import annotations

import argparse
import dataclasses

from planner.accuracy.bands import bands_json, bands_text, serving_bands
from planner.capacity.cost import price_of
from planner.capacity.fleet_ray import run_fleet_apart
from planner.capacity.routing import run_fleet, size_fleet
from planner.cli import emit
from planner.cli.offload_args import offload_json
from planner.cli.scenario_args import resolved_from_args
from planner.cli.simulate_cmd import (
    _check_flags,
    add_simulate_args,
    benchmark_client,
    output_flag,
    settings_from_args,
    workload_from_args,
)
from planner.cli.work_budget import check_workload
from planner.core.errors import InputError
from planner.sim.fleet import MAX_REPLICAS
from planner.sim.fleet_summary import FleetSummary, fleet_summary
from planner.sim.records import LatencyStats
from planner.sim.router import ROUTERS
from planner.sim.serving import Replica


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "fleet",
        help="simulate N replicas behind a router (round robin, least load, prefix-aware)",
        description="N replicas of one deployment behind a router, simulated together: the router picks a "
        "replica at each arrival from the replicas' state at that instant (outstanding requests, KV use, "
        "cached prefix). Traffic flags are those of `simulate`; --rate is the fleet's rate (sessions started "
        "per second with --turns).",
    )
    add_simulate_args(p)
    f = p.add_argument_group("fleet")
    f.add_argument("--replicas", type=int, default=2, help="replicas behind the router (default 2)")
    f.add_argument(
        "--router",
        default="round-robin",
        choices=ROUTERS,
        help="round-robin; least-outstanding requests; least-kv cache use; prefix-aware (longest cached prefix "
        "with a load-balance weight, as llm-d and SGLang's router)",
    )
    f.add_argument(
        "--size",
        action="store_true",
        help="also find, for each router, the fewest replicas that serve the traffic within --slo-ttft-ms and "
        "--slo-tpot-ms (p95), and their $ per hour",
    )
    f.add_argument("--max-replicas", type=int, default=64, help="--size: largest fleet tried (default 64)")
    f.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="simulate each replica in its own Ray task ('local' starts Ray here, 'auto' or 'ray://host:port' "
        "joins a cluster); the same answer as without it. Only round robin over open-loop traffic splits (the "
        "other routers read the replicas' state; closed-loop turns depend on when replies finish)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    _check_flags(args)
    if not 1 <= args.replicas <= MAX_REPLICAS:
        raise InputError("--replicas", f"must be from 1 to {MAX_REPLICAS}, got {args.replicas}")
    r = resolved_from_args(args)
    wl = workload_from_args(args, r)
    check_workload(wl, r.deployment.long_prefill_token_threshold, output_flag(args))
    slo_ttft = args.slo_ttft_ms / 1e3 if args.slo_ttft_ms else None
    slo_tpot = args.slo_tpot_ms / 1e3 if args.slo_tpot_ms else None
    replica = Replica(r, settings_from_args(args, r))
    try:
        _ = replica.draft_cost  # the draft model is looked up before the run
    except InputError as err:
        raise InputError("--spec-model", err.message) from None
    cfg = replica.scheduler_config
    if args.ray:
        res = run_fleet_apart(replica, wl, args.replicas, args.router, args.ray)
    else:
        res = run_fleet(replica, wl, args.replicas, args.router)
    s = fleet_summary(res)
    out = s.to_dict()
    out.update(
        model=r.model.name,
        gpu=r.gpu.id,
        tp=r.deployment.tensor_parallel_size,
        engine=args.engine,
        prefix_caching=cfg.enable_prefix_caching,
        max_queue=args.max_queue,
        spec_model=args.spec_model,
        spec_k=cfg.spec_k,
        spec_alpha=cfg.spec_alpha,
        scheduler_policy=cfg.admission_policy,
        spec_method=args.spec_method,  # added after the others: the JSON contract appends keys
    )
    out["bands"] = bands_json(r, serving_bands(out))
    text = _text(s, r, args.engine) + bands_text(out["bands"])
    if args.size:
        sizes = _sizes(args, replica, wl, slo_ttft, slo_tpot)
        out["sizing"] = [z.to_dict() for z in sizes]
        text += "\n" + _sizing_text(sizes, slo_ttft, slo_tpot)
    out["offload"] = offload_json(r, replica, res.fleet)
    out["client"] = benchmark_client(args)  # the benchmark client whose streams --users are (None: not a client's)
    emit(out, args.json, text)
    return 0


def _sizes(args, replica, wl, slo_ttft, slo_tpot):
    if slo_ttft is None and slo_tpot is None:
        raise InputError("--size", "needs a target: --slo-ttft-ms and/or --slo-tpot-ms")
    if not 1 <= args.max_replicas <= MAX_REPLICAS:
        raise InputError("--max-replicas", f"must be from 1 to {MAX_REPLICAS}, got {args.max_replicas}")
    usd = price_of(replica.resolved)
    return [size_fleet(replica, wl, router, slo_ttft, slo_tpot, usd, args.max_replicas) for router in ROUTERS]


def _sizing_text(sizes, slo_ttft, slo_tpot) -> str:
    target = ", ".join(
        f"p95 {name} <= {v * 1e3:g} ms" for name, v in (("TTFT", slo_ttft), ("TPOT", slo_tpot)) if v is not None
    )
    lines = [f"  fleet size per router ({target}, every request served)"]
    base = next((z for z in sizes if z.router == "round-robin"), None)
    for z in sizes:
        if z.replicas is None:
            lines.append(f"    {z.router:<18} more than the largest fleet tried")
            continue
        saved = ""
        if z is not base and base is not None and base.usd_per_hour and z.usd_per_hour is not None:
            saved = f"  ({base.usd_per_hour - z.usd_per_hour:,.2f} $/h saved against round robin)"
        lines.append(f"    {z.router:<18} {z.replicas:>3} replicas  ${z.usd_per_hour:,.2f}/h{saved}")
    return "\n".join(lines)


def _ms(stat: LatencyStats) -> str:
    return "  ".join(f"{k} {'–' if v is None else f'{v * 1e3:,.1f}':>9}" for k, v in dataclasses.asdict(stat).items())


def _p95_ms(stat: LatencyStats) -> str:
    return "–" if stat.p95 is None else f"{stat.p95 * 1e3:,.1f}"


def _text(s: FleetSummary, r, engine: str) -> str:
    imb = "–" if s.request_imbalance is None else f"{s.request_imbalance:.2f}"
    pre = "–" if s.prefill_imbalance is None else f"{s.prefill_imbalance:.2f}"
    lines = [
        f"{s.num_replicas} × {r.model.name} on {r.gpu.id} (TP={r.deployment.tensor_parallel_size}), engine "
        f"{engine}, router {s.router}, seed {s.seed}",
        f"  traffic: {s.source}",
        f"  {s.completed:,} of {s.num_requests:,} completed, {s.rejected:,} rejected; {s.simulated_s:,.1f} s "
        f"simulated in {s.wall_s:.2f} s",
        "  fleet latency (ms)",
    ]
    for label, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("end-to-end", "e2e_s"), ("queue wait", "queue_s")):
        lines.append(f"    {label:<11} {_ms(getattr(s, key))}")
    lines += [
        f"  throughput {s.throughput_tokens_per_s or 0:,.0f} output tokens/s; prefix hit rate "
        f"{s.prefix_hit_rate:.1%}; prompt tokens computed {s.prefill_tokens:,}",
        f"  imbalance (max / mean): requests {imb}, prefill work {pre}",
        "  replica  requests  hit rate  TTFT p95 ms  e2e p95 ms  mean batch  preemptions",
    ]
    for k, p in enumerate(s.per_replica):
        lines.append(
            f"  {k:>7}  {p.num_requests:>8,}  {p.prefix_hit_rate:>8.1%}  {_p95_ms(p.ttft_s):>11}  "
            f"{_p95_ms(p.e2e_s):>10}  {p.mean_running or 0:>10.1f}  {p.preemptions:>11,}"
        )
    return "\n".join(lines)
