"""A fleet: N replicas of one deployment behind a router, advanced together in simulated time.

Design note. Each replica is the single-replica simulator (planner/sim/simulator.py Replica) driven one action
at a time: a scheduler step, or a run of pure-decode steps planned up to its next known arrival. The fleet is
event-driven: one heap of requests still to route (open-loop arrivals, and the next turn of a closed-loop user
or session, which exists only once the previous reply is out) and one heap of the times at which each replica
acts next; whichever is earlier goes first, a request before a replica acting at the same instant (a request
arriving at a step boundary joins that step, as in one replica). An idle replica is in neither heap until it is
sent a request. A decode run is planned past the requests not yet routed and applied when it ends; a request
sent to the replica during the run cuts it after the last step that starts before the arrival (the steps are
the same numbers as a run planned with that arrival in view: planner/sim/lockstep.py computes them in order),
and joins the queue at the next step boundary. Hence a one-replica fleet is `run_serving` step for step (a test
checks it), and a replica's runs are cut only by its own arrivals, so the work grows with the requests, not
with requests x replicas.

The replicas share the per-request tables (Replica `share`): a request lives on one replica, so one table of
each per-request quantity serves the fleet and memory is O(requests + steps), not O(requests x replicas).

What the router sees at an arrival at t: outstanding requests counted by finish times up to t (exact: every
replica has acted up to t), how many of those are not in the running batch, the KV use after the steps that
start before t (exact, a planned run's blocks counted to t) and the prefix cache as of the replica's last
applied step (blocks a planned run will allocate may evict cached prefixes a few steps later than the router
sees it). Round robin looks at nothing.

Not modelled: the router's own latency and network time, a replica failing or scaling, routing to a mix of
deployments, KV transfer between replicas.
"""

from __future__ import annotations

import bisect
import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from planner.core.errors import InputError
from planner.latency.perf_model import StepCost
from planner.sim.config import SchedulerConfig, scheduler_config
from planner.sim.records import RequestRecords, SimResult, StepRecorder
from planner.sim.router import PrefixAwareWeights, ReplicaView, Router
from planner.sim.simulator import Replica
from planner.traffic.workload import Workload

MAX_REPLICAS = 1024
PROGRESS_EVERY = 200  # requests routed between two progress calls (~0.1 s of a 64-replica run)


class FleetReplica(Replica):
    """A Replica the fleet drives one action at a time and sends requests to; its finishes go back to the fleet."""

    def __init__(self, fleet: Fleet, k: int, template: Replica, seed: int):
        super().__init__(template.wl, template.cfg, template.cost, seed, template.draft_cost, share=template)
        self.fleet, self.k = fleet, k
        self.done_s: list[float] = []  # finish (or rejection) times the router has not counted yet
        self.num_sent = self.num_done = 0
        self.run_plan: tuple[list, list, list] | None = None  # (starts, durations, cumulative blocks), not applied
        self.wake_version = 0  # the fleet's heap holds (time, k, version); older versions are stale

    def submit(self, t: float, i: int) -> None:
        self.out.arrival_s[i] = t
        self._cut_run(t)
        heapq.heappush(self.pending, (t, i))
        self.num_sent += 1
        self._wake_at(max(self.now, t))

    def _wake_at(self, t: float) -> None:
        self.wake_version += 1
        heapq.heappush(self.fleet.wakes, (t, self.k, self.wake_version))

    def _cut_run(self, t: float) -> None:
        """A request arrives at t: apply the planned run's steps that start before t and drop the rest."""
        if self.run_plan is None:
            return
        starts, dts, cum = self.run_plan
        self.run_plan = None
        m = bisect.bisect_left(starts, t)
        if m:
            self._commit_run(starts[:m], dts[:m], cum[:m])

    def act(self) -> None:
        """One iteration of Replica.run's loop, with a run of decode steps planned now and applied when it ends."""
        if self.run_plan is not None:
            run, self.run_plan = self.run_plan, None
            self._commit_run(*run)
            self._wake_at(self.now)
            return
        self._accept_arrivals()
        if not self.running and not self.waiting:
            if self.pending:
                self.now = max(self.now, self.pending[0][0])
                self.policy.on_idle()
                self._wake_at(self.now)
            return  # idle: the next request sent here wakes it
        if self._can_fast_forward():
            run = self._plan_run()
            if run[1]:
                self.run_plan = run
                self._wake_at(run[0][-1] + run[1][-1])
                return
        self._step()
        self._wake_at(self.now)

    def _send_next(self, i: int, t: float) -> None:
        heapq.heappush(self.done_s, t)
        self.fleet.request_done(i, t)

    def outstanding_at(self, t: float) -> int:
        """Requests sent here and not finished by time t (t never decreases between calls)."""
        while self.done_s and self.done_s[0] <= t:
            heapq.heappop(self.done_s)
            self.num_done += 1
        return self.num_sent - self.num_done

    def kv_blocks_at(self, t: float) -> int:
        """Blocks held by running requests after the steps that start before t (a planned run's included)."""
        held = self.pool.num_active
        if self.run_plan is not None:
            m = bisect.bisect_left(self.run_plan[0], t)
            held += self.run_plan[2][m - 1] if m else 0
        return held

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
            self.tiers.stats if self.tiers is not None else None,
        )


def merged_offload(stats: list):
    """The fleet's offload tiers' figures: the replicas' summed (None when offload is off)."""
    if not stats or stats[0] is None:
        return None
    total = stats[0]
    for other in stats[1:]:
        total = total.merged(other)
    return total


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
    """All fleet state in one object: the replicas, the router, the requests still to route, the replicas' wakes."""

    def __init__(self, wl, cfg, cost, num_replicas, router, seed, draft_cost=None, weights=None):
        self.wl, self.cfg, self.seed = wl, cfg, seed
        self.router = Router(router, num_replicas, weights)
        template = Replica(wl, cfg, cost, seed, draft_cost)  # builds the per-request tables the replicas share
        self.wakes: list[tuple[float, int, int]] = []  # (time, replica, version): when each replica acts next
        self.replicas = [FleetReplica(self, k, template, seed + k) for k in range(num_replicas)]
        self.out = template.out
        self.assignment = np.full(wl.num_requests, -1, dtype=np.int64)
        self.next_of = [-1] * wl.num_requests
        if wl.is_closed_loop:
            last: dict[int, int] = {}
            for i, u in enumerate(wl.user_id.tolist()):
                if u in last:
                    self.next_of[last[u]] = i
                last[u] = i
        self.events = template.pending  # (arrival, request): the open-loop arrivals and first turns, a heap
        self.prefix = template.prefix_ids  # None unless the prefix cache can see prefix ids

    def request_done(self, i: int, t: float) -> None:
        """A reply is out (or a request rejected): the user thinks, then sends their next request."""
        j = self.next_of[i]
        if j >= 0:
            heapq.heappush(self.events, (t + float(self.wl.think_s[j]), j))

    def run(self, progress: Callable[[int], None] | None = None) -> None:
        """Advance to the end; `progress(routed)` every PROGRESS_EVERY requests routed (a caller's stop point)."""
        events, wakes, replicas = self.events, self.wakes, self.replicas
        routed = 0
        while True:
            t_event = events[0][0] if events else math.inf
            if wakes and wakes[0][0] < t_event:  # a request at the same instant goes first
                _, k, version = heapq.heappop(wakes)
                r = replicas[k]
                if version == r.wake_version:
                    r.act()
            elif events:
                t, i = heapq.heappop(events)
                self._route(t, i)
                routed += 1
                if progress is not None and routed % PROGRESS_EVERY == 0:
                    progress(routed)
            else:
                return

    def _route(self, t: float, i: int) -> None:
        views = self._views(i, t) if self.router.needs_state else None
        k = self.router.choose(views)
        self.replicas[k].submit(t, i)
        self.assignment[i] = k

    def _views(self, i: int, t: float) -> list[ReplicaView]:
        """Every replica as the router sees it when request i arrives at t (module note)."""
        ids, limit = (), 0
        if self.router.needs_cache and self.prefix is not None:
            ids = self.prefix[i]
            limit = min(len(ids), (int(self.wl.prompt_tokens[i]) - 1) // self.wl.prefix_block_tokens)
        views = []
        for r in self.replicas:
            outstanding = r.outstanding_at(t)
            cached = r.pool.num_cached_prefix(ids, limit) if limit > 0 else 0
            kv_use = r.kv_blocks_at(t) / r.pool.num_blocks
            views.append(ReplicaView(outstanding, max(0, outstanding - len(r.running)), kv_use, cached))
        return views

    def result(self, wall_s: float = 0.0) -> FleetResult:
        merged = self.out  # the replicas' shared request table: each row written by the replica it was sent to
        order = np.argsort(self.assignment, kind="stable")
        bounds = np.searchsorted(self.assignment[order], np.arange(len(self.replicas) + 1))
        runs = [r.result(order[bounds[k] : bounds[k + 1]]) for k, r in enumerate(self.replicas)]
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
            merged_offload([r.offload for r in runs]),
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
    progress: Callable[[int], None] | None = None,
) -> FleetResult:
    """Route every request of `workload` to one of `num_replicas` identical replicas and run them to completion;
    a pure function of its arguments (replica k draws its speculative-decoding acceptances with seed + k).
    `progress(requests routed)` is called every PROGRESS_EVERY requests (the app's progress bar and Stop)."""
    if not (isinstance(num_replicas, (int, np.integer)) and 1 <= num_replicas <= MAX_REPLICAS):
        raise InputError("replicas", f"must be a whole number from 1 to {MAX_REPLICAS}, got {num_replicas!r}")
    for name, c in (("cost", cost), ("draft_cost", draft_cost)):
        if c is not None and not hasattr(c, "step_time_s"):
            raise InputError(name, "needs a step_time_s(new_tokens, num_seqs, kv_read_tokens, attn_pairs) method")
    fleet = Fleet(workload, scheduler_config(config), cost, int(num_replicas), router, seed, draft_cost, weights)
    wall0 = time.perf_counter()
    fleet.run(progress)
    return fleet.result(time.perf_counter() - wall0)
