"""The ranking's candidates: every GPU × precision × TP that vLLM can start, one picklable `Task` each, and
`evaluate`, the pure function of a task that gives its ranking row (module note of planner/capacity/recommend.py)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.capacity.capacity_plan import capacity_plan
from planner.capacity.cost import DEFAULT_HEADROOM
from planner.capacity.replicas import DEFAULT_REL_TOL
from planner.core.catalog import gpus
from planner.core.errors import InputError
from planner.core.gpu_spec import GPUSpec
from planner.core.scenario import Scenario, resolve
from planner.core.workload import SLO, TrafficSpec
from planner.memory.plan import TP_DEGREES, plan_memory

ROW_KEYS = (
    "rank",
    "gpu",
    "weights",
    "tp",
    "num_gpus",
    "gpus_per_replica",
    "max_rate_per_replica",
    "replicas",
    "usd_per_gpu_hour",
    "usd_per_hour",
    "usd_per_day",
    "usd_per_million_output_tokens",
    "usd_per_million_tokens",
    "usd_per_million_output_tokens_at_capacity",
    "ttft_p95_s",
    "tpot_p95_s",
    "e2e_p95_s",
    "feasible",
    "reason",
    "search_wall_s",
)


def default_weights(gpu: GPUSpec) -> list[str]:
    """BF16 (FP16 where the GPU lacks BF16), FP8 where it has FP8 tensor cores, and AWQ-INT4."""
    return ["bf16" if gpu.tflops_bf16 else "fp16"] + (["fp8"] if gpu.tflops_fp8 else []) + ["awq-int4"]


def candidates(
    s: Scenario, gpu_ids: list[str] | None = None, weights: list[str] | None = None, tps: tuple[int, ...] = TP_DEGREES
) -> list[Scenario]:
    """One single-replica scenario per (GPU, precision, TP) that vLLM can start (module note)."""
    catalogue = gpus()
    unknown = [g for g in gpu_ids or [] if g not in catalogue]
    if unknown:
        raise InputError("gpus", f"unknown GPU {unknown[0]!r}; known: {', '.join(catalogue)}")
    out = []
    for gid in gpu_ids or list(catalogue):
        for w in weights or default_weights(catalogue[gid]):
            for tp in tps:
                dep = s.deployment.model_copy(update={"weights": w, "tensor_parallel_size": tp, "num_gpus": tp})
                cand = s.model_copy(update={"gpu": gid, "gpu_memory_gb": None, "deployment": dep})
                if _starts(cand):
                    out.append(cand)
    return out


def _starts(s: Scenario) -> bool:
    try:
        r = resolve(s)
    except InputError:  # e.g. heads not divisible by TP
        return False
    plan = plan_memory(r)
    return plan.fits and plan.num_gpu_blocks > 0


@dataclass(frozen=True)
class Task:
    """Everything one candidate's evaluation depends on (picklable: runs in another process or on Ray)."""

    scenario: Scenario
    target_rps: float
    traffic: TrafficSpec
    slo: SLO
    headroom: float = DEFAULT_HEADROOM
    prices: tuple[tuple[str, float], ...] = ()
    rel_tol: float = DEFAULT_REL_TOL


def evaluate(task: Task, saturated: float | None | tuple = ()) -> dict:
    """One candidate as a flat row: capacity, replicas, cost and p95 latencies at the operating point
    (= capacity_plan of that deployment; `saturated` as in find_capacity)."""
    plan = capacity_plan(
        task.scenario,
        task.target_rps,
        task.traffic,
        task.slo,
        task.headroom,
        dict(task.prices),
        rel_tol=task.rel_tol,
        saturated=saturated,
    )
    op = plan.operating_point
    last = plan.probes[-1].reason if plan.probes else ""
    reason = "" if plan.feasible else f"SLO out of reach even at low load ({last})"
    flat = plan.to_dict()
    row = {k: flat[k] for k in ROW_KEYS if k in flat}
    row.update(
        id=f"{plan.gpu} · {plan.weights} · TP{plan.tp}",
        ttft_p95_s=op.ttft_p95_s if op else None,
        tpot_p95_s=op.tpot_p95_s if op else None,
        e2e_p95_s=op.e2e_p95_s if op else None,
        reason=reason,
        operating_rate_per_replica=op.rate_per_s if op else None,
        price_date=plan.price_date,
    )  # a row not searched carries searched=False (and its bounds); searched rows keep the contract's keys
    return row
