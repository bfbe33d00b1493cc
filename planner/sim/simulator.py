"""Discrete-event simulator of one replica running vLLM V1's scheduler (or another engine's admission rule).

Design note. Sources: vllm/v1/core/sched/scheduler.py @ 00024d314514900f361ad072af6931e403b7f589
(Scheduler.schedule, _preempt_request), vllm/v1/core/kv_cache_manager.py @
003df2961dd8830c317a61f9745ccd557da9fa06 (allocate_slots, get_computed_blocks), kv_cache_utils.py @
bbf906a88ba1a39104884c88c9811a4f968e4659 (free-block queue). Every request has
known tokens (prompt + output so far) and computed tokens (in the KV cache); each step lets computed catch up
with known under a token budget.

| # | vLLM V1 does | we do | left out |
|---|---|---|---|
| 1 | RUNNING first, in order, within max_num_batched_tokens | same; lock-step decoders first | async |
| 2 | prefill chunk = min(left, long_prefill_token_threshold, budget) | same | encoder budget |
| 3 | allocate_slots fails -> preempt running.pop() until it fits | same (one check for decoders) | PRIORITY |
| 4 | _preempt_request: free (tail first), computed = 0, prepend | same; full blocks stay cached | swap (V0) |
| 5 | WAITING only if nothing was preempted; stop at the first misfit | same, max_num_seqs | LoRA/FSM skips |
| 6 | prefix hits: full cached blocks, <= num_tokens - 1 | same, trace prefix ids + own blocks | token hashing |
| 7 | admit when the first chunk fits | same; scheduler_reserve_full_isl option | watermark |
| 8 | SWA layers drop blocks outside the window | block cap per request (note 8) | hybrid groups |
| 9 | API server rejects prompt + max_tokens > max_model_len | rejected at arrival (rejected_too_long) | |
| 10 | spec decode: 1 + k tokens per request, k lookahead slots | 1 + k tokens, slots for them only | lookahead |

Notes. 1: vllm/v1/core/sched/scheduler.py schedule(), "There's no decoding phase nor prefill phase". 3: a request
that preempts itself stops the running loop. 6: get_computed_blocks; evictable hits count as blocks to allocate;
a preempted request re-hits its own blocks that were not evicted (PRs #21793/#21809 describe the thrash without
it). 7: the newer default scheduler_reserve_full_isl=True (PR #37307) checks the whole known sequence; off here
by default (the scheduler.py we follow). 8: cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), bs) + 1
blocks (planner/memory/sliding_window.py), only when every layer is windowed; no SWA prefix hits. 10: the
scheduler's num_lookahead_tokens (draft-model / EAGLE methods) reserves k more slots; rejected draft slots are
returned here after the step, as vLLM rolls num_computed_tokens back.

A step that completes a request's known tokens samples one token (the first ends the prefill: TTFT). Speculative
decoding: a decoding request verifies 1 + k tokens per step and keeps 1 + a (each draft accepted with probability
alpha until the first rejection, seeded); the step is charged k passes of the draft model over the verifying
sequences (`draft_cost`, its own roofline step; or a fixed `spec_draft_cost_s`). Arrivals join the queue at the
next step boundary; with `max_queue`, requests that cannot start and would leave more than max_queue waiting are
rejected (0 = admit only what can start now). Other engines' schedulers: planner/sim/policies.py (docs/schedulers.md).

KV offload tiers (planner/sim/offload_tiers.py): prefix ids past the GPU hits that a CPU or SSD tier holds are
reloaded at admission (they take GPU blocks and join the prefix cache); their transfer is added to that step.
Not modelled: CPU swap, multiple replicas or routing, priority scheduling, detokenisation and network time, a
draft model's own KV cache, stop strings (outputs have their trace length).
Speed: decoding requests advance in lock step (planner/sim/lockstep.py): O(1) per step in the batch size, and
runs of pure-decode steps between events are planned in one call (plain Python for the usual few steps, numpy
for long runs); steps are recorded in lists flushed to numpy in blocks (records.StepRecorder). Cost is linear in
the number of steps and events (benchmarks/bench_simulator.py prints the scaling line).
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque

import numpy as np

from planner.core.errors import InputError
from planner.latency.perf_model import StepCost
from planner.sim import admission, invariants
from planner.sim.block_pool import BlockPool
from planner.sim.config import SchedulerConfig, scheduler_config
from planner.sim.lockstep import DecodeBatch, plan_decode_run
from planner.sim.offload_tiers import OffloadTiers
from planner.sim.policies import make_policy, overrides
from planner.sim.records import (
    REJECT_QUEUE_FULL,
    REJECT_TOO_LONG,
    SimResult,
    StepRecorder,
    request_records,
)
from planner.traffic.workload import Workload


def simulate(
    workload: Workload,
    config: SchedulerConfig | dict,
    cost: StepCost,
    seed: int = 0,
    draft_cost: StepCost | None = None,
) -> SimResult:
    """Run every request of `workload` to completion (or rejection); a pure function of its arguments."""
    for name, c in (("cost", cost), ("draft_cost", draft_cost)):
        if c is not None and not hasattr(c, "step_time_s"):
            raise InputError(name, "needs a step_time_s(new_tokens, num_seqs, kv_read_tokens, attn_pairs) method")
    return Replica(workload, scheduler_config(config), cost, seed, draft_cost).run()


class PrefixIdLists:
    """Each request's prefix hash ids as a Python list (fast to walk), made when first read and dropped when the
    request finishes or is rejected: lists for every request at once would be most of the memory of an hour of
    sessions (planner/traffic/sessions.py: about 200 ids a turn)."""

    def __init__(self, arrays):
        self.arrays, self.lists = arrays, {}

    def __getitem__(self, i: int) -> list[int]:
        ids = self.lists.get(i)
        if ids is None:
            ids = self.lists[i] = self.arrays[i].tolist()
        return ids

    def drop(self, i: int) -> None:
        self.lists.pop(i, None)


class Replica:
    """All simulation state in one object; request state in lists indexed by request id."""

    def __init__(self, wl: Workload, cfg: SchedulerConfig, cost: StepCost, seed: int, draft_cost=None, share=None):
        """`share`: another Replica of the same workload and config whose per-request tables this one uses (a
        fleet: each request lives on one replica, so one table serves them all and memory stays O(requests))."""
        self.wl, self.cfg, self.cost, self.seed, self.draft_cost = wl, cfg, cost, seed, draft_cost
        self.rng = np.random.default_rng(seed)
        self.spec = cfg.spec_k > 0
        # once per request, with the step that schedules its first chunk (PerfModel.request_overhead_s)
        self.request_overhead_s = float(getattr(cost, "request_overhead_s", 0.0))
        self.requests_starting = 0
        bs = cfg.block_size
        self.policy = policy = make_policy(cfg)  # the engine's scheduler (planner/sim/policies.py)
        # the hooks this policy overrides (the others are skipped: vLLM's loop pays nothing for them)
        self.order_waiting = policy.order_waiting if overrides(policy, "order_waiting") else None
        self.admission_hooks = overrides(policy, "admits") or overrides(policy, "on_admit")
        self.decode_hook = policy.on_decode_steps if overrides(policy, "on_decode_steps") else None
        self.release_hook = policy.on_release if overrides(policy, "on_release") else None
        self.chunk_unit = policy.chunk_unit
        # SGLang: prompt steps and decode steps apart, prompts first (_step_separate); spec decoding keeps mixed steps
        self.separate_prefill = policy.separate_prefill and not cfg.enable_mixed_chunk and not self.spec
        self.block_size, self.max_blocks = bs, cfg.max_blocks_per_request
        self.own_caching = cfg.enable_prefix_caching and cfg.max_blocks_per_request is None
        self.prefix_sharing = cfg.enable_prefix_caching and wl.prefix_ids is not None
        self.prefix_block_tokens = wl.prefix_block_tokens
        self.publish_answers = self.prefix_sharing and wl.prefix_covers_output
        if self.prefix_sharing and wl.prefix_block_tokens % bs:
            raise InputError(
                "block_size",
                f"prefix blocks of {wl.prefix_block_tokens} tokens are not a whole number of {bs}-token KV blocks",
            )
        self.pool = BlockPool(cfg.num_gpu_blocks, wl.prefix_block_tokens // bs if self.prefix_sharing else 1)
        # KV offload tiers (planner/sim/offload_tiers.py): only where prefix blocks are shared and published
        self.tiers = None
        if cfg.offload is not None and self.prefix_sharing:
            self.tiers = OffloadTiers(cfg.offload, self.pool.blocks_per_prefix, wl.prefix_block_tokens)
            if self.tiers.write_back:
                self.pool.on_prefix_evicted = self.tiers.on_gpu_evict
        self.reload_s_due = 0.0  # reloads of this step's admissions, charged to the step (offload_tiers note)
        if share is None:
            self._init_request_tables()
        else:
            for name in self.REQUEST_TABLES:
                setattr(self, name, getattr(share, name))
        self.decoders = DecodeBatch(wl.num_requests, bs, cfg.max_blocks_per_request, share and share.decoders)
        self.running: dict[int, None] = {}  # admission order; the last is the newest
        self.stepped_individually: dict[int, None] = {}  # prefilling (and spec-decoding) running requests
        self.waiting: deque[int] = deque()
        self.num_waiting_new = 0  # waiting requests never scheduled (the back of the queue)
        self.balance_limit = cfg.adp_balance_timeout_iters  # attention-DP balance hold (config note); 0 = off
        self.balance_held_steps = 0  # steps new prompts have been held by it
        self.batch_wait = cfg.batch_wait_timeout_iters > 0 or cfg.batch_wait_max_tokens_ratio > 0  # TensorRT-LLM's
        self.batch_wait_steps = 0  # steps prompts have been held by it (config note)
        self.recv_interval = cfg.scheduler_recv_interval  # SGLang's receive polls (config note); 1 = every step
        self.recv_counter = self.recv_interval  # the first loop polls
        self.now, self.step_index = 0.0, 0  # step_index counts decode steps (the lock-step batch's clock)
        self.decode_slots_taken = self.preempted_this_step = False
        self.recorder = StepRecorder()
        if share is None:
            self._init_arrivals()
        else:
            self.pending: list[tuple[float, int]] = []  # the fleet sends requests (planner/sim/fleet.py)

    # per-request state, indexed by request id (a fleet's replicas share them: module note of planner/sim/fleet.py)
    REQUEST_TABLES = (
        "prompt_tokens",
        "output_tokens",
        "prefix_ids",
        "num_cacheable_prefix",
        "shared_prefix_held",
        "next_prefix_to_publish",
        "prefix_entries_at_preemption",
        "tokens_lost_at_preemption",
        "computed_tokens",
        "generated_tokens",
        "too_long",
        "out",
    )

    def _init_request_tables(self) -> None:
        wl, n = self.wl, self.wl.num_requests
        self.prompt_tokens = wl.prompt_tokens.tolist()
        self.output_tokens = wl.output_tokens.tolist()
        self.prefix_ids = PrefixIdLists(wl.prefix_ids) if self.prefix_sharing else None
        self.num_cacheable_prefix = (
            [min(len(h), p // self.prefix_block_tokens) for h, p in zip(wl.prefix_ids, self.prompt_tokens)]
            if self.prefix_sharing
            else None
        )
        self.shared_prefix_held = [[] for _ in range(n)]  # prefix hash ids referenced while running
        self.next_prefix_to_publish = [0] * n
        self.prefix_entries_at_preemption = [0] * n
        self.tokens_lost_at_preemption = [0] * n
        self.computed_tokens = [0] * n  # individually stepped requests (decoders: see DecodeBatch)
        self.generated_tokens = [0] * n
        too_long = admission.refused_at_arrival(wl.prompt_tokens, wl.output_tokens, self.cfg, self.policy)
        self.too_long = too_long.tolist()
        self.out = request_records(wl)

    def _blocks(self, tokens: int) -> int:
        """Blocks a request holds with `tokens` in its KV cache (capped by a sliding window)."""
        blocks = -(-tokens // self.block_size)
        cap = self.max_blocks
        return blocks if cap is None or blocks < cap else cap

    def _init_arrivals(self) -> None:
        wl = self.wl
        self.next_of = [-1] * wl.num_requests
        if wl.is_closed_loop:
            last: dict[int, int] = {}
            for i, u in enumerate(wl.user_id.tolist()):
                if u in last:
                    self.next_of[last[u]] = i
                last[u] = i
        self.pending = [(t, i) for i, t in enumerate(self.out.arrival_s.tolist()) if not math.isnan(t)]
        heapq.heapify(self.pending)

    def run(self) -> SimResult:
        wall0 = time.perf_counter()
        while True:
            self._poll_arrivals()
            if not self.running and not self.waiting:
                if not self.pending:
                    break
                self.now = max(self.now, self.pending[0][0])
                self.policy.on_idle()
                continue
            if not (self._can_fast_forward() and self._fast_forward()):
                self._step()
        return SimResult(
            self.cfg,
            self.seed,
            self.wl,
            self.out,
            self.recorder.finish(),
            self.now,
            self.pool.peak_active,
            self.pool.num_evicted_blocks,
            time.perf_counter() - wall0,
            self.tiers.stats if self.tiers is not None else None,
        )

    # --- arrivals, rejection, finishing, preemption -------------------------------------------------------
    def _poll_arrivals(self) -> None:
        """Take the arrivals due, at a receive poll (every step; with a receive interval N, after a step with prompt
        tokens, after N decode steps since the last poll, or when idle)."""
        if self.recv_interval > 1:
            if self.recv_counter < self.recv_interval and (self.running or self.waiting):
                return
            self.recv_counter = 0
        self._accept_arrivals()

    def _accept_arrivals(self) -> None:
        while self.pending and self.pending[0][0] <= self.now:
            t, i = heapq.heappop(self.pending)
            if self.too_long[i]:
                self._reject(i, t, REJECT_TOO_LONG)
            else:
                self.waiting.append(i)
                self.num_waiting_new += 1

    def _reject(self, i: int, t: float, code: int) -> None:
        self.out.rejected[i] = code
        if self.prefix_ids is not None:
            self.prefix_ids.drop(i)
        self._send_next(i, t)

    def _enforce_queue_limit(self) -> None:
        """After a step's admissions, new requests beyond max_queue waiting are rejected (newest first)."""
        limit = self.cfg.max_queue
        while limit is not None and self.num_waiting_new > limit:
            i = self.waiting.pop()
            self.num_waiting_new -= 1
            self._reject(i, self.now, REJECT_QUEUE_FULL)

    def _send_next(self, i: int, t: float) -> None:
        """Closed loop: the user of request i thinks, then sends their next request."""
        j = self.next_of[i]
        if j >= 0:
            t_next = t + float(self.wl.think_s[j])
            self.out.arrival_s[j] = t_next
            heapq.heappush(self.pending, (t_next, j))

    def _shared_blocks(self, i: int) -> int:
        return len(self.shared_prefix_held[i]) * self.pool.blocks_per_prefix

    def _release(self, i: int, tokens_held: int, cached_tokens: int = 0) -> None:
        """Return request i's blocks; with `cached_tokens`, its full blocks stay cached for its readmission."""
        shared = self._shared_blocks(i)
        private = max(0, self._blocks(tokens_held) - shared)
        cached = min(private, max(0, cached_tokens // self.cfg.block_size - shared)) if self.own_caching else 0
        self.pool.free(private - cached, owner=i if cached else None, num_cached=cached)
        if self.shared_prefix_held[i]:
            self.pool.release(self.shared_prefix_held[i])
        self.prefix_entries_at_preemption[i] = len(self.shared_prefix_held[i])
        self.shared_prefix_held[i] = []
        self.next_prefix_to_publish[i] = 0
        if self.release_hook is not None:
            self.release_hook(self, i)
        del self.running[i]
        self.stepped_individually.pop(i, None)

    def _finish(self, i: int, tokens_held: int) -> None:
        if self.publish_answers:
            self._publish_answer(i, tokens_held)
        self._release(i, tokens_held)
        if self.prefix_ids is not None:
            self.prefix_ids.drop(i)
        self.generated_tokens[i] = self.output_tokens[i]
        self.out.finish_s[i] = self.now
        self._send_next(i, self.now)

    def _preempt(self, i: int) -> None:
        """vLLM's _preempt_request: free the blocks (full ones stay cached), computed = 0, front of the queue."""
        if not self.policy.may_preempt:
            raise RuntimeError(f"the {self.policy.name} policy never preempts, yet request {i} had to be")
        if self.decoders.member[i]:
            computed, self.generated_tokens[i] = self.decoders.leave(i, self.step_index)
            held = computed + (1 if self.decode_slots_taken else 0)  # this step's slot already taken
        else:
            computed = held = self.computed_tokens[i]
        self._release(i, held, cached_tokens=computed)
        self.tokens_lost_at_preemption[i] = computed
        self.out.num_preemptions[i] += 1
        self.computed_tokens[i] = 0
        self.waiting.appendleft(i)
        self.preempted_this_step = True
        self.policy.on_preempt(self)

    def num_waiting_started(self) -> int:
        """Waiting requests that started before (preempted ones, at the front of the queue)."""
        return len(self.waiting) - self.num_waiting_new

    def generated(self, i: int) -> int:
        """Tokens request i has generated so far (for the policies)."""
        if self.decoders.member[i]:
            return self.decoders.base_generated[i] + self.step_index
        return self.generated_tokens[i]

    def _newest(self) -> int:
        return next(reversed(self.running))

    # --- one scheduler step -------------------------------------------------------------------------------
    def _step(self) -> None:
        self.preempted_this_step = self.decode_slots_taken = False
        if self.separate_prefill:
            self._step_separate()
            return
        budget = self.cfg.max_num_batched_tokens - self._allocate_decode_slots()
        scheduled: list[tuple[int, int]] = []
        budget = self._schedule_running(budget, scheduled)
        if not self.preempted_this_step and not self._prompts_held(budget):
            self._schedule_waiting(budget, scheduled)
        self._enforce_queue_limit()
        if scheduled or self.decoders.count:
            self._execute(scheduled)
        elif self.running or self.waiting:
            raise RuntimeError("scheduler made no progress")  # guarded by the too-long rejection

    def _step_separate(self) -> None:
        """SGLang's loop without --enable-mixed-chunk (managers/scheduler.py get_next_batch_to_run: "Run prefill
        first if possible"): a prefill batch (a chunked prompt's next chunk, then waiting prompts within the chunk
        budget and max_prefill_tokens) runs whenever one can be formed, and the decode batch does not advance in
        that step; otherwise the whole decode batch runs one step."""
        scheduled: list[tuple[int, int]] = []
        budget = self._schedule_running(self.cfg.max_num_batched_tokens, scheduled)
        if not self.preempted_this_step:
            self._schedule_waiting(budget, scheduled)
        self._enforce_queue_limit()
        if scheduled:
            self._execute(scheduled, decode=False)
        elif self.decoders.count:
            self._allocate_decode_slots()
            self._execute(scheduled)
        elif self.running or self.waiting:
            raise RuntimeError("scheduler made no progress")

    def _prompts_held(self, budget: int) -> bool:
        """TensorRT-LLM's holds of this step's waiting prompts: attention-DP balance, else batch waiting (the engine
        checks batch waiting only without attention DP); counted only on steps that could take prompts."""
        if self.balance_limit:
            return self._balance_holds()
        return self.batch_wait and self._batch_wait_holds(budget)

    def _balance_holds(self) -> bool:
        """TensorRT-LLM's attention-DP balance: hold waiting prompts this step? (SchedulerConfig note)"""
        if not self.waiting or not self.decoders.count or self.balance_held_steps >= self.balance_limit:
            self.balance_held_steps = 0  # nothing to hold, nothing decoding (released at once), or timed out
            return False
        self.balance_held_steps += 1
        return True

    def _batch_wait_holds(self, budget: int) -> bool:
        """TensorRT-LLM's batch waiting: hold this step's prompts? (SchedulerConfig note) The prompts are those that
        fit the step whole, first come first served; the decodes count one token each."""
        if not self.waiting or not self.decoders.count:
            return False
        tokens = 0
        for i in self.waiting:
            if tokens + self.prompt_tokens[i] > budget:
                break
            tokens += self.prompt_tokens[i]
        cfg = self.cfg
        enough = tokens + self.decoders.count >= cfg.batch_wait_max_tokens_ratio * cfg.max_num_batched_tokens
        if tokens == 0 or enough or self.batch_wait_steps >= cfg.batch_wait_timeout_iters:
            self.batch_wait_steps = 0
            return False
        self.batch_wait_steps += 1
        return True

    def _allocate_decode_slots(self) -> int:
        """Give every lock-step decoder its next KV slot, preempting the newest request until they fit."""
        batch = self.decoders
        if not batch.count:
            return 0
        batch.apply_caps(self.step_index)
        while batch.blocks_due(self.step_index) > self.pool.num_free:
            self._preempt(self._newest())
        self.pool.allocate(batch.blocks_due(self.step_index))
        self.decode_slots_taken = True
        return batch.count

    def _num_new_tokens(self, i: int, budget: int) -> int:
        known = self.prompt_tokens[i] + self.generated_tokens[i]
        left = known - self.computed_tokens[i]
        if self.spec and self.generated_tokens[i] and left == 1:  # verify 1 + k drafts, never past the end
            return min(1 + min(self.cfg.spec_k, self.output_tokens[i] - self.generated_tokens[i] - 1), budget)
        threshold = self.cfg.long_prefill_token_threshold
        if 0 < threshold < left:
            left = threshold
        if left > budget and not self.cfg.enable_chunked_prefill:
            return 0
        return left if left <= budget else budget - budget % self.chunk_unit

    def _schedule_running(self, budget: int, scheduled: list) -> int:
        for i in list(self.stepped_individually):
            if budget <= 0:
                break
            if i not in self.stepped_individually:
                continue  # preempted by an older request this step
            num_new = self._num_new_tokens(i, budget)
            if num_new <= 0:
                continue
            computed = self.computed_tokens[i]
            need = self._blocks(computed + num_new) - self._blocks(computed)
            while need > self.pool.num_free and i in self.running:
                victim = self._newest()
                if self.decoders.member[victim] and not self.separate_prefill:
                    budget += 1  # its decode token is returned to the budget (a prefill-only step holds none)
                self._preempt(victim)
            if i not in self.running:
                break  # it preempted itself: vLLM stops scheduling running requests
            self.pool.allocate(need)
            budget -= num_new
            scheduled.append((i, num_new))
        return budget

    def _cache_hits(self, i: int, known: int) -> tuple[int, int]:
        """(prefix hash entries hit, own cached blocks hit) for admitting request i with `known` tokens."""
        num_prefix = 0
        if self.prefix_sharing:
            limit = min(self.num_cacheable_prefix[i], (known - 1) // self.prefix_block_tokens)
            num_prefix = self.pool.num_cached_prefix(self.prefix_ids[i], limit) if limit > 0 else 0
        own = self.pool.num_own_cached(i) if self.pool.own_key else 0
        if own and num_prefix != self.prefix_entries_at_preemption[i]:
            self.pool.forget_own(i)  # its own blocks follow a prefix that is no longer cached
            own = 0
        return num_prefix, own

    def _tier_hits(self, i: int, known: int, num_prefix: int) -> int:
        """Prefix ids after the GPU hits that the offload tiers hold (the GPU's own hits touch their copies)."""
        limit = min(self.num_cacheable_prefix[i], (known - 1) // self.prefix_block_tokens)
        ids = self.prefix_ids[i]
        if num_prefix and not self.tiers.write_back:
            self.tiers.touch(ids[:num_prefix])
        return self.tiers.lookup(ids, num_prefix, limit, self.pool.cached) if limit > num_prefix else 0

    def _reload(self, i: int, num_prefix: int, num_reload: int) -> None:
        """Reloaded ids join the GPU prefix cache, held by request i; the step pays their transfer."""
        ids = self.prefix_ids[i]
        self.shared_prefix_held[i].extend(self.pool.register_all(ids, num_prefix, num_prefix + num_reload))
        self.reload_s_due += self.tiers.reload(ids[num_prefix : num_prefix + num_reload])

    def _schedule_waiting(self, budget: int, scheduled: list) -> None:
        cfg, pool, policy = self.cfg, self.pool, self.policy
        if self.order_waiting is not None:
            self.order_waiting(self)
        # SGLang's max_prefill_tokens: what is left of it after this step's decodes and scheduled prompt chunks
        # (without speculative decoding every individually stepped request is prefilling)
        prefill_left = None
        if cfg.max_prefill_tokens is not None:
            mixed = 0 if self.separate_prefill else self.decoders.count  # decode tokens in this step
            prefill_left = cfg.max_prefill_tokens - mixed - sum(n for _, n in scheduled)
        while self.waiting and budget > 0 and len(self.running) < cfg.max_num_seqs:
            i = self.waiting[0]
            known = self.prompt_tokens[i] + self.generated_tokens[i]
            num_prefix, own = self._cache_hits(i, known)
            num_reload = self._tier_hits(i, known, num_prefix) if self.tiers is not None and not own else 0
            gpu_hit_blocks = num_prefix * pool.blocks_per_prefix + own
            hit_blocks = gpu_hit_blocks + num_reload * pool.blocks_per_prefix  # reloaded blocks take GPU space
            hit_tokens = hit_blocks * cfg.block_size
            num_new = known - hit_tokens
            if 0 < cfg.long_prefill_token_threshold < num_new:
                num_new = cfg.long_prefill_token_threshold
            if num_new > budget and not cfg.enable_chunked_prefill:
                break
            if prefill_left is not None and scheduled and num_new >= prefill_left:
                break  # not the step's first prompt: it must fit whole (PrefillAdder.add_one_req)
            if num_new > budget:
                num_new = budget - budget % self.chunk_unit
            if num_new <= 0:
                break
            hits = self.prefix_ids[i][:num_prefix] if num_prefix else ()
            new_blocks = self._blocks(hit_tokens + num_new) - gpu_hit_blocks
            whole = cfg.scheduler_reserve_full_isl or policy.admit_whole_prompt
            checked = self._blocks(known) - gpu_hit_blocks if whole else new_blocks
            evictable_hits = own + (pool.num_evictable_among(hits) * pool.blocks_per_prefix if hits else 0)
            if checked + evictable_hits > pool.num_free:
                break
            if self.admission_hooks and not policy.admits(self, i, gpu_hit_blocks):
                break
            self.waiting.popleft()
            if num_prefix:
                pool.acquire(hits)
                self.shared_prefix_held[i] = list(hits)
            if own:
                pool.take_own(i)
            pool.allocate(new_blocks)
            if num_reload:
                self._reload(i, num_prefix, num_reload)
            if self.admission_hooks:
                policy.on_admit(self, i)
            self.next_prefix_to_publish[i] = num_prefix + num_reload
            self.computed_tokens[i] = hit_tokens
            # shared prefix hits, on GPU or reloaded from a tier
            self.out.prefix_hit_tokens[i] += (num_prefix + num_reload) * self.prefix_block_tokens
            self.out.recomputed_tokens[i] += self.tokens_lost_at_preemption[i] - own * cfg.block_size
            self.tokens_lost_at_preemption[i] = 0
            self.running[i] = None
            self.stepped_individually[i] = None
            if math.isnan(self.out.first_scheduled_s[i]):
                self.out.first_scheduled_s[i] = self.now
                self.num_waiting_new -= 1
                self.requests_starting += 1
            budget -= num_new
            if prefill_left is not None:
                prefill_left -= num_new
            scheduled.append((i, num_new))

    def _execute(self, scheduled: list[tuple[int, int]], decode: bool = True) -> None:
        """Run one step: the scheduled chunks and, with `decode`, the lock-step decode batch (a prefill-only step
        of _step_separate leaves it, and the decode clock step_index, where they are)."""
        batch, step = self.decoders, self.step_index
        self.recv_counter += self.recv_interval if scheduled else 1  # SGLang's recv weights: 1000 and 1
        num_dec = batch.count if decode else 0
        dec_ctx = batch.sum_context(step) if num_dec else 0
        new_tokens, kv_read, pairs = num_dec, dec_ctx, dec_ctx
        spec_seqs = spec_ctx = 0
        for i, num_new in scheduled:
            ctx = self.computed_tokens[i] + num_new
            new_tokens += num_new
            kv_read += ctx
            pairs += num_new * ctx
            if (
                self.generated_tokens[i] > 0
                and self.computed_tokens[i] == self.prompt_tokens[i] + self.generated_tokens[i] - 1
            ):
                spec_seqs, spec_ctx = spec_seqs + 1, spec_ctx + ctx
        num_seqs = num_dec + len(scheduled)
        dt = float(self.cost.step_time_s(new_tokens, num_seqs, kv_read, pairs))
        dt += self.request_overhead_s * self.requests_starting + self.reload_s_due
        self.requests_starting, self.reload_s_due = 0, 0.0
        if spec_seqs and self.spec:  # k sequential draft passes over the verifying sequences
            draft = self.draft_cost
            per_pass = (
                float(draft.step_time_s(spec_seqs, spec_seqs, spec_ctx, spec_ctx))
                if draft is not None
                else self.cfg.spec_draft_cost_s
            )
            dt += self.cfg.spec_k * per_pass
        start, self.now = self.now, self.now + dt
        self.recorder.add(start, dt, num_seqs, len(self.running), len(self.waiting), self.pool.num_active, new_tokens)
        if num_dec and self.decode_hook is not None:
            self.decode_hook(1)
        if decode:
            for i, held in batch.pop_finished(step):
                self._finish(i, held)
        join_step = step + 1 if decode else step  # the next decode step, where finished prompts join
        for i, num_new in scheduled:
            self._advance(i, num_new, join_step)
        if decode:
            self.step_index += 1
        self.decode_slots_taken = False
        if invariants.ENABLED:
            invariants.check(self)

    def _advance(self, i: int, num_new: int, join_step: int) -> None:
        """Apply one step's tokens to an individually stepped request (`join_step`: the decode step at which a
        request whose prompt this step completes joins the lock-step batch)."""
        computed, known = self.computed_tokens[i], self.prompt_tokens[i] + self.generated_tokens[i]
        if self.spec and self.generated_tokens[i] and computed == known - 1:
            accepted = self._accepted_drafts(num_new - 1)
            self.computed_tokens[i] = computed + 1 + accepted
            self.generated_tokens[i] += 1 + accepted
            # rejected draft slots go back to the pool
            self.pool.free(self._blocks(computed + num_new) - self._blocks(self.computed_tokens[i]))
        else:
            self.computed_tokens[i] = computed + num_new
            if self.prefix_sharing:
                self._publish_prefix(i)
            if self.computed_tokens[i] < known:
                return  # prefill continues next step
            self.generated_tokens[i] += 1
            if math.isnan(self.out.first_token_s[i]):
                self.out.first_token_s[i] = self.now
        if self.generated_tokens[i] >= self.output_tokens[i]:
            self._finish(i, self.computed_tokens[i])
        elif not self.spec:
            self.decoders.join(i, self.computed_tokens[i], self.generated_tokens[i], self.output_tokens[i], join_step)
            del self.stepped_individually[i]

    def _accepted_drafts(self, num_drafts: int) -> int:
        """Drafts kept: each accepted with probability alpha until the first rejection."""
        alpha = self.cfg.spec_alpha
        if num_drafts <= 0 or alpha <= 0:
            return 0
        if alpha >= 1:
            return num_drafts
        return min(num_drafts, int(self.rng.geometric(1 - alpha)) - 1)

    def _publish_prefix(self, i: int) -> None:
        full = min(self.computed_tokens[i] // self.prefix_block_tokens, self.num_cacheable_prefix[i])
        start = self.next_prefix_to_publish[i]
        if full > start:
            self._publish(i, self.prefix_ids[i], start, full)

    def _publish(self, i: int, ids, start: int, full: int) -> None:
        new = self.pool.register_all(ids, start, full)
        self.shared_prefix_held[i].extend(new)
        self.next_prefix_to_publish[i] = full
        if self.tiers is not None and not self.tiers.write_back:
            self.tiers.store(new)  # write-through: host copies as the blocks are computed (offload_tiers)

    def _publish_answer(self, i: int, tokens_held: int) -> None:
        """Sessions: the answer's full blocks join the prefix cache as the request finishes (vLLM caches every
        full block it computed; the session's next turn re-sends the answer as part of its prompt)."""
        ids = self.prefix_ids[i]
        full = min(len(ids), tokens_held // self.prefix_block_tokens)
        start = self.next_prefix_to_publish[i]
        if full > start:
            self._publish(i, ids, start, full)

    # --- runs of pure-decode steps --------------------------------------------------------------------------
    def _can_fast_forward(self) -> bool:
        return bool(self.decoders.count) and not self.stepped_individually and not self.waiting and not self.spec

    def _fast_forward(self) -> bool:
        """Advance a run of pure-decode steps at once (planner/sim/lockstep.py); False if none fits."""
        run = self._plan_run()
        if not run[1]:
            return False
        self._commit_run(*run)
        return True

    def _plan_run(self) -> tuple[list, list, list]:
        """The run of pure-decode steps from now up to the next known arrival (plan_decode_run), not yet applied."""
        batch = self.decoders
        batch.apply_caps(self.step_index)
        if self.recv_interval > 1:  # arrivals wait for the next poll: the run stops there, whatever arrives before
            to_poll = max(1, self.recv_interval - self.recv_counter)
            return plan_decode_run(batch, self.step_index, self.pool.num_free, self.now, math.inf, self.cost, to_poll)
        next_arrival = self.pending[0][0] if self.pending else math.inf
        return plan_decode_run(batch, self.step_index, self.pool.num_free, self.now, next_arrival, self.cost)

    def _commit_run(self, starts: list, dts: list, cum_blocks: list) -> None:
        """Apply the first len(dts) >= 1 steps of a planned run: blocks, step records, finishes at its last step."""
        batch, s0, m = self.decoders, self.step_index, len(dts)
        active0 = self.pool.num_active
        self.pool.allocate(int(cum_blocks[-1]))
        self.recorder.add_run(starts, dts, batch.count, len(self.running), active0, cum_blocks)
        self.recv_counter += m
        if self.decode_hook is not None:
            self.decode_hook(m)
        self.now = float(starts[-1] + dts[-1])
        self.step_index = s0 + m
        for i, held in batch.pop_finished(s0 + m - 1):
            self._finish(i, held)
        if invariants.ENABLED:
            invariants.check(self)
