"""`python -m planner capacity` (one deployment: capacity at the SLO, replicas, $) and `python -m planner
recommend` (every GPU × precision × TP that fits, ranked by cost at the SLO). JSON keys are a contract."""

from __future__ import annotations

import argparse

from planner.accuracy.bands import bands_text, ranking_row_bands
from planner.capacity.capacity_plan import capacity_plan
from planner.capacity.cost import replica_scenario
from planner.capacity.disagg_options import disaggregated_options, with_disaggregated
from planner.capacity.fleet_capacity import routed_rows, routing_plan, row_scenario
from planner.capacity.offload_compare import compare_offload
from planner.capacity.recommend import recommend
from planner.cli import emit, progress_line
from planner.cli.capacity_text import _capacity_text, _pessimistic_text, _recommend_text, _routing_text
from planner.cli.offload_args import add_offload_args, offload_from_args
from planner.cli.scenario_args import scenario_from_args
from planner.cli.spec_args import add_spec_args, check_spec_args, spec_from_args
from planner.cli.target_args import _add_common, _check, _prices, _slo
from planner.cli.traffic_args import traffic_from_args
from planner.core.catalog import gpus
from planner.core.errors import InputError
from planner.core.scenario import resolve
from planner.core.workload import SLO
from planner.memory.plan import TP_DEGREES
from planner.report_plan import capacity_bands_json, latency_ratios
from planner.sim.router import ROUTERS

RANKING_NUM_REQUESTS = 600  # per probe in the ranking: keeps ~140 searches within ~30 s on two cores


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
    out["probe_sizing"] = out.pop("probe_sizing")  # keys added since the contract come after its keys
    emit(out, args.json, text + bands_text(added["bands"]))
    return 0


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


def _stderr_progress(done: int, total: int) -> None:
    progress_line(f"  {done}/{total} deployments searched", done == total)
