"""Specs: one frozen pydantic model per concept (model architecture, GPU, deployment).

Every model forbids unknown fields and checks its invariants, so a bad value is reported with its field name
(see planner.core.errors). Derived quantities (parameter counts, bytes) live in their own modules, not here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, PositiveFloat, PositiveInt, model_validator

from planner.core.bounded import BoundedModel
from planner.core.safe_text import SafeName

_FROZEN = ConfigDict(frozen=True, extra="forbid")
# A part without its own microbenchmark takes the median of its vendor's measured parts in data/gpus.yaml (a test
# recomputes these medians from the file): stream bandwidth and 16-bit large-GEMM fractions of the datasheet.
ACHIEVED_DEFAULTS = {"nvidia": {"bandwidth": 0.885, "matmul": 0.8}, "amd": {"bandwidth": 0.77, "matmul": 0.51}}


LayerKind = Literal["full", "sliding", "chunked", "linear", "mamba"]
ATTENTION_KINDS = ("full", "sliding", "chunked")  # kinds that cache keys/values per token


class LayerGroup(BoundedModel):
    """Token-mixing layers of one kind and one geometry (vLLM builds one KV-cache spec per such group).

    Attention kinds (full, sliding window, chunked local) cache per token: K and V for each KV head, or MLA's latent
    (one vector shared by all heads), plus DeepSeek Sparse Attention's indexer key. Linear attention (Gated DeltaNet,
    KDA) and Mamba-2 hold a fixed state per request: a short convolution window plus a recurrent (SSM) matrix.
    """

    model_config = _FROZEN

    kind: LayerKind
    count: PositiveInt
    window: PositiveInt | None = None  # sliding: tokens kept; chunked: attention chunk size
    sinks: bool = False  # learned attention-sink logits per head (gpt-oss, MiMo SWA): no cached tokens
    # attention geometry (also what the projections' parameters depend on)
    num_heads: int = Field(default=0, ge=0)  # query heads
    num_kv_heads: int = Field(default=0, ge=0)
    head_dim: int = Field(default=0, ge=0)  # query/key head dim
    v_head_dim: int = Field(default=0, ge=0)  # 0 = head_dim
    kv_shared: bool = False  # K = V (Gemma-4 global layers, DeepSeek-V4): one tensor cached
    output_gate: bool = False  # Qwen3-Next/3.5: q_proj also emits a sigmoid gate per head (2x its width)
    latent_dim: int = Field(default=0, ge=0)  # MLA: kv_lora_rank + qk_rope_head_dim values per token, all heads
    compress_ratio: int = Field(default=1, ge=1)  # DeepSeek-V4: one cached entry per `compress_ratio` tokens
    indexer_head_dim: int = Field(default=0, ge=0)  # DSA lightning indexer: one key of this size per token
    indexer_heads: int = Field(default=0, ge=0)  # the indexer's query heads (parameters only)
    shares_layers: bool = False  # a second cache branch of layers counted in another group (DeepSeek-V4)
    # recurrent state per request (linear attention, Mamba-2): TP splits the heads and the conv channels
    state_heads: int = Field(default=0, ge=0)  # value heads (GDN) / Mamba heads
    state_key_dim: int = Field(default=0, ge=0)  # key head dim (GDN) / ssm_state_size (Mamba-2)
    state_value_dim: int = Field(default=0, ge=0)  # value head dim (GDN) / mamba_head_dim
    conv_channels: int = Field(default=0, ge=0)  # channels of the causal conv1d
    conv_kernel: int = Field(default=0, ge=0)  # conv state keeps kernel − 1 columns
    state_dtype_bytes: float | None = Field(default=None, gt=0)  # recurrent state dtype (fp32 = 4); None = KV dtype
    num_groups: int = Field(default=0, ge=0)  # key heads (GDN) / n_groups of B and C (Mamba-2), for parameters

    @property
    def caches_tokens(self) -> bool:
        return self.kind in ATTENTION_KINDS

    @property
    def label(self) -> str:
        return {
            "full": "full attention",
            "sliding": f"sliding window {self.window}",
            "chunked": f"chunked attention {self.window}",
            "linear": "linear attention",
            "mamba": "Mamba-2",
        }[self.kind]


class ModelSpec(BoundedModel):
    """A decoder-only transformer's architecture, as far as memory and FLOPs depend on it."""

    model_config = _FROZEN

    name: SafeName = Field(min_length=1)  # shown in captions and exports: Markdown/HTML/formula characters dropped
    model_type: str = "llama"
    hidden_size: PositiveInt
    num_layers: PositiveInt
    num_attention_heads: PositiveInt
    num_kv_heads: PositiveInt
    head_dim: PositiveInt
    intermediate_size: PositiveInt
    vocab_size: PositiveInt
    max_position_embeddings: PositiveInt = 4096
    tie_word_embeddings: bool = False
    mlp_kind: Literal["gated", "plain"] = "gated"  # gated: gate+up+down (SwiGLU/GeGLU); plain: up+down
    norm_kind: Literal["rms", "layer"] = "rms"  # layer norm carries a bias vector too
    norms_per_layer: int = Field(default=2, ge=0)
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False  # Qwen3: RMSNorm over q and k heads (head_dim weights each)
    torch_dtype: str = "bfloat16"
    # Sliding-window attention: the first `num_sliding_layers` layers (by count) cache at most `sliding_window` tokens.
    sliding_window: PositiveInt | None = None
    num_sliding_layers: int = Field(default=0, ge=0)
    # Mixture of experts: routed experts of width moe_intermediate_size, plus always-on shared experts.
    num_experts: int = Field(default=0, ge=0)
    num_experts_per_tok: int = Field(default=0, ge=0)
    moe_intermediate_size: int = Field(default=0, ge=0)
    num_shared_experts: int = Field(default=0, ge=0)
    num_dense_layers: int = Field(default=0, ge=0)  # MoE models whose first layers keep a dense MLP
    # Group-limited routing (DeepSeek-V3 n_group / topk_group): experts in groups, a token's top-k drawn from its
    # best topk_group groups (0 = not group-limited); DeepEP's normal kernels send a token once per node it reaches.
    num_expert_groups: int = Field(default=0, ge=0)
    topk_expert_groups: int = Field(default=0, ge=0)
    # Multi-head latent attention (DeepSeek-V2): the cache holds kv_lora_rank + qk_rope_head_dim values per layer.
    kv_lora_rank: int = Field(default=0, ge=0)
    q_lora_rank: int = Field(default=0, ge=0)
    qk_rope_head_dim: int = Field(default=0, ge=0)
    qk_nope_head_dim: int = Field(default=0, ge=0)
    v_head_dim: int = Field(default=0, ge=0)
    # The checkpoint's own weight format (a data/precisions.yaml id) from config.json's quantization_config, e.g.
    # DeepSeek-V3 ships FP8 (block-scaled e4m3): the preset's default precision. None = the 16-bit torch_dtype.
    quantized_weights: str | None = None
    # Per-group default weight formats of the checkpoint (e.g. gpt-oss: {"experts": "mxfp4"}, the rest 16-bit);
    # tensor groups: experts, attention, dense, vocabulary. Empty = quantized_weights (or 16-bit) everywhere.
    quantized_groups: dict[str, str] = Field(default_factory=dict)
    kv_cache_quant: str | None = None  # a KV dtype the checkpoint ships scales for (hf_quant_config.json)
    # Architectures beyond one layer kind (planner.core.hf_config reads them; empty = all layers as above):
    layer_groups: tuple[LayerGroup, ...] = ()  # token-mixing layers by kind; counts sum to the mixer layers
    num_mlp_layers: int | None = Field(default=None, ge=0)  # MLP blocks (Nemotron-H: not one per layer); None = layers
    dense_intermediate_size: int = Field(default=0, ge=0)  # an MoE model's dense-layer width (0 = intermediate_size)
    shared_expert_intermediate_size: int = Field(default=0, ge=0)  # 0 = moe_intermediate_size
    moe_latent_size: int = Field(default=0, ge=0)  # Nemotron-3: experts run in a smaller latent width
    dense_mlp_in_moe_layers: bool = False  # Gemma-4: every MoE layer also has a dense MLP
    router_bias: bool = False
    num_mtp_layers: int = Field(default=0, ge=0)  # multi-token-prediction modules (a decoder layer + projection)
    mtp_shares_vocabulary: bool = True  # False: the checkpoint stores the MTP module's own embedding and head
    vision_params: int = Field(default=0, ge=0)  # vision tower + projector the checkpoint carries
    hyper_connections: int = Field(default=0, ge=0)  # DeepSeek-V4 hc_mult: residual streams per token
    o_lora_rank: int = Field(default=0, ge=0)  # DeepSeek-V4: grouped low-rank output projection
    o_groups: int = Field(default=0, ge=0)

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def is_hybrid(self) -> bool:
        """More than one token-mixing kind (or a state-holding kind): vLLM's hybrid KV cache manager applies."""
        return len({g.kind for g in self.layer_groups}) > 1 or any(not g.caches_tokens for g in self.layer_groups)

    @property
    def mlp_layers(self) -> int:
        return self.num_layers if self.num_mlp_layers is None else self.num_mlp_layers

    @model_validator(mode="after")
    def kv_heads_divide_query_heads(self) -> ModelSpec:
        if self.num_kv_heads > self.num_attention_heads:
            raise ValueError("num_kv_heads must not exceed num_attention_heads")
        if self.num_attention_heads % self.num_kv_heads:
            raise ValueError("num_attention_heads must be a multiple of num_kv_heads")
        return self

    @model_validator(mode="after")
    def experts_are_consistent(self) -> ModelSpec:
        if self.is_moe:
            if not 0 < self.num_experts_per_tok <= self.num_experts:
                raise ValueError("num_experts_per_tok must be between 1 and num_experts")
            if self.moe_intermediate_size <= 0:
                raise ValueError("moe_intermediate_size must be positive for a mixture-of-experts model")
            if self.num_dense_layers > self.mlp_layers:
                raise ValueError("num_dense_layers must not exceed num_layers")
        return self

    @model_validator(mode="after")
    def sliding_layers_within_model(self) -> ModelSpec:
        if self.num_sliding_layers > self.num_layers:
            raise ValueError("num_sliding_layers must not exceed num_layers")
        if self.num_sliding_layers and self.sliding_window is None:
            raise ValueError("num_sliding_layers needs a sliding_window")
        return self


class GPUSpec(BoundedModel):
    """One accelerator as catalogued in data/gpus.yaml (every figure sourced there)."""

    model_config = _FROZEN

    id: str = Field(min_length=1)
    name: str
    vendor: Literal["nvidia", "amd", "custom"]
    family: str
    memory_gb: PositiveFloat  # marketed memory, in the vendor's GB
    usable_memory_bytes: PositiveInt  # total bytes CUDA/ROCm reports
    tflops_fp16: PositiveFloat
    tflops_bf16: PositiveFloat | None = None
    tflops_fp8: PositiveFloat | None = None
    tflops_int8: PositiveFloat | None = None
    tflops_fp4: PositiveFloat | None = None  # dense FP4 tensor cores (Blackwell NVFP4/MXFP4, CDNA4 MXFP4)
    hbm_bandwidth_gb_s: PositiveFloat
    interconnect: str = "PCIe"
    interconnect_bandwidth_gb_s: PositiveFloat = 32.0
    scale_out_bandwidth_gb_s: PositiveFloat | None = None  # per-GPU NIC between nodes, one direction
    gpus_per_node: PositiveInt = 8  # GPUs on one NVLink / Infinity Fabric board
    # GPUs in one NVLink scale-up domain: 72 on a GB200/GB300 NVL72 rack (4 per host); None in the file = gpus_per_node
    nvlink_domain_gpus: PositiveInt | None = None  # always set: nvlink_domain_defaults_to_node
    usd_per_hour: float = Field(default=0.0, ge=0)
    price_date: str = ""
    # what kernels can move per streaming multiprocessor (AMD: compute unit) per clock bounds latency-bound kernels
    sm_count: PositiveInt | None = None
    boost_clock_mhz: PositiveFloat | None = None
    tflops_fp16_acc16: PositiveFloat | None = None  # GeForce: FP16 tensor math with FP16 accumulate (2x FP32-acc.)
    # measured on the part itself (stream-type copy/triad, large-GEMM sweeps), as a fraction of the datasheet figure;
    # absent = the median of the measured parts of the same vendor (ACHIEVED_DEFAULTS, status "estimated")
    achieved_bandwidth_fraction: float | None = Field(default=None, gt=0, le=1)
    achieved_matmul_fraction: dict[str, float] = Field(default_factory=dict)  # compute dtype -> fraction
    source: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def nvlink_domain_defaults_to_node(cls, data):
        if isinstance(data, dict) and data.get("nvlink_domain_gpus") is None:
            data = {**data, "nvlink_domain_gpus": data.get("gpus_per_node", 8)}
        return data

    @property
    def marketed_bytes(self) -> float:
        """Marketed memory in bytes, read as decimal GB (the primer's convention for textbook sums)."""
        return self.memory_gb * 1e9

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.hbm_bandwidth_gb_s * 1e9

    @property
    def interconnect_bytes_per_s(self) -> float:
        return self.interconnect_bandwidth_gb_s * 1e9

    @property
    def sm_clocks_per_s(self) -> float | None:
        """Streaming multiprocessors (compute units) x boost clock: SM-cycles per second, None if not catalogued."""
        return self.sm_count * self.boost_clock_mhz * 1e6 if self.sm_count and self.boost_clock_mhz else None

    def achieved_bandwidth(self) -> tuple[float, bool]:
        """(fraction of the datasheet bandwidth a stream benchmark reaches, measured on this part?)."""
        if self.achieved_bandwidth_fraction:
            return self.achieved_bandwidth_fraction, True
        return ACHIEVED_DEFAULTS[self._vendor_key]["bandwidth"], False

    def achieved_matmul(self, dtype: str) -> tuple[float, bool]:
        """(fraction of the datasheet dense FLOP/s a large-GEMM sweep reaches in `dtype`, measured?); a dtype without
        its own measurement takes the part's 16-bit figure."""
        for key in (dtype, "bf16", "fp16"):
            if key in self.achieved_matmul_fraction:
                return self.achieved_matmul_fraction[key], True
        return ACHIEVED_DEFAULTS[self._vendor_key]["matmul"], False

    @property
    def _vendor_key(self) -> str:
        return self.vendor if self.vendor in ACHIEVED_DEFAULTS else "nvidia"

    def peak_flops(self, dtype: str) -> float | None:
        """Dense tensor-core FLOP/s for a compute dtype, or None where the GPU lacks it."""
        tflops = {
            "fp32": self.tflops_fp16 / 2 if self.tflops_fp16 else None,
            "fp16": self.tflops_fp16,
            "bf16": self.tflops_bf16,
            "fp8": self.tflops_fp8,
            "int8": self.tflops_int8,
            "fp4": self.tflops_fp4,
        }.get(dtype)
        return tflops * 1e12 if tflops else None


def custom_gpu(memory_gb: float, like: GPUSpec | None = None) -> GPUSpec:
    """A GPU of `memory_gb` decimal GB (both marketed and usable), other figures borrowed from `like`."""
    base = (
        like.model_dump()
        if like
        else {
            "family": "custom",
            "tflops_fp16": 312.0,
            "tflops_bf16": 312.0,
            "hbm_bandwidth_gb_s": 2039.0,
            "source": {"spec": "compute and bandwidth borrowed from A100-80GB as a placeholder"},
        }
    )
    base.update(
        id=f"custom-{memory_gb:g}GB",
        name=f"Custom GPU ({memory_gb:g} GB)",
        vendor="custom",
        memory_gb=memory_gb,
        usable_memory_bytes=int(round(memory_gb * 1e9)),
        usd_per_hour=base.get("usd_per_hour", 0.0),
    )
    return GPUSpec(**base)


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
