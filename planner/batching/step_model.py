"""Batching simulator in the primer's step model (§6): static, continuous and the one-GPU dynamic batcher.

What it models. Time is counted in decode steps. Step s runs over [s, s+1); every running request gets one token
per step, a step costs the same at any batch size, and prefill is ignored. A request admitted at step s that needs
n tokens produces its first token by s+1 and its last by s+n, so it *finishes at step s+n* and its slot is free
to admit another request at that same step. At each step, in this order: finished requests leave, arrivals join
the queue, the scheduler admits, and arrivals beyond the queue limit are rejected. Admission is in arrival order
(ties: input order), within each length bucket.

One stepping model, policies as parameters (`BatchingPolicy`):
- static: admits only into an empty GPU, fires when `max_batch` requests wait or the oldest has waited `max_wait`,
  and holds the batch until its longest request finishes; every member returns at that step.
- continuous: admits into any free slot at every step (max_wait 0) and releases each request when it finishes.
- dynamic (the interview design): a queue with a limit that rejects (backpressure), a batch fired when `max_batch`
  requests wait in a bucket or its oldest has waited `max_wait` (the latency-throughput dial), and length bucketing
  on prompt tokens so the padding of a group (filler up to its longest prompt) stays small.

How it runs. Event-driven: the clock jumps to the next arrival, finish or wait-window expiry, so the cost grows
with the number of requests, not steps. Per-step records are run-length segments (start step, running count).
`run_batching_stepwise` is the plain per-step loop over the same state, kept as the oracle and the benchmark baseline.

Left out: prefill time, step cost growing with batch size, KV-cache memory limits and preemption (see §10).
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass

import numpy as np

from planner.batching.requests import RequestSet
from planner.core.errors import InputError

_NEVER = float("inf")  # "no such event" in next_event
DEFAULT_BUCKET_EDGES = (128, 256, 512, 1024)  # prompt-token bucket boundaries: powers of two, as engines pad


MAX_SLOTS = 100_000  # far above any GPU's batch; bounds the per-slot state a hostile value would allocate


@dataclass(frozen=True)
class BatchingPolicy:
    """How a batcher admits and releases. max_batch None = the number of slots; queue_limit None = unlimited."""

    name: str
    hold_batch: bool  # True: admit only into an empty GPU and return every member when the longest finishes
    max_wait: int = 0  # steps the oldest waiting request waits before a partial batch fires
    max_batch: int | None = None
    queue_limit: int | None = None
    bucket_edges: tuple[int, ...] = ()  # prompt-token boundaries; () = one queue

    def __post_init__(self):
        if self.max_wait < 0:
            raise InputError("max_wait", "must be 0 or more steps")
        if self.max_batch is not None and self.max_batch < 1:
            raise InputError("max_batch", "must be at least 1")
        if self.queue_limit is not None and self.queue_limit < 0:
            raise InputError("queue_limit", "must be 0 or more")


def static_policy(max_wait: int = 0) -> BatchingPolicy:
    return BatchingPolicy("static", hold_batch=True, max_wait=max_wait)


def continuous_policy() -> BatchingPolicy:
    return BatchingPolicy("continuous", hold_batch=False)


def dynamic_policy(
    max_batch: int,
    max_wait: int,
    queue_limit: int | None = None,
    bucket_edges: tuple[int, ...] = (),
    hold_batch: bool = False,
) -> BatchingPolicy:
    return BatchingPolicy("dynamic", hold_batch, max_wait, max_batch, queue_limit, tuple(bucket_edges))


@dataclass(frozen=True)
class BatchingRun:
    """Per-request records (input order; -1 = never admitted), per-step segments and run totals."""

    policy: BatchingPolicy
    slots: int
    requests: RequestSet
    admitted: np.ndarray  # step admitted; first token at admitted + 1
    finish: np.ndarray  # step the request returns (static: when its batch's longest finishes)
    slot: np.ndarray  # slot index it ran in
    rejected: np.ndarray  # bool: turned away by the queue limit
    seg_start: np.ndarray  # per-step records as segments: from seg_start[k] to seg_start[k+1] ...
    seg_running: np.ndarray  # ... seg_running[k] requests generate a token each step
    end_step: int  # last step: when the last request finishes
    num_batches: int  # groups admitted together (one prefill pass each)
    padding_tokens: int  # prompt filler: sum over groups of (longest prompt in group − own prompt)
    padded_prompt_tokens: int  # prompt tokens after padding: sum over groups of longest prompt × group size


class _Batcher:
    """All simulation state for one run; the two drivers below differ only in how the clock advances."""

    def __init__(self, requests: RequestSet, slots: int, policy: BatchingPolicy):
        if not 1 <= slots <= MAX_SLOTS:
            raise InputError("slots", f"must be from 1 to {MAX_SLOTS:,}")
        self.req, self.slots, self.policy = requests, slots, policy
        self.max_batch = min(policy.max_batch or slots, slots)
        n = len(requests)
        self.order = sorted(range(n), key=requests.arrival.__getitem__)  # stable: ties keep input order
        self.next_arrival = 0  # index into order
        self.next_arrival_step = requests.arrival[self.order[0]] if n else _NEVER
        self.bucket_of = [bisect_right(policy.bucket_edges, p) for p in requests.prompt_tokens]
        self.queues = [deque() for _ in range(len(policy.bucket_edges) + 1)]
        self.num_waiting = 0
        self.free_slots = list(range(slots - 1, -1, -1))  # a stack: slot 0 is handed out first
        self.ends: list[tuple[int, int]] = []  # heap of (step its last token is done, request)
        self.batch: list[int] = []  # members of the held batch (hold_batch only)
        self.admitted, self.finish, self.slot = [-1] * n, [-1] * n, [-1] * n
        self.rejected = [False] * n
        self.seg_start, self.seg_running = [0], [0]  # per-step records: run-length segments
        self.num_batches = self.padding = self.padded = 0

    def step(self, t: int) -> None:
        """Everything that happens at step t, in order: finish, arrive, admit, reject; then record."""
        first_new = self.next_arrival
        if self.ends and self.ends[0][0] <= t:
            self.finish_due(t)
        if self.next_arrival_step <= t:
            self.arrive(t)
        if self.num_waiting:
            self.admit(t)
            if self.policy.queue_limit is not None and self.num_waiting > self.policy.queue_limit:
                self.reject_newest(first_new)
        running = len(self.ends)
        if self.seg_running[-1] != running:
            self.seg_start.append(t)
            self.seg_running.append(running)

    def finish_due(self, t: int) -> None:
        ends, hold = self.ends, self.policy.hold_batch
        while ends and ends[0][0] <= t:
            r = heapq.heappop(ends)[1]
            if not hold:
                self.finish[r] = t
                self.free_slots.append(self.slot[r])
            elif not ends:  # the batch's longest is done: everyone returns now and every slot frees
                for m in self.batch:
                    self.finish[m] = t
                self.batch = []
                self.free_slots = list(range(self.slots - 1, -1, -1))

    def arrive(self, t: int) -> None:
        order, arrival, i = self.order, self.req.arrival, self.next_arrival
        while i < len(order) and arrival[order[i]] <= t:
            r = order[i]
            self.queues[self.bucket_of[r]].append(r)
            i += 1
        self.num_waiting += i - self.next_arrival
        self.next_arrival = i
        self.next_arrival_step = arrival[order[i]] if i < len(order) else _NEVER

    def admit(self, t: int) -> None:
        """Fire groups while slots are free and a bucket is full enough or its oldest has waited max_wait."""
        if not self.free_slots or (self.policy.hold_batch and self.ends):
            return
        arrival, max_wait = self.req.arrival, self.policy.max_wait
        queues = self.queues
        if len(queues) > 1:  # oldest head first (ties: input order)
            queues = sorted((q for q in queues if q), key=lambda q: (arrival[q[0]], q[0]))
        for q in queues:
            while q and self.free_slots and (len(q) >= self.max_batch or t - arrival[q[0]] >= max_wait):
                self.fire(q, min(len(q), len(self.free_slots), self.max_batch), t)
                if self.policy.hold_batch:
                    return  # one batch at a time on the GPU

    def fire(self, q: deque, size: int, t: int) -> None:
        prompts, outputs = self.req.prompt_tokens, self.req.output_tokens
        group = [q.popleft() for _ in range(size)] if size > 1 else [q.popleft()]
        longest_prompt = max([prompts[r] for r in group])
        admitted, slot, free, ends = self.admitted, self.slot, self.free_slots, self.ends
        for r in group:
            admitted[r] = t
            slot[r] = free.pop()
            heapq.heappush(ends, (t + outputs[r], r))
        self.padding += longest_prompt * size - sum([prompts[r] for r in group])
        self.padded += longest_prompt * size
        self.num_waiting -= size
        self.num_batches += 1
        if self.policy.hold_batch:
            self.batch = group

    def reject_newest(self, first_new: int) -> None:
        """Backpressure: turn away this step's newest waiting arrivals until the queue fits its limit."""
        for i in range(self.next_arrival - 1, first_new - 1, -1):
            if self.num_waiting <= self.policy.queue_limit:
                return
            r = self.order[i]
            if self.admitted[r] < 0:  # still waiting, so it is the tail of its bucket's queue
                self.queues[self.bucket_of[r]].pop()
                self.rejected[r] = True
                self.num_waiting -= 1

    def next_event(self, t: int) -> int | None:
        """The next step at which anything can change: a finish, an arrival, or a wait window expiring."""
        nxt = self.next_arrival_step
        if self.ends and self.ends[0][0] < nxt:
            nxt = self.ends[0][0]
        if self.num_waiting and self.free_slots and not (self.policy.hold_batch and self.ends):
            max_wait, arrival = self.policy.max_wait, self.req.arrival
            for q in self.queues:
                if q and t < arrival[q[0]] + max_wait < nxt:
                    nxt = arrival[q[0]] + max_wait
        return None if nxt == _NEVER else nxt

    def result(self) -> BatchingRun:
        starts, running = np.array(self.seg_start, dtype=np.int64), np.array(self.seg_running, dtype=np.int64)
        keep = np.append(starts[1:] > starts[:-1], True)  # drop the empty opening segment when step 0 is busy
        return BatchingRun(
            self.policy,
            self.slots,
            self.req,
            np.array(self.admitted, dtype=np.int64),
            np.array(self.finish, dtype=np.int64),
            np.array(self.slot, dtype=np.int64),
            np.array(self.rejected, dtype=bool),
            starts[keep],
            running[keep],
            max(max(self.finish, default=0), 0),
            self.num_batches,
            self.padding,
            self.padded,
        )


def run_batching(requests: RequestSet, slots: int, policy: BatchingPolicy) -> BatchingRun:
    """Event-driven run: jump from event to event (cost ~ number of requests, not number of steps)."""
    sim = _Batcher(requests, slots, policy)
    t = sim.next_event(-1) if len(requests) else None
    while t is not None:
        sim.step(t)
        t = sim.next_event(t)
    return sim.result()


def run_batching_stepwise(requests: RequestSet, slots: int, policy: BatchingPolicy) -> tuple[BatchingRun, list[int]]:
    """The plain loop: visit every step and keep one running-count record per step (oracle and baseline)."""
    sim = _Batcher(requests, slots, policy)
    running_per_step: list[int] = []
    t = 0
    while sim.next_arrival < len(sim.order) or sim.num_waiting or sim.ends:
        sim.step(t)
        running_per_step.append(len(sim.ends))
        t += 1
    return sim.result(), running_per_step


def run_pair(requests: RequestSet, slots: int, max_wait: int) -> dict[str, BatchingRun]:
    """Static (with max_wait) and continuous on the same requests and slots."""
    return {
        "static": run_batching(requests, slots, static_policy(max_wait)),
        "continuous": run_batching(requests, slots, continuous_policy()),
    }


def bucketing_pair(
    requests: RequestSet, slots: int, policy: BatchingPolicy, bucket_edges: tuple[int, ...] = DEFAULT_BUCKET_EDGES
) -> dict[str, BatchingRun]:
    """The dynamic batcher with length buckets and with one queue, to show the padding bucketing saves."""
    with_buckets = BatchingPolicy(
        policy.name, policy.hold_batch, policy.max_wait, policy.max_batch, policy.queue_limit, tuple(bucket_edges)
    )
    one_queue = BatchingPolicy(
        policy.name, policy.hold_batch, policy.max_wait, policy.max_batch, policy.queue_limit, ()
    )
    return {
        "bucketed": run_batching(requests, slots, with_buckets),
        "one queue": run_batching(requests, slots, one_queue),
    }
