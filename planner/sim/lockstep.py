"""The simulator's fast path: decoding requests advance in lock step.

Every decoding request gains one token per step, so the decode batch is kept as scalars (count, sum of contexts
at a base step, how many need a new KV block at each step residue mod block_size) plus a heap of finish steps.
A step then costs O(1) in the batch size, and a run of pure-decode steps between events (an arrival, a finish,
the pool running out of blocks) is advanced in one vectorised call. Mixed into the simulator's replica
(planner/sim/simulator.py), whose state it reads and updates.
"""
from __future__ import annotations

import heapq
import math

import numpy as np

MAX_FAST_FORWARD_STEPS = 4096
_ARANGE = np.arange(MAX_FAST_FORWARD_STEPS)


class LockstepDecoding:
    """Lock-step decoder bookkeeping and fast-forward over runs of pure-decode steps."""

    # --- lock-step decoders ----------------------------------------------------------------------------
    def _join_lockstep(self, i: int) -> None:
        nxt = self.step_idx + 1
        base_c, base_g = self.computed[i] - nxt, self.gen[i] - nxt
        self.base_c[i], self.base_g[i] = base_c, base_g
        self.lockstep[i] = True
        self.num_dec += 1
        self.sum_base_c += base_c
        self.cnt[-base_c % self.cfg.block_size] += 1  # needs a new block at steps S with (base_c + S) % bs == 0
        fin = self.output[i] - base_g - 1  # the step that produces the last token
        self.fin_step[i] = fin
        heapq.heappush(self.fin_heap, (fin, i))
        del self.indiv[i]

    def _leave_lockstep(self, i: int) -> None:
        self.lockstep[i] = False
        self.num_dec -= 1
        self.sum_base_c -= self.base_c[i]
        self.cnt[-self.base_c[i] % self.cfg.block_size] -= 1

    def _next_finish_step(self) -> int:
        heap = self.fin_heap
        while heap and not (self.lockstep[heap[0][1]] and self.fin_step[heap[0][1]] == heap[0][0]):
            heapq.heappop(heap)  # stale: preempted since
        return heap[0][0]

    def _finish_decoders(self, step: int) -> None:
        heap = self.fin_heap
        while heap and heap[0][0] <= step:
            fin, i = heapq.heappop(heap)
            if self.lockstep[i] and self.fin_step[i] == fin:
                computed = self.base_c[i] + step + 1
                self._leave_lockstep(i)
                self._finish(i, computed)

    # --- runs of pure-decode steps ---------------------------------------------------------------------------
    def _can_fast_forward(self) -> bool:
        return bool(self.num_dec) and not self.indiv and not self.waiting and not self.spec

    def _fast_forward(self) -> bool:
        """Advance m pure-decode steps at once, stopping before the next arrival, at the next finish, and
        while the pool still has a block for every decoder. False if not even one step fits."""
        bs, s0, n = self.cfg.block_size, self.step_idx, self.num_dec
        m = min(self._next_finish_step() - s0 + 1, MAX_FAST_FORWARD_STEPS)
        js = _ARANGE[:m]
        new_blocks = np.asarray(self.cnt)[(s0 + js) % bs]
        cum_blocks = np.cumsum(new_blocks)
        m = min(m, int(np.searchsorted(cum_blocks, self.pool.num_allocatable, side="right")))
        if m == 0:
            return False
        t_next = self.pending[0][0] if self.pending else math.inf
        ctx = self.sum_base_c + n * s0 + n + n * js[:m]  # sum of contexts after step j's token
        dts = self._decode_step_times(n, ctx, t_next)
        ends = self.now + np.cumsum(dts)
        starts = ends - dts
        m = min(len(dts), int(np.searchsorted(starts, t_next, side="left")))  # steps starting before it
        active0 = self.pool.num_active
        self.pool.allocate(int(cum_blocks[m - 1]))
        self.rec.add_run(starts[:m], dts[:m], n, len(self.running), active0 + cum_blocks[:m])
        self.now = float(ends[m - 1])
        self.step_idx = s0 + m
        self._finish_decoders(s0 + m - 1)
        return True

    def _decode_step_times(self, n: int, ctx: np.ndarray, t_next: float) -> np.ndarray:
        vectorised = getattr(self.cost, "step_times_s", None)
        if vectorised is not None:
            dts = vectorised(n, n, ctx, ctx)
            if not (isinstance(dts, np.ndarray) and dts.shape == ctx.shape):
                dts = np.broadcast_to(np.asarray(dts, dtype=float), ctx.shape)
            return dts
        dts, t = [], self.now  # generic cost: one scalar call per step, stopping at the next arrival
        for c in ctx.tolist():
            if t >= t_next:
                break
            dts.append(float(self.cost.step_time_s(n, n, c, c)))
            t += dts[-1]
        return np.asarray(dts)
