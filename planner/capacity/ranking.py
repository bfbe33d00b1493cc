"""The ranking's order (feasible first, by $/hour) and the Pareto frontier of cost against latency (module note of
planner/capacity/recommend.py)."""

from __future__ import annotations


def rank(rows: list[dict]) -> list[dict]:
    """Feasible first, then by $/hour, $ per million output tokens at capacity, id; then the rows not searched
    (by their $/hour lower bound), then the infeasible; `rank` numbered from 1."""

    def key(row):
        feasible = bool(row.get("feasible"))
        pruned = row.get("searched") is False
        return (
            0 if feasible else 1 if pruned else 2,
            row.get("usd_per_hour") if feasible else row.get("usd_per_hour_lower_bound") or 0.0,
            row.get("usd_per_million_output_tokens_at_capacity") or 0.0,
            row.get("id", ""),
        )

    ranked = sorted(rows, key=key)
    return [{**row, "rank": k} for k, row in enumerate(ranked, start=1)]


def pareto_front(points: list[tuple[float, float]]) -> list[bool]:
    """For each (cost, latency): True when no other point is <= in both and < in one (lower is better)."""
    flags = []
    for i, (c, lat) in enumerate(points):
        dominated = any(c2 <= c and l2 <= lat and (c2 < c or l2 < lat) for j, (c2, l2) in enumerate(points) if j != i)
        flags.append(not dominated)
    return flags


def mark_pareto(rows: list[dict], cost_key: str = "usd_per_hour", latency_key: str = "e2e_p95_s") -> list[dict]:
    """Rows with `pareto` set (feasible rows with both figures only; the others are never on the frontier)."""
    usable = [
        i
        for i, r in enumerate(rows)
        if r.get("feasible") and r.get(cost_key) is not None and r.get(latency_key) is not None
    ]
    flags = pareto_front([(rows[i][cost_key], rows[i][latency_key]) for i in usable])
    on = {i for i, f in zip(usable, flags) if f}
    return [{**r, "pareto": i in on} for i, r in enumerate(rows)]
