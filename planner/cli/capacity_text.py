"""The text output of `capacity` and `recommend` (their JSON: planner/cli/capacity_cmd.py)."""

from __future__ import annotations

from planner.capacity.capacity_plan import CapacityPlan
from planner.capacity.fleet_capacity import RoutingPlan


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


def _fleet_cell(r: dict) -> str:
    if not r.get("router"):
        return ""
    if r["fleet_replicas"] is None:
        return f" {'not found':>24}"
    return f" {str(r['fleet_replicas']) + ' replicas, $' + format(r['fleet_usd_per_hour'], ',.2f') + '/h':>24}"


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
