"""The KV pool vLLM actually allocates (primer §10), as opposed to the textbook fit.

    pool per GPU = gpu_memory_utilization × usable memory − weights per GPU − activation peak
                   − non-torch memory − CUDA-graph memory
    blocks       = floor(pool / (block_size × KV bytes per token per GPU))
    KV tokens    = blocks × block_size ("GPU KV cache size: N tokens")
    concurrency  = KV tokens / max_model_len ("Maximum concurrency for L tokens per request: X.XXx")

The constants (data/vllm_memory.yaml) are fitted on published vLLM logs; each names its source.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from planner.core.catalog import DATA_DIR, _read_yaml
from planner.core.specs import Deployment, ModelSpec
from planner.core.units import ceil_div


class VllmMemoryConstants(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    activation_intermediate_factor: float = Field(ge=0)
    activation_hidden_factor: float = Field(ge=0)
    sampler_logit_bytes: float = Field(ge=0)
    non_torch_bytes: float = Field(ge=0)
    non_torch_bytes_per_tp_peer: float = Field(ge=0)  # PCIe
    non_torch_bytes_per_tp_peer_nvlink: float = Field(ge=0)  # NVLink / NVSwitch / Infinity Fabric
    cuda_graph_bytes: float = Field(ge=0)


@lru_cache(maxsize=1)
def vllm_constants() -> VllmMemoryConstants:
    return VllmMemoryConstants(**_read_yaml(DATA_DIR / "vllm_memory.yaml"))


@dataclass(frozen=True)
class VllmPool:
    """Per-GPU memory as vLLM divides it, plus the two lines vLLM logs."""

    budget_bytes: float  # gpu_memory_utilization × usable memory
    weights_bytes: float
    activation_bytes: float
    non_torch_bytes: float
    cuda_graph_bytes: float
    kv_pool_bytes: float  # what is left for the cache (may be negative: does not fit)
    num_gpu_blocks: int
    kv_cache_tokens: int
    max_model_len: int
    max_concurrency: float

    @property
    def log_lines(self) -> tuple[str, str]:
        return (
            f"GPU KV cache size: {self.kv_cache_tokens:,} tokens",
            f"Maximum concurrency for {self.max_model_len:,} tokens per request: {self.max_concurrency:.2f}x",
        )


def activation_peak_bytes(
    model: ModelSpec, dep: Deployment, act_bytes: float = 2.0, c: VllmMemoryConstants | None = None
) -> float:
    """Peak activations of vLLM's profiling pass at max_num_batched_tokens, plus the sampler's fp32 logits.

    The profile run (vllm/v1/worker/gpu_model_runner.py profile_run @4e17906) runs max_num_batched_tokens tokens
    (V0 without chunked prefill: max(max_model_len, ...), which callers pass as max_num_batched_tokens) and samples
    one row per dummy request, min(max_num_batched_tokens, max_num_seqs) rows of the full (gathered) vocabulary."""
    c = c or vllm_constants()
    width = model.moe_intermediate_size * model.num_experts_per_tok if model.is_moe else model.intermediate_size
    per_token = (
        c.activation_intermediate_factor * width / dep.tensor_parallel_size
        + c.activation_hidden_factor * model.hidden_size
    )
    tokens = dep.max_num_batched_tokens
    logits = min(tokens, dep.max_num_seqs) * model.vocab_size * c.sampler_logit_bytes
    return tokens * per_token * act_bytes + logits


def runtime_overhead_bytes(
    dep: Deployment, c: VllmMemoryConstants | None = None, interconnect: str = ""
) -> tuple[float, float]:
    """(non-torch memory, CUDA-graph memory) per GPU; the per-peer part depends on the GPUs' link."""
    c = c or vllm_constants()
    nvlink = any(k in interconnect.lower() for k in ("nvlink", "nvswitch", "infinity fabric", "xgmi"))
    per_peer = c.non_torch_bytes_per_tp_peer_nvlink if nvlink else c.non_torch_bytes_per_tp_peer
    non_torch = c.non_torch_bytes + per_peer * (dep.tensor_parallel_size - 1)
    graphs = 0.0 if dep.enforce_eager else c.cuda_graph_bytes
    return non_torch, graphs


def vllm_pool(
    usable_bytes: float,
    weights_per_gpu: float,
    kv_bytes_per_token_per_gpu: float,
    model: ModelSpec,
    dep: Deployment,
    max_model_len: int,
    interconnect: str = "",
) -> VllmPool:
    """The KV pool per GPU as vLLM computes it, in blocks of block_size (`interconnect`: the GPU's link, gpus.yaml)."""
    budget = dep.gpu_memory_utilization * usable_bytes
    activation = activation_peak_bytes(model, dep)
    non_torch, graphs = runtime_overhead_bytes(dep, interconnect=interconnect)
    pool = budget - weights_per_gpu - activation - non_torch - graphs
    block_bytes = dep.block_size * kv_bytes_per_token_per_gpu
    blocks = max(0, int(pool // block_bytes))
    tokens = blocks * dep.block_size
    return VllmPool(
        budget_bytes=budget,
        weights_bytes=weights_per_gpu,
        activation_bytes=activation,
        non_torch_bytes=non_torch,
        cuda_graph_bytes=graphs,
        kv_pool_bytes=pool,
        num_gpu_blocks=blocks,
        kv_cache_tokens=tokens,
        max_model_len=max_model_len,
        max_concurrency=tokens / max_model_len,
    )


def blocks_per_request(tokens: int, block_size: int) -> int:
    """A request holds ceil(tokens / block_size) blocks."""
    return ceil_div(tokens, block_size)
