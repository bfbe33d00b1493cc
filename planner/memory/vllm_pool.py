"""The KV pool vLLM actually allocates (primer §10), as opposed to the textbook fit.

    pool per GPU = gpu_memory_utilization × usable memory − weights per GPU − activation peak
                   − non-torch memory − CUDA-graph memory
    blocks       = floor(pool / (block_size × KV bytes per token per GPU))
    KV tokens    = blocks × block_size ("GPU KV cache size: N tokens")
    concurrency  = KV tokens / max_model_len ("Maximum concurrency for L tokens per request: X.XXx")

The constants (data/vllm_memory.yaml) are fitted on published vLLM logs; each names its source.

The rule depends on the vLLM version (`vllm_era`), as the profiler changed between releases:
  v0        (V0 engine, releases before 0.8 unless V1 was switched on; vllm/worker/worker.py and
            model_runner.py @587909ce): the profile run is max_num_batched_tokens tokens, which without chunked
            prefill is at least max_model_len (SchedulerConfig: max(max_model_len, 2048) by default, and refuses
            less), and CUDA graphs are captured AFTER the cache is allocated (Worker.initialize_cache →
            _warm_up_model → capture_model: "CUDA graphs can take additional 1~3 GiB memory per GPU"), so the
            pool has no CUDA-graph term. Builds of Dec 2023 (before 0.2.7) charged more non-torch memory per TP
            peer (PR #2031's logs).
  v1-early  (V1 switched on in 0.7.x: VLLM_USE_V1=1, torch.compile on): profile_run computed logits for every
            one of the max_num_tokens dummy tokens ("TODO(woosuk): Consider the memory usage of the sampler"), and
            the worker measured peak as the free memory the profile left (torch's cached blocks, compiled kernels
            and their workspaces included): ~1.8 GiB above this model (vLLM PR #12569's log).
  v1        (0.8 and later, the V1 engine by default; vllm/v1/worker/gpu_worker.py @35d5cda): the profile run is
            max_num_batched_tokens tokens, one sampled row per dummy request, and a fixed residual for
            torch.compile and CUDA graphs fitted on a 0.19 log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from planner.core.catalog import DATA_DIR, _read_yaml
from planner.core.model_spec import ModelSpec
from planner.core.specs import Deployment
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
    # the era-specific terms (module note)
    v0_2023_non_torch_bytes_per_tp_peer_nvlink: float = Field(ge=0)
    v1_early_residual_bytes: float = Field(ge=0)


V0, V0_2023, V1_EARLY, V1 = "v0", "v0-2023", "v1-early", "v1"


def _release(version: str) -> tuple[int, ...] | None:
    """(0, 19, 0) from '0.19.0', 'v0.6.4', '~0.11 (Oct 2025)'; None when the text names no release."""
    m = re.search(r"(?<![\d.])v?(\d+)\.(\d+)(?:\.(\d+))?", version)
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


def vllm_era(version: str) -> str:
    """The profiler generation a vLLM version string names (module note): an explicit 'V0'/'V1' wins, then the
    release (V1 is the default from 0.8.0; 0.7.x with V1 switched on is 'v1-early'); '' or no release: v1."""
    release = _release(version)
    says_v1 = bool(re.search(r"\bV1\b", version))
    says_v0 = bool(re.search(r"\bV0\b", version))
    if release is None:
        return V0_2023 if "2023" in version else (V0 if says_v0 else V1)
    if says_v1 and release < (0, 8):
        return V1_EARLY
    if says_v0 or release < (0, 8):
        return V0_2023 if release < (0, 2, 7) else V0
    return V1


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


def profile_tokens(dep: Deployment, max_model_len: int, era: str = V1) -> int:
    """Tokens of the profile run: max_num_batched_tokens; under V0 without chunked prefill at least max_model_len
    (V0's SchedulerConfig requires it), so a V0 log at max_model_len 29,000 profiled 29,000 tokens."""
    if era in (V0, V0_2023):
        return max(dep.max_num_batched_tokens, max_model_len)
    return dep.max_num_batched_tokens


def activation_peak_bytes(
    model: ModelSpec,
    dep: Deployment,
    act_bytes: float = 2.0,
    c: VllmMemoryConstants | None = None,
    tokens: int | None = None,
    era: str = V1,
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
    tokens = dep.max_num_batched_tokens if tokens is None else tokens
    rows = tokens if era == V1_EARLY else min(tokens, dep.max_num_seqs)  # V1-early: logits of every dummy token
    logits = rows * model.vocab_size * c.sampler_logit_bytes
    return tokens * per_token * act_bytes + logits


def runtime_overhead_bytes(
    dep: Deployment, c: VllmMemoryConstants | None = None, interconnect: str = "", era: str = V1
) -> tuple[float, float]:
    """(non-torch memory, CUDA-graph and compile memory) per GPU inside the pool; the per-peer part depends on the
    GPUs' link, both on the era (module note): V0 captures its graphs after the pool, V1-early kept its residual."""
    c = c or vllm_constants()
    nvlink = any(k in interconnect.lower() for k in ("nvlink", "nvswitch", "infinity fabric", "xgmi"))
    per_peer = c.non_torch_bytes_per_tp_peer_nvlink if nvlink else c.non_torch_bytes_per_tp_peer
    if era == V0_2023 and nvlink:
        per_peer = c.v0_2023_non_torch_bytes_per_tp_peer_nvlink
    non_torch = c.non_torch_bytes + per_peer * (dep.tensor_parallel_size - 1)
    graphs = {V0: 0.0, V0_2023: 0.0, V1_EARLY: c.v1_early_residual_bytes}.get(era, c.cuda_graph_bytes)
    return non_torch, 0.0 if dep.enforce_eager else graphs


def vllm_pool(
    usable_bytes: float,
    weights_per_gpu: float,
    kv_bytes_per_token_per_gpu: float,
    model: ModelSpec,
    dep: Deployment,
    max_model_len: int,
    interconnect: str = "",
    version: str = "",
) -> VllmPool:
    """The KV pool per GPU as vLLM computes it, in blocks of block_size (`interconnect`: the GPU's link, gpus.yaml;
    `version`: the vLLM release whose profiler applies, module note; '' = V1)."""
    era = vllm_era(version)
    budget = dep.gpu_memory_utilization * usable_bytes
    activation = activation_peak_bytes(model, dep, tokens=profile_tokens(dep, max_model_len, era), era=era)
    non_torch, graphs = runtime_overhead_bytes(dep, interconnect=interconnect, era=era)
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
