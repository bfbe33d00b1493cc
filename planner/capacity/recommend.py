"""Which deployment serves the traffic cheapest at the SLO: candidates, a ranking, and the Pareto frontier.

Candidates: every catalogue GPU × a sensible set of weight precisions (BF16, or FP16 on GPUs without BF16; FP8
where the GPU has FP8 tensor cores; AWQ-INT4) × TP in {1, 2, 4, 8} such that vLLM can start (plan_memory fits:
heads divisible by TP, weights within the budget, a KV pool of at least one max_model_len request), on the
scenario's model and engine settings. Each candidate is one `Task`, a picklable value; `evaluate` is a pure
function of it (capacity search + replicas + cost + the latency at the operating point), so a process pool or
a Ray cluster returns exactly what a serial loop does. Results come back in task order whatever finishes first.

Bound before search (`recommend(..., prune=True)`, the default): a deployment costs at least one replica, so its price
alone (GPUs per replica × $/GPU-hour) is a first lower bound on its $/hour. One replica never sustains more than
(1 − STABILITY_MARGIN) × its saturated throughput (the steady-state verdict refuses any rate above it,
planner/capacity/steady_state.py), so one saturation run gives an upper bound on its capacity and so a tighter
lower bound (replicas ≥ ceil(target × headroom / bound), ≥ 1). Candidates are taken best-first by their current
lower bound: the cheapest is bounded by its saturation run (and waits again with that bound) or, once bounded,
searched; once the best and the runner-up are known, a candidate whose lower bound is above the runner-up's $/hour
cannot enter the top two and is not run further (its row says so, with its bounds and `bound_run` False when its
price alone ruled it out; it ranks after the searched feasible rows). The first two rows are therefore exactly what an
exhaustive ranking gives; the saturation run is reused by the search (find_capacity(saturated=...)), so every
searched row equals capacity_plan for that deployment. Ray runs stay exhaustive.

Ranking: feasible deployments first, by $/hour for the target (integer replicas), then by $ per million output
tokens at full utilisation (the cheaper per-token hardware wins a tie), then by id. Pareto: a point is on the
frontier when no other point is at most as costly AND at most as slow, and strictly better in one of them.
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, as_completed, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.capacity.ray_cluster import ray_session
from planner.capacity.replicas import (
    DEFAULT_HEADROOM,
    DEFAULT_REL_TOL,
    capacity_plan,
    price_of,
    replica_scenario,
    replicas_for,
    saturated_rps,
    traffic_replica,
)
from planner.capacity.steady_state import STABILITY_MARGIN
from planner.capacity.worker_pool import map_in_pool, no_main_reimport, stoppable_pool
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


@dataclass(frozen=True)
class Bound:
    """A candidate's capacity upper bound and $/hour lower bound from one saturation run (module note)."""

    saturated_rps: float | None  # one DP rank's; None: the batch holds the whole run (no bound but replicas >= 1)
    max_rate_upper_bound: float | None
    replicas_lower_bound: int
    usd_per_hour_lower_bound: float
    gpus_per_replica: int
    usd_per_gpu_hour: float
    price_date: str
    simulated: bool = True  # False: the price alone (one replica), before any saturation run


def price_bound(task: Task) -> Bound:
    """The $/hour lower bound before any run: one replica of the candidate's GPUs at their price."""
    r = resolve(replica_scenario(task.scenario))
    gpus_each, usd = r.deployment.gpus_per_replica, price_of(r, dict(task.prices))
    return Bound(None, None, 1, gpus_each * usd, gpus_each, usd, r.gpu.price_date, simulated=False)


def bound(task: Task) -> Bound:
    """Upper bound on the replica's capacity, lower bound on the deployment's $/hour (module note). The saturation
    run is one DP rank's (find_capacity's); an instance of DP ranks serves DP × that."""
    r = resolve(replica_scenario(task.scenario))
    sat = saturated_rps(traffic_replica(r, task.traffic), task.traffic)
    sat = float(sat) if sat else None
    dp = r.deployment.data_parallel_size
    ub = (1 - STABILITY_MARGIN) * sat * dp if sat else None
    n = replicas_for(task.target_rps, ub, task.headroom) if ub else 1
    gpus_each, usd = r.deployment.gpus_per_replica, price_of(r, dict(task.prices))
    return Bound(sat, ub, n, n * gpus_each * usd, gpus_each, usd, r.gpu.price_date)


def _pruned_row(task: Task, b: Bound, cutoff_usd: float) -> dict:
    dep = task.scenario.deployment
    row = dict.fromkeys(ROW_KEYS)
    row.update(
        id=f"{task.scenario.gpu} · {dep.weights} · TP{dep.tensor_parallel_size}",
        gpu=task.scenario.gpu,
        weights=dep.weights,
        tp=dep.tensor_parallel_size,
        gpus_per_replica=b.gpus_per_replica,
        usd_per_gpu_hour=b.usd_per_gpu_hour,
        feasible=False,
        searched=False,
        operating_rate_per_replica=None,
        price_date=b.price_date,
        saturated_rps=b.saturated_rps,
        max_rate_upper_bound=b.max_rate_upper_bound,
        usd_per_hour_lower_bound=b.usd_per_hour_lower_bound,
        bound_run=b.simulated,
        reason=_pruned_reason(b, cutoff_usd),
    )
    return row


def _pruned_reason(b: Bound, cutoff_usd: float) -> str:
    runner_up = f"dearer than the runner-up's ${cutoff_usd:,.2f}/hour"
    if not b.simulated:  # never run: one replica already costs more
        return (
            f"not searched: one replica ({b.gpus_per_replica} GPU{'s' if b.gpus_per_replica > 1 else ''} at "
            f"${b.usd_per_gpu_hour:,.2f}/hour) costs ${b.usd_per_hour_lower_bound:,.2f}/hour, {runner_up}"
        )
    limit = (
        f"at most {b.max_rate_upper_bound:,.3g} req/s per replica (95% of its saturated throughput), so "
        if b.max_rate_upper_bound
        else ""
    )
    usd = f"${b.usd_per_hour_lower_bound:,.2f}/hour"
    return f"not searched: {limit}≥ {b.replicas_lower_bound} replicas at ≥ {usd}, {runner_up}"


KEEP_EXACT = 2  # the best and the runner-up are always searched (module note)


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
    """The tasks on a local pool whose workers stop with the ranking and with this process (worker_pool.py)."""
    return map_in_pool(evaluate, tasks, workers, "planner.capacity.recommend", progress)


def _run_ray(tasks: list[Task], address: str, progress: Progress | None) -> list[dict]:
    """Ray tasks, one per candidate. address: "local" starts a Ray instance here, "auto" or "ray://host:port"
    joins a running cluster (its nodes need servingplan installed: `pip install .[cluster]`)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with ray_session(address, pythonpath=root) as ray:  # workers import planner from this checkout
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
    prune: bool = True,
) -> list[dict]:
    """Every candidate bounded, the ones that can still be among the two cheapest searched, all ranked by cost at
    the SLO, the Pareto frontier marked (module note; prune=False or Ray: every candidate searched; the search
    options are keyword-only: headroom, prices, the candidate space, the tolerance and where the tasks run)."""
    tasks = tasks_for(s, target_rps, traffic, slo, headroom, prices, gpu_ids, weights, tps, rel_tol)
    if not tasks:
        raise InputError("gpus", f"no GPU × precision × TP fits {s.model}: try a larger GPU or a lower max_model_len")
    if prune and not ray_address:
        return mark_pareto(rank(run_pruned(tasks, workers, progress)))
    return mark_pareto(rank(run_tasks(tasks, workers, ray_address, progress)))


# A search runs ~8-10 probes (bracket + bisection to 2%) and the operating point after its saturation run. The
# saturation runs left after the price bounds are the cheap GPUs' (small KV pools: many short steps), dearer than the
# average, and the searches are the cheapest deployments': on the default 8B chat ranking a search took ~6 of those
# bound runs' time (benchmarks/bench_ranking.py), so it weighs SEARCH_WEIGHT bound runs in the progress estimate.
SEARCH_WEIGHT = 6
BOUND, SEARCH = 0, 1  # what a candidate needs next in run_pruned: its saturation run, then its search


def run_pruned(tasks: list[Task], workers: int | None = None, progress: Progress | None = None) -> list[dict]:
    """Best-first over lower bounds on $/hour (module note): every candidate starts with its price alone (≥ 1
    replica); the cheapest is bounded by its saturation run (and goes back with that bound) or, once bounded,
    searched; when the cheapest lower bound left is above the runner-up's $/hour, the rest are not run at all.
    progress(done, total) counts work in bound runs (a search = SEARCH_WEIGHT); the work still to come is the
    candidates whose lower bound is at most the runner-up's cost (before two are known: the second-lowest bound
    from a saturation run, a guess that falls as the run learns), so total moves and done / total is the share done."""
    workers = workers or os.cpu_count() or 1
    if workers < 1:
        raise InputError("workers", "must be >= 1")
    n = len(tasks)
    rows: list[dict | None] = [None] * n
    bounds: list[Bound] = [price_bound(t) for t in tasks]
    feasible_costs: list[float] = []
    heap = [(b.usd_per_hour_lower_bound, BOUND, i) for i, b in enumerate(bounds)]
    heapq.heapify(heap)
    inflight: dict = {}  # future -> (stage, index)
    done = [0]  # work units done

    def cutoff() -> float:
        return sorted(feasible_costs)[KEEP_EXACT - 1] if len(feasible_costs) >= KEEP_EXACT else math.inf

    def report() -> None:
        if not progress:
            return
        c = cutoff()
        if c == math.inf:  # the guess: the second-lowest bound known from a saturation run (else every candidate)
            known = sorted(lb for lb, stage, _ in heap if stage == SEARCH)
            c = known[KEEP_EXACT - 1] if len(known) >= KEEP_EXACT else math.inf
        left = sum((1 if stage == BOUND else SEARCH_WEIGHT) for lb, stage, _ in heap if lb <= c)
        left += sum((1 if stage == BOUND else SEARCH_WEIGHT) for stage, _ in inflight.values())
        left += SEARCH_WEIGHT * max(
            0, KEEP_EXACT - len(feasible_costs) - sum(s == SEARCH for s, _ in inflight.values())
        )
        progress(done[0], done[0] + left)

    def settle(stage: int, i: int, result) -> None:
        if stage == BOUND:
            bounds[i] = result
            heapq.heappush(heap, (result.usd_per_hour_lower_bound, SEARCH, i))
            done[0] += 1
        else:
            rows[i] = result
            if result.get("feasible"):
                feasible_costs.append(result["usd_per_hour"])
            done[0] += SEARCH_WEIGHT

    def job(stage: int, i: int) -> tuple:
        return (bound, tasks[i]) if stage == BOUND else (evaluate, tasks[i], bounds[i].saturated_rps)

    with _executor(workers, n) as pool:
        report()
        while heap or inflight:
            # the cutoff only falls, so a candidate above it now stays above it: it waits in the heap, unrun
            while heap and heap[0][0] <= cutoff() and len(inflight) < (workers if pool else 1):
                _, stage, i = heapq.heappop(heap)
                fn, *args = job(stage, i)
                if pool is None:
                    settle(stage, i, fn(*args))
                    report()
                else:
                    inflight[_submit(pool, fn, *args)] = (stage, i)
            if not inflight:
                break
            finished, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
            for fut in finished:
                settle(*inflight.pop(fut), fut.result())
            report()
    for _, _, i in heap:
        rows[i] = _pruned_row(tasks[i], bounds[i], cutoff())
    if progress:
        progress(done[0], done[0])
    return rows


@contextmanager
def _executor(workers: int, n: int):
    """A pool for run_pruned (None: run here) that stops with the ranking and with this process (worker_pool.py)."""
    if workers == 1 or n <= 1:
        yield None
        return
    with stoppable_pool(min(workers, n), "planner.capacity.recommend") as pool:
        yield pool


def _submit(pool: ProcessPoolExecutor, fn, *args):
    with no_main_reimport():  # a submit may start a worker
        return pool.submit(fn, *args)


def _map(pool, fn, args: list[tuple]):
    """(index, fn(*args[index])) as they finish (in order when run here)."""
    if pool is None:
        for i, a in enumerate(args):
            yield i, fn(*a)
        return
    futures = {_submit(pool, fn, *a): i for i, a in enumerate(args)}
    for fut in as_completed(futures):
        yield futures[fut], fut.result()


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
