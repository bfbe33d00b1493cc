"""What stops a deployment, as data (`Blocker(kind, message)`: heads, weights, the whole context, the pool,
pipeline stages), and the warnings that do not stop it (planner.memory.plan module note)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.scenario import Resolved
from planner.memory import sizes as memory
from planner.memory.engine_pool import EnginePool
from planner.memory.vllm_pool import VllmPool


@dataclass(frozen=True)
class Blocker:
    """One reason the deployment cannot serve (kind: a short id; message: the sentence the pages show)."""

    kind: str  # heads_not_divisible | weights_exceed_budget | pool_below_one_request | context_exceeds_memory
    #            | stages_exceed_layers
    message: str


def _parallel_blockers(r: Resolved, dep) -> tuple[Blocker, ...]:
    """vLLM's PP rule: stages need at least one layer each (uneven experts are a warning: the fullest rank counts)."""
    out = []
    m = r.model
    if dep.pipeline_parallel_size > m.num_layers:
        out.append(
            Blocker(
                "stages_exceed_layers",
                f"Does not fit: PP={dep.pipeline_parallel_size} exceeds the {m.num_layers} layers",
            )
        )
    return tuple(out)


def _parallel_warnings(r: Resolved, dep) -> list[str]:
    out = []
    m = r.model
    if dep.enable_expert_parallel and not m.is_moe:
        out.append("Expert parallelism has no effect: the model has no experts")
    ep = dep.expert_parallel_size
    if m.is_moe and ep > 1 and m.num_experts % ep:
        out.append(
            f"Uneven experts: {m.num_experts} experts over EP={ep} ranks; vLLM gives the fullest rank "
            f"{memory.experts_on_fullest_rank(m.num_experts, ep)} (memory counts it), which also sets the pace. "
            "SGLang needs experts + --ep-num-redundant-experts divisible by EP"
        )
    node = r.gpu.nvlink_domain_gpus or r.gpu.gpus_per_node  # one NVLink domain (NVL72: 72)
    if dep.tensor_parallel_size > node:
        out.append(
            f"Slow: TP={dep.tensor_parallel_size} spans nodes of {node} GPUs, so every all-reduce crosses the "
            "network; keep TP within a node and use PP, DP or EP across nodes"
        )
    if m.is_mla and dep.tensor_parallel_size > 1:
        out.append(
            f"MLA latent cache is replicated on all {dep.tensor_parallel_size} TP ranks; data-parallel "
            "attention (DP) stores it once per request"
        )
    return out


def _budget_rule(pool: VllmPool) -> str:
    """How the pool's memory budget is set, for a blocker's message."""
    if not isinstance(pool, EnginePool):
        return "gpu_memory_utilization × usable memory"
    if pool.rule == "sglang-static":  # planner.memory.engine_pool: the fraction of what is free at SGLang's init
        return "mem_fraction_static × (usable memory − what SGLang holds at init) + that"
    return "usable memory"


def _blockers(r: Resolved, tp: int, pool: VllmPool, w_gpu: float) -> tuple[Blocker, ...]:
    out = []
    engine = r.engine.label
    if r.model.num_attention_heads % tp:
        out.append(
            Blocker(
                "heads_not_divisible",
                f"Does not fit: {engine} needs the {r.model.num_attention_heads} attention heads divisible by TP={tp}",
            )
        )
    if w_gpu >= pool.budget_bytes:
        out.append(
            Blocker(
                "weights_exceed_budget",
                f"Does not fit: weights per GPU ({w_gpu / 1e9:.1f} GB) exceed the memory budget "
                f"({pool.budget_bytes / 1e9:.1f} GB = {_budget_rule(pool)})",
            )
        )
    elif getattr(pool, "slots", None) is not None and pool.kv_cache_tokens == 0:
        out.append(
            Blocker(
                "context_exceeds_memory",
                f"Does not fit: {engine} allocates its whole context at start ({pool.slots} slot(s) × "
                f"{r.max_model_len:,} tokens = {-pool.kv_pool_bytes / 1e9:.1f} GB more than is left after the "
                "weights; lower max_model_len or the slots)",
            )
        )
    elif pool.max_concurrency < 1 if r.model.layer_groups else pool.kv_cache_tokens < r.max_model_len:
        stop = "vLLM refuses to start" if not isinstance(pool, EnginePool) else f"{engine} cannot serve one"
        out.append(
            Blocker(
                "pool_below_one_request",
                f"Does not fit: the KV pool holds {pool.kv_cache_tokens:,} tokens, fewer than one request of "
                f"max_model_len={r.max_model_len:,}; {stop} (lower max_model_len or add GPUs)",
            )
        )
    return tuple(out)


def _warnings(r: Resolved, tp: int) -> list[str]:
    out = []
    if r.context_tokens > r.max_model_len:
        out.append(f"Context of {r.context_tokens:,} tokens exceeds max_model_len={r.max_model_len:,}")
    if r.model.num_kv_heads < tp and not r.model.is_mla:
        out.append(f"TP={tp} exceeds the {r.model.num_kv_heads} KV heads: each GPU keeps a replicated copy")
    own = r.model.quantized_weights
    if own and r.weights.id != own and (r.model.module_bits or r.model.quantized_groups):
        out.append(
            f"Weights priced at {r.weights.label} for every layer, as --weights {r.weights.id} asks, not as the "
            f"checkpoint stores them ({own}, module by module from its quantization metadata)"
        )
    return out
