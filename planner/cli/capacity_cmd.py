"""`python -m planner capacity` (one deployment: capacity at the SLO, replicas, $) and `python -m planner
recommend` (every GPU × precision × TP that fits, ranked by cost at the SLO). JSON keys are a contract."""

from __future__ import annotations

import argparse
import math

from pydantic import ValidationError

from planner.accuracy.bands import bands_text, ranking_row_bands
from planner.capacity.fleet_capacity import RoutingPlan, routed_rows, routing_plan, row_scenario
from planner.capacity.offload_compare import compare_offload
from planner.capacity.recommend import disaggregated_options, recommend, with_disaggregated
from planner.capacity.replicas import (
    DEFAULT_HEADROOM,
    DEFAULT_REL_TOL,
    CapacityPlan,
    capacity_plan,
    replica_scenario,
)
from planner.cli import emit, progress_line
from planner.cli.scenario_args import add_scenario_args, scenario_from_args
from planner.cli.simulate_cmd import (
    add_offload_args,
    add_spec_args,
    check_spec_args,
    offload_from_args,
    spec_from_args,
)
from planner.cli.traffic_args import add_traffic_args, traffic_from_args
from planner.core.catalog import gpus
from planner.core.errors import InputError, from_validation_error
from planner.core.scenario import resolve
from planner.core.workload import SLO
from planner.memory.plan import TP_DEGREES
from planner.report_plan import capacity_bands_json, latency_ratios
from planner.sim.router import ROUTERS
from planner.traffic.generators import MAX_RATE_PER_S, MIN_RATE_PER_S

MAX_HEADROOM = 100.0  # provisioning 100× the target is already a typo; beyond it replica counts overflow
RANKING_NUM_REQUESTS = 600  # per probe in the ranking: keeps ~140 searches within ~30 s on two cores


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


def _add_router(p: argparse.ArgumentParser) -> None:
    p.add_argument_group("fleet").add_argument(
        "--router",
        default=None,
        choices=ROUTERS,
        help="also size the fleet under this router: the fewest replicas whose fleet simulation (all replicas "
        "behind the router at target × headroom) meets the SLO, with every router's replicas, p95s, prefix hit "
        "rate and $/hour (capacity: JSON key `routing`; recommend: the three cheapest rows' fleet_* keys)",
    )


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "capacity",
        help="replicas and $ for a target rate at a p95 SLO (one deployment)",
        description="Search the highest arrival rate one replica sustains under the SLO "
        "(simulated), then replicas = ceil(target × headroom / that rate) and "
        "the cost.",
    )
    _add_common(p, 1000)
    add_offload_args(p)
    _add_router(p)
    add_spec_args(p)
    p.set_defaults(func=run_capacity)
    r = subparsers.add_parser(
        "recommend",
        help="rank every GPU × precision × TP that fits by cost at the SLO",
        description="Capacity search for every catalogue GPU × weight precision × TP that "
        "fits the model, in parallel on all cores (or on Ray), ranked by $/hour.",
    )
    _add_common(r, RANKING_NUM_REQUESTS)
    _add_router(r)
    r.add_argument("--gpus", default=None, help="comma-separated GPU ids (default: the whole catalogue)")
    r.add_argument(
        "--precisions",
        default=None,
        help="comma-separated weight precisions (default per GPU: bf16/fp16, fp8 where supported, awq-int4)",
    )
    r.add_argument("--tps", default=",".join(map(str, TP_DEGREES)), help="tensor-parallel sizes to try")
    r.add_argument("--workers", type=int, default=None, help="local processes (default: all cores; 1 = serial)")
    r.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run on Ray: 'local' starts one here, 'auto' or 'ray://host:port' joins a cluster",
    )
    r.add_argument("--top", type=int, default=15, help="rows in the text table (JSON has all)")
    r.add_argument(
        "--disagg",
        action="store_true",
        help="also rank separate prefill/decode pools per GPU × precision (python -m planner disagg)",
    )
    r.set_defaults(func=run_recommend)


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


def run_capacity(args: argparse.Namespace) -> int:
    _check(args)
    check_spec_args(args)
    s, traffic, slo, prices = scenario_from_args(args), traffic_from_args(args), _slo(args), _prices(args.price)
    kv, spec = offload_from_args(args), spec_from_args(args)
    r = resolve(replica_scenario(s))
    ratios = latency_ratios(r)
    plan_kw = dict(spec=spec, latency_ratios=ratios)
    compared = None
    if kv is None:
        plan = capacity_plan(s, args.target_rate, traffic, slo, args.headroom, prices, args.rel_tol, **plan_kw)
    else:  # offload on against off (planner/capacity/offload_compare.py); the plan is the one with offload
        plan, compared = compare_offload(
            s, args.target_rate, traffic, slo, args.headroom, prices, args.rel_tol, kv, **plan_kw
        )
    added = capacity_bands_json(plan, r)
    text = _capacity_text(plan) + _pessimistic_text(added)
    if compared is not None:
        text += f"\n  KV offload ({kv.tiers}) on against off: {compared.verdict}"
    added["offload"] = compared.to_dict() if compared is not None else None
    routing = None
    if args.router is not None:
        start = plan.cost.replicas if plan.cost else 1
        routing = routing_plan(r, args.target_rate, traffic, slo, args.headroom, args.router, start, prices, spec=spec)
        text += "\n" + _routing_text(routing)
    out = {**plan.to_dict(), **added, "spec_method": args.spec_method, "spec_k": spec and spec.k}
    out.update(spec_alpha=spec and spec.alpha, routing=routing and routing.to_dict())
    emit(out, args.json, text + bands_text(added["bands"]))
    return 0


def _pessimistic_text(added: dict) -> str:
    return (
        f"\n  replicas at the bands' pessimistic end: {added['replicas_pessimistic']} (throughput band's low end: "
        f"{added['replicas_pessimistic_throughput']}; latencies at their bands' high ends: "
        f"{added['replicas_pessimistic_latency']})"
    )


def _routing_text(p: RoutingPlan) -> str:
    lines = [
        f"  fleet under each router ({p.num_requests:,} requests at {p.fleet_rate:g} req/s = target × headroom; "
        f"search from {p.start_replicas} replicas); chosen: {p.router}",
        f"    {'router':<18} {'replicas':>8} {'p95 TTFT ms':>11} {'p95 TPOT ms':>11} {'hit rate':>8} {'$/hour':>9}",
    ]
    for row in p.rows():
        if row["replicas"] is None:
            lines.append(f"    {row['router']:<18} not found within the search's budget")
            continue
        lines.append(
            f"    {row['router']:<18} {row['replicas']:>8} {row['ttft_p95_s'] * 1e3:>11,.0f} "
            f"{(row['tpot_p95_s'] or 0) * 1e3:>11,.1f} {row['prefix_hit_rate']:>8.1%} {row['usd_per_hour']:>9,.2f}"
        )
    return "\n".join(lines)


def _capacity_text(o: CapacityPlan) -> str:
    head = (
        f"{o.model} on {o.gpu} (TP={o.tp}, {o.weights}), SLO p95 TTFT ≤ {o.slo.ttft_p95_s:g} s, "
        f"p95 TPOT ≤ {o.slo.tpot_p95_s * 1e3:g} ms"
    )
    if not o.feasible:
        return head + "\n  one replica cannot meet the SLO at any load: " + o.probes[-1].reason
    c = o.cost
    return "\n".join(
        [
            head,
            f"  capacity per replica: {o.max_rate_per_replica:,.3g} req/s (±{o.rel_tol:.0%}; analytic estimate "
            f"{o.estimate_rps:,.3g}); {len(o.probes)} simulations of {o.num_requests:,} requests",
            _next_probe_text(o),
            f"  target {o.target_rate:g} req/s × headroom {o.headroom:g} → {c.replicas} replicas = {c.num_gpus} GPUs",
            f"  ${c.usd_per_hour:,.2f}/hour (${o.usd_per_gpu_hour:g}/GPU-hour, price {o.price_date}), "
            f"${c.usd_per_day:,.0f}/day",
            f"  ${c.usd_per_million_output_tokens:,.3f} per million output tokens, "
            f"${c.usd_per_million_tokens:,.3f} per million tokens in + out (at the target rate)",
        ]
    )


def _next_probe_text(o: CapacityPlan) -> str:
    """Why the next rate up fails (steady-state verdict) and the saturated throughput."""
    above = [p for p in o.probes if not p.sustains and p.rate_per_s > o.max_rate_per_replica]
    sat = o.saturated_rps
    line = f"  saturated throughput {sat:,.3g} req/s" if sat else "  saturated throughput not reached"
    if above:
        first = min(above, key=lambda p: p.rate_per_s)
        line += f"; at {first.rate_per_s:,.3g} req/s: {first.reason}"
    return line


def _csv(value: str | None, flag: str) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise InputError(flag, "needs at least one value")
    return items


def _tps(value: str) -> tuple[int, ...]:
    try:
        tps = tuple(int(v) for v in _csv(value, "--tps"))
    except ValueError:
        raise InputError("--tps", f"{value!r}: use whole numbers, e.g. 1,2,4,8") from None
    if any(t < 1 for t in tps):
        raise InputError("--tps", "every TP must be >= 1")
    return tps


def run_recommend(args: argparse.Namespace) -> int:
    _check(args)
    if args.workers is not None and args.workers < 1:
        raise InputError("--workers", "must be >= 1")
    s, traffic, slo, prices = scenario_from_args(args), traffic_from_args(args), _slo(args), _prices(args.price)
    gpu_ids = _csv(args.gpus, "--gpus")
    if gpu_ids:
        known = {g.lower(): g for g in gpus()}
        bad = [g for g in gpu_ids if g.lower() not in known]
        if bad:
            raise InputError("--gpus", f"unknown GPU {bad[0]!r}; known: {', '.join(gpus())}")
        gpu_ids = [known[g.lower()] for g in gpu_ids]
    progress = None if args.json else _stderr_progress
    rows = recommend(
        s,
        args.target_rate,
        traffic,
        slo,
        headroom=args.headroom,
        prices=prices,
        gpu_ids=gpu_ids,
        weights=_csv(args.precisions, "--precisions"),
        tps=_tps(args.tps),
        rel_tol=args.rel_tol,
        workers=args.workers,
        ray_address=args.ray,
        progress=progress,
    )
    if args.disagg:  # disaggregated options in the same ranking
        rows = with_disaggregated(
            rows,
            disaggregated_options(
                s,
                args.target_rate,
                traffic,
                slo,
                headroom=args.headroom,
                prices=prices,
                gpu_ids=gpu_ids,
                weights=_csv(args.precisions, "--precisions"),
            ),
        )
    rows = _with_row_bands(s, rows, slo, args.target_rate, args.headroom)
    if args.router is not None:
        rows = routed_rows(s, rows, args.target_rate, traffic, slo, args.headroom, args.router, prices)
    out = {
        "model": s.model,
        "target_rate": args.target_rate,
        "slo": slo.model_dump(),
        "headroom": args.headroom,
        "num_options": len(rows),
        "num_feasible": sum(bool(r["feasible"]) for r in rows),
        "options": rows,
    }
    emit(out, args.json, _recommend_text(out, args.top))
    return 0


def _with_row_bands(s, rows: list[dict], slo: SLO, target: float, headroom: float) -> list[dict]:
    """Every ranking row with its band keys added (accuracy/bands.py ranking_row_bands)."""
    out = []
    for row in rows:
        cand = row_scenario(s, row)
        r = None if cand is None else resolve(replica_scenario(cand))
        out.append({**row, **ranking_row_bands(r, row, slo, target, headroom)})
    return out


def _fleet_cell(r: dict) -> str:
    if not r.get("router"):
        return ""
    if r["fleet_replicas"] is None:
        return f" {'not found':>24}"
    return f" {str(r['fleet_replicas']) + ' replicas, $' + format(r['fleet_usd_per_hour'], ',.2f') + '/h':>24}"


def _stderr_progress(done: int, total: int) -> None:
    progress_line(f"  {done}/{total} deployments searched", done == total)


def _recommend_text(o: dict, top: int) -> str:
    skipped = sum(r.get("searched") is False for r in o["options"])
    lines = [
        f"{o['model']}: {o['num_options']} deployments ({o['num_feasible']} searched meet the SLO"
        + (f", {skipped} not searched: provably dearer than the runner-up" if skipped else "")
        + f") for {o['target_rate']:g} req/s; cheapest first",
        f"  {'#':>3} {'deployment':<28} {'req/s/rep':>9} {'replicas':>8} {'$/hour':>9} {'$/M out':>8} "
        f"{'p95 TTFT ms':>11} {'p95 TPOT ms':>11}",
    ]
    if o["options"] and o["options"][0].get("router"):
        lines[1] += f" {'fleet (' + o['options'][0]['router'] + ')':>24}"
    for r in o["options"][:top]:
        if r.get("searched") is False:
            lines.append(f"  {r['rank']:>3} {r['id']:<28} not searched: ≥ ${r['usd_per_hour_lower_bound']:,.2f}/hour")
            continue
        if not r["feasible"]:
            lines.append(f"  {r['rank']:>3} {r['id']:<28} cannot meet the SLO")
            continue
        lines.append(
            f"  {r['rank']:>3} {r['id']:<28} {r['max_rate_per_replica']:>9.3g} {r['replicas']:>8} "
            f"{r['usd_per_hour']:>9,.2f} {r['usd_per_million_output_tokens']:>8,.3f} "
            f"{(r['ttft_p95_s'] or 0) * 1e3:>11,.0f} {(r['tpot_p95_s'] or 0) * 1e3:>11,.1f}" + _fleet_cell(r)
        )
    return "\n".join(lines)
