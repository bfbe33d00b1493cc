"""Each engine's own names for a deployment's settings, and the flags its argument parser accepts.

One scenario layout (attention TP × attention DP, MoE-TP × EP over the same TP × DP GPUs, PP) under each engine's
names (LAYOUT_NAMES). Engines count GPUs differently: vLLM's --tensor-parallel-size is the attention TP of one DP
rank; SGLang's --tp-size and TensorRT-LLM's tensor_parallel_size are all TP × DP GPUs of the instance, with DP
attention switched on by --enable-dp-attention / enable_attention_dp (TensorRT-LLM's attention DP means attention
TP 1). vLLM's EP is TP × DP or nothing; SGLang's --ep-size and TensorRT-LLM's moe_expert_parallel_size may be any
divisor, the rest of the group slicing each expert (MoE-TP).

KNOWN_FLAGS copies, per engine, the option strings of its parser at a pinned commit (SOURCES): a launch line may
emit only these (tests/test_launch.py checks every one).
"""

from __future__ import annotations

SOURCES = {
    "vllm": "vllm-project/vllm@99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b vllm/engine/arg_utils.py "
    "(EngineArgs.add_cli_args; bool fields get --no-*), docs/serving/data_parallel_deployment.md (--headless)",
    "sglang": "sgl-project/sglang@b36e8e198b71553316b55bce53de6ecf9b3a9a47 docs/advanced_features/"
    "server_arguments.md (generated from python/sglang/srt/server_args.py ServerArgs.add_cli_args)",
    "tensorrt-llm": "NVIDIA/TensorRT-LLM@4c05a74891e4df8066f08ed4ce14b0972abe4e25 tensorrt_llm/commands/serve.py "
    "(click options); YAML keys: @fcd3f31682808ae56118ae43c1d7864a3a945e6f tensorrt_llm/llmapi/llm_args.py",
    "llama.cpp": "ggml-org/llama.cpp@145b6280d6aa1890e22457143dad0badb3fd6820 common/arg.cpp",
    "lmdeploy": "InternLM/lmdeploy@1263d5cd889b7ad500e85b8eb20401327a4516ab lmdeploy/cli/serve.py "
    "(add_parser_api_server) and lmdeploy/cli/utils.py (ArgumentHelper)",
}

KNOWN_FLAGS: dict[str, frozenset[str]] = {
    "vllm": frozenset(
        {
            "--tensor-parallel-size",
            "--pipeline-parallel-size",
            "--data-parallel-size",
            "--data-parallel-size-local",
            "--data-parallel-address",
            "--data-parallel-rpc-port",
            "--data-parallel-start-rank",
            "--enable-expert-parallel",
            "--all2all-backend",
            "--enable-dbo",
            "--enable-eplb",
            "--eplb-config",
            "--max-model-len",
            "--max-num-seqs",
            "--max-num-batched-tokens",
            "--long-prefill-token-threshold",
            "--gpu-memory-utilization",
            "--block-size",
            "--kv-cache-dtype",
            "--quantization",
            "--enable-prefix-caching",
            "--no-enable-prefix-caching",
            "--enforce-eager",
            "--kv-transfer-config",
            "--served-model-name",
            "--headless",
            "--host",
            "--port",
        }
    ),
    "sglang": frozenset(
        {
            "--model-path",
            "--tp-size",
            "--dp-size",
            "--ep-size",
            "--pp-size",
            "--enable-dp-attention",
            "--moe-dense-tp-size",
            "--moe-a2a-backend",
            "--deepep-mode",
            "--enable-two-batch-overlap",
            "--enable-mixed-chunk",
            "--scheduler-recv-interval",
            "--enable-eplb",
            "--ep-num-redundant-experts",
            "--context-length",
            "--max-running-requests",
            "--chunked-prefill-size",
            "--mem-fraction-static",
            "--page-size",
            "--kv-cache-dtype",
            "--quantization",
            "--disable-radix-cache",
            "--disable-cuda-graph",
            "--nnodes",
            "--node-rank",
            "--dist-init-addr",
            "--disaggregation-mode",
            "--disaggregation-transfer-backend",
            "--host",
            "--port",
        }
    ),
    "tensorrt-llm": frozenset(
        {
            "--backend",
            "--tp_size",
            "--pp_size",
            "--ep_size",
            "--max_batch_size",
            "--max_num_tokens",
            "--max_seq_len",
            "--kv_cache_free_gpu_memory_fraction",
            "--extra_llm_api_options",
            "--server_role",
            "--host",
            "--port",
        }
    ),
    "llama.cpp": frozenset(
        {
            "--model",
            "--ctx-size",
            "--parallel",
            "--n-gpu-layers",
            "--split-mode",
            "--cache-type-k",
            "--cache-type-v",
            "--batch-size",
            "--host",
            "--port",
        }
    ),
    "lmdeploy": frozenset(
        {
            "--backend",
            "--tp",
            "--dp",
            "--ep",
            "--session-len",
            "--max-batch-size",
            "--max-prefill-token-num",
            "--cache-max-entry-count",
            "--cache-block-seq-len",
            "--quant-policy",
            "--enable-prefix-caching",
            "--eager-mode",
            "--role",
            "--nnodes",
            "--node-rank",
            "--dist-init-addr",
            "--server-name",
            "--server-port",
        }
    ),
}

# The router in front of a disaggregated layout, per engine: its command and the options its parser accepts at a
# pinned commit (the launch line may emit only these; tests/test_launch.py checks them).
ROUTER_SOURCES = {
    "sglang": "sgl-project/sglang@b1018cbe4d047ca6f71f179bcac3da6c0119c88d sgl-router/py_src/sglang_router/"
    "launch_router.py (RouterArgs.add_cli_args: --pd-disaggregated, --prefill URL BOOTSTRAP_PORT, --decode URL)",
    "vllm": "vllm-project/vllm@e009930196c9a5da69d0a6c025ae580efff00168 tests/v1/kv_connector/nixl_integration/"
    "toy_proxy_server.py (parse_args; round robin over the prefill and the decode instances)",
}
ROUTER_FLAGS: dict[str, frozenset[str]] = {
    "sglang": frozenset({"--pd-disaggregated", "--prefill", "--decode", "--policy", "--host", "--port"}),
    "vllm": frozenset(
        {"--prefiller-hosts", "--prefiller-ports", "--decoder-hosts", "--decoder-ports", "--host", "--port"}
    ),
}
# SGLang's prefill server answers the router's bootstrap on --disaggregation-bootstrap-port, default 8998
# (docs/advanced_features/server_arguments.md @b36e8e19, "PD disaggregation")
SGLANG_BOOTSTRAP_PORT = 8998

LAYOUT_NAMES = {
    "attention TP": {
        "vllm": "--tensor-parallel-size TP",
        "sglang": "--tp-size TP × DP with --dp-size DP --enable-dp-attention (attention TP = tp / dp)",
        "tensorrt-llm": "tensor_parallel_size = TP × DP (attention TP = 1 with enable_attention_dp)",
    },
    "attention DP": {
        "vllm": "--data-parallel-size DP",
        "sglang": "--dp-size DP --enable-dp-attention",
        "tensorrt-llm": "enable_attention_dp: true (DP = tensor_parallel_size)",
    },
    "EP": {
        "vllm": "--enable-expert-parallel (EP = TP × DP only)",
        "sglang": "--ep-size EP (MoE-TP = tp_size / ep_size)",
        "tensorrt-llm": "moe_expert_parallel_size: EP (--ep_size)",
    },
    "MoE-TP": {
        "vllm": "TP × DP without EP, else 1",
        "sglang": "tp_size / ep_size",
        "tensorrt-llm": "moe_tensor_parallel_size: TP × DP / EP",
    },
    "all-to-all backend": {
        "vllm": "--all2all-backend deepep_high_throughput|deepep_low_latency (older: env VLLM_ALL2ALL_BACKEND)",
        "sglang": "--moe-a2a-backend deepep --deepep-mode normal|low_latency|auto",
        "tensorrt-llm": "moe_config: {backend: WIDEEP} (its own all-to-all kernels; no mode to pass)",
    },
    "two-batch overlap": {
        "vllm": "--enable-dbo (dual-batch overlap)",
        "sglang": "--enable-two-batch-overlap",
        "tensorrt-llm": "not mapped (no switch at the pinned commits)",
    },
    "EPLB": {
        "vllm": "--enable-eplb --eplb-config '{\"num_redundant_experts\": R}'",
        "sglang": "--enable-eplb --ep-num-redundant-experts R",
        "tensorrt-llm": "moe_config: {load_balancer: {num_slots: experts + R, layer_updates_per_iter: 1}}",
    },
    "PP": {
        "vllm": "--pipeline-parallel-size",
        "sglang": "--pp-size",
        "tensorrt-llm": "pipeline_parallel_size (--pp_size)",
    },
}

# TensorRT-LLM's extra-options YAML keys (LlmArgs / TorchLlmArgs fields and KvCacheConfig's), same source; the wide-EP
# ones (moe_config: backend, load_balancer: num_slots, layer_updates_per_iter) from TRTLLM_WIDE_EP_SOURCE; the batch
# waiting ones (TorchLlmArgs batch_wait_timeout_iters, batch_wait_max_tokens_ratio, status "prototype") from
# TRTLLM_BATCH_WAIT_SOURCE
TRTLLM_YAML_KEYS = frozenset(
    {
        "enable_attention_dp",
        "moe_expert_parallel_size",
        "moe_tensor_parallel_size",
        "kv_cache_config",
        "dtype",
        "enable_block_reuse",
        "free_gpu_memory_fraction",
        "cuda_graph_config",
        "moe_config",
        "backend",
        "load_balancer",
        "num_slots",
        "layer_updates_per_iter",
        "batch_wait_timeout_iters",
        "batch_wait_max_tokens_ratio",
    }
)
TRTLLM_BATCH_WAIT_SOURCE = (
    "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py TorchLlmArgs (a 2026 copy, search-index content id "
    "1090804222; not at the pinned @fcd3f316), set in the extra-options YAML by SemiAnalysisAI/InferenceX@026d16b8~1 "
    "benchmarks/70b_fp8_b200_trt_slurm.sh"
)

# Wide expert parallelism under vLLM's and TensorRT-LLM's names (SGLang's are in KNOWN_FLAGS above).
# vLLM: the flags from vllm/engine/arg_utils.py @99d7eb5d (parallel_group: --enable-expert-parallel,
# --all2all-backend, --enable-dbo, --enable-eplb, --eplb-config); their values from vllm/config/parallel.py
# @840e7972c6ab74061696e81e17d8a74db2aefd7e (All2AllBackend literals; EPLBConfig.num_redundant_experts; the
# ParallelConfig validator: EPLB needs --enable-expert-parallel, redundant experts need --enable-eplb).
VLLM_WIDE_EP_SOURCE = (
    "vllm-project/vllm@99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b vllm/engine/arg_utils.py; "
    "@840e7972c6ab74061696e81e17d8a74db2aefd7e vllm/config/parallel.py (All2AllBackend, EPLBConfig)"
)
VLLM_ALL2ALL_BACKENDS = frozenset(
    {
        "naive",
        "pplx",
        "deepep_high_throughput",
        "deepep_low_latency",
        "mori",
        "allgather_reducescatter",
        "flashinfer_all2allv",
    }
)
VLLM_EPLB_CONFIG_KEYS = frozenset(
    {"window_size", "step_interval", "num_redundant_experts", "log_balancedness", "use_async", "policy"}
)
# DeepEP's modes (SGLang's --deepep-mode) as vLLM's backends; vLLM has no "auto": high throughput (prefill's)
VLLM_ALL2ALL = {
    "normal": "deepep_high_throughput",
    "low_latency": "deepep_low_latency",
    "auto": "deepep_high_throughput",
}
# TensorRT-LLM: moe_config's schema as its wide-EP example documents it, examples/wide_ep/README.md
# @a98a9061d72f6fd39f5d055ebdd2c6878a100e2c ("backend: WIDEEP"; load_balancer num_slots "must be >= total
# experts", layer_updates_per_iter "0 = offline, > 0 = online"); MoeConfig.backend's literals in
# tensorrt_llm/llmapi/llm_args.py (CUTLASS, CUTEDSL, WIDEEP, TRTLLM, DEEPGEMM, VANILLA).
TRTLLM_WIDE_EP_SOURCE = "NVIDIA/TensorRT-LLM@a98a9061d72f6fd39f5d055ebdd2c6878a100e2c examples/wide_ep/README.md"
TRTLLM_MOE_BACKENDS = frozenset({"CUTLASS", "CUTEDSL", "WIDEEP", "TRTLLM", "DEEPGEMM", "VANILLA"})
