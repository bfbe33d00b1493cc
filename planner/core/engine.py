"""Serving engines as objects (data/engines.yaml): the version the constants describe, memory rule, scheduler
policy, all-reduce algorithm, supported weight formats, defaults and kernel path, each with its upstream source in
the file. The resolved scenario carries one (`Resolved.engine`): every calculation below the CLI and UI reads the
scenario's engine from there, none assumes vLLM.

    get_engine(engine)                 the Engine for a name (InputError naming `engine` when unknown)
    engine_for(name)                   the Engine a scenario runs: get_engine, or an engine's rules under a
                                       calibration-only profile's name (data/efficiency.yaml: splitwise,
                                       tensorrt-llm-0.9; CALIBRATION_ONLY)
    engine_supports(engine, weights)   may this engine run this weight format? (GGUF k-quants: llama.cpp only)
    scheduler_policy(engine)           the simulator's admission policy for this engine
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache

from planner.core.catalog import DATA_DIR, _read_yaml
from planner.core.engine_defaults import (
    CALIBRATION_ONLY,
    BatchDefaults,
    batch_defaults,
    fitted_engines,
    sglang_chunked_prefill_size,
)
from planner.core.errors import InputError

ENGINES_PATH = DATA_DIR / "engines.yaml"
# one line per scheduler policy and memory rule (data/engines.yaml `policy`, `memory`), for captions and --help
POLICY_TEXT = {
    "vllm-v1": "a token budget per step, chunked prefill, the newest request preempted when the KV pool runs out",
    "guaranteed-no-evict": "a request admitted only when its prompt and maximum output fit beside the running "
    "ones; never preempts",
    "sglang": "admission against prompt + reserved output × new_token_ratio; retracts requests when short",
    "static-slots": "one request per slot of a fixed context; no paging, no preemption",
}
MEMORY_TEXT = {
    "vllm-profiler": "gpu_memory_utilization × memory − weights − profiled activations − runtime",
    "sglang-static": "mem_fraction_static × (memory − what SGLang holds at start-up) − weights",
    "trtllm-free-fraction": "kv_cache_free_gpu_mem_fraction 0.9 × the memory free after weights and activations",
    "lmdeploy-free-fraction": "cache_max_entry_count 0.8 × the memory free after weights",
    "llamacpp-context": "the whole context (max_model_len × slots) allocated at start, no paging",
}


@dataclass(frozen=True)
class Engine:
    id: str
    label: str
    memory: str  # the memory rule (planner.memory.engine_pool)
    policy: str  # the scheduler policy (planner.sim SchedulerConfig.policy)
    allreduce: str  # custom | nccl | none
    formats: tuple[str, ...]
    defaults: dict = field(default_factory=dict, hash=False)  # unhashable: left out of the hash
    eager_layer_overhead_s: float = 0.0
    # bytes the runtime holds when it measures the memory its fraction applies to, with a TP group (NCCL
    # communicators, custom all-reduce buffers, CUDA context); None = the rule does not measure it (SGLang only)
    tp_init_bytes: float | None = None
    fp16_accumulate: bool = False  # 16-bit GEMMs accumulate in FP16 (GeForce parts run those at twice the rate)
    hopper_wgmma: bool = True  # Hopper-native warpgroup MMA kernels; False = Ampere-style mma.sync only
    issue_bound_gemv: bool = False  # batch-1 weight streaming limited per SM (profile sm_bytes_per_cycle applies)
    version: str = ""  # the release whose rules and defaults the constants describe
    version_source: str = ""  # where that version is established (commits read, measured releases)
    source: str = ""

    @property
    def kernel_path(self) -> dict[str, bool]:
        """The kernel facts the step-time model reads (planner.latency.hardware): accumulate, MMA kind, GEMV bound."""
        return {
            "fp16_accumulate": self.fp16_accumulate,
            "hopper_wgmma": self.hopper_wgmma,
            "issue_bound_gemv": self.issue_bound_gemv,
        }

    def batch_defaults(self, gpu, usage: str = "serve") -> BatchDefaults:
        """max_num_batched_tokens / max_num_seqs this engine picks on `gpu`: its own defaults (engines.yaml) where
        it has them, else vLLM's table (planner.core.engine_defaults)."""
        own = _OWN_BATCH_DEFAULTS.get(self.id)
        return own(self.defaults, gpu) if own else batch_defaults(gpu, self.id, usage)

    @property
    def summary(self) -> str:
        """The engine in one sentence: its scheduler policy and memory rule (the pages' caption)."""
        policy = POLICY_TEXT.get(self.policy, "see data/engines.yaml")
        memory = MEMORY_TEXT.get(self.memory, "see data/engines.yaml")
        return f"{self.label} {self.version}: scheduler {self.policy} ({policy}); KV memory {self.memory} ({memory})"

    def supports(self, weights: str) -> bool:
        """True when the engine runs weights in format `weights` (a precisions.yaml id)."""
        return weights.lower() in self.formats


def _trtllm_batch(d: dict, gpu) -> BatchDefaults:
    return BatchDefaults(
        d["max_num_tokens"], d["max_batch_size"], "TensorRT-LLM defaults (BuildConfig max_num_tokens, max_batch_size)"
    )


def _llamacpp_batch(d: dict, gpu) -> BatchDefaults:
    return BatchDefaults(d["n_batch"], d["n_parallel"], "llama.cpp defaults (-b n_batch, -np slots)")


def _lmdeploy_batch(d: dict, gpu) -> BatchDefaults:
    """TurboMind's max_prefill_token_num, and lmdeploy/utils.py get_max_batch_size by device name."""
    name = f"{gpu.id} {gpu.name}".lower()
    seqs = 384 if "a100" in name else 1024 if ("h100" in name or "h200" in name) else d["max_batch_size"]
    return BatchDefaults(d["max_prefill_token_num"], seqs, "LMDeploy defaults (max_prefill_token_num, max_batch_size)")


def _sglang_batch(d: dict, gpu) -> BatchDefaults:
    """SGLang's chunked_prefill_size by GPU memory; max_running_requests follows the token pool in SGLang, so the
    running limit stays vLLM's for the GPU (an assumption)."""
    tokens = sglang_chunked_prefill_size(gpu.usable_memory_bytes)
    seqs = batch_defaults(gpu, "vllm").max_num_seqs
    return BatchDefaults(tokens, min(seqs, tokens), "SGLang default chunked_prefill_size for this GPU")


_OWN_BATCH_DEFAULTS = {
    "sglang": _sglang_batch,
    "tensorrt-llm": _trtllm_batch,
    "llama.cpp": _llamacpp_batch,
    "lmdeploy": _lmdeploy_batch,
}


@lru_cache(maxsize=1)
def engines() -> dict[str, Engine]:
    data = _read_yaml(ENGINES_PATH).get("engines") or {}
    out = {}
    for eid, e in data.items():
        out[eid] = Engine(
            id=eid,
            label=e["label"],
            memory=e["memory"],
            policy=e["policy"],
            allreduce=e["allreduce"],
            formats=tuple(e["formats"]),
            defaults=dict(e.get("defaults") or {}),
            eager_layer_overhead_s=float(e.get("eager_layer_overhead_s", 0.0)),
            tp_init_bytes=float(e["tp_init_bytes"]) if "tp_init_bytes" in e else None,
            fp16_accumulate=bool(e.get("fp16_accumulate", False)),
            hopper_wgmma=bool(e.get("hopper_wgmma", True)),
            issue_bound_gemv=bool(e.get("issue_bound_gemv", False)),
            version=str(e["version"]),
            version_source=" ".join(str(e.get("version_source", "")).split()),
            source=" ".join(str(e.get("source", "")).split()),
        )
    return out


def get_engine(engine: str, field_name: str = "engine") -> Engine:
    table = engines()
    key = (engine or "").strip().lower()
    if key not in table:
        raise InputError(field_name, f"unknown engine {engine!r}; known: {', '.join(table)}")
    return table[key]


def engine_for(name: str) -> Engine:
    """The Engine a scenario runs. A calibration-only profile (CALIBRATION_ONLY) runs its base engine's memory rule
    and scheduler (vLLM's for an unlisted one) under its own name and constants, with no eager-mode cost."""
    key = (name or "").strip().lower()
    table = engines()
    if key in table or (key not in fitted_engines() and key not in CALIBRATION_ONLY):
        return get_engine(key)
    base_id, label, version = CALIBRATION_ONLY.get(key, ("vllm", key, "unknown"))
    base = table[base_id]
    return replace(
        base,
        id=key,
        label=label,
        eager_layer_overhead_s=0.0,
        version=version,
        version_source="calibration-only profile (data/efficiency.yaml): the engine behind published points",
        source=f"calibration only; memory rule and scheduler: {base.label}'s ({base.source})",
    )


def engine_supports(engine: str, weights: str) -> bool:
    """True when `engine` runs weights in format `weights` (a precisions.yaml id); False for unknown engines."""
    e = engines().get((engine or "").lower())
    return e is not None and e.supports(weights)


def scheduler_policy(engine: str) -> str:
    """The simulator's scheduler policy for this engine (a key of planner.sim.policies.POLICIES)."""
    return get_engine(engine).policy
