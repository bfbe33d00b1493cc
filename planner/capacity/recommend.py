"""Which deployment serves the traffic cheapest at the SLO: candidates, a ranking, and the Pareto frontier.

Candidates: every catalogue GPU × a sensible set of weight precisions (BF16, or FP16 on GPUs without BF16; FP8
where the GPU has FP8 tensor cores; AWQ-INT4) × TP in {1, 2, 4, 8} such that vLLM can start (plan_memory fits:
heads divisible by TP, weights within the budget, a KV pool of at least one max_model_len request), on the
scenario's model and engine settings. Each candidate is one `Task`, a picklable value; `evaluate` is a pure
function of it (capacity search + replicas + cost + the latency at the operating point), so a process pool or
a Ray cluster returns exactly what a serial loop does. Results come back in task order whatever finishes first.

Ranking: feasible deployments first, by $/hour for the target (integer replicas), then by $ per million output
tokens at full utilisation (the cheaper per-token hardware wins a tie), then by id. Pareto: a point is on the
frontier when no other point is at most as costly AND at most as slow, and strictly better in one of them.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.capacity.replicas import DEFAULT_HEADROOM, DEFAULT_REL_TOL, capacity_plan
from planner.core.catalog import gpus
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.specs import GPUSpec
from planner.core.workload import SLO, TrafficSpec
from planner.memory.plan import TP_DEGREES, plan_memory

if TYPE_CHECKING:  # imported where used: the ranking alone never loads the disaggregated model
    from planner.capacity.disagg import DisaggPlan

Progress = Callable[[int, int], None]
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


def evaluate(task: Task) -> dict:
    """One candidate as a flat row: capacity, replicas, cost and p95 latencies at the operating point."""
    plan = capacity_plan(
        task.scenario, task.target_rps, task.traffic, task.slo, task.headroom, dict(task.prices), rel_tol=task.rel_tol
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
    )
    return row


def tasks_for(
    s: Scenario,
    target_rps: float,
    traffic: TrafficSpec = TrafficSpec(),
    slo: SLO = SLO(),
    headroom: float = DEFAULT_HEADROOM,
    prices: dict[str, float] | None = None,
    gpu_ids: list[str] | None = None,
    weights: list[str] | None = None,
    tps: tuple[int, ...] = TP_DEGREES,
    rel_tol: float = DEFAULT_REL_TOL,
) -> list[Task]:
    price_items = tuple(sorted((prices or {}).items()))
    return [
        Task(c, target_rps, traffic, slo, headroom, price_items, rel_tol) for c in candidates(s, gpu_ids, weights, tps)
    ]


def run_tasks(
    tasks: list[Task], workers: int | None = None, ray_address: str | None = None, progress: Progress | None = None
) -> list[dict]:
    """evaluate() every task: serially (workers=1), on a local process pool (default: all cores), or on Ray."""
    if ray_address:
        return _run_ray(tasks, ray_address, progress)
    workers = workers or os.cpu_count() or 1
    if workers < 1:
        raise InputError("workers", "must be >= 1")
    if workers == 1 or len(tasks) <= 1:
        rows = []
        for k, t in enumerate(tasks, start=1):
            rows.append(evaluate(t))
            if progress:
                progress(k, len(tasks))
        return rows
    return _run_pool(tasks, workers, progress)


def _run_pool(tasks: list[Task], workers: int, progress: Progress | None) -> list[dict]:
    import multiprocessing as mp

    # forkserver: workers fork from a clean server process (never from a threaded Streamlit server)
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["planner.capacity.recommend"])
    rows: list[dict | None] = [None] * len(tasks)
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx) as pool:
        with _no_main_reimport():  # workers start during submit
            futures = {pool.submit(evaluate, t): i for i, t in enumerate(tasks)}
        try:
            for k, fut in enumerate(as_completed(futures), start=1):
                rows[futures[fut]] = fut.result()  # a worker's InputError arrives as itself (it pickles)
                if progress:
                    progress(k, len(tasks))
        except BaseException:  # one bad candidate or Ctrl-C: drop the queued ones, do not wait for a full ranking
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return rows


@contextmanager
def _no_main_reimport():
    """Workers of a spawn/forkserver pool re-run the parent's __main__ file; under Streamlit (or AppTest) that
    is the page script. evaluate() needs only planner, so hide __main__ while the workers start."""
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _run_ray(tasks: list[Task], address: str, progress: Progress | None) -> list[dict]:
    """Ray tasks, one per candidate. address: "local" starts a Ray instance here, "auto" or "ray://host:port"
    joins a running cluster (its nodes need servingplan installed: `pip install .[cluster]`)."""
    try:
        import ray
    except ImportError:
        raise InputError("ray_address", "Ray is not installed: pip install '.[cluster]' (ray>=2.9)") from None
    if not ray.is_initialized():
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = {"env_vars": {"PYTHONPATH": root}}  # workers import planner from this checkout
        ray.init(
            address=None if address == "local" else address,
            runtime_env=env,
            include_dashboard=False,
            log_to_driver=False,
        )
    remote = ray.remote(evaluate)
    refs = [remote.remote(t) for t in tasks]
    index = {ref: i for i, ref in enumerate(refs)}
    rows: list[dict | None] = [None] * len(tasks)
    pending, done = list(refs), 0
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for ref in ready:
            rows[index[ref]] = ray.get(ref)
            done += 1
            if progress:
                progress(done, len(tasks))
    return rows


def rank(rows: list[dict]) -> list[dict]:
    """Feasible first, then by $/hour, $ per million output tokens at capacity, id; `rank` numbered from 1."""

    def key(row):
        feasible = bool(row.get("feasible"))
        return (
            not feasible,
            row.get("usd_per_hour") if feasible else 0.0,
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


def recommend(
    s: Scenario,
    target_rps: float,
    traffic: TrafficSpec = TrafficSpec(),
    slo: SLO = SLO(),
    *,
    headroom: float = DEFAULT_HEADROOM,
    prices: dict[str, float] | None = None,
    gpu_ids: list[str] | None = None,
    weights: list[str] | None = None,
    tps: tuple[int, ...] = TP_DEGREES,
    rel_tol: float = DEFAULT_REL_TOL,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: Progress | None = None,
) -> list[dict]:
    """Every candidate evaluated and ranked by cost at the SLO, the Pareto frontier marked (the search options are
    keyword-only: headroom, prices, the candidate space, the tolerance and where the tasks run)."""
    tasks = tasks_for(s, target_rps, traffic, slo, headroom, prices, gpu_ids, weights, tps, rel_tol)
    if not tasks:
        raise InputError("gpus", f"no GPU × precision × TP fits {s.model}: try a larger GPU or a lower max_model_len")
    return mark_pareto(rank(run_tasks(tasks, workers, ray_address, progress)))


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
