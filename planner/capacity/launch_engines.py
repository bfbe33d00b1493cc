"""Each engine's launch line for one instance (planner.capacity.launch): the layout, limits, KV dtype, weights and
prefix caching under the engine's own flags (planner.core.engine_flags has the names and their sources).

Multi-node lines use $LEADER_IP (the first node's address) and $NODE_RANK (0 … nodes − 1); a Kubernetes
LeaderWorkerSet sets them from LWS_LEADER_ADDRESS and LWS_WORKER_INDEX.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

import yaml

from planner.core.engine_flags import VLLM_ALL2ALL
from planner.core.errors import InputError

PORT = 8000
DP_RPC_PORT = 13345  # vLLM docs/serving/data_parallel_deployment.md's example port
DIST_INIT_PORT = 5000
TRTLLM_OPTIONS_FILE = "extra-llm-api-options.yaml"
LLAMA_CPP_KV = {"auto": "f16", "fp16": "f16", "bf16": "bf16", "fp8": "q8_0"}  # ggml cache types
LMDEPLOY_KV_POLICY = {"fp8": 16}  # lmdeploy/messages.py QuantPolicy.FP8 = 16


@dataclass(frozen=True)
class Command:
    """One launch line: an optional launcher (mpirun …) and the engine's own argv."""

    role: str
    argv: tuple[str, ...]
    launcher: tuple[str, ...] = ()

    @property
    def flags(self) -> list[str]:
        return [a for a in self.argv if a.startswith("--")]

    @property
    def text(self) -> str:
        words = [*self.launcher, *self.argv]
        return " ".join(w if "$" in w else shlex.quote(w) for w in words)


@dataclass(frozen=True)
class Settings:
    """What every engine needs, read once from the resolved scenario (planner.capacity.launch.settings_for)."""

    model: str
    tp: int
    dp: int
    pp: int
    ep: int
    moe_tp: int
    gpus: int  # one instance: TP × PP × DP
    nodes: int
    node_gpus: int  # GPUs per node of the instance
    max_model_len: int
    max_num_seqs: int
    max_batched_tokens: int
    block_size: int
    util: float
    free_share: float  # planned KV pool / (usable memory − weights), per GPU
    kv: str
    weights: str
    checkpoint_weights: str
    prefix_caching: bool
    eager: bool
    # wide expert parallelism under SGLang's names (planner.latency.expert_parallel)
    a2a_backend: str = "none"
    deepep_mode: str = "auto"
    two_batch_overlap: bool = False
    eplb: bool = False
    redundant_experts: int = 0
    mixed_chunk: bool = False  # SGLang --enable-mixed-chunk
    recv_interval: int = 1  # SGLang --scheduler-recv-interval
    mem_fraction: float = 0.9  # SGLang --mem-fraction-static: the fraction its pool was planned with
    batch_wait: tuple[int, float] = (0, 0.0)  # TensorRT-LLM batch_wait_timeout_iters, batch_wait_max_tokens_ratio
    num_experts: int = 0  # routed experts per MoE layer (TensorRT-LLM's load balancer counts slots, not extras)


def unsupported(engine: str, why: str):
    raise InputError("--engine", f"{engine} cannot launch this layout: {why}")


def _online_quantization(s: Settings, notes: list[str]) -> list[str]:
    """--quantization fp8 when FP8 weights are asked of a 16-bit checkpoint (vLLM and SGLang quantize at load)."""
    if s.weights in (s.checkpoint_weights, "bf16", "fp16"):
        return []
    if s.weights == "fp8":
        return ["--quantization", "fp8"]
    notes.append(f"weights {s.weights}: serve a {s.weights} checkpoint of the model (the engine reads its format)")
    return []


def vllm(s: Settings, notes: list[str], files: dict) -> list[Command]:
    """`vllm serve` (vllm/engine/arg_utils.py): EP only as TP × DP (--enable-expert-parallel)."""
    if s.ep not in (1, s.tp * s.dp):
        unsupported("vllm", f"EP {s.ep} below TP × DP = {s.tp * s.dp} (use --engine sglang or tensorrt-llm)")
    argv = ["vllm", "serve", s.model, "--tensor-parallel-size", str(s.tp)]
    argv += ["--pipeline-parallel-size", str(s.pp)] if s.pp > 1 else []
    argv += ["--data-parallel-size", str(s.dp)] if s.dp > 1 else []
    argv += ["--enable-expert-parallel"] if s.ep > 1 else []
    argv += _vllm_wide_ep(s, notes)
    argv += ["--max-model-len", str(s.max_model_len), "--max-num-seqs", str(s.max_num_seqs)]
    argv += ["--max-num-batched-tokens", str(s.max_batched_tokens), "--block-size", str(s.block_size)]
    argv += ["--gpu-memory-utilization", f"{s.util:g}"]
    argv += ["--kv-cache-dtype", "fp8"] if s.kv == "fp8" else []
    argv += _online_quantization(s, notes)
    argv += ["--enable-prefix-caching" if s.prefix_caching else "--no-enable-prefix-caching"]
    argv += ["--enforce-eager"] if s.eager else []
    argv += ["--host", "0.0.0.0", "--port", str(PORT)]
    if s.nodes == 1:
        return [Command("server", tuple(argv))]
    local = s.node_gpus // (s.tp * s.pp)
    if s.dp == 1 or local < 1:
        notes.append("TP × PP spans nodes: start a Ray cluster first (ray start) and run the line on its head node")
        return [Command("server", tuple(argv))]
    dp_flags = ["--data-parallel-size-local", str(local), "--data-parallel-address", "$LEADER_IP"]
    dp_flags += ["--data-parallel-rpc-port", str(DP_RPC_PORT)]
    worker = ["--headless", "--data-parallel-start-rank", f'"$((NODE_RANK * {local}))"']
    return [Command("leader", tuple(argv + dp_flags)), Command("worker", tuple(argv + dp_flags + worker))]


def _vllm_wide_ep(s: Settings, notes: list[str]) -> list[str]:
    """DeepEP's kernels, dual-batch overlap and EPLB under vLLM's names (engine_flags.VLLM_WIDE_EP)."""
    if s.ep <= 1:
        return []
    argv = []
    if s.a2a_backend == "deepep":
        argv += ["--all2all-backend", VLLM_ALL2ALL[s.deepep_mode]]
        if s.deepep_mode == "auto":
            notes.append(
                "vLLM has no automatic DeepEP mode: deepep_high_throughput suits prefill, deepep_low_latency decode"
            )
    argv += ["--enable-dbo"] if s.two_batch_overlap else []
    if s.eplb or s.redundant_experts:  # vLLM refuses redundant experts without EPLB (ParallelConfig validator)
        argv += ["--enable-eplb"]
    if s.redundant_experts:
        argv += ["--eplb-config", json.dumps({"num_redundant_experts": s.redundant_experts}, separators=(",", ":"))]
    return argv


def _sglang_wide_ep(s: Settings) -> list[str]:
    """DeepEP, its mode, two-batch overlap and EPLB (server_arguments.md "MoE" and "Optimization/debug options")."""
    if s.ep <= 1:
        return []
    argv = ["--moe-a2a-backend", s.a2a_backend] if s.a2a_backend != "none" else []
    argv += ["--deepep-mode", s.deepep_mode] if s.a2a_backend == "deepep" and s.deepep_mode != "auto" else []
    argv += ["--enable-two-batch-overlap"] if s.two_batch_overlap else []
    argv += ["--enable-eplb"] if s.eplb else []
    argv += ["--ep-num-redundant-experts", str(s.redundant_experts)] if s.redundant_experts else []
    return argv


def sglang(s: Settings, notes: list[str], files: dict) -> list[Command]:
    """`python -m sglang.launch_server`: --tp-size counts all TP × DP GPUs; DP attention splits it (server_args)."""
    argv = ["python", "-m", "sglang.launch_server", "--model-path", s.model, "--tp-size", str(s.tp * s.dp)]
    argv += ["--dp-size", str(s.dp), "--enable-dp-attention"] if s.dp > 1 else []
    argv += ["--ep-size", str(s.ep)] if s.ep > 1 else []
    argv += ["--pp-size", str(s.pp)] if s.pp > 1 else []
    argv += _sglang_wide_ep(s)
    argv += ["--enable-mixed-chunk"] if s.mixed_chunk else []
    argv += ["--scheduler-recv-interval", str(s.recv_interval)] if s.recv_interval > 1 else []
    argv += ["--context-length", str(s.max_model_len), "--max-running-requests", str(s.max_num_seqs * s.dp)]
    argv += ["--chunked-prefill-size", str(s.max_batched_tokens), "--page-size", str(s.block_size)]
    argv += ["--mem-fraction-static", f"{s.mem_fraction:g}"]
    argv += ["--kv-cache-dtype", "fp8_e4m3"] if s.kv == "fp8" else []
    argv += _online_quantization(s, notes)
    argv += [] if s.prefix_caching else ["--disable-radix-cache"]
    argv += ["--disable-cuda-graph"] if s.eager else []
    argv += ["--host", "0.0.0.0", "--port", str(PORT)]
    if s.nodes > 1:
        argv += ["--nnodes", str(s.nodes), "--node-rank", "$NODE_RANK"]
        argv += ["--dist-init-addr", f"$LEADER_IP:{DIST_INIT_PORT}"]
    if s.dp > 1:
        notes.append("SGLang's --max-running-requests counts the whole instance: max_num_seqs × DP")
    return [Command("server", tuple(argv))]


def _trtllm_wide_ep(s: Settings, notes: list[str]) -> dict:
    """moe_config: the WIDEEP backend (its own all-to-all kernels) and the load balancer's expert slots
    (num_slots = routed experts + redundant ones; layer_updates_per_iter > 0 = online EPLB, 0 = offline placement)."""
    if s.two_batch_overlap:
        notes.append("two-batch overlap has no TensorRT-LLM switch at the pinned commits: not passed")
    if s.a2a_backend != "deepep" and not s.eplb and not s.redundant_experts:
        return {}
    moe: dict = {"backend": "WIDEEP"}
    if s.eplb or s.redundant_experts:
        updates = 1 if s.eplb else 0
        moe["load_balancer"] = {"num_slots": s.num_experts + s.redundant_experts, "layer_updates_per_iter": updates}
        if not updates:
            notes.append(
                "TensorRT-LLM's offline load balancer (layer_updates_per_iter 0) reads an expert placement made by "
                "examples/wide_ep/ep_load_balancer; --enable-eplb gives the online one"
            )
    if s.a2a_backend == "deepep" and s.deepep_mode != "auto":
        notes.append("TensorRT-LLM's WIDEEP backend picks its own all-to-all kernels: --deepep-mode is not passed")
    return {"moe_config": moe}


def tensorrt_llm(s: Settings, notes: list[str], files: dict) -> list[Command]:
    """`trtllm-serve` (tensorrt_llm/commands/serve.py) + its extra-options YAML (llmapi/llm_args.py fields)."""
    if s.dp > 1 and s.tp > 1:
        unsupported("tensorrt-llm", "attention DP runs with attention TP 1 (enable_attention_dp); use --tp 1")
    if s.pp > 1 and s.dp > 1:
        unsupported("tensorrt-llm", "attention DP with pipeline stages")
    options: dict = {
        "kv_cache_config": {"enable_block_reuse": s.prefix_caching, "free_gpu_memory_fraction": s.free_share},
    }
    if s.kv == "fp8":
        options["kv_cache_config"]["dtype"] = "fp8"
    if s.dp > 1:
        options["enable_attention_dp"] = True
    if s.ep > 1:
        options["moe_expert_parallel_size"] = s.ep
        options["moe_tensor_parallel_size"] = s.moe_tp
        options.update(_trtllm_wide_ep(s, notes))
    if s.eager:
        options["cuda_graph_config"] = None
    iters, ratio = s.batch_wait
    options.update({"batch_wait_timeout_iters": iters} if iters else {})
    options.update({"batch_wait_max_tokens_ratio": ratio} if ratio else {})
    files[TRTLLM_OPTIONS_FILE] = yaml.safe_dump(options, sort_keys=False)
    argv = ["trtllm-serve", s.model, "--backend", "pytorch", "--tp_size", str(s.tp * s.dp)]
    argv += ["--pp_size", str(s.pp)] if s.pp > 1 else []
    argv += ["--ep_size", str(s.ep)] if s.ep > 1 else []
    argv += ["--max_batch_size", str(s.max_num_seqs), "--max_num_tokens", str(s.max_batched_tokens)]
    argv += ["--max_seq_len", str(s.max_model_len)]
    argv += ["--kv_cache_free_gpu_memory_fraction", f"{s.free_share:g}"]
    argv += ["--extra_llm_api_options", TRTLLM_OPTIONS_FILE, "--host", "0.0.0.0", "--port", str(PORT)]
    if s.weights not in (s.checkpoint_weights, "bf16", "fp16"):
        notes.append(f"weights {s.weights}: serve a ModelOpt-quantized {s.weights} checkpoint")
    launcher = ()
    if s.nodes > 1:
        launcher = ("mpirun", "-n", str(s.gpus), "--npernode", str(s.node_gpus), "trtllm-llmapi-launch")
        notes.append("multi-node TensorRT-LLM runs under MPI (or srun) with trtllm-llmapi-launch")
    return [Command("server", tuple(argv), launcher)]


def llama_cpp(s: Settings, notes: list[str], files: dict) -> list[Command]:
    """`llama-server` (common/arg.cpp): one process per node, split by layer (PP) or by row (TP); no DP/EP."""
    if s.dp > 1 or s.ep > 1 or s.nodes > 1 or (s.tp > 1 and s.pp > 1):
        unsupported("llama.cpp", "it splits one model over the GPUs of one node by layer or by row only")
    quant = s.weights.upper() if s.weights.startswith("q") else {"bf16": "BF16", "fp16": "F16"}.get(s.weights, "Q8_0")
    argv = ["llama-server", "--model", f"{s.model.split('/')[-1]}-{quant}.gguf"]
    # the context is shared by the slots: each of --parallel slots gets ctx-size / parallel tokens
    argv += ["--ctx-size", str(s.max_model_len * s.max_num_seqs), "--parallel", str(s.max_num_seqs)]
    argv += ["--n-gpu-layers", "999", "--batch-size", str(s.max_batched_tokens)]
    argv += ["--split-mode", "row" if s.tp > 1 else "layer"] if s.gpus > 1 else []
    kv = LLAMA_CPP_KV.get(s.kv, "f16")
    argv += ["--cache-type-k", kv, "--cache-type-v", kv, "--host", "0.0.0.0", "--port", str(PORT)]
    notes.append("llama.cpp serves a GGUF file: convert or download the model in that format")
    if s.kv == "fp8":
        notes.append("llama.cpp has no FP8 KV cache; q8_0 is its 8-bit one")
    return [Command("server", tuple(argv))]


def lmdeploy(s: Settings, notes: list[str], files: dict) -> list[Command]:
    """`lmdeploy serve api_server` (lmdeploy/cli/serve.py) on TurboMind, the engine its memory rule and constants
    describe: at InternLM/lmdeploy@1263d5c its argument group takes --tp, --dp, --ep, --nnodes, --node-rank and
    --dist-init-addr (serve.py L148-171); --eager-mode is the PyTorch engine's only. A model TurboMind cannot run
    falls back to PyTorch (serve.py L231-233, autoget_backend)."""
    argv = ["lmdeploy", "serve", "api_server", s.model, "--backend", "turbomind", "--tp", str(s.tp)]
    argv += ["--dp", str(s.dp)] if s.dp > 1 else []
    argv += ["--ep", str(s.ep)] if s.ep > 1 else []
    if s.pp > 1:
        unsupported("lmdeploy", "pipeline parallelism")
    argv += ["--session-len", str(s.max_model_len), "--max-batch-size", str(s.max_num_seqs)]
    argv += ["--max-prefill-token-num", str(s.max_batched_tokens), "--cache-block-seq-len", str(s.block_size)]
    argv += ["--cache-max-entry-count", f"{s.free_share:g}"]
    argv += ["--quant-policy", str(LMDEPLOY_KV_POLICY[s.kv])] if s.kv in LMDEPLOY_KV_POLICY else []
    argv += ["--enable-prefix-caching"] if s.prefix_caching else []
    if s.eager:
        notes.append("TurboMind has no eager mode (--eager-mode is the PyTorch engine's): not passed")
    argv += ["--server-name", "0.0.0.0", "--server-port", str(PORT)]
    if s.nodes > 1:
        argv += ["--nnodes", str(s.nodes), "--node-rank", "$NODE_RANK", "--dist-init-addr", "$LEADER_IP"]
    if s.weights not in (s.checkpoint_weights, "bf16", "fp16"):
        notes.append(f"weights {s.weights}: serve a {s.weights} checkpoint (lmdeploy lite produces AWQ ones)")
    return [Command("server", tuple(argv))]


BUILDERS = {"vllm": vllm, "sglang": sglang, "tensorrt-llm": tensorrt_llm, "llama.cpp": llama_cpp, "lmdeploy": lmdeploy}
