"""How each engine splits attention heads over attention TP, and the layouts it refuses (in its own words).

Attention TP is `tensor_parallel_size`; attention DP (`data_parallel_size`) gives each rank whole requests and all
the heads, so it never splits heads. Every engine read below shards the query heads evenly over attention TP and
replicates KV heads once attention TP exceeds them:

    query heads per rank = heads / attention TP          (refused unless attention TP divides the heads)
    KV heads per rank    = KV heads / TP  if TP <= KV heads (refused unless TP divides them)
                         = 1 (replicated TP / KV heads times) if TP > KV heads (refused unless KV heads divide TP)
    MLA                  = the latent, whole on every rank (no KV heads to split)

Sources (pinned commits):
- vLLM: vllm/config/model.py @18ec6629 `verify_with_parallel_config` raises "Total number of attention heads (H)
  must be divisible by tensor parallel size (T)."; vllm/model_executor/layers/linear.py @9e109c98
  `QKVParallelLinear`: num_kv_head_replicas = divide(tp, KV heads) when tp >= KV heads, else divide(KV heads, tp)
  (`divide` asserts "{a} is not divisible by {b}"). Data parallel (--data-parallel-size) replicates attention.
- SGLang: python/sglang/srt/models/deepseek_v2.py @00114aef `DeepseekV2AttentionMLA`: `assert num_heads %
  attn_tp_size == 0`, attn_tp_size = tp_size / dp_size under --enable-dp-attention
  (python/sglang/srt/layers/dp_attention.py `compute_dp_attention_world_info`); the latent cache is one KV head
  (`RadixAttention(..., num_kv_heads=1)`); GQA layers use vLLM's QKVParallelLinear rule.
- TensorRT-LLM: tensorrt_llm/_torch/modules/attention.py @00547a25 `Attention` and `MLA`: `assert self.num_heads %
  (tp_size * cp_size) == 0`, with `enable_attention_dp` setting the attention tp_size to 1 (the instance's
  tensor_parallel_size GPUs become attention DP ranks); KV heads per rank (KV heads + tp - 1) // tp, the weights
  duplicated by tensorrt_llm/_torch/models/modeling_utils.py @cb4c622c `duplicate_kv_weight` (asserts KV heads
  % tp == 0 when KV heads >= tp, else tp % KV heads == 0).
- LMDeploy (TurboMind): lmdeploy/turbomind/deploy/target_model/base.py asserts `head_num % tensor_para_size == 0`.
"""

from __future__ import annotations

from planner.core.errors import InputError
from planner.core.model_spec import ModelSpec

FIELD = "tensor_parallel_size"


def query_heads_message(engine: str, heads: int, tp: int) -> str:
    """The engine's own refusal of `heads` query heads over attention TP `tp`."""
    if engine == "sglang":
        return (
            f"SGLang asserts num_heads % attn_tp_size == 0: {heads} heads over attention TP {tp} "
            f"(--tp-size / --dp-size with --enable-dp-attention; attention DP keeps all heads on each rank)"
        )
    if engine == "tensorrt-llm":
        return (
            f"TensorRT-LLM asserts num_heads % tp_size == 0: {heads} heads over tensor_parallel_size {tp} without "
            f"enable_attention_dp (with it, attention runs at TP 1 on each of the {tp} ranks: attention DP {tp})"
        )
    if engine == "lmdeploy":
        return f"LMDeploy asserts head_num % tensor_para_size == 0: {heads} heads over TP {tp}"
    return (
        f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp}) "
        f"(vLLM's check; attention DP (--dp) splits requests, not heads)"
    )


def kv_heads_divide(kv_heads: int, tp: int) -> bool:
    """TP <= KV heads: TP divides them; TP > KV heads: they divide TP (each replicated TP / KV heads times)."""
    return kv_heads % tp == 0 if kv_heads >= tp else tp % kv_heads == 0


def kv_heads_message(kv_heads: int, tp: int) -> str:
    """The refusal every engine above gives (vLLM's `divide`, TensorRT-LLM's `duplicate_kv_weight`)."""
    a, b = (kv_heads, tp) if kv_heads >= tp else (tp, kv_heads)
    return (
        f"{a} is not divisible by {b}: {kv_heads} KV heads over attention TP {tp} can be neither split nor "
        f"replicated evenly (vLLM QKVParallelLinear, TensorRT-LLM duplicate_kv_weight)"
    )


def check_head_split(model: ModelSpec, tp: int, engine: str) -> None:
    """Raise the engine's own refusal when attention TP `tp` cannot split `model`'s heads."""
    if model.num_attention_heads % tp:
        raise InputError(FIELD, query_heads_message(engine, model.num_attention_heads, tp))
    if not model.is_mla and not kv_heads_divide(model.num_kv_heads, tp):
        raise InputError(FIELD, kv_heads_message(model.num_kv_heads, tp))
