"""Disaggregated options: opt-in rows of separate prefill and decode pools for the same ranking
(planner.capacity.recommend)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.capacity.candidates import default_weights
from planner.capacity.cost import DEFAULT_HEADROOM
from planner.capacity.ranking import mark_pareto, rank
from planner.core.catalog import gpus
from planner.core.errors import InputError
from planner.core.scenario import Scenario
from planner.core.workload import SLO, TrafficSpec

if TYPE_CHECKING:  # imported where used: the ranking alone never loads the disaggregated model
    from planner.capacity.disagg import DisaggPlan


# --- disaggregated options: opt-in rows for the same ranking -----------------------------------
def disaggregated_options(
    s: Scenario,
    target_rps: float,
    traffic: TrafficSpec = TrafficSpec(),
    slo: SLO = SLO(),
    *,
    headroom: float = DEFAULT_HEADROOM,
    prices: dict[str, float] | None = None,
    gpu_ids: list[str] | None = None,
    weights: list[str] | None = None,
) -> list[dict]:
    """One ranking row per GPU × precision where separate prefill and decode pools meet the SLO
    (planner.capacity.disagg, without its aggregated comparison: the ranking is the comparison). A row's
    "replica" is the whole xPyD unit; e2e p95 ≈ p95 TTFT + (mean output − 1) × p95 TPOT (a sum of tails: high)."""
    from planner.capacity.disagg import disagg_plan

    catalogue = gpus()
    rows = []
    for gid in gpu_ids or list(catalogue):
        for w in weights or default_weights(catalogue[gid]):
            dep = s.deployment.model_copy(update={"weights": w})
            cand = s.model_copy(update={"gpu": gid, "gpu_memory_gb": None, "deployment": dep})
            try:
                plan = disagg_plan(cand, target_rps, traffic, slo, headroom, prices, compare=False)
            except InputError:  # no shape of the model starts on this GPU at this precision
                continue
            if plan.feasible:
                rows.append(_disagg_row(gid, w, plan))
    return rows


def _disagg_row(gid: str, weights: str, plan: DisaggPlan) -> dict:
    p, d = plan.prefill, plan.decode
    served = min(p.instances * p.max_rate_per_instance, d.instances * d.max_rate_per_instance)
    out_tokens = plan.mean_output_tokens
    e2e = p.ttft_p95_s + max(out_tokens - 1, 0) * d.tpot_p95_s
    usd_h = plan.usd_per_hour
    return {
        "id": f"{gid} · {weights} · {p.instances}P×TP{p.tp}+{d.instances}D×TP{d.tp}"
        + (f"·DP{d.dp}" if d.dp > 1 else ""),
        "gpu": gid,
        "weights": weights,
        "tp": p.tp,
        "num_gpus": plan.num_gpus,
        "gpus_per_replica": plan.num_gpus,
        "max_rate_per_replica": served,
        "replicas": 1,
        "usd_per_gpu_hour": plan.usd_per_gpu_hour,
        "usd_per_hour": usd_h,
        "usd_per_day": usd_h * 24,
        "usd_per_million_output_tokens": plan.usd_per_million_output_tokens,
        "usd_per_million_tokens": usd_h / (plan.target_rate * (plan.mean_prompt_tokens + out_tokens) * 3600) * 1e6,
        "usd_per_million_output_tokens_at_capacity": usd_h / (served * out_tokens * 3600) * 1e6,
        "ttft_p95_s": p.ttft_p95_s,
        "tpot_p95_s": d.tpot_p95_s,
        "e2e_p95_s": e2e,
        "feasible": True,
        "reason": "",
        "search_wall_s": None,
        "disaggregated": True,
    }


def with_disaggregated(rows: list[dict], extra: list[dict]) -> list[dict]:
    """The ranking with disaggregated rows merged in, re-ranked and the Pareto frontier re-marked."""
    return mark_pareto(rank([{k: v for k, v in r.items() if k not in ("rank", "pareto")} for r in rows] + extra))
