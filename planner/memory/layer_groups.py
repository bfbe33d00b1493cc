"""Bytes per layer kind, and the pool as vLLM's hybrid KV cache manager divides it.

Per layer, on one GPU (tp = tensor-parallel degree):
    attention (GQA)     KV bytes per token = max(1, KV heads / tp) × (K dim + V dim) × KV bytes   (K = V: K dim only)
    MLA                 latent (kv_lora_rank + rope) × KV bytes, whole on every TP rank
    DSA indexer         + index_head_dim FP8 values + one FP32 scale per 128 (132 bytes for V3.2), per token
    DeepSeek-V4         entries per token = 1 / compress_ratio (a 128-token window is its own group)
    sliding window      holds window tokens (vLLM: window − 1 + the chunk being prefilled, + 1 block)
    chunked (Llama-4)   holds the current chunk (vLLM: chunk + the tokens being prefilled)
    linear / Mamba-2    state per request = conv (channels / tp × (kernel − 1) × 2 bytes)
                                          + recurrent (heads / tp × key dim × value dim × state dtype bytes)

vLLM (vllm/v1/kv_cache_interface.py @ 001cabc1be16a59a70d720ed61a13b678c060a18): FullAttentionSpec holds
cdiv(max_model_len, block) pages, SlidingWindowSpec (cdiv(min(window − 1 + max_num_batched_tokens, max_model_len),
block) + 1), ChunkedLocalAttentionSpec cdiv(min(chunk + max_num_batched_tokens, max_model_len), block), MambaSpec one
page per request (mamba_cache_mode "none"). vllm/v1/core/kv_cache_utils.py @ bbf906a88ba1a39104884c88c9811a4f968e4659
(_get_kv_cache_groups_uniform_page_size): layers of one spec are split into groups of `group_size` layers (the
smallest layer count, or the largest when the largest is < 1.25 × the smallest), padded; every group shares the
same pages, so one block costs page × group_size bytes, num_blocks = pool // that, and a request needs the sum over
groups of its blocks (get_max_concurrency_for_kv_cache_config). Page sizes are unified first: attention block sizes
grow so an attention page is at least a Mamba state page, which is padded to it (HybridAttentionMambaModelConfig,
block size a multiple of 16); smaller attention pages multiply their block size up to the largest page.
"GPU KV cache size" in vLLM 0.10–0.19 logs num_blocks // groups × the smallest block size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.core.model_spec import LayerGroup, ModelSpec
from planner.core.units import ceil_div

ACT_BYTES = 2  # conv state and default recurrent state: the model's 16-bit dtype (vLLM mamba_cache_dtype "auto")
INDEXER_SCALE_BLOCK = 128  # vLLM DeepseekV32IndexerCache: index_head_dim FP8 + 4-byte scale per 128 values
ATTENTION_BLOCK_ALIGN = 16  # vLLM rounds the hybrid attention block size to a multiple of the kernel block size


def kv_bytes_per_token_per_layer(g: LayerGroup, kv_bytes: float, tp: int = 1) -> float:
    """Bytes one token adds to one layer of a token-caching group on one GPU (0 for state-holding kinds)."""
    if not g.caches_tokens:
        return 0.0
    indexer = g.indexer_head_dim * (1 + 4 / INDEXER_SCALE_BLOCK) if g.indexer_head_dim else 0.0
    if g.latent_dim:
        return (g.latent_dim * kv_bytes + indexer) / g.compress_ratio
    k_dim, v_dim = g.head_dim, 0 if g.kv_shared else (g.v_head_dim or g.head_dim)
    return -(-g.num_kv_heads // tp) * (k_dim + v_dim) * kv_bytes + indexer  # ceil: replicated past TP = KV heads


def state_bytes_per_layer(g: LayerGroup, tp: int = 1) -> float:
    """Fixed bytes one request holds in one linear-attention or Mamba-2 layer on one GPU (0 for attention)."""
    if g.caches_tokens:
        return 0.0
    conv = g.conv_channels / tp * (g.conv_kernel - 1) * ACT_BYTES
    recurrent = g.state_heads / tp * g.state_key_dim * g.state_value_dim * (g.state_dtype_bytes or ACT_BYTES)
    return conv + recurrent


def tokens_held(g: LayerGroup, tokens: int) -> int:
    """Tokens a request of `tokens` keeps in a layer of `g`: all, the window, or the current chunk (textbook); none
    in a state-holding layer."""
    if not g.caches_tokens:
        return 0
    if g.kind in ("sliding", "chunked") and g.window:
        return min(tokens, g.window)
    return tokens


@dataclass(frozen=True)
class GroupBytes:
    """One layer kind of the model on one GPU: what it costs per token and per request."""

    kind: str
    label: str
    layers: int
    kv_bytes_per_token: float  # all layers of the group
    state_bytes_per_request: float  # all layers of the group
    tokens_held: int  # of a request of the given context
    bytes_per_request: float  # at the given context

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def group_bytes(model: ModelSpec, kv_bytes: float, tokens: int, tp: int = 1) -> list[GroupBytes]:
    """Per layer kind: KV bytes per token, state bytes per request, and bytes one request of `tokens` holds."""
    out = []
    for g in model.layer_groups:
        per_token = g.count * kv_bytes_per_token_per_layer(g, kv_bytes, tp)
        state = g.count * state_bytes_per_layer(g, tp)
        held = tokens_held(g, tokens)
        out.append(GroupBytes(g.kind, g.label, g.count, per_token, state, held, per_token * held + state))
    return out


def kv_bytes_per_token(model: ModelSpec, kv_bytes: float, tp: int = 1) -> float:
    """KV bytes one token adds across the token-caching layers (before windows cap it)."""
    return sum(g.count * kv_bytes_per_token_per_layer(g, kv_bytes, tp) for g in model.layer_groups)


def state_bytes_per_request(model: ModelSpec, tp: int = 1) -> float:
    """Fixed recurrent-state bytes per request across the linear-attention and Mamba layers."""
    return sum(g.count * state_bytes_per_layer(g, tp) for g in model.layer_groups)


def bytes_per_request(model: ModelSpec, kv_bytes: float, tokens: int, tp: int = 1) -> float:
    """All cache bytes one request of `tokens` holds: windows capped, state added (textbook, no block rounding)."""
    return sum(gb.bytes_per_request for gb in group_bytes(model, kv_bytes, tokens, tp))


# ---- vLLM's hybrid allocator -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheSpec:
    """One vLLM KV-cache spec after page-size unification: its layers, block size and page bytes per layer."""

    kind: str
    layers: int
    block_size: int  # tokens per page (state kinds: 1 page per request)
    page_bytes: float
    window: int | None


@dataclass(frozen=True)
class HybridPool:
    """The pool of one GPU as vLLM's hybrid manager lays it out."""

    specs: tuple[CacheSpec, ...]
    group_size: int  # layers per KV-cache group
    num_groups: int  # KV-cache groups (per spec: ceil(layers / group_size))
    page_bytes: float  # unified page size
    num_blocks: int
    kv_cache_tokens: int  # vLLM 0.10-0.19 "GPU KV cache size": num_blocks // groups × smallest block size
    state_pages: int = 1  # pages per request per state group: 1 (mamba_cache_mode "none"), 2 ("align")

    def blocks_per_request(self, tokens: int, max_num_batched_tokens: int, max_model_len: int) -> int:
        """Blocks (of all groups) a request of `tokens` holds (vLLM's per-spec max_memory_usage, capped at tokens)."""
        total = 0
        for s in self.specs:
            groups = ceil_div(s.layers, self.group_size)
            if s.kind in ("linear", "mamba"):
                per_group = self.state_pages
            else:
                per_group = ceil_div(tokens, s.block_size)
                if s.kind == "sliding":
                    cap = ceil_div(min(s.window - 1 + max_num_batched_tokens, max_model_len), s.block_size) + 1
                    per_group = min(per_group, cap)
                elif s.kind == "chunked":
                    cap = ceil_div(min(s.window + max_num_batched_tokens, max_model_len), s.block_size)
                    per_group = min(per_group, cap)
            total += groups * per_group
        return total

    def state_blocks_per_request(self) -> int:
        groups = sum(ceil_div(s.layers, self.group_size) for s in self.specs if s.kind in ("linear", "mamba"))
        return groups * self.state_pages


def _specs(model: ModelSpec, kv_bytes: float, tp: int, block_size: int) -> list[CacheSpec]:
    specs = []
    for g in model.layer_groups:
        if g.caches_tokens:
            page = kv_bytes_per_token_per_layer(g, kv_bytes, tp) * block_size
            specs.append(CacheSpec(g.kind, g.count, block_size, page, g.window))
        else:
            specs.append(CacheSpec(g.kind, g.count, 1, state_bytes_per_layer(g, tp), None))
    attention = [s for s in specs if s.kind not in ("linear", "mamba")]
    states = [s for s in specs if s.kind in ("linear", "mamba")]
    if states and attention:  # attention block grows until its page holds the largest state page
        per_token = max(s.page_bytes / s.block_size for s in attention)
        need = max(s.page_bytes for s in states)
        block = ATTENTION_BLOCK_ALIGN * ceil_div(math.ceil(need), math.ceil(ATTENTION_BLOCK_ALIGN * per_token))
        block = max(block, block_size)
        attention = [
            CacheSpec(s.kind, s.layers, block, s.page_bytes / s.block_size * block, s.window) for s in attention
        ]
    page = max(s.page_bytes for s in attention + states)
    # smaller attention pages grow their block size up to the largest page; state pages are padded to it
    unified = [
        CacheSpec(s.kind, s.layers, max(1, round(s.block_size * page / s.page_bytes)), page, s.window)
        for s in attention
    ]
    return unified + [CacheSpec(s.kind, s.layers, 1, page, None) for s in states]


def hybrid_pool(
    model: ModelSpec, kv_bytes: float, pool_bytes: float, tp: int = 1, block_size: int = 16, state_pages: int = 1
) -> HybridPool:
    """vLLM's hybrid layout of `pool_bytes` on one GPU (module note). `state_pages`: MambaSpec.max_memory_usage_bytes
    holds one page per request with mamba_cache_mode "none", two with "align" (prefix caching on a hybrid model:
    the running state and the last block-aligned one), + the speculative blocks."""
    specs = _specs(model, kv_bytes, tp, block_size)
    counts = [s.layers for s in specs]
    group_size = min(counts)
    if max(counts) < 1.25 * min(counts):
        group_size = max(counts)
    num_groups = sum(ceil_div(c, group_size) for c in counts)
    page = specs[0].page_bytes
    blocks = max(0, int(pool_bytes // (page * group_size)))
    smallest_block = (
        min(s.block_size for s in specs if s.kind not in ("linear", "mamba"))
        if any(s.kind not in ("linear", "mamba") for s in specs)
        else 1
    )
    return HybridPool(
        specs=tuple(specs),
        group_size=group_size,
        num_groups=num_groups,
        page_bytes=page,
        num_blocks=blocks,
        kv_cache_tokens=blocks // num_groups * smallest_block,
        state_pages=state_pages,
    )


def architecture_summary(model: ModelSpec) -> str:
    """One line: "MoE 512 experts, 10 active · 45 of 60 layers linear attention · MTP 1"."""
    parts = []
    if model.is_moe:
        shared = f" + {model.num_shared_experts} shared" if model.num_shared_experts else ""
        parts.append(f"MoE {model.num_experts} experts, {model.num_experts_per_tok} active{shared}")
    else:
        parts.append("dense")
    groups = [g for g in model.layer_groups if not g.shares_layers]
    total = sum(g.count for g in groups)
    if groups and len(groups) > 1:
        minority = sorted(groups, key=lambda g: -g.count)
        parts.append(" + ".join(f"{g.count} {g.label}" for g in minority) + f" of {total} layers")
    elif groups:
        parts.append(f"{groups[0].label}{' (MLA + sparse indexer)' if groups[0].indexer_head_dim else ''}")
    elif model.is_mla:
        parts.append("MLA")
    compressed = [g for g in model.layer_groups if g.shares_layers]
    if compressed:  # DeepSeek-V4: compressed entries beside every layer's window
        parts.append(" + ".join(f"{g.count} layers 1/{g.compress_ratio} compressed" for g in compressed))
    elif model.num_sliding_layers:
        parts.append(f"{model.num_sliding_layers} of {model.num_layers} layers sliding window {model.sliding_window}")
    else:
        parts.append(f"{model.num_layers} layers, GQA {model.num_attention_heads}/{model.num_kv_heads}")
    if model.num_mtp_layers:
        parts.append(f"MTP {model.num_mtp_layers}")
    if model.vision_params:
        parts.append(f"vision {model.vision_params / 1e9:.2f} B")
    return " · ".join(parts)


# ---- the limit that binds --------------------------------------------------------------------------------------

BINDING_LIMITS = ("max_num_seqs", "kv_tokens", "state_slots", "weights")


def binding_limit(max_num_seqs: int, pool_requests: int, pool_limit: str, fits: bool) -> tuple[str, int]:
    """(which limit binds, requests it allows per DP rank): the scheduler's max_num_seqs, or the pool (KV tokens or
    state slots), whichever is smaller; "weights" when the weights leave no pool."""
    if not fits:
        return "weights", 0
    if max_num_seqs <= pool_requests:
        return "max_num_seqs", max_num_seqs
    return pool_limit, pool_requests


# ---- SGLang: a separate state pool -----------------------------------------------------------------------------

SGLANG_MAMBA_FULL_MEMORY_RATIO = 0.9  # server_args.mamba_full_memory_ratio default
SGLANG_STATE_SLOTS_PER_REQUEST = 3  # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO with the radix cache on


@dataclass(frozen=True)
class SglangHybridPool:
    """SGLang's split of the memory left after weights (model_runner_kv_cache_mixin.py @ 001ccef0072a4537d4ec6bdd50a7
    3e6feb2c907d, handle_max_mamba_cache / init_memory): the state pool takes ratio / (1 + ratio) of it
    (mamba_full_memory_ratio, 0.9), the full-attention KV pool the rest; max_running_requests is capped at
    state slots // 3 with the radix cache on (a running request, its cached prefix state, one spare), // 1 without."""

    kv_tokens: int
    state_slots: int  # max_mamba_cache_size
    max_running_requests: int
    binding_limit: str  # "state_slots" when the state pool caps max_running_requests, else "max_num_seqs"


def sglang_hybrid_pool(
    model: ModelSpec,
    kv_bytes: float,
    rest_bytes: float,
    tp: int,
    context_len: int,
    ratio: float = SGLANG_MAMBA_FULL_MEMORY_RATIO,
    radix_cache: bool = True,
    max_running_requests: int | None = None,
) -> SglangHybridPool:
    """SGLang's pools for a model with linear-attention or Mamba layers (state in FP32: mamba_ssm_dtype default)."""
    state_per_request = sum(
        g.count
        * (
            g.conv_channels / tp * (g.conv_kernel - 1) * ACT_BYTES
            + g.state_heads / tp * g.state_key_dim * g.state_value_dim * 4
        )
        for g in model.layer_groups
        if not g.caches_tokens
    )
    state_memory = rest_bytes * ratio / (1 + ratio)
    slots = int(state_memory // state_per_request) if state_per_request else 0
    kv_memory = rest_bytes - slots * state_per_request
    per_token = kv_bytes_per_token(model, kv_bytes, tp)
    tokens = int(kv_memory // per_token) if per_token else 0
    default = min(max(int(tokens / context_len * 512), 2048), 4096)  # init_memory's max_num_reqs default
    wanted = max_running_requests or default
    cap = slots // (SGLANG_STATE_SLOTS_PER_REQUEST if radix_cache else 1)
    return SglangHybridPool(
        kv_tokens=tokens,
        state_slots=slots,
        max_running_requests=min(wanted, cap),
        binding_limit="state_slots" if cap < wanted else "max_num_seqs",
    )
