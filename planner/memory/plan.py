"""Where every byte goes for a scenario: the textbook fit and the engine's real pool, per GPU, with TP options.

The pool follows the scenario's engine (`r.engine.memory`, planner.memory.engine_pool): vLLM's profiled pool,
SGLang's mem_fraction_static, TensorRT-LLM's fraction of free memory, LMDeploy's cache_max_entry_count, llama.cpp's
fixed context over -np slots. With pipeline, data and expert parallelism (planner.memory.sizes module note) the
figures are those of the fullest GPU; `max_concurrency` is the engine's figure for one DP rank (vLLM's logged
one; llama.cpp's slots), and `deployment_max_concurrency` counts the requests of max_model_len the whole
deployment holds: replicas × DP ranks × whole requests per DP rank.

What stops a deployment is data: `blockers`, each a Blocker(kind, message); `fits` is true when there is none.
The warnings repeat the blockers' messages first (the text the pages and `--json` show), then the rest.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from planner.core.params import count_params
from planner.core.scenario import Resolved
from planner.memory import sizes as memory
from planner.memory.blockers import Blocker, _blockers, _parallel_blockers, _parallel_warnings, _warnings
from planner.memory.engine_pool import EnginePool, engine_pool
from planner.memory.hybrid_fit import HybridFit, hybrid_fit
from planner.memory.layer_groups import GroupBytes, binding_limit, group_bytes
from planner.memory.mxfp4_layout import expert_padding_factor
from planner.memory.sliding_window import request_blocks
from planner.memory.vllm_pool import VllmPool

TP_DEGREES = (1, 2, 4, 8)


ENGINE_KEYS = ("blockers", "engine", "memory_rule")  # MemoryPlan fields that engine_dict() prints


@dataclass(frozen=True)
class MemoryPlan:
    params: int
    active_params: int
    weight_bytes: float
    weight_bytes_per_gpu: float
    kv_bytes_per_token: float
    kv_bytes_per_token_per_gpu: float
    context_tokens: int
    kv_bytes_per_request: float  # whole request on the whole model (all GPUs)
    gpu_memory_bytes: float  # marketed memory in decimal GB × 1e9 (textbook)
    usable_memory_bytes: int  # what CUDA reports (engine-realistic)
    textbook_max_requests: int  # per DP rank (its TP × PP GPUs); × DP ranks per replica
    kv_pool_bytes_per_gpu: float
    num_gpu_blocks: int
    kv_cache_tokens: int
    max_model_len: int
    max_concurrency: float  # vLLM's logged figure, per DP rank (each rank logs its own pool)
    paged_max_requests: int  # requests of context_tokens that fit in one DP rank's pool blocks
    contiguous_max_requests: int  # requests that fit when each reserves max_model_len
    num_replicas: int
    tensor_parallel_size: int
    fits: bool
    pipeline_parallel_size: int
    data_parallel_size: int
    expert_parallel_size: int
    gpus_per_replica: int
    deployment_max_concurrency: int  # requests of max_model_len the whole deployment holds
    requests_per_dp_rank: int  # whole requests of max_model_len one DP rank holds (× DP × replicas = the line above)
    warnings: tuple[str, ...]
    engine: str  # the scenario's engine id
    memory_rule: str  # its memory rule (data/engines.yaml `memory`)
    pool: VllmPool  # an EnginePool for engines other than vLLM
    blockers: tuple[Blocker, ...] = ()
    # which limit binds per DP rank (planner.memory.layer_groups.BINDING_LIMITS) and the requests it allows
    binding_limit: str = "kv_tokens"
    binding_requests: int = 0
    state_bytes_per_request_per_gpu: float = 0.0  # linear-attention / Mamba state, fixed per request
    layer_kinds: tuple[GroupBytes, ...] = ()  # per layer kind on one GPU at context_tokens (hybrid models)
    hybrid: HybridFit | None = None  # vLLM's hybrid layout (groups, unified pages) when the model mixes kinds

    @property
    def paged_requests_per_replica(self) -> int:
        """Requests of context_tokens one replica holds: each of its DP ranks has its own pool (per rank × DP)."""
        return self.paged_max_requests * self.data_parallel_size

    @property
    def textbook_requests_per_replica(self) -> int:
        """The textbook fit of one replica: per DP rank × DP ranks."""
        return self.textbook_max_requests * self.data_parallel_size

    def to_dict(self) -> dict:
        """The `memory --json` keys as they were before engines had memory rules (the CLI appends engine_dict)."""
        out = asdict(self)
        for key in ("pool", "hybrid", *ENGINE_KEYS):
            out.pop(key)
        new = {k: out.pop(k) for k in ("binding_limit", "binding_requests", "state_bytes_per_request_per_gpu")}
        out.pop("layer_kinds")
        out["warnings"] = list(self.warnings)
        out["vllm_log"] = list(self.pool.log_lines) if not isinstance(self.pool, EnginePool) else []
        out["breakdown_per_gpu"] = breakdown_per_gpu(self)
        out["textbook_max_requests_total"] = self.textbook_max_requests * self.num_replicas
        out["max_concurrency_total"] = self.max_concurrency * self.num_replicas * self.data_parallel_size
        out.pop("requests_per_dp_rank")  # the memory command prints it after its older keys
        out.update(new)  # keys added later, after the older ones
        out["layer_kinds"] = [g.to_dict() for g in self.layer_kinds]
        out["kv_cache_groups"] = self.hybrid.pool.num_groups if self.hybrid else 1
        out["vllm_hybrid_blocks"] = self.hybrid.pool.num_blocks if self.hybrid else self.num_gpu_blocks
        return out

    def engine_dict(self) -> dict:
        """The keys added with engine memory rules (appended after the older ones: `--json` only gains keys)."""
        return {
            "engine": self.engine,
            "memory_rule": self.memory_rule,
            "blockers": [asdict(b) for b in self.blockers],
            "engine_log": list(self.pool.log_lines),
            "slots": getattr(self.pool, "slots", None),
        }


def plan_memory(r: Resolved, tp: int | None = None) -> MemoryPlan:
    """The full memory picture of a resolved scenario (optionally at another TP degree)."""
    if tp is not None:  # one replica at another TP degree
        dep = r.deployment.model_copy(update={"tensor_parallel_size": tp})
        dep = dep.model_copy(update={"num_gpus": dep.gpus_per_replica})
    else:
        dep = r.deployment
    tp, pp, dp = dep.tensor_parallel_size, dep.pipeline_parallel_size, dep.data_parallel_size
    pc = count_params(r.model)
    weights = memory.weight_bytes(r.model, r.weights)
    ep = dep.expert_parallel_size if r.model.is_moe else 1
    padding = expert_padding_factor(r.model, r.weights, r.engine.id, r.gpu.family, tp * dp // ep)
    w_gpu = memory.weight_bytes_per_gpu_parallel(
        r.model, r.weights, tp, pp, dp, ep, r.deployment.ep_num_redundant_experts, padding
    )
    share = memory.stage_layer_share(r.model.num_layers, pp)  # a pipeline stage caches its own layers only
    kv_tok = memory.kv_bytes_per_token(r.model, r.kv_bytes)
    kv_tok_gpu = memory.kv_bytes_per_token(r.model, r.kv_bytes, tp) * share
    ctx = r.context_tokens
    req_gpu = memory.kv_bytes_per_request(r.model, r.kv_bytes, ctx, tp) * share
    textbook = memory.textbook_max_requests(r.gpu.marketed_bytes, w_gpu, req_gpu)
    pool = engine_pool(
        r.engine, r.gpu.usable_memory_bytes, w_gpu, kv_tok_gpu, r.model, dep, r.max_model_len, r.gpu.interconnect
    )
    paged = pool.num_gpu_blocks // request_blocks(
        r.model, ctx, dep.max_num_batched_tokens, r.max_model_len, dep.block_size
    )
    if r.model.sliding_window and r.model.num_sliding_layers and not isinstance(pool, EnginePool):
        # vLLM V1's log counts windowed blocks too
        per_request = request_blocks(
            r.model, r.max_model_len, dep.max_num_batched_tokens, r.max_model_len, dep.block_size
        )
        pool = replace(pool, max_concurrency=pool.num_gpu_blocks / per_request)
    hybrid = None
    if r.model.layer_groups:  # vLLM's hybrid manager: groups per layer kind, unified pages, state slots
        hybrid = hybrid_fit(
            r.model,
            r.kv_bytes,
            pool.kv_pool_bytes / share,
            tp,
            dep.block_size,
            ctx,
            dep.max_num_batched_tokens,
            r.max_model_len,
            dep.enable_prefix_caching,
        )
        pool, paged = _hybrid_pool(pool, hybrid, dep.block_size, r.max_model_len), hybrid.paged_max_requests
    contiguous = max(0, int(max(pool.kv_pool_bytes, 0) // (r.max_model_len * kv_tok_gpu))) if kv_tok_gpu else 0
    blockers = _blockers(r, tp, pool, w_gpu) + _parallel_blockers(r, dep)
    warnings = tuple(b.message for b in blockers) + tuple(_warnings(r, tp) + _parallel_warnings(r, dep))
    per_rank = pool.num_gpu_blocks // request_blocks(
        r.model, r.max_model_len, dep.max_num_batched_tokens, r.max_model_len, dep.block_size
    )
    if hybrid:
        per_rank = int(hybrid.max_concurrency)
    slots = getattr(pool, "slots", None)
    if slots is not None:  # llama.cpp: no paging, one request per slot of max_model_len
        paged = contiguous = per_rank = slots if pool.kv_cache_tokens else 0
    fits = not blockers
    limit, limit_requests = binding_limit(
        dep.max_num_seqs, paged, hybrid.pool_limit if hybrid else "kv_tokens", fits and pool.kv_pool_bytes > 0
    )
    return MemoryPlan(
        params=pc.total,
        active_params=pc.active,
        weight_bytes=weights,
        weight_bytes_per_gpu=w_gpu,
        kv_bytes_per_token=kv_tok,
        kv_bytes_per_token_per_gpu=kv_tok_gpu,
        context_tokens=ctx,
        kv_bytes_per_request=memory.kv_bytes_per_request(r.model, r.kv_bytes, ctx),
        gpu_memory_bytes=r.gpu.marketed_bytes,
        usable_memory_bytes=r.gpu.usable_memory_bytes,
        textbook_max_requests=textbook,
        kv_pool_bytes_per_gpu=max(pool.kv_pool_bytes, 0.0),
        num_gpu_blocks=pool.num_gpu_blocks,
        kv_cache_tokens=pool.kv_cache_tokens,
        max_model_len=r.max_model_len,
        max_concurrency=pool.max_concurrency,
        paged_max_requests=paged,
        contiguous_max_requests=contiguous,
        num_replicas=dep.num_replicas,
        tensor_parallel_size=tp,
        fits=fits,
        warnings=warnings,
        pool=pool,
        blockers=blockers,
        engine=r.engine.id,
        memory_rule=r.engine.memory,
        pipeline_parallel_size=pp,
        data_parallel_size=dp,
        expert_parallel_size=dep.expert_parallel_size,
        gpus_per_replica=dep.gpus_per_replica,
        deployment_max_concurrency=per_rank * dp * dep.num_replicas,
        binding_limit=limit,
        binding_requests=limit_requests,
        state_bytes_per_request_per_gpu=memory.layer_groups.state_bytes_per_request(r.model, tp) * share,
        layer_kinds=tuple(group_bytes(r.model, r.kv_bytes, ctx, tp)),
        hybrid=hybrid,
        requests_per_dp_rank=per_rank,
    )


def _hybrid_pool(pool: VllmPool, h: HybridFit, block_size: int, max_model_len: int) -> VllmPool:
    """The pool in blocks of block_size full-attention tokens that give vLLM's hybrid concurrency at max_model_len
    (what the simulator and the capacity search count in), with vLLM's own "Maximum concurrency"."""
    blocks = int(h.max_concurrency * math.ceil(max_model_len / block_size))
    return replace(pool, num_gpu_blocks=blocks, kv_cache_tokens=blocks * block_size, max_concurrency=h.max_concurrency)


def effective_tokens(request_bytes: float, bytes_per_token: float) -> int:
    """Token slots a request really occupies: its context, or less where sliding-window layers cap the cache."""
    return max(1, math.ceil(request_bytes / bytes_per_token - 1e-9))


def breakdown_per_gpu(p: MemoryPlan) -> dict[str, float]:
    """Usable memory of one GPU split into weights, activations, runtime overhead, KV pool and unused (bytes)."""
    pool = p.pool
    kv_used = p.kv_cache_tokens * p.kv_bytes_per_token_per_gpu  # whole blocks only
    if p.hybrid:  # vLLM's hybrid pages: every block is one page in each of group_size layers
        h = p.hybrid.pool
        kv_used = h.num_blocks * h.page_bytes * h.group_size * stage_share(p)
    parts = {
        "weights": pool.weights_bytes,
        "activations": pool.activation_bytes,
        "runtime overhead": pool.non_torch_bytes + pool.cuda_graph_bytes,
        "KV pool": float(kv_used),
    }
    parts["unused"] = p.usable_memory_bytes - sum(parts.values())
    return parts


def stage_share(p: MemoryPlan) -> float:
    """The fullest pipeline stage's share of the layers (1 without PP)."""
    layers = sum(g.layers for g in p.layer_kinds) or 1
    return math.ceil(layers / p.pipeline_parallel_size) / layers
