"""`python -m planner disagg`: separate prefill and decode pools sized for a target rate at the SLO, against the
best aggregated (chunked-prefill) deployment. JSON keys are a contract: prefill, decode (gpus_per_instance, tp,
instances, max_rate_per_instance), kv_transfer_s, usd_per_hour, usd_per_million_output_tokens, aggregated
(replicas, gpus, usd_per_hour, usd_per_million_output_tokens)."""

from __future__ import annotations

import argparse
import math

from planner.accuracy.bands import bands_json, bands_text
from planner.capacity.disagg import DisaggPlan, PoolRow, disagg_plan
from planner.capacity.disagg_layout import TRANSFER_ENGINES, GivenLayoutPlan, PoolLayout, evaluate_layout
from planner.capacity.disagg_pools import DEFAULT_LINK_LATENCY_S, LINKS
from planner.cli import emit
from planner.cli.scenario_args import scenario_from_args
from planner.cli.target_args import _add_common, _check, _prices, _slo
from planner.cli.traffic_args import traffic_from_args
from planner.core.errors import InputError
from planner.core.scenario import resolve

DISAGG_NUM_REQUESTS = 600  # per simulated probe: 2 pools + up to 4 aggregated searches stay within ~a minute


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "disagg",
        help="disaggregated prefill/decode pools vs aggregated, at the SLO",
        description="Size a prefill pool (simulated, TTFT incl. KV transfer) and a decode "
        "pool (no prefill interference, TPOT) for the target rate, and compare "
        "GPUs and $ with the best aggregated deployment at the same SLO.",
    )
    _add_common(p, DISAGG_NUM_REQUESTS)
    k = p.add_argument_group("KV transfer between the pools")
    k.add_argument(
        "--kv-link",
        default="nic",
        choices=LINKS,
        help="nic: pools on separate nodes (per-GPU NIC from data/gpus.yaml); nvlink: same node",
    )
    k.add_argument("--kv-link-gb-s", type=float, default=None, help="total link bandwidth, GB/s (overrides --kv-link)")
    k.add_argument(
        "--kv-link-latency-ms",
        type=float,
        default=DEFAULT_LINK_LATENCY_S * 1e3,
        help=f"fixed cost per transfer, ms (default {DEFAULT_LINK_LATENCY_S * 1e3:g})",
    )
    k.add_argument(
        "--kv-layerwise",
        action="store_true",
        help="send each layer's KV as soon as it is computed (Splitwise); default: after the prefill",
    )
    k.add_argument("--no-compare", action="store_true", help="skip the aggregated searches (faster)")
    g = add_layout_args(p)
    g.add_argument(
        "--handoff-ms",
        type=float,
        default=None,
        help="fixed per-request hand-off (proxy, second hop), ms; default the estimated 20 ms",
    )
    p.set_defaults(func=run)


def add_layout_args(p: argparse.ArgumentParser):
    """--prefill-* / --decode-* / --transfer-engine: a given xPyD layout (disagg evaluates it, launch launches it)."""
    g = p.add_argument_group("a given xPyD layout (instead of a search)")
    for role in ("prefill", "decode"):
        g.add_argument(f"--{role}-instances", type=int, default=None, help=f"{role} instances (X or Y)")
        g.add_argument(f"--{role}-tp", type=int, default=None, help=f"TP of a {role} instance")
        g.add_argument(f"--{role}-dp", type=int, default=1, help=f"attention DP of a {role} instance (default 1)")
        g.add_argument(f"--{role}-ep", type=int, default=1, help=f"EP of a {role} instance (divides TP × DP)")
    g.add_argument(
        "--transfer-engine",
        default="nixl",
        choices=tuple(TRANSFER_ENGINES),
        help="what moves the KV: nixl (UCX/RDMA), mooncake (RDMA), tcp (default nixl)",
    )
    return g


def given_layout(args: argparse.Namespace) -> tuple[PoolLayout, PoolLayout] | None:
    """The --prefill-* / --decode-* layout, or None to search (all four counts needed once one is given)."""
    names = ("prefill_instances", "prefill_tp", "decode_instances", "decode_tp")
    values = [getattr(args, n) for n in names]
    if all(v is None for v in values):
        return None
    for name, value in zip(names, values):
        if value is None or value < 1:
            raise InputError("--" + name.replace("_", "-"), "a given layout needs X, Y and both TPs, each >= 1")
    return tuple(
        PoolLayout(getattr(args, f"{r}_instances"), getattr(args, f"{r}_tp"), getattr(args, f"{r}_dp"),
                   getattr(args, f"{r}_ep"))
        for r in ("prefill", "decode")
    )  # fmt: skip


def _run_given(args, s, traffic, slo, layout) -> int:
    if args.handoff_ms is not None and not (math.isfinite(args.handoff_ms) and args.handoff_ms >= 0):
        raise InputError("--handoff-ms", "must be a number of ms >= 0")
    plan = evaluate_layout(
        s,
        args.target_rate,
        *layout,
        traffic,
        slo,
        args.transfer_engine,
        args.kv_link,
        args.kv_link_latency_ms / 1e3,
        None if args.handoff_ms is None else args.handoff_ms / 1e3,
        args.rel_tol,
    )
    out = {"mode": "given", **plan.to_dict()}
    out.update(model=s.model_spec.name if s.model_spec else s.model, gpu=s.gpu, engine=args.engine)
    predicted = {"ttft_p95_s": ("ttft", plan.ttft_p95_s), "tpot_p95_s": ("tpot", plan.tpot_p95_s)}
    out["bands"] = bands_json(resolve(s), {**predicted, "max_rate": ("throughput", plan.max_rate)})
    emit(out, args.json, _given_text(plan) + bands_text(out["bands"]))
    return 0


def _given_text(o: GivenLayoutPlan) -> str:
    pools = [
        f"  {p.role:<8} {p.instances} × TP={p.tp}" + (f" DP={p.dp}" if p.dp > 1 else "")
        + (f" EP={p.ep}" if p.ep > 1 else "") + f" = {p.gpus} GPUs, {p.max_rate_per_instance:,.3g} req/s per "
        f"instance at the SLO"
        for p in (o.prefill, o.decode)
    ]  # fmt: skip
    return "\n".join(
        [
            f"{o.prefill.instances}P{o.decode.instances}D at {o.target_rate:g} req/s",
            *pools,
            f"  KV transfer {o.kv_transfer_s * 1e3:,.2f} ms over {o.kv_link} ({o.kv_link_gb_s:,.0f} GB/s)",
            f"  hand-off    {o.handoff_s * 1e3:,.1f} ms ({o.handoff_status}: proxy, second hop, first decode step)",
            f"  p95 TTFT    {o.ttft_p95_s * 1e3:,.0f} ms (floor {o.ttft_floor_s * 1e3:,.0f} ms), "
            f"p95 TPOT {o.tpot_p95_s * 1e3:,.1f} ms: " + ("meets" if o.meets_slo else "misses") + " the SLO",
            f"  capacity    {o.max_rate:,.3g} req/s; {o.num_gpus} GPUs, ${o.usd_per_hour:,.2f}/hour",
        ]
    )


def run(args: argparse.Namespace) -> int:
    _check(args)
    if not math.isfinite(args.kv_link_latency_ms) or args.kv_link_latency_ms < 0:
        raise InputError("--kv-link-latency-ms", "must be a number of ms >= 0")
    s, traffic, slo, prices = scenario_from_args(args), traffic_from_args(args), _slo(args), _prices(args.price)
    if traffic.is_sessions:  # the pools' probes are open loop: a session's next turn waits on its answer
        raise InputError("--turns", "disagg sizes open-loop traffic; size sessions with capacity --router")
    layout = given_layout(args)
    if layout is not None:
        return _run_given(args, s, traffic, slo, layout)
    plan = disagg_plan(
        s,
        args.target_rate,
        traffic,
        slo,
        args.headroom,
        prices,
        args.kv_link,
        args.kv_link_gb_s,
        args.kv_link_latency_ms / 1e3,
        args.rel_tol,
        compare=not args.no_compare,
        layerwise=args.kv_layerwise,
    )
    out = plan.to_dict()
    out.update(
        model=s.model_spec.name if s.model_spec else s.model,
        gpu=s.gpu,
        weights=s.deployment.weights,
        engine=args.engine,
    )
    out["bands"] = bands_json(resolve(s), disagg_bands(out))
    emit(out, args.json, _text(plan, s, args.engine) + bands_text(out["bands"]))
    return 0


def disagg_bands(out: dict) -> dict[str, tuple[str, object]]:
    """The predicted figures of a disaggregated plan: each pool's p95 latency and capacity per instance."""
    predicted: dict[str, tuple[str, object]] = {}
    for pool, metric, key in (("prefill", "ttft", "ttft_p95_s"), ("decode", "tpot", "tpot_p95_s")):
        p = out.get(pool) or {}
        predicted[f"{pool}.{key}"] = (metric, p.get(key))
        predicted[f"{pool}.max_rate_per_instance"] = ("throughput", p.get("max_rate_per_instance"))
    return predicted


def _pool_line(name: str, p: PoolRow | None, latency: float | None, unit_ms: bool) -> str:
    if p is None:
        return f"  {name:<8} cannot meet the SLO with any instance shape"
    shape = f"TP={p.tp}" + (f" DP={p.dp}" if p.dp > 1 else "") + (f" EP={p.ep}" if p.ep > 1 else "")
    return (
        f"  {name:<8} {p.instances} × {shape} ({p.gpus_per_instance} GPUs) = {p.gpus} GPUs, "
        f"{p.max_rate_per_instance:,.3g} req/s per instance"
        + (f", p95 {'TPOT' if unit_ms else 'TTFT'} {latency * 1e3:,.1f} ms at the target" if latency else "")
    )


def _text(o: DisaggPlan, s, engine: str) -> str:
    model = s.model_spec.name if s.model_spec else s.model
    lines = [
        f"{model} on {s.gpu} ({s.deployment.weights}), target {o.target_rate:g} req/s × headroom "
        f"{o.headroom:g}, SLO p95 TTFT ≤ {o.slo.ttft_p95_s:g} s, p95 TPOT ≤ {o.slo.tpot_p95_s * 1e3:g} ms",
        f"  mean prompt {o.mean_prompt_tokens:,.0f} tokens, mean output {o.mean_output_tokens:,.0f}",
        _pool_line("prefill", o.prefill, o.prefill and o.prefill.ttft_p95_s, False),
        _pool_line("decode", o.decode, o.decode and o.decode.tpot_p95_s, True),
    ]
    if o.kv_transfer_s is not None:
        lines.append(
            f"  KV transfer {o.kv_transfer_s * 1e3:,.2f} ms for the mean prompt over {o.kv_link}"
            + (
                f" ({o.kv_transfer_visible_s * 1e3:,.2f} ms visible, sent layer by layer)"
                if o.kv_transfer_visible_s != o.kv_transfer_s
                else ""
            )
        )
    if o.feasible:
        lines.append(
            f"  disaggregated: {o.num_gpus} GPUs, ${o.usd_per_hour:,.2f}/hour, "
            f"${o.usd_per_million_output_tokens:,.2f} per million output tokens"
        )
    else:
        reasons = {c.reason for c in o.prefill_options + o.decode_options if c.reason}
        lines.append("  disaggregated: not feasible (" + "; ".join(sorted(reasons)) + ")")
    a = o.aggregated
    if a:
        shape = f"TP={a.tp}" + (f" DP={a.dp} EP={a.ep}" if a.dp > 1 else "")
        lines.append(
            f"  aggregated:    {a.replicas} × {shape} = {a.gpus} GPUs, "
            f"${a.usd_per_hour:,.2f}/hour, "
            f"${a.usd_per_million_output_tokens:,.2f} per million output tokens"
            + (
                f", p95 TTFT {a.ttft_p95_s * 1e3:,.0f} ms, p95 TPOT {a.tpot_p95_s * 1e3:,.1f} ms"
                if a.ttft_p95_s and a.tpot_p95_s
                else ""
            )
        )
    elif o.aggregated_options:
        lines.append("  aggregated:    no TP shape meets the SLO")
    if o.feasible and (a or o.aggregated_options):
        lines.append("  → disaggregation is " + ("cheaper" if o.cheaper else "not cheaper") + " here")
    return "\n".join(lines)
