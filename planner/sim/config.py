"""What the simulator is told: the scheduler configuration and the step-cost interface (with two simple costs).

The latency model implements `StepCost` (planner.latency.perf_model, where the protocol is defined); the simulator
depends only on that protocol. ConstantStepCost and LinearStepCost are two simple costs for tests and teaching.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner.core.errors import InputError, from_validation_error
from planner.sim.offload_tiers import OffloadConfig
from planner.sim.policies import POLICY_NAMES


@dataclass(frozen=True)
class ConstantStepCost:
    """Every step takes `seconds` whatever it holds (the teaching model of primer §6; M/D/1 checks)."""

    seconds: float

    def step_time_s(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs):
        return self.seconds + 0.0 * kv_read_tokens  # keeps the array shape when called vectorised

    step_times_s = step_time_s

    def decode_step_fn(self, n: int):
        """A decode step of n sequences as a function of the contexts read (planner/sim/lockstep.py)."""
        return lambda ctx: self.seconds + 0.0 * ctx


@dataclass(frozen=True)
class LinearStepCost:
    """step = base + per_token x new tokens + per_kv_token x KV tokens read + per_attn_pair x attention pairs.

    base: weights read once per step (bytes / HBM bandwidth) + launch overhead; per_token: 2 x params FLOPs /
    peak FLOPs; per_kv_token: KV bytes per token / HBM bandwidth."""

    base_s: float
    per_token_s: float = 0.0
    per_kv_token_s: float = 0.0
    per_attn_pair_s: float = 0.0

    def step_time_s(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs):
        return (
            self.base_s
            + self.per_token_s * new_tokens
            + self.per_kv_token_s * kv_read_tokens
            + self.per_attn_pair_s * attn_pairs
        )

    step_times_s = step_time_s

    def decode_step_fn(self, n: int):
        """A decode step of n sequences as a function of the contexts read (planner/sim/lockstep.py)."""
        return lambda ctx: self.step_time_s(n, n, ctx, ctx)


def llama31_8b_h100_cost() -> LinearStepCost:
    """Rough Llama-3.1-8B BF16 on one H100-SXM (3.35 TB/s HBM, ~600 TFLOPS achievable dense BF16)."""
    return LinearStepCost(
        base_s=16.06e9 / 3.35e12 + 1e-3,  # 16 GB of weights read per step + ~1 ms launch/CPU overhead
        per_token_s=2 * 8.03e9 / 600e12,  # 2 FLOPs per parameter per token ≈ 16 GFLOP per token
        per_kv_token_s=131_072 / 3.35e12,  # 2 (K,V) x 32 layers x 8 KV heads x 128 dim x 2 B per token read
    )


LLAMA31_8B_H100_KV_TOKENS = 450_000  # ≈ (0.9 x 80 GB - 16 GB weights - activations) / 131 kB per token


ADMISSION_POLICIES = POLICY_NAMES
DECODE_IN_BUDGET = ("vllm-v1", "guaranteed-no-evict", "max-utilization")  # SchedulerConfig.running_cap


class SchedulerConfig(BaseModel):
    """vLLM-like scheduler knobs (names follow vLLM's engine arguments) plus the SLO used for goodput.

    admission_policy: the engine's scheduler (planner/sim/policies.py, docs/schedulers.md): vllm-v1 (default;
    vLLM V1 Scheduler.schedule), guaranteed-no-evict (TensorRT-LLM's default capacity scheduler: admit only if
    prompt + max output tokens fit beside every running request's reservation; never preempts),
    max-utilization (TensorRT-LLM's other capacity scheduler: pauses the newest started request when short),
    sglang / sglang-lpm (a new request needs prompt + min(max_new, 4096) tokens beside running requests'
    remaining × new_token_ratio; retracts when short; lpm: longest cached prefix first), static-slots
    (llama.cpp server: max_num_seqs slots of pool/max_num_seqs tokens each, no paging), turbomind (LMDeploy:
    a request starts when its whole prompt's blocks are free; preempts the newest)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_gpu_blocks: int = Field(gt=0, description="KV pool size in blocks (from the memory model)")
    block_size: int = Field(16, gt=0, le=1024, description="tokens per KV block")
    max_num_seqs: int = Field(256, gt=0, description="most requests running at once")
    max_num_batched_tokens: int = Field(8192, gt=0, description="token budget per step")
    # engine iterations one simulated step stands for: PP batches in flight (planner.sim.serving DecodeRunCost), each
    # with its own max_num_batched_tokens (step_token_budget)
    iterations_per_step: int = Field(1, ge=1, le=1024)
    max_model_len: int | None = Field(None, gt=0, description="longer requests (prompt + output) are rejected")
    enable_chunked_prefill: bool = True
    enable_prefix_caching: bool = True  # vLLM V1's default for generative models
    long_prefill_token_threshold: int = Field(0, ge=0, description="most prompt tokens per request per step (0 off)")
    # SGLang's --max-prefill-tokens (schedule_policy.py PrefillAdder): after the step's first prompt (which may exceed
    # it and is chunked within the token budget), a waiting prompt joins only if ALL of it fits in what is left of
    # this many tokens, less the step's decode tokens; None = no such limit (the token budget alone, as vLLM)
    max_prefill_tokens: int | None = Field(None, gt=0, description="prompt tokens per step beyond the first prompt")
    # SGLang's --enable-mixed-chunk (scheduler.py get_new_batch_prefill, mix_with_running): off by default, so a
    # prefill batch and a decode batch are separate forward passes and a prefill batch runs first whenever one can be
    # formed (get_next_batch_to_run, "Run prefill first if possible"); only the policies with separate_prefill read it
    enable_mixed_chunk: bool = False
    # TensorRT-LLM's attention-DP balance (attention_dp_config: {enable_balance: true, timeout_iters: N}; PyExecutor
    # _balance_adp_requests): a new prompt waits until every DP rank has one or N iterations have passed, unless its
    # rank has nothing decoding (speculative decodes included). The simulator runs one rank of symmetric ranks whose
    # prompts do not arrive together, so a held prompt waits the N iterations (docs/research/ttft_gaps.md, gap 1);
    # but the prompts a release leaves waiting (the step's token budget took only some) go unheld in the next steps,
    # as every rank then has one left too; 0 = off (the default)
    adp_balance_timeout_iters: int = Field(0, ge=0, description="attention-DP balance hold in steps (0 off)")
    # TensorRT-LLM's batch waiting (batch_wait_timeout_iters, batch_wait_max_tokens_ratio; PyExecutor _waiting_requests,
    # checked only without attention DP and when both prompts and decodes are scheduled): the step's prompts are held
    # until their tokens plus the decodes' reach ratio × max_num_tokens or the hold has lasted timeout iterations
    # (the counter resets when they go); 0 and 0.0 = off (the default)
    batch_wait_timeout_iters: int = Field(0, ge=0, description="most steps prompts wait to be batched (0 off)")
    batch_wait_max_tokens_ratio: float = Field(0.0, ge=0.0, le=1.0, description="token share that ends the wait")
    # SGLang's --scheduler-recv-interval N (managers/scheduler_recv_skipper.py SchedulerRecvSkipper): the scheduler
    # takes new requests off its socket only when a counter reaches N; each decode step adds 1, a step with prompt
    # tokens adds 1000 and an idle loop polls at once, so while only decodes run an arrival waits for the next
    # multiple of N decode steps (about N / 2 on average); 1 = every step (the default)
    scheduler_recv_interval: int = Field(1, ge=1, description="decode steps between polls for new requests")
    scheduler_reserve_full_isl: bool = False  # admit only when the whole known sequence fits (vLLM PR #37307)
    admission_policy: Literal[
        "vllm-v1", "guaranteed-no-evict", "max-utilization", "sglang", "sglang-lpm", "static-slots", "turbomind"
    ] = "vllm-v1"
    max_blocks_per_request: int | None = Field(None, gt=0, description="sliding-window cap on blocks held")
    max_queue: int | None = Field(
        None, ge=0, description="most requests left waiting after a step (0 = admit only what can start now)"
    )
    spec_k: int = Field(0, ge=0, le=32, description="draft tokens per verification step (0 = off)")
    spec_alpha: float = Field(0.0, ge=0.0, le=1.0, description="per-token draft acceptance rate")
    spec_draft_cost_s: float = Field(0.0, ge=0.0, description="seconds per draft-model pass (without a draft StepCost)")
    # request path outside the engine (frontend, tokenisation, hand-off, first token streamed): added to each request's
    # TTFT and end-to-end time as a client measures them; the engine's steps do not pay it (PerfModel's profile)
    frontend_latency_s: float = Field(0.0, ge=0.0, description="client-side latency outside the engine, per request")
    # decode steps the output stream runs behind the GPU (EfficiencyProfile.first_token_lag_steps): TTFT and
    # end-to-end as a client measures them grow by this many of the request's TPOT
    first_token_lag_steps: float = Field(0.0, ge=0.0, description="steps the output stream lags the GPU")
    slo_ttft_s: float | None = Field(None, gt=0)
    slo_tpot_s: float | None = Field(None, gt=0)
    offload: OffloadConfig | None = None  # KV offload tiers (planner/sim/offload_tiers.py); None = off

    @model_validator(mode="after")
    def budget_covers_max_num_seqs(self) -> SchedulerConfig:
        # vLLM's own refusal (vllm-project/vllm@f0de1a60 vllm/config/scheduler.py SchedulerConfig._verify_args):
        # every running request must be able to decode one token per step. TensorRT-LLM, SGLang, LMDeploy and
        # llama.cpp start with a smaller budget (running_cap says what they then run)
        if self.admission_policy == "vllm-v1" and self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError(
                "max_num_batched_tokens must be >= max_num_seqs (vLLM refuses to start otherwise: raise "
                "--max-num-batched-tokens or lower --max-num-seqs)"
            )
        return self

    @property
    def running_cap(self) -> int:
        """Requests running at once: max_num_seqs, and for the schedulers whose iterations carry every decode token
        within the token budget (vLLM V1, TensorRT-LLM's) at most that budget. TensorRT-LLM accepts max_num_tokens
        below max_batch_size and then runs at most max_num_tokens generation requests an iteration (published
        configs: 1,536 tokens with 2,048 sequences), which is what this cap prices (the others wait in flight, here
        in the queue). SGLang, LMDeploy and llama.cpp run their decode batch outside the prefill budget."""
        if self.admission_policy in DECODE_IN_BUDGET:
            return min(self.max_num_seqs, self.step_token_budget)
        return self.max_num_seqs

    @property
    def step_token_budget(self) -> int:
        """Prompt and decode tokens one simulated step may schedule: max_num_batched_tokens per iteration."""
        return self.max_num_batched_tokens * self.iterations_per_step

    @property
    def kv_pool_tokens(self) -> int:
        return self.num_gpu_blocks * self.block_size

    @property
    def spec_enabled(self) -> bool:
        return self.spec_k > 0


def scheduler_config(config: SchedulerConfig | dict | None = None, **kwargs) -> SchedulerConfig:
    """Build a SchedulerConfig from a dict or keywords; bad input raises InputError naming the field."""
    if isinstance(config, SchedulerConfig) and not kwargs:
        return config
    data = dict(config.model_dump() if isinstance(config, SchedulerConfig) else (config or {}), **kwargs)
    try:
        return SchedulerConfig(**data)
    except ValidationError as err:
        first = err.errors()[0]
        if not first.get("loc"):  # a cross-field check: name the field its message starts with
            msg = first.get("msg", "").removeprefix("Value error, ")
            raise InputError(msg.split()[0], msg) from None
        raise from_validation_error(err) from None
    except TypeError as err:
        raise InputError("config", str(err)) from None
