"""The simulator's fast path: decoding requests advance in lock step.

Every decoding request gains one token per step, so the decode batch is kept as scalars (count, sum of base
contexts, how many need a new KV block at each step residue mod block_size) plus heaps of finish steps and of
the steps where a request reaches its sliding-window block cap (after which it needs no new block: vLLM frees the
blocks that left the window). A step then costs O(1) in the batch size, and a run of pure-decode steps between
events (an arrival, a finish, a cap, the pool running out of blocks) is planned in one vectorised call by the
pure function `plan_decode_run`. The simulator (planner/sim/simulator.py) owns one DecodeBatch.
"""

from __future__ import annotations

import heapq
import math
from itertools import cycle, islice

import numpy as np

MAX_FAST_FORWARD_STEPS = 4096
SHORT_RUN_STEPS = 64  # runs planned step by step in Python before numpy takes over (plan_decode_run)
_ARANGE = np.arange(MAX_FAST_FORWARD_STEPS)


class DecodeBatch:
    """Requests decoding one token per step. For a member i at step S (before that step's token):
    computed tokens = base_computed[i] + S and generated tokens = base_generated[i] + S."""

    PER_REQUEST = ("base_computed", "base_generated", "finish_step", "cap_step", "member", "capped")

    def __init__(self, num_requests: int, block_size: int, max_blocks_per_request: int | None, share=None):
        """`share`: another DecodeBatch whose per-request lists this one uses (a fleet's replicas: each request
        is a member of one batch at most, so they never collide)."""
        self.block_size = block_size
        self.max_blocks = max_blocks_per_request
        self.count = 0
        self.sum_base_computed = 0
        self.due_by_residue = [0] * block_size  # members needing a new block at steps S = residue (mod bs)
        if share is not None:
            for name in self.PER_REQUEST:
                setattr(self, name, getattr(share, name))
        else:
            self.base_computed = [0] * num_requests
            self.base_generated = [0] * num_requests
            self.finish_step = [-1] * num_requests
            self.cap_step = [-1] * num_requests  # the step from which the member needs no new block
            self.member = [False] * num_requests
            self.capped = [False] * num_requests
        self.finish_heap: list[tuple[int, int]] = []
        self.cap_heap: list[tuple[int, int]] = []

    def join(self, i: int, computed: int, generated: int, output: int, next_step: int) -> None:
        base_c, base_g = computed - next_step, generated - next_step
        self.base_computed[i], self.base_generated[i] = base_c, base_g
        self.member[i] = True
        self.count += 1
        self.sum_base_computed += base_c
        self.finish_step[i] = output - base_g - 1  # the step that produces the last token
        heapq.heappush(self.finish_heap, (self.finish_step[i], i))
        self.capped[i] = False
        self.cap_step[i] = -1
        if self.max_blocks is not None:
            cap = self.max_blocks * self.block_size - base_c  # step whose slot would open block max_blocks + 1
            if cap <= next_step:
                self.capped[i] = True
                return
            self.cap_step[i] = cap
            heapq.heappush(self.cap_heap, (cap, i))
        self.due_by_residue[-base_c % self.block_size] += 1  # new block at steps S with (base_c + S) % bs == 0

    def leave(self, i: int, step: int) -> tuple[int, int]:
        """Remove member i; returns its (computed, generated) tokens before `step`'s token."""
        self.member[i] = False
        self.count -= 1
        base_c = self.base_computed[i]
        self.sum_base_computed -= base_c
        if not self.capped[i]:
            self.due_by_residue[-base_c % self.block_size] -= 1
        return base_c + step, self.base_generated[i] + step

    def apply_caps(self, step: int) -> None:
        """Members whose next slot would exceed their block cap stop needing blocks."""
        heap = self.cap_heap
        while heap and heap[0][0] <= step:
            cap, i = heapq.heappop(heap)
            if self.member[i] and not self.capped[i] and self.cap_step[i] == cap:
                self.capped[i] = True
                self.due_by_residue[-self.base_computed[i] % self.block_size] -= 1

    def blocks_due(self, step: int) -> int:
        return self.due_by_residue[step % self.block_size]

    def sum_context(self, step: int) -> int:
        """Sum of contexts after `step`'s token (the KV read by that step's attention)."""
        return self.sum_base_computed + self.count * (step + 1)

    def _next_valid(self, heap, field) -> int:
        while heap and not (self.member[heap[0][1]] and field[heap[0][1]] == heap[0][0]):
            heapq.heappop(heap)  # stale: left the batch since
        return heap[0][0] if heap else math.inf

    def next_finish_step(self) -> int:
        return self._next_valid(self.finish_heap, self.finish_step)

    def next_cap_step(self) -> float:
        heap = self.cap_heap
        while heap and not (
            self.member[heap[0][1]] and not self.capped[heap[0][1]] and self.cap_step[heap[0][1]] == heap[0][0]
        ):
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    def pop_finished(self, step: int) -> list[tuple[int, int]]:
        """Members whose last token was produced at or before `step`: (request, tokens in its KV cache)."""
        done, heap = [], self.finish_heap
        while heap and heap[0][0] <= step:
            fin, i = heapq.heappop(heap)
            if self.member[i] and self.finish_step[i] == fin:
                computed, _ = self.leave(i, step + 1)
                done.append((i, computed))
        return done


def plan_decode_run(
    batch: DecodeBatch,
    step: int,
    num_free_blocks: int,
    now_s: float,
    next_arrival_s: float,
    cost,
    max_steps: int = MAX_FAST_FORWARD_STEPS,
) -> tuple[list, list, list]:
    """A run of pure-decode steps from `step`: it stops at the next finish (inclusive), before the next cap
    event, before a step the pool cannot supply blocks for, and before the first step starting at or after the
    next arrival, and after `max_steps`. Returns (start times, durations, cumulative blocks allocated) as lists,
    all of the run's length m (m = 0: not even one step fits). A pure function of its arguments.

    Most runs are a few steps long (an arrival or a finish comes first: 10 steps on average on the Azure
    conversation trace), so the first SHORT_RUN_STEPS steps are planned in plain Python with the cost's affine
    coefficients (`decode_affine`) or scalar decode-step function (`decode_step_fn`), when it has one; numpy
    takes over for longer runs. Both paths do the
    same floating-point operations in the same order (numpy's cumsum adds sequentially), so they give the same
    numbers to the last bit."""
    m = int(min(batch.next_finish_step() - step + 1, batch.next_cap_step() - step, max_steps, MAX_FAST_FORWARD_STEPS))
    if m <= 0:
        return [], [], []
    affine = getattr(cost, "decode_affine", None)
    coef = affine(batch.count) if affine is not None else None
    fn = getattr(cost, "decode_step_fn", None) if coef is None else None
    step_s = fn(batch.count) if fn is not None else None
    if coef is None and step_s is None:
        return _plan_numpy(batch, step, m, num_free_blocks, now_s, next_arrival_s, cost)
    bs, n, due = batch.block_size, batch.count, batch.due_by_residue
    ctx = batch.sum_base_computed + n * step + n  # sum of contexts after the run's first token
    if m > SHORT_RUN_STEPS and next_arrival_s - now_s > SHORT_RUN_STEPS * _step_s(coef, step_s, ctx):
        # steps read more and more context, so none is shorter than the first: the next arrival is more than
        # SHORT_RUN_STEPS steps away, a long run for numpy at once (either path gives the same numbers)
        return _plan_numpy(batch, step, m, num_free_blocks, now_s, next_arrival_s, cost)
    starts, dts, cum_blocks = [], [], []
    add_start, add_dt, add_cum = starts.append, dts.append, cum_blocks.append
    cum, total, r = 0, 0.0, step % bs
    mem0, mem1, cmp0, cmp1, fixed = coef or (0.0, 0.0, 0.0, 0.0, 0.0)
    for blocks_due in islice(cycle(due[r:] + due[:r]), min(m, SHORT_RUN_STEPS)):  # due at steps step, step + 1, ...
        cum += blocks_due
        if cum > num_free_blocks:
            return starts, dts, cum_blocks
        if coef is None:
            dt = step_s(ctx)
        else:  # DecodeRunCost.step_times_s, one step: max(memory, compute) + fixed, affine in the context read
            a, b = mem0 + mem1 * ctx, cmp0 + cmp1 * ctx
            dt = (a if a >= b else b) + fixed
        total += dt
        start = (now_s + total) - dt
        if start >= next_arrival_s:
            return starts, dts, cum_blocks
        add_start(start)
        add_dt(dt)
        add_cum(cum)
        ctx += n
    if m <= SHORT_RUN_STEPS:
        return starts, dts, cum_blocks
    return _plan_numpy(batch, step, m, num_free_blocks, now_s, next_arrival_s, cost)


def _step_s(coef, step_s, ctx: int) -> float:
    if coef is None:
        return step_s(ctx)
    mem0, mem1, cmp0, cmp1, fixed = coef
    return max(mem0 + mem1 * ctx, cmp0 + cmp1 * ctx) + fixed


def _plan_numpy(batch: DecodeBatch, step: int, m: int, num_free_blocks: int, now_s: float, next_arrival_s: float, cost):
    """plan_decode_run for a run of at most m steps, vectorised."""
    bs, n = batch.block_size, batch.count
    js = _ARANGE[:m]
    cum_blocks = np.cumsum(np.asarray(batch.due_by_residue)[(step + js) % bs])
    m = min(m, int(np.searchsorted(cum_blocks, num_free_blocks, side="right")))
    if m == 0:
        return [], [], []
    ctx = batch.sum_base_computed + n * step + n + n * js[:m]  # sum of contexts after step j's token
    dts = _decode_step_times(cost, n, ctx, now_s, next_arrival_s)
    ends = now_s + np.cumsum(dts)
    starts = ends - dts
    m = min(len(dts), int(np.searchsorted(starts, next_arrival_s, side="left")))  # steps starting before it
    return starts[:m].tolist(), dts[:m].tolist(), cum_blocks[:m].tolist()  # Python numbers, as the short path


def _decode_step_times(cost, n: int, ctx: np.ndarray, now_s: float, next_arrival_s: float) -> np.ndarray:
    vectorised = getattr(cost, "step_times_s", None)
    if vectorised is not None:
        dts = vectorised(n, n, ctx, ctx)
        if not (isinstance(dts, np.ndarray) and dts.shape == ctx.shape):
            dts = np.broadcast_to(np.asarray(dts, dtype=float), ctx.shape)
        return dts
    dts, t = [], now_s  # generic cost: one scalar call per step, stopping at the next arrival
    for c in ctx.tolist():
        if t >= next_arrival_s:
            break
        dts.append(float(cost.step_time_s(n, n, c, c)))
        t += dts[-1]
    return np.asarray(dts)
