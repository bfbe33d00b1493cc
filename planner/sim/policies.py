"""Each engine's scheduler as a policy object: what a request needs to start, how a prompt is chunked, whether a
started request can be preempted, and the engine's own state (reservations, SGLang's new_token_ratio).

The replica (planner/sim/simulator.py) runs vLLM V1's step loop (running requests first within the token budget,
then waiting ones in queue order, the newest running request preempted when the KV pool runs short) and asks the
policy at each decision. Sources, what each engine does, what we do and what we leave out: docs/schedulers.md.

| policy | engine | a request starts when | preempts |
|---|---|---|---|
| vllm-v1 | vLLM | its first chunk's blocks are free | the newest running (recompute) |
| guaranteed-no-evict | TensorRT-LLM (default) | its prompt + max output fit beside the reservations | never |
| max-utilization | TensorRT-LLM | its next step's blocks are free (as vLLM) | the newest started (pause) |
| sglang, sglang-lpm | SGLang | prompt + min(max_new, 4096) fit beside running × new_token_ratio | retracts the newest |
| static-slots | llama.cpp server | a slot (pool / max_num_seqs) is free | never |
| turbomind | LMDeploy TurboMind | blocks for its whole prompt are free | the newest (lowest priority) |
TensorRT-LLM's policies cut a partial prompt chunk to whole KV blocks; the others take min(left, budget).
SGLang's steps are prefill-only or decode-only, prefill first (`separate_prefill`; off with enable_mixed_chunk).

The output length the simulator knows for a request plays the role of max_tokens (max_new_tokens).
"""

from __future__ import annotations

import numpy as np

from planner.core.units import ceil_div

SGLANG_CLIP_MAX_NEW_TOKENS = 4096  # schedule_policy.py CLIP_MAX_NEW_TOKENS (SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION)
SGLANG_INIT_NEW_TOKEN_RATIO = 0.7  # server_args.py / global_config: init_new_token_ratio
SGLANG_MIN_NEW_TOKEN_RATIO = 0.7 * 0.14  # min_new_token_ratio_factor 0.14
SGLANG_DECAY_STEPS = 600  # new_token_ratio_decay_steps
SGLANG_RETRACT_DECODE_STEPS = 20  # retract_decode_steps
SGLANG_LPM_MAX_QUEUE = 128  # schedule_policy.py _determine_active_policy: lpm falls back to fcfs above 128 waiting


def trtllm_chunk_unit(cfg) -> int:
    """TensorRT-LLM's context chunk unit: tokens_per_block (one KV block), or 1 token if a block is larger than
    the step's token budget (else a chunk could never be scheduled)."""
    return cfg.block_size if cfg.block_size <= cfg.max_num_batched_tokens else 1


class Policy:
    """vLLM V1's scheduler (vllm/v1/core/sched/scheduler.py): the base every other policy adjusts."""

    name = "vllm-v1"
    engine = "vLLM"
    summary = "a request starts when its first prompt chunk fits; the newest is preempted when the KV cache runs short"
    may_preempt = True  # False: a preemption is a broken invariant (the simulator raises)
    admit_whole_prompt = False  # True: a request starts only when blocks for all its known tokens are free
    chunk_unit = 1  # a prompt chunk cut by the budget is a whole multiple of this many tokens (min(left, budget))
    # True: prompts and decodes never share a step; a step runs prompt chunks only when one can be scheduled, else
    # the decode batch (SGLang without --enable-mixed-chunk: SchedulerConfig.enable_mixed_chunk)
    separate_prefill = False

    def __init__(self, cfg):
        self.cfg = cfg

    def refused(self, prompt: np.ndarray, output: np.ndarray) -> np.ndarray:
        """Requests this engine can never start (beyond the common checks of refused_at_arrival)."""
        return np.zeros(len(prompt), dtype=bool)

    def admits(self, rep, i: int, hit_blocks: int) -> bool:
        """Beyond the blocks of its first chunk (checked by the replica): may request i start now?"""
        return True

    def on_admit(self, rep, i: int) -> None:
        pass

    def on_release(self, rep, i: int) -> None:
        pass

    def on_preempt(self, rep) -> None:
        pass

    def on_decode_steps(self, num_steps: int) -> None:
        pass

    def on_idle(self) -> None:
        pass

    def order_waiting(self, rep) -> None:
        """Reorder the waiting queue before admission (first come, first served: nothing to do)."""

    def check(self, rep) -> None:
        """The policy's own invariants (planner/sim/invariants.py calls this when checks are on)."""


class Reserving(Policy):
    """A request reserves blocks from admission to finish; it starts only if its reservation fits beside the
    running requests' reservations, so the pool never runs short and nothing is preempted."""

    may_preempt = False

    def __init__(self, cfg):
        super().__init__(cfg)
        self.reserved: dict[int, int] = {}
        self.total = 0

    def reservation(self, rep, i: int) -> int:
        raise NotImplementedError

    def admits(self, rep, i: int, hit_blocks: int) -> bool:
        return self.total + self.reservation(rep, i) <= self.cfg.num_gpu_blocks

    def on_admit(self, rep, i: int) -> None:
        blocks = self.reservation(rep, i)
        self.reserved[i] = blocks
        self.total += blocks

    def on_release(self, rep, i: int) -> None:
        self.total -= self.reserved.pop(i, 0)

    def check(self, rep) -> None:
        if set(self.reserved) != set(rep.running) or self.total != sum(self.reserved.values()):
            raise AssertionError("reservations do not match the running requests")
        if self.total > self.cfg.num_gpu_blocks:
            raise AssertionError(f"{self.total} blocks reserved in a pool of {self.cfg.num_gpu_blocks}")


class GuaranteedNoEvict(Reserving):
    """TensorRT-LLM's default capacity scheduler (capacityScheduler.cpp GuaranteedNoEvictScheduler): in-progress
    requests keep their blocks to completion reserved; a new context request starts only if its blocks to
    completion (prompt + max output) fit in what is left, and the first that does not fit stops the loop. The
    micro-batch scheduler (microBatchScheduler.cpp, FIRST_COME_FIRST_SERVED chunking) cuts a context that does
    not fit max_num_tokens to a whole number of chunk units (tokens_per_block)."""

    name = "guaranteed-no-evict"
    engine = "TensorRT-LLM"
    summary = "a request starts when its prompt + max output fit beside the others' reservations; never preempts"

    def __init__(self, cfg):
        super().__init__(cfg)
        self.chunk_unit = trtllm_chunk_unit(cfg)

    def refused(self, prompt, output):
        return -(-(prompt + output) // self.cfg.block_size) > self.cfg.num_gpu_blocks

    def reservation(self, rep, i: int) -> int:
        return ceil_div(rep.prompt_tokens[i] + rep.output_tokens[i], self.cfg.block_size)


class MaxUtilization(Policy):
    """TensorRT-LLM's MAX_UTILIZATION capacity scheduler (MaxUtilizationScheduler): every request in order needs
    only its next step's blocks; when a started request cannot get them, the last started request is paused
    (its blocks freed, recomputed later, keeping its place): vLLM V1's rule, with TensorRT-LLM's chunk units."""

    name = "max-utilization"
    engine = "TensorRT-LLM"
    summary = "a request starts when its next step fits; the newest started request is paused when short"

    def __init__(self, cfg):
        super().__init__(cfg)
        self.chunk_unit = trtllm_chunk_unit(cfg)


class StaticSlots(Reserving):
    """llama.cpp server (tools/server/server.cpp): -np slots of n_ctx / np tokens each, allocated up front; a
    request takes a free slot (here max_num_seqs slots splitting the pool), a request longer than a slot is
    refused, nothing is paged or preempted."""

    name = "static-slots"
    engine = "llama.cpp"
    summary = "one request per slot (the KV cache split evenly), longer ones refused; never preempts"

    def slot_blocks(self) -> int:
        return self.cfg.num_gpu_blocks // self.cfg.max_num_seqs

    def refused(self, prompt, output):
        return prompt + output > self.slot_blocks() * self.cfg.block_size

    def reservation(self, rep, i: int) -> int:
        return self.slot_blocks()


class SGLang(Policy):
    """SGLang's scheduler (managers/scheduler.py, schedule_policy.py PrefillAdder): a new request needs prompt +
    min(max_new, 4096) tokens below the free (and evictable) tokens minus every running request's min(remaining,
    4096) × new_token_ratio. The ratio starts at 0.7 and decays linearly to 0.7 × 0.14 over 600 decode steps
    (reset when idle); when decode runs out of memory the newest requests are retracted and the ratio is raised to
    min(1, (decoded + 20 × running) / (max_new total + 1)) (ScheduleBatch.retract_decode)."""

    name = "sglang"
    engine = "SGLang"
    summary = (
        "a request starts when its prompt + output fit beside new_token_ratio × the running requests' rest; "
        "prefill batches run first, apart from decode"
    )
    separate_prefill = True

    def __init__(self, cfg):
        super().__init__(cfg)
        self.ratio = SGLANG_INIT_NEW_TOKEN_RATIO

    def refused(self, prompt, output):  # prompt + clipped max_new must be below the whole pool
        return prompt + np.minimum(output, SGLANG_CLIP_MAX_NEW_TOKENS) >= self.cfg.num_gpu_blocks * self.cfg.block_size

    def admits(self, rep, i: int, hit_blocks: int) -> bool:
        clip = SGLANG_CLIP_MAX_NEW_TOKENS
        held_back = sum(min(rep.output_tokens[j] - rep.generated(j), clip) for j in rep.running)
        need = rep.prompt_tokens[i] - hit_blocks * self.cfg.block_size + min(rep.output_tokens[i], clip)
        return need + held_back * self.ratio < rep.pool.num_free * self.cfg.block_size

    def on_preempt(self, rep) -> None:
        decoded = sum(rep.generated(j) for j in rep.running)
        max_new = sum(rep.output_tokens[j] for j in rep.running)
        self.ratio = min(1.0, (decoded + SGLANG_RETRACT_DECODE_STEPS * len(rep.running)) / (max_new + 1))

    def on_decode_steps(self, num_steps: int) -> None:
        step = (SGLANG_INIT_NEW_TOKEN_RATIO - SGLANG_MIN_NEW_TOKEN_RATIO) / SGLANG_DECAY_STEPS
        for _ in range(num_steps):  # one subtraction per step: the same floats as the engine's loop
            self.ratio = max(SGLANG_MIN_NEW_TOKEN_RATIO, self.ratio - step)

    def on_idle(self) -> None:
        self.ratio = SGLANG_INIT_NEW_TOKEN_RATIO


class SGLangLPM(SGLang):
    """SGLang with --schedule-policy lpm: the waiting queue sorted by longest cached prefix (stable), first come
    first served again when more than 128 wait. Requests already started once (retracted) stay in front here."""

    name = "sglang-lpm"
    summary = SGLang.summary + "; longest cached prefix first"

    def order_waiting(self, rep) -> None:
        waiting = rep.waiting
        if not rep.prefix_sharing or len(waiting) < 2 or len(waiting) > SGLANG_LPM_MAX_QUEUE:
            return
        started = rep.num_waiting_started()

        def hits(i: int) -> int:
            return rep.pool.num_cached_prefix(rep.prefix_ids[i], rep.num_cacheable_prefix[i])

        queue = list(waiting)
        queue[started:] = sorted(queue[started:], key=lambda i: -hits(i))
        waiting.clear()
        waiting.extend(queue)


class TurboMind(Policy):
    """LMDeploy's TurboMind engine (src/turbomind/models/llama/SequenceManager.cc Materialize): sequences in
    priority (arrival) order each get the blocks for their whole context (CountRequiredBlocks) from free blocks,
    then from cached ones, then by preempting lower-priority (newer) active sequences, whose blocks stay cached;
    the prompt is fed in chunks of max_prefill_token_num (the step's token budget here)."""

    name = "turbomind"
    engine = "LMDeploy (TurboMind)"
    summary = "a request starts when its whole prompt's blocks are free; the newest is preempted when short"
    admit_whole_prompt = True


POLICIES: dict[str, type[Policy]] = {
    p.name: p for p in (Policy, GuaranteedNoEvict, MaxUtilization, SGLang, SGLangLPM, StaticSlots, TurboMind)
}
POLICY_NAMES = tuple(POLICIES)


def make_policy(cfg) -> Policy:
    """The policy object named by cfg.admission_policy, for one run."""
    return POLICIES[cfg.admission_policy](cfg)


def overrides(policy: Policy, hook: str) -> bool:
    """True when the policy's class replaces the base (vLLM V1) hook `hook`."""
    return getattr(type(policy), hook) is not getattr(Policy, hook)


def describe(name: str) -> str:
    """One line naming a scheduler policy and what it does (for captions)."""
    return f"{name} ({POLICIES[name].summary})"
