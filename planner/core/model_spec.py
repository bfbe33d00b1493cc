"""A model's architecture as frozen pydantic models: its token-mixing layer groups (`LayerGroup`) and `ModelSpec`
(planner.core.specs module note)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt, model_validator

from planner.core.bounded import BoundedModel
from planner.core.safe_text import SafeName
from planner.core.specs import _FROZEN

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
    # Stored bits per weight (scales and zero points included) of each module class the checkpoint quantizes, keyed
    # as planner.core.params' breakdown (attention, mlp_dense, experts_routed, experts_shared, lm_head); read from a
    # compressed-tensors quantization_config (planner.core.compressed_tensors). Absent classes: the 16-bit dtype.
    module_bits: dict[str, float] = Field(default_factory=dict)
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
