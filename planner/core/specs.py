"""Specs: one frozen pydantic model per concept (model architecture, GPU, deployment).

Every model forbids unknown fields and checks its invariants, so a bad value is reported with its field name
(see planner.core.errors). Derived quantities (parameter counts, bytes) live in their own modules, not here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, PositiveInt, model_validator

from planner.core.bounded import BoundedModel

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Deployment(BoundedModel):
    """How the model is served: GPU count, parallelism, precision and vLLM's own engine settings.

    Parallelism uses vLLM's names and rules. One engine instance (a "replica") spans
    tensor_parallel_size × pipeline_parallel_size × data_parallel_size GPUs:
    - attention and dense layers are split over TP inside each DP rank, and each DP rank serves its own requests
      with its own KV cache (vLLM --data-parallel-size; SGLang --enable-dp-attention with attn_tp = tp / dp);
    - the MoE layers span all TP × DP GPUs: tensor-parallel by default, expert-parallel with
      enable_expert_parallel (EP size = TP × DP, vLLM docs/serving/expert_parallel_deployment.md);
    - pipeline stages each hold a contiguous share of the layers.
    SGLang's `--tp 8 --dp 8 --ep 8 --enable-dp-attention` is vLLM's `--tp 1 --dp 8 --enable-expert-parallel`.
    ep_size below TP × DP splits the MoE layers MoE-TP × EP with MoE-TP = TP × DP / EP (TensorRT-LLM's
    moe_tensor_parallel_size × moe_expert_parallel_size, SGLang's --ep-size below --tp-size): each expert is
    sliced over MoE-TP GPUs and the experts are spread over EP groups (planner.core.engine_flags has each
    engine's names).
    """

    model_config = _FROZEN

    num_gpus: PositiveInt = 1
    tensor_parallel_size: PositiveInt = 1
    pipeline_parallel_size: PositiveInt = 1
    data_parallel_size: PositiveInt = 1  # attention data-parallel ranks inside one instance
    enable_expert_parallel: bool = False  # MoE experts split over EP = TP × DP ranks instead of TP-sharded
    ep_size: PositiveInt | None = None  # EP ranks when below TP × DP (MoE-TP = TP × DP / EP); None = the default
    weights: str = "bf16"  # a weight precision id from data/precisions.yaml
    kv_cache_dtype: str = "auto"  # auto = the model's activation dtype
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    max_model_len: PositiveInt | None = None  # None = the model's max_position_embeddings
    block_size: int = Field(default=16, ge=1, le=1024)  # tokens per KV block
    max_num_seqs: PositiveInt | None = None  # None = the engine's default for the GPU (planner.core.engine_defaults)
    max_num_batched_tokens: PositiveInt | None = None  # None = the engine's default for the GPU
    enforce_eager: bool = False  # no CUDA graphs (saves their memory, costs per-step overhead)
    enable_prefix_caching: bool = True  # vLLM V1's default for generative models
    long_prefill_token_threshold: int = Field(default=0, ge=0)  # most prompt tokens per request per step; 0 = off
    # Wide expert parallelism as SGLang deploys it (planner.latency.expert_parallel): the all-to-all backend
    # (--moe-a2a-backend: none = the engine's all-gather / all-to-all, deepep = DeepEP's kernels), DeepEP's mode
    # (--deepep-mode: normal for prefill, low_latency for decode, auto = by the step), two-batch overlap
    # (--enable-two-batch-overlap), EPLB (--enable-eplb) and its redundant expert slots (--ep-num-redundant-experts).
    moe_a2a_backend: Literal["none", "deepep"] = "none"
    deepep_mode: Literal["auto", "normal", "low_latency"] = "auto"
    enable_two_batch_overlap: bool = False
    enable_eplb: bool = False
    ep_num_redundant_experts: int = Field(default=0, ge=0)
    # SGLang's --enable-mixed-chunk: prompt chunks share a forward pass with the decode batch (vLLM's mixed steps);
    # off (SGLang's default) a prefill batch runs first and alone (planner/sim/policies.py). Other engines ignore it.
    enable_mixed_chunk: bool = False
    # Scheduler holds an engine's launch may switch on (planner/sim/config.py; other engines ignore them):
    # SGLang's --scheduler-recv-interval (new requests are read every N decode steps; 1 = every step), and
    # TensorRT-LLM's batch waiting (extra-options YAML batch_wait_timeout_iters / batch_wait_max_tokens_ratio:
    # prompts wait up to that many iterations until the waiting prompts hold that share of max_num_tokens; 0 = off)
    scheduler_recv_interval: PositiveInt = 1
    # SGLang's --mem-fraction-static: the share of GPU memory for weights and the KV pool (planner.memory.engine_pool);
    # None = SGLang's own default for the GPU, TP and chunk size (server_args.py). gpu_memory_utilization is vLLM's
    mem_fraction_static: float | None = Field(default=None, gt=0, le=1)
    batch_wait_timeout_iters: int = Field(default=0, ge=0)
    batch_wait_max_tokens_ratio: float = Field(default=0.0, ge=0, le=1)
    # SGLang's --max-prefill-tokens (prompt tokens a prefill batch takes beyond its first prompt; None: no limit
    # below the chunk), chunked prefill on or off (TensorRT-LLM's enable_chunked_prefill, vLLM's
    # --no-enable-chunked-prefill; None: the engine's own), TensorRT-LLM's attention-DP balance
    # (attention_dp_config enable_balance with timeout_iters N: a rank holds its prompts up to N steps until every
    # rank has one; 0 off)
    max_prefill_tokens: PositiveInt | None = None
    enable_chunked_prefill: bool | None = None
    attention_dp_timeout_iters: int = Field(default=0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def ep_size_sets_expert_parallel(cls, values):
        """ep_size > 1 turns expert parallelism on, 1 off; ep_size = TP × DP is the default layout (stored as None)."""
        if not isinstance(values, dict) or values.get("ep_size") is None:
            return values
        values = dict(values)
        ep, moe_group = values["ep_size"], values.get("tensor_parallel_size", 1) * values.get("data_parallel_size", 1)
        if isinstance(ep, int) and isinstance(moe_group, int):
            values["enable_expert_parallel"] = ep > 1
            if ep == 1 or ep == moe_group:
                values["ep_size"] = None
        return values

    @model_validator(mode="after")
    def ep_divides_moe_group(self) -> Deployment:
        if self.ep_size is not None and (self.ep_size > self.moe_shard_size or self.moe_shard_size % self.ep_size):
            raise ValueError(
                f"ep_size must divide TP × DP = {self.moe_shard_size} (MoE-TP = TP × DP / EP), got {self.ep_size}"
            )
        return self

    @model_validator(mode="after")
    def tp_divides_gpus(self) -> Deployment:
        if self.num_gpus % self.gpus_per_replica:
            if self.gpus_per_replica == self.tensor_parallel_size:
                raise ValueError("num_gpus must be a multiple of tensor_parallel_size")
            raise ValueError(
                f"num_gpus must be a multiple of tensor × pipeline × data parallel size ({self.gpus_per_replica})"
            )
        return self

    @property
    def gpus_per_replica(self) -> int:
        """GPUs of one engine instance: TP × PP × DP."""
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.data_parallel_size

    @property
    def expert_parallel_size(self) -> int:
        """EP: ep_size if given, else TP × DP when expert parallelism is on (vLLM's rule), else 1 (TP-sharded)."""
        if self.ep_size is not None:
            return self.ep_size
        return self.tensor_parallel_size * self.data_parallel_size if self.enable_expert_parallel else 1

    @property
    def moe_tensor_parallel_size(self) -> int:
        """GPUs each expert is sliced over: MoE-TP = TP × DP / EP (TensorRT-LLM moe_tensor_parallel_size)."""
        return max(1, self.moe_shard_size // self.expert_parallel_size)

    @property
    def moe_shard_size(self) -> int:
        """GPUs one MoE layer is spread over, by expert or by tensor slice: TP × DP."""
        return self.tensor_parallel_size * self.data_parallel_size

    @property
    def num_replicas(self) -> int:
        """Independent engine instances across the GPUs."""
        return self.num_gpus // self.gpus_per_replica
