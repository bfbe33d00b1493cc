"""A fleet run split over Ray (`fleet --ray ADDRESS|local|auto`) that returns exactly the local answer.

Design note. The fleet simulator (planner/sim/fleet.py) advances every replica together because a router may look
at the replicas when it routes. The work splits into independent replicas only when every routing decision is
known before any replica runs:

- round robin over open-loop traffic (Poisson or gamma arrivals, a trace): request k in arrival order goes to
  replica k mod N, and the arrival times are fixed. A "router pass" computes the assignment (the fleet's own
  order: arrival time, then request index), then each replica simulates its share as a lone replica
  (planner/sim/simulator.py simulate, seed + k) in its own Ray task. A fleet replica given its arrivals is a lone
  replica step for step (tests/test_fleet.py), so the merged result is the local one, field for field
  (tests/test_fleet_ray.py compares them on a local Ray).
- everything else is refused with one line naming why: least-outstanding, least-kv and prefix-aware read the
  replicas' state (outstanding requests, KV use, cached prefixes) at each arrival; and on closed-loop traffic
  (users, sessions) a request exists only once the previous reply is out, so even round robin's order depends on
  when the replicas finish. A split that guesses the order and repairs it (optimistic simulation) is left out.
"""

from __future__ import annotations

import os

import numpy as np

from planner.capacity.ray_cluster import ray_session
from planner.core.errors import InputError
from planner.sim.fleet import MAX_REPLICAS, FleetResult
from planner.sim.records import SimResult, StepRecorder, request_records
from planner.sim.serving import Replica
from planner.sim.simulator import simulate
from planner.traffic.workload import Workload


def router_pass(workload: Workload, num_replicas: int, router: str) -> np.ndarray:
    """Every request's replica when the routing does not depend on replica state (module note), else InputError
    (field ray_address: the CLI's --ray)."""
    if router != "round-robin":
        raise InputError(
            "ray_address",
            f"the {router} router decides from the replicas' state at each arrival, so the fleet cannot be split "
            "into replicas run apart with the same answer; only round robin over open-loop traffic splits "
            "(run without --ray)",
        )
    if workload.is_closed_loop:
        raise InputError(
            "ray_address",
            "closed-loop traffic (users or sessions) sends a request only after the previous reply, so even round "
            "robin's order depends on when the replicas finish; only open-loop traffic splits (run without --ray)",
        )
    arrival = workload.arrival_s
    routed = np.flatnonzero(~np.isnan(arrival))
    order = routed[np.lexsort((routed, arrival[routed]))]  # the fleet's event heap pops (arrival, index)
    assignment = np.full(workload.num_requests, -1, dtype=np.int64)
    assignment[order] = np.arange(len(order)) % num_replicas
    return assignment


def merge(workload: Workload, assignment: np.ndarray, runs: list[SimResult], router: str, seed: int) -> FleetResult:
    """The fleet result of replicas run apart: the same fields simulate_fleet fills (planner/sim/fleet.py
    Fleet.result), each request's row from the replica it was sent to."""
    merged = request_records(workload)
    replicas = []
    for k, run in enumerate(runs):
        idx = np.flatnonzero(assignment == k)
        for name in merged.__dataclass_fields__:
            getattr(merged, name)[idx] = getattr(run.requests, name)
        replicas.append(
            SimResult(
                run.config, run.seed, workload, run.requests, run.steps, run.end_s, run.peak_kv_blocks,
                run.num_evicted_blocks, 0.0,
            )
        )  # fmt: skip
    end_s = max(r.end_s for r in replicas)
    fleet = SimResult(
        runs[0].config,
        seed,
        workload,
        merged,
        StepRecorder(1).finish(),
        end_s,
        max(r.peak_kv_blocks for r in replicas),
        sum(r.num_evicted_blocks for r in replicas),
        sum(r.wall_s for r in runs),
    )
    in_system = sum(float(np.dot(s.steps.num_running + s.steps.num_waiting, s.steps.duration_s)) for s in replicas)
    return FleetResult(router, tuple(replicas), assignment, fleet, in_system / end_s if end_s > 0 else 0.0)


def run_fleet_apart(
    replica: Replica, workload: Workload, num_replicas: int, router: str, address: str | None = None
) -> FleetResult:
    """run_fleet's answer with each replica simulated apart (module note): in its own Ray task at `address`
    ("local", "auto", HOST:PORT or ray://HOST:PORT, joined or started as planner/capacity/ray_cluster.py does; a
    session the caller initialised is used as it is), or one after the other here when `address` is None."""
    if not (isinstance(num_replicas, (int, np.integer)) and 1 <= num_replicas <= MAX_REPLICAS):
        raise InputError("replicas", f"must be a whole number from 1 to {MAX_REPLICAS}, got {num_replicas!r}")
    assignment = router_pass(workload, int(num_replicas), router)
    cfg, cost, draft, seed = replica.scheduler_config, replica.step_cost, replica.draft_cost, replica.settings.seed
    shares = [workload.take(np.flatnonzero(assignment == k)) for k in range(int(num_replicas))]
    if address is None:
        runs = [simulate(share, cfg, cost, seed + k, draft) for k, share in enumerate(shares)]
    else:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        with ray_session(address, pythonpath=root) as ray:  # workers import planner from this checkout
            remote = ray.remote(simulate)
            refs = [remote.remote(share, cfg, cost, seed + k, draft) for k, share in enumerate(shares)]
            runs = ray.get(refs)  # in replica order whatever finishes first
    return merge(workload, assignment, runs, router, seed)
