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

from planner.capacity.candidates import Task, candidates, evaluate
from planner.capacity.cost import DEFAULT_HEADROOM
from planner.capacity.cost_bounds import Bound, _pruned_row, bound, price_bound
from planner.capacity.ranking import mark_pareto, rank
from planner.capacity.ray_cluster import ray_session
from planner.capacity.replicas import DEFAULT_REL_TOL
from planner.capacity.worker_pool import map_in_pool, no_main_reimport, stoppable_pool
from planner.core.errors import InputError
from planner.core.scenario import Scenario
from planner.core.workload import SLO, TrafficSpec
from planner.memory.plan import TP_DEGREES

Progress = Callable[[int, int], None]


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
        raise InputError(  # shorter requests cannot help weights that alone fill the GPUs (issue 56 #5)
            "gpus",
            f"no GPU × precision × TP fits {s.model}: try GPUs with more memory, lower-precision weights or more "
            "GPUs per replica (a larger TP, or PP over nodes); a lower max_model_len helps only when the weights fit",
        )
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
