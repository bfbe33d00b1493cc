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

Replica's methods by concept, in the mixins it inherits: planner/sim/request_lifecycle.py (arrivals, rejection,
finishing, preemption, blocks, prefix publishing), scheduling.py (a step's running and waiting requests),
launch_holds.py (SGLang's receive polls, TensorRT-LLM's prompt holds), step_execution.py (a step's time and
tokens, runs of pure-decode steps). This module keeps `simulate`, the state and the step loop.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque

import numpy as np

from planner.core.errors import InputError
from planner.latency.perf_model import StepCost
from planner.sim import admission
from planner.sim.block_pool import BlockPool
from planner.sim.config import SchedulerConfig, scheduler_config
from planner.sim.launch_holds import LaunchHolds
from planner.sim.lockstep import DecodeBatch
from planner.sim.offload_tiers import OffloadTiers
from planner.sim.policies import make_policy, overrides
from planner.sim.records import SimResult, StepRecorder, request_records
from planner.sim.request_lifecycle import RequestLifecycle
from planner.sim.scheduling import Scheduling
from planner.sim.step_execution import StepExecution
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


class Replica(RequestLifecycle, Scheduling, LaunchHolds, StepExecution):
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
        self.balance_released_s = -math.inf  # when it last released prompts (those waiting then go unheld)
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

    # --- one scheduler step -------------------------------------------------------------------------------
    def _step(self) -> None:
        self.preempted_this_step = self.decode_slots_taken = False
        if self.separate_prefill:
            self._step_separate()
            return
        budget = self.cfg.step_token_budget - self._allocate_decode_slots()
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
        budget = self._schedule_running(self.cfg.step_token_budget, scheduled)
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
