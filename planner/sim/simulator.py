"""Discrete-event simulator of one replica running a vLLM-v1-like scheduler.

Modelled. As in vLLM v1 there is no prefill or decode phase: each request has known tokens (prompt + output so
far) and computed tokens (in the KV cache), and every step lets computed catch up with known under a token budget
(`max_num_batched_tokens`). Running requests are served first in admission order (a decode costs 1 token, a
prefill chunk whatever budget is left: chunked prefill), then waiting requests are admitted first-come first-served
while budget, `max_num_seqs` and KV blocks last. A step that completes a request's known tokens samples one token;
the first one ends the prefill (TTFT). KV is counted in blocks of `block_size`, ceil(tokens / block_size) per
request. When a running request cannot get a block, the newest running request is preempted by recompute: its
blocks are freed and it returns to the front of the queue to prefill prompt + output-so-far again. Prefix caching:
requests carry prefix hash ids; a cached exact prefix is skipped at admission, shared blocks are reference-counted
and the least recently released are evicted first (planner/sim/block_pool.py). Speculative decoding: a decoding request
verifies 1 + k tokens per step and keeps 1 + a, where a ~ accepted drafts (each accepted with probability alpha
until the first rejection, seeded); the draft model adds k x draft cost per step. Step time comes from a StepCost.
Arrivals join the queue at the next step boundary; a queue limit rejects arrivals (backpressure), and requests
longer than the pool (or, without chunked prefill, than the budget) are rejected as vLLM would.

Not modelled: CPU swap, pipeline/tensor-parallel communication, multiple replicas or routing, priority or
deadline scheduling, sliding-window or per-layer KV layouts, partial-block prefix sharing (only whole prefix
blocks are cached), detokenisation and network time, a draft model's own KV cache, stop strings (outputs have
their trace length).

Speed: decoding requests advance in lock step, so the decode batch is kept as scalars (count, sum of contexts,
blocks needed per step-residue mod block_size) and a finish-step heap; a step costs O(1) in the batch, and runs of
pure-decode steps between events (arrival, finish, pool exhausted) are advanced in one vectorised call
(planner/sim/lockstep.py).
"""
from __future__ import annotations

import heapq
import math
import time
from collections import deque

import numpy as np

from planner.core.errors import InputError
from planner.sim.block_pool import BlockPool
from planner.sim.config import SchedulerConfig, StepCost, scheduler_config
from planner.sim.lockstep import LockstepDecoding
from planner.sim.records import REJECT_QUEUE_FULL, REJECT_TOO_LONG, SimResult, StepRecorder, request_records
from planner.traffic.generators import Workload
from planner.core.units import ceil_div

def simulate(workload: Workload, config: SchedulerConfig | dict, cost: StepCost, seed: int = 0) -> SimResult:
    """Run every request of `workload` to completion (or rejection); a pure function of its arguments."""
    if not hasattr(cost, "step_time_s"):
        raise InputError("cost", "needs a step_time_s(new_tokens, num_seqs, kv_read_tokens, attn_pairs) method")
    return _Replica(workload, scheduler_config(config), cost, seed).run()


class _Replica(LockstepDecoding):
    """All simulation state in one object; request state in lists indexed by request id."""

    def __init__(self, wl: Workload, cfg: SchedulerConfig, cost: StepCost, seed: int):
        self.wl, self.cfg, self.cost, self.seed = wl, cfg, cost, seed
        self.rng = np.random.default_rng(seed)
        self.spec = cfg.spec_k > 0
        n, bs = wl.num_requests, cfg.block_size
        self.prompt = wl.prompt_tokens.tolist()
        self.output = wl.output_tokens.tolist()
        self.caching = cfg.enable_prefix_caching and wl.prefix_ids is not None
        if self.caching and wl.prefix_block_tokens % bs:
            raise InputError("block_size", f"prefix blocks of {wl.prefix_block_tokens} tokens are not a whole "
                             f"number of {bs}-token KV blocks")
        self.pbt = wl.prefix_block_tokens
        self.pool = BlockPool(cfg.num_gpu_blocks, self.pbt // bs if self.caching else 1)
        self.prefix = [ids.tolist() for ids in wl.prefix_ids] if self.caching else None
        self.num_cacheable = [min(len(h), p // self.pbt) for h, p in zip(self.prefix, self.prompt)] \
            if self.caching else None
        self.held = [[] for _ in range(n)] if self.caching else None  # prefix hash ids referenced
        self.reg_next = [0] * n  # next prefix entry to publish once computed
        self.computed = [0] * n  # tokens in the KV cache (individually stepped requests)
        self.gen = [0] * n  # output tokens produced
        # lock-step decoders: computed = base_c + S, gen = base_g + S before step S
        self.base_c, self.base_g, self.fin_step = [0] * n, [0] * n, [-1] * n
        self.lockstep = [False] * n
        self.num_dec, self.sum_base_c, self.cnt = 0, 0, [0] * bs
        self.fin_heap: list[tuple[int, int]] = []
        self.running: dict[int, None] = {}  # admission order; the last is the newest
        self.indiv: dict[int, None] = {}  # running requests stepped one by one (prefill, spec decode)
        self.waiting: deque[int] = deque()
        self.now, self.step_idx, self.dec_allocated, self.preempted_now = 0.0, 0, False, False
        self.rec = StepRecorder()
        self.out = request_records(wl)
        self._init_arrivals()

    def _init_arrivals(self) -> None:
        wl, cfg = self.wl, self.cfg
        longest = wl.prompt_tokens + wl.output_tokens - 1  # most tokens ever in the KV cache
        too_long = -(-longest // cfg.block_size) > cfg.num_gpu_blocks
        if not cfg.enable_chunked_prefill:
            too_long |= longest > cfg.max_num_batched_tokens
        self.too_long = too_long.tolist()
        self.next_of = [-1] * wl.num_requests
        if wl.is_closed_loop:
            last: dict[int, int] = {}
            for i, u in enumerate(wl.user_id.tolist()):
                if u in last:
                    self.next_of[last[u]] = i
                last[u] = i
        arr = self.out.arrival_s
        self.pending = [(t, i) for i, t in enumerate(arr.tolist()) if not math.isnan(t)]
        heapq.heapify(self.pending)

    def run(self) -> SimResult:
        wall0 = time.perf_counter()
        while True:
            self._admit_arrivals()
            if not self.running and not self.waiting:
                if not self.pending:
                    break
                self.now = max(self.now, self.pending[0][0])
                continue
            if not (self._can_fast_forward() and self._fast_forward()):
                self._step()
        return SimResult(self.cfg, self.seed, self.wl, self.out, self.rec.finish(), self.now,
                         self.pool.peak_used, self.pool.num_evictions, time.perf_counter() - wall0)

    # --- arrivals, finishing, preemption -------------------------------------------------------------
    def _admit_arrivals(self) -> None:
        max_queue = self.cfg.max_queue
        while self.pending and self.pending[0][0] <= self.now:
            t, i = heapq.heappop(self.pending)
            if self.too_long[i]:
                self._reject(i, t, REJECT_TOO_LONG)
            elif max_queue is not None and len(self.waiting) >= max_queue:
                self._reject(i, t, REJECT_QUEUE_FULL)
            else:
                self.waiting.append(i)

    def _reject(self, i: int, t: float, code: int) -> None:
        self.out.rejected[i] = code
        self._send_next(i, t)

    def _send_next(self, i: int, t: float) -> None:
        """Closed loop: the user of request i thinks, then sends their next request."""
        j = self.next_of[i]
        if j >= 0:
            t_next = t + float(self.wl.think_s[j])
            self.out.arrival_s[j] = t_next
            heapq.heappush(self.pending, (t_next, j))

    def _private_blocks(self, i: int, num_tokens: int) -> int:
        shared = len(self.held[i]) * self.pool.blocks_per_prefix if self.caching else 0
        return ceil_div(num_tokens, self.cfg.block_size) - shared

    def _release(self, i: int, num_tokens: int) -> None:
        self.pool.free(self._private_blocks(i, num_tokens))
        if self.caching:
            self.pool.release(self.held[i])
            self.held[i] = []
        self.reg_next[i] = 0
        del self.running[i]
        self.indiv.pop(i, None)

    def _finish(self, i: int, num_tokens: int) -> None:
        self._release(i, num_tokens)
        self.gen[i] = self.output[i]
        self.out.finish_s[i] = self.now
        self._send_next(i, self.now)

    def _preempt(self, i: int) -> None:
        """Recompute preemption: free everything, back to the front of the queue."""
        if self.lockstep[i]:
            s = self.step_idx
            computed, self.gen[i] = self.base_c[i] + s, self.base_g[i] + s
            held_tokens = computed + (1 if self.dec_allocated else 0)  # this step's slot already taken
            self._leave_lockstep(i)
        else:
            computed = held_tokens = self.computed[i]
        self._release(i, held_tokens)
        self.out.recomputed_tokens[i] += computed
        self.out.num_preemptions[i] += 1
        self.computed[i] = 0
        self.waiting.appendleft(i)
        self.preempted_now = True

    def _newest(self) -> int:
        return next(reversed(self.running))

    # --- one scheduler step -------------------------------------------------------------------------------
    def _step(self) -> None:
        self.preempted_now = self.dec_allocated = False
        budget = self.cfg.max_num_batched_tokens - self._allocate_decoders()
        scheduled: list[tuple[int, int]] = []
        budget = self._schedule_individual(budget, scheduled)
        if not self.preempted_now:
            self._schedule_waiting(budget, scheduled)
        self._execute(scheduled)

    def _allocate_decoders(self) -> int:
        """Give every lock-step decoder its next KV slot, preempting the newest request until they fit."""
        if not self.num_dec:
            return 0
        bs = self.cfg.block_size
        while self.cnt[self.step_idx % bs] > self.pool.num_allocatable:
            self._preempt(self._newest())
        self.pool.allocate(self.cnt[self.step_idx % bs])
        self.dec_allocated = True
        return self.num_dec

    def _num_new_tokens(self, i: int, budget: int) -> int:
        known = self.prompt[i] + self.gen[i]
        left = known - self.computed[i]
        if self.gen[i] and left == 1 and self.spec:  # verify 1 + k drafts, never past the end
            return min(1 + min(self.cfg.spec_k, self.output[i] - self.gen[i] - 1), budget)
        if left > budget and not self.cfg.enable_chunked_prefill:
            return 0
        return min(left, budget)

    def _schedule_individual(self, budget: int, scheduled: list) -> int:
        bs = self.cfg.block_size
        for i in list(self.indiv):
            if budget <= 0:
                break
            if i not in self.indiv:
                continue  # preempted by an older request this step
            num_new = self._num_new_tokens(i, budget)
            if num_new <= 0:
                continue
            c = self.computed[i]
            need = ceil_div(c + num_new, bs) - ceil_div(c, bs)
            while need > self.pool.num_allocatable and i in self.running:
                victim = self._newest()
                if self.lockstep[victim]:
                    budget += 1  # its decode token is returned to the budget
                self._preempt(victim)
            if i not in self.running:
                break
            self.pool.allocate(need)
            budget -= num_new
            scheduled.append((i, num_new))
        return budget

    def _prefix_hit(self, i: int, known: int) -> int:
        """Cached prefix entries usable by request i (at least one token is always computed)."""
        if not self.caching:
            return 0
        limit = min(self.num_cacheable[i], (known - 1) // self.pbt)
        return self.pool.num_cached_prefix(self.prefix[i], limit) if limit > 0 else 0

    def _schedule_waiting(self, budget: int, scheduled: list) -> None:
        cfg, pool, bs = self.cfg, self.pool, self.cfg.block_size
        while self.waiting and budget > 0 and len(self.running) < cfg.max_num_seqs:
            i = self.waiting[0]
            known = self.prompt[i] + self.gen[i]
            num_hit = self._prefix_hit(i, known)
            hit_tokens = num_hit * self.pbt
            num_new = min(known - hit_tokens, budget)
            if num_new < known - hit_tokens and not cfg.enable_chunked_prefill:
                break
            hits = self.prefix[i][:num_hit] if num_hit else []
            need = ceil_div(hit_tokens + num_new, bs) - num_hit * pool.blocks_per_prefix
            if need > pool.num_allocatable - pool.num_evictable_among(hits) * pool.blocks_per_prefix:
                break
            self.waiting.popleft()
            if num_hit:
                pool.acquire(hits)
                self.held[i] = list(hits)
            self.reg_next[i] = num_hit
            pool.allocate(need)
            self.computed[i] = hit_tokens
            self.out.prefix_hit_tokens[i] += hit_tokens
            self.running[i] = None
            self.indiv[i] = None
            if math.isnan(self.out.first_scheduled_s[i]):
                self.out.first_scheduled_s[i] = self.now
            budget -= num_new
            scheduled.append((i, num_new))

    def _execute(self, scheduled: list[tuple[int, int]]) -> None:
        num_dec, step = self.num_dec, self.step_idx
        if not scheduled and not num_dec:
            raise RuntimeError("scheduler made no progress")  # guarded by the too-long rejection
        dec_ctx = self.sum_base_c + num_dec * step + num_dec  # sum of contexts after each decode's token
        new_tokens, kv_read, pairs, spec_step = num_dec, dec_ctx, dec_ctx, False
        for i, num_new in scheduled:
            ctx = self.computed[i] + num_new
            new_tokens += num_new
            kv_read += ctx
            pairs += num_new * ctx
            spec_step |= self.gen[i] > 0 and self.computed[i] == self.prompt[i] + self.gen[i] - 1
        num_seqs = num_dec + len(scheduled)
        dt = float(self.cost.step_time_s(new_tokens, num_seqs, kv_read, pairs))
        if spec_step and self.spec:
            dt += self.cfg.spec_k * self.cfg.spec_draft_cost_s  # k sequential draft passes for the batch
        start, self.now = self.now, self.now + dt
        self.rec.add(start, dt, num_seqs, len(self.running), len(self.waiting), self.pool.num_active, new_tokens)
        self._finish_decoders(step)
        for i, num_new in scheduled:
            self._advance(i, num_new)
        self.step_idx += 1
        self.dec_allocated = False

    def _advance(self, i: int, num_new: int) -> None:
        """Apply one step's tokens to an individually stepped request."""
        c0, known = self.computed[i], self.prompt[i] + self.gen[i]
        if self.spec and self.gen[i] and c0 == known - 1:
            accepted = self._accepted_drafts(num_new - 1)
            self.computed[i] = c0 + 1 + accepted
            self.gen[i] += 1 + accepted
            bs = self.cfg.block_size  # rejected draft slots go back to the pool
            self.pool.free(ceil_div(c0 + num_new, bs) - ceil_div(self.computed[i], bs))
        else:
            self.computed[i] = c0 + num_new
            if self.caching:
                self._publish_prefix(i)
            if self.computed[i] < known:
                return  # prefill continues next step
            self.gen[i] += 1
            if math.isnan(self.out.first_token_s[i]):
                self.out.first_token_s[i] = self.now
        if self.gen[i] >= self.output[i]:
            self._finish(i, self.computed[i])
        elif not self.spec:
            self._join_lockstep(i)

    def _accepted_drafts(self, num_drafts: int) -> int:
        """Drafts kept: each accepted with probability alpha until the first rejection."""
        alpha = self.cfg.spec_alpha
        if num_drafts <= 0 or alpha <= 0:
            return 0
        if alpha >= 1:
            return num_drafts
        return min(num_drafts, int(self.rng.geometric(1 - alpha)) - 1)

    def _publish_prefix(self, i: int) -> None:
        full = min(self.computed[i] // self.pbt, self.num_cacheable[i])
        for j in range(self.reg_next[i], full):
            if self.pool.register(self.prefix[i][j]):
                self.held[i].append(self.prefix[i][j])
        self.reg_next[i] = max(self.reg_next[i], full)
