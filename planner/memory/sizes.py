"""Memory maths: weight bytes, KV-cache bytes per token and per request, and the textbook fit (primer §3-§4).

    weights            = parameters × bytes per parameter          (embeddings kept at 16 bits by GPTQ/AWQ/NF4)
    KV bytes per token = 2 (K and V) × layers × KV heads × head dim × bytes per value
                         (MLA: layers × (kv_lora_rank + qk_rope_head_dim) × bytes, a latent shared by all heads)
    textbook fit       = floor((GPU memory − weights) / KV bytes per request)

Per GPU under TP × PP × DP (+ EP) (vLLM docs/serving/data_parallel_deployment.md, expert_parallel_deployment.md):
    weights per GPU    = stage share × (attention + dense + shared experts + norms) / TP
                         + vocabulary matrices on the stage / TP
                         + stage share × routed experts × ceil(E / EP) / E / MoE-TP
                           (MoE-TP × EP = TP × DP; EP = 1: every expert sliced over TP × DP; EP = TP × DP: whole
                           experts; E not divisible by EP: vLLM gives the first E mod EP ranks one more expert,
                           vllm/model_executor/layers/fused_moe/layer.py `determine_expert_map`, so the fullest
                           rank holds ceil(E / EP); equals routed experts / (TP × DP) whenever EP divides E)
    KV per token/GPU   = stage layers × (MLA: latent, whole on every TP rank; GQA: 2 × KV heads / TP × head dim)
    stage share        = ceil(layers / PP) / layers  (the largest stage)
Each DP rank holds its own requests, so the instance holds DP × (requests per DP rank).
"""

from __future__ import annotations

import math

from planner.core.model_spec import ModelSpec
from planner.core.params import count_params
from planner.core.precision import WeightPrecision
from planner.memory import layer_groups

BYTES_16BIT = 2


def weight_bytes_for_params(params: float, bits_per_weight: float) -> float:
    """weights = parameters × bytes per parameter (bits / 8): primer §4 (7B at 16 bits = 14 GB)."""
    return params * bits_per_weight / 8


def checkpoint_formats(model: ModelSpec, precision: WeightPrecision) -> dict[str, float] | None:
    """Bits per weight of each tensor group when `precision` is the checkpoint's own mixed format (gpt-oss: MXFP4
    experts, BF16 attention; NVIDIA's DeepSeek NVFP4: BF16 attention); None when one format covers every layer."""
    if not model.quantized_groups or precision.id != model.quantized_weights:
        return None
    from planner.core.catalog import get_weight_precision  # the catalogue reads data/precisions.yaml

    groups = model.quantized_groups
    bits = {
        k: get_weight_precision(groups[k]).bits_per_weight if k in groups else precision.bits_per_weight
        for k in ("attention", "dense", "experts")
    }
    bits["vocabulary"] = 8 * BYTES_16BIT if precision.keeps_embeddings_16bit else precision.bits_per_weight
    return bits


def checkpoint_module_bits(model: ModelSpec, precision: WeightPrecision) -> dict[str, float] | None:
    """Bits per weight of each module class as the checkpoint stores them (its quantization metadata), when
    `precision` is the checkpoint's own format; None when another --weights overrides it or none is given."""
    if not model.module_bits or precision.id != model.quantized_weights:
        return None
    return dict(model.module_bits)


def weight_bytes_by_module(model: ModelSpec, precision: WeightPrecision) -> dict[str, float]:
    """Bytes of each parameter-breakdown component: sum over modules of parameters × their stored bits / 8
    (the checkpoint's own bits per module class; every other component at 16 bits)."""
    bits = checkpoint_module_bits(model, precision) or {}
    return {
        k: weight_bytes_for_params(n, bits.get(k, 8 * BYTES_16BIT)) for k, n in count_params(model).breakdown.items()
    }


def weight_bytes(model: ModelSpec, precision: WeightPrecision) -> float:
    """Bytes of all weights: quantized linear layers at the format's effective bits, embeddings where kept 16-bit."""
    if checkpoint_formats(model, precision) or checkpoint_module_bits(model, precision):
        return sum(weight_bytes_by_part(model, precision).values())
    params = count_params(model)
    if precision.keeps_embeddings_16bit:
        quantized = params.total - params.embedding
        return weight_bytes_for_params(quantized, precision.bits_per_weight) + weight_bytes_for_params(
            params.embedding, 8 * BYTES_16BIT
        )
    return weight_bytes_for_params(params.total, precision.bits_per_weight)


def weight_bytes_per_gpu(total_weight_bytes: float, tp: int) -> float:
    """Tensor parallelism shards every matrix (and the vocabulary) across the TP group."""
    return total_weight_bytes / tp


def kv_heads_per_gpu(model: ModelSpec, tp: int) -> int:
    """KV heads each GPU caches = ceil(KV heads / TP): split by TP, replicated (one per GPU, TP / KV heads copies of
    each) once TP exceeds them. TensorRT-LLM's (KV heads + tp - 1) // tp (tensorrt_llm/_torch/modules/attention.py
    @00547a25); vLLM's and SGLang's QKVParallelLinear give the same on every TP they accept (planner.core.head_split
    refuses the rest)."""
    return -(-model.num_kv_heads // tp)


def kv_values_per_token_per_layer(model: ModelSpec, tp: int = 1) -> int:
    """Cached values per token per layer on one GPU. MLA's latent is not split by TP."""
    if model.is_mla:
        return model.kv_lora_rank + model.qk_rope_head_dim
    return 2 * kv_heads_per_gpu(model, tp) * model.head_dim  # 2 = K and V


def kv_bytes_per_token(model: ModelSpec, kv_bytes: float, tp: int = 1) -> float:
    """KV bytes one token adds across all layers (on one GPU when tp > 1); a model with layer kinds counts its
    token-caching layers only (planner.memory.layer_groups)."""
    if model.layer_groups:
        return layer_groups.kv_bytes_per_token(model, kv_bytes, tp)
    return model.num_layers * kv_values_per_token_per_layer(model, tp) * kv_bytes


def kv_bytes_per_request(model: ModelSpec, kv_bytes: float, tokens: int, tp: int = 1) -> float:
    """KV bytes of one request of `tokens` (prompt + output); sliding-window layers hold at most the window; with
    layer kinds, chunked layers the chunk and linear-attention / Mamba layers their fixed state."""
    if model.layer_groups:
        return layer_groups.bytes_per_request(model, kv_bytes, tokens, tp)
    per_layer = kv_values_per_token_per_layer(model, tp) * kv_bytes
    windowed = model.num_sliding_layers
    window_tokens = min(tokens, model.sliding_window or tokens)
    return per_layer * ((model.num_layers - windowed) * tokens + windowed * window_tokens)


def textbook_max_requests(gpu_bytes: float, weights_bytes: float, request_bytes: float) -> int:
    """floor(free bytes / bytes per request), 0 when the weights alone do not fit."""
    free = gpu_bytes - weights_bytes
    if free <= 0 or request_bytes <= 0:
        return 0
    return math.floor(free / request_bytes)


def token_positions_without_cache(prompt_tokens: int, output_tokens: int) -> int:
    """Without a KV cache every step re-runs the whole sequence: P + (P+1) + … + (P+N−1) positions."""
    n = output_tokens
    return n * prompt_tokens + n * (n - 1) // 2


def token_positions_with_cache(prompt_tokens: int, output_tokens: int) -> int:
    """With a cache the prompt runs once, then one new position per later step: P + N − 1."""
    return prompt_tokens + output_tokens - 1


def weight_bytes_by_part(model: ModelSpec, precision: WeightPrecision) -> dict[str, float]:
    """Weight bytes split by where they live under parallelism: layers, routed experts, vocabulary matrices."""
    params = count_params(model)
    vocab_bits = 8 * BYTES_16BIT if precision.keeps_embeddings_16bit else precision.bits_per_weight
    experts = params.breakdown["experts_routed"]
    if checkpoint_module_bits(model, precision):  # module by module, as the checkpoint's metadata prices them
        per = weight_bytes_by_module(model, precision)
        vocabulary = per["embeddings"] + per["lm_head"]
        return {
            "layers": sum(per.values()) - vocabulary - per["experts_routed"],
            "experts": per["experts_routed"],
            "vocabulary": vocabulary,
        }
    mixed = checkpoint_formats(model, precision)
    if mixed:  # attention at its own format, the rest of the layers (dense MLPs, shared experts) at theirs
        attention = params.breakdown["attention"]
        rest = params.total - params.embedding - experts - attention
        return {
            "layers": weight_bytes_for_params(attention, mixed["attention"])
            + weight_bytes_for_params(rest, mixed["dense"]),
            "experts": weight_bytes_for_params(experts, mixed["experts"]),
            "vocabulary": weight_bytes_for_params(params.embedding, mixed["vocabulary"]),
        }
    return {
        "layers": weight_bytes_for_params(params.total - params.embedding - experts, precision.bits_per_weight),
        "experts": weight_bytes_for_params(experts, precision.bits_per_weight),
        "vocabulary": weight_bytes_for_params(params.embedding, vocab_bits),
    }


def stage_layer_share(num_layers: int, pp: int) -> float:
    """Share of the layers the largest pipeline stage holds: ceil(layers / PP) / layers."""
    return math.ceil(num_layers / pp) / num_layers


def experts_on_fullest_rank(num_experts: int, ep: int) -> int:
    """Routed experts the fullest EP rank holds: ceil(E / EP) (vLLM spreads the remainder one per rank)."""
    return math.ceil(num_experts / ep)


def weight_bytes_per_gpu_parallel(
    model: ModelSpec,
    precision: WeightPrecision,
    tp: int,
    pp: int = 1,
    dp: int = 1,
    ep: int = 1,
    redundant: int = 0,
    expert_padding: float = 1.0,
) -> float:
    """Weights on the fullest GPU of a TP × PP × DP instance with EP expert groups (module note); EPLB's
    `redundant` expert slots (SGLang --ep-num-redundant-experts) spread E + R experts over the EP ranks;
    `expert_padding` is the engine's layout of the experts over their checkpoint bytes (planner.memory.mxfp4_layout)."""
    parts = weight_bytes_by_part(model, precision)
    moe_tp = tp * dp // ep  # each expert's matrices sliced over MoE-TP GPUs
    slots = model.num_experts + (redundant if ep > 1 else 0)
    expert_share = experts_on_fullest_rank(slots, ep) / model.num_experts if model.num_experts else 1.0
    share = stage_layer_share(model.num_layers, pp)
    # PP > 1: the first stage holds the embedding, the last the lm_head; the fullest holds one vocabulary matrix
    vocab = parts["vocabulary"] if pp == 1 else parts["vocabulary"] / (1 if model.tie_word_embeddings else 2)
    return share * parts["layers"] / tp + vocab / tp + share * parts["experts"] * expert_padding * expert_share / moe_tp
