"""A fleet: N replicas of one deployment behind a router, advanced together in simulated time.

Design note. Each replica is the single-replica simulator (planner/sim/simulator.py Replica) that can be
advanced to a time t and handed a request. The fleet keeps one queue of requests still to route (open-loop
arrivals, and the next turn of a closed-loop user or session, which exists only once the previous reply is
out). At each one, every replica the router looks at is first advanced through the steps that start before
the arrival; the router then picks a replica from what it sees (planner/sim/router.py) and the request joins
that replica's queue at its next step boundary, exactly as in a single replica. Hence a one-replica fleet is
`run_serving` step for step (a test checks it).

What the router sees at an arrival: outstanding requests counted by finish times up to the arrival (exact), and
the KV use and prefix cache at the end of each replica's step in progress (a step, or with closed-loop traffic
a run of pure-decode steps: the state may run a few tens of ms ahead; inside a decode run no request is admitted
and the prefix cache only changes at its last step).
Round robin over open-loop traffic looks at nothing, so a replica is advanced only when a request is sent to it.

Not modelled: the router's own latency and network time, a replica failing or scaling, routing to a mix of
deployments, KV transfer between replicas.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass

import numpy as np

from planner.core.errors import InputError
from planner.latency.perf_model import StepCost
from planner.sim.config import SchedulerConfig, scheduler_config
from planner.sim.records import RequestRecords, SimResult, StepRecorder, request_records
from planner.sim.router import PrefixAwareWeights, ReplicaView, Router
from planner.sim.simulator import Replica
from planner.traffic.workload import Workload

MAX_REPLICAS = 1024


class FleetReplica(Replica):
    """A Replica that the fleet advances to a time and sends requests to; its finishes go back to the fleet."""

    def __init__(self, fleet: Fleet, wl: Workload, cfg: SchedulerConfig, cost, seed: int, draft_cost=None):
        super().__init__(wl, cfg, cost, seed, draft_cost)
        self.fleet = fleet
        self.pending = []  # only what the router sends
        self.next_of = [-1] * wl.num_requests  # the fleet routes a user's next request
        self.done_s: list[float] = []  # finish (or rejection) times the router has not counted yet
        self.num_sent = self.num_done = 0

    def submit(self, t: float, i: int) -> None:
        self.out.arrival_s[i] = t
        heapq.heappush(self.pending, (t, i))
        self.num_sent += 1

    def _send_next(self, i: int, t: float) -> None:
        heapq.heappush(self.done_s, t)
        self.fleet.request_done(i, t)

    def outstanding_at(self, t: float) -> int:
        """Requests sent here and not finished by time t (t never decreases between calls)."""
        while self.done_s and self.done_s[0] <= t:
            heapq.heappop(self.done_s)
            self.num_done += 1
        return self.num_sent - self.num_done

    def has_work_before(self, h: float) -> bool:
        if self.now >= h:
            return False
        return bool(self.running or self.waiting or (self.pending and self.pending[0][0] < h))

    def advance(self, t: float, max_iterations: float = math.inf) -> None:
        """Run the simulator's loop (Replica.run) through every iteration that starts before t, or before the
        fleet's next request to route if that is earlier."""
        done = 0
        while done < max_iterations:
            h = min(t, self.fleet.next_event_s())
            if self.now >= h:
                break
            self.horizon_s = h
            self._accept_arrivals()
            if not self.running and not self.waiting:
                if not self.pending or self.pending[0][0] >= h:
                    break
                self.now = max(self.now, self.pending[0][0])
                self.sglang_ratio.reset()
            elif not (self._can_fast_forward() and self._fast_forward()):
                self._step()
            done += 1
        self.horizon_s = math.inf

    def result(self, idx: np.ndarray) -> SimResult:
        """This replica's run over the requests it was sent (rows `idx`)."""
        return SimResult(
            self.cfg,
            self.seed,
            self.wl,
            take_records(self.out, idx),
            self.recorder.finish(),
            self.now,
            self.pool.peak_active,
            self.pool.num_evicted_blocks,
            0.0,
        )


def take_records(r: RequestRecords, idx: np.ndarray) -> RequestRecords:
    return RequestRecords(*(getattr(r, f)[idx] for f in r.__dataclass_fields__))


@dataclass(frozen=True)
class FleetResult:
    router: str
    replicas: tuple[SimResult, ...]  # replica k's run over the requests sent to it
    assignment: np.ndarray  # per request: the replica it was sent to
    fleet: SimResult  # every request's row from its replica; no step records (they are per replica)
    mean_in_system: float  # time average of requests running or waiting, summed over the replicas


class Fleet:
    """All fleet state in one object: the replicas, the router and the requests still to route."""

    def __init__(self, wl, cfg, cost, num_replicas, router, seed, draft_cost=None, weights=None):
        self.wl, self.cfg, self.seed = wl, cfg, seed
        self.router = Router(router, num_replicas, weights)
        self.replicas = [FleetReplica(self, wl, cfg, cost, seed + k, draft_cost) for k in range(num_replicas)]
        self.assignment = np.full(wl.num_requests, -1, dtype=np.int64)
        self.closed_loop = wl.is_closed_loop
        self.lazy = not self.router.needs_state and not self.closed_loop
        self.next_of = [-1] * wl.num_requests
        if self.closed_loop:
            last: dict[int, int] = {}
            for i, u in enumerate(wl.user_id.tolist()):
                if u in last:
                    self.next_of[last[u]] = i
                last[u] = i
        self.events = [(t, i) for i, t in enumerate(wl.arrival_s.tolist()) if not math.isnan(t)]
        heapq.heapify(self.events)
        self.prefix = self.replicas[0].prefix_ids  # None unless the prefix cache can see prefix ids

    def next_event_s(self) -> float:
        return self.events[0][0] if self.events else math.inf

    def request_done(self, i: int, t: float) -> None:
        """A reply is out (or a request rejected): the user thinks, then sends their next request."""
        j = self.next_of[i]
        if j >= 0:
            heapq.heappush(self.events, (t + float(self.wl.think_s[j]), j))

    def run(self) -> None:
        while True:
            t = self.next_event_s()
            self._advance_all(t)
            if not self.events:
                return
            t, i = heapq.heappop(self.events)
            self._route(t, i)

    def _advance_all(self, t: float) -> None:
        if self.lazy and t < math.inf:
            return  # round robin: each replica is advanced when it is sent a request
        if not self.closed_loop:
            for r in self.replicas:
                r.advance(t)
            return
        # the earliest replica steps first: a finish may add a request to route before t. A heap of (now, k):
        # only the replica just stepped changes, and the horizon h only falls as finishes add requests to route.
        h = min(t, self.next_event_s())
        heap = [(r.now, k) for k, r in enumerate(self.replicas) if r.has_work_before(h)]
        heapq.heapify(heap)
        while heap:
            _, k = heapq.heappop(heap)
            r = self.replicas[k]
            h = min(t, self.next_event_s())
            if not r.has_work_before(h):
                continue
            r.advance(h, max_iterations=1)
            if r.has_work_before(min(t, self.next_event_s())):
                heapq.heappush(heap, (r.now, k))

    def _route(self, t: float, i: int) -> None:
        views = [self._view(r, i, t) for r in self.replicas] if self.router.needs_state else None
        k = self.router.choose(views)
        if self.lazy:
            self.replicas[k].advance(t)
        self.replicas[k].submit(t, i)
        self.assignment[i] = k

    def _view(self, r: FleetReplica, i: int, t: float) -> ReplicaView:
        outstanding = r.outstanding_at(t)
        cached = 0
        if self.router.needs_cache and self.prefix is not None:
            ids = self.prefix[i]
            limit = min(len(ids), (int(self.wl.prompt_tokens[i]) - 1) // self.wl.prefix_block_tokens)
            cached = r.pool.num_cached_prefix(ids, limit) if limit > 0 else 0
        return ReplicaView(
            outstanding, max(0, outstanding - len(r.running)), r.pool.num_active / r.pool.num_blocks, cached
        )

    def result(self, wall_s: float = 0.0) -> FleetResult:
        merged = request_records(self.wl)
        runs = []
        for k, r in enumerate(self.replicas):
            idx = np.flatnonzero(self.assignment == k)
            runs.append(r.result(idx))
            for f in merged.__dataclass_fields__:
                getattr(merged, f)[idx] = getattr(r.out, f)[idx]
        end_s = max(r.now for r in self.replicas)
        fleet = SimResult(
            self.cfg,
            self.seed,
            self.wl,
            merged,
            StepRecorder(1).finish(),
            end_s,
            max(r.peak_kv_blocks for r in runs),
            sum(r.num_evicted_blocks for r in runs),
            wall_s,
        )
        in_system = sum(float(np.dot(s.steps.num_running + s.steps.num_waiting, s.steps.duration_s)) for s in runs)
        return FleetResult(
            self.router.policy, tuple(runs), self.assignment, fleet, in_system / end_s if end_s > 0 else 0.0
        )


def simulate_fleet(
    workload: Workload,
    config: SchedulerConfig | dict,
    cost: StepCost,
    num_replicas: int,
    router: str = "round-robin",
    seed: int = 0,
    draft_cost: StepCost | None = None,
    weights: PrefixAwareWeights | None = None,
) -> FleetResult:
    """Route every request of `workload` to one of `num_replicas` identical replicas and run them to completion;
    a pure function of its arguments (replica k draws its speculative-decoding acceptances with seed + k)."""
    if not (isinstance(num_replicas, (int, np.integer)) and 1 <= num_replicas <= MAX_REPLICAS):
        raise InputError("replicas", f"must be a whole number from 1 to {MAX_REPLICAS}, got {num_replicas!r}")
    fleet = Fleet(workload, scheduler_config(config), cost, int(num_replicas), router, seed, draft_cost, weights)
    wall0 = time.perf_counter()
    fleet.run()
    return fleet.result(time.perf_counter() - wall0)
