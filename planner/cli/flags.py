"""The CLI's edge: which flag feeds each engine field, so an error raised deep in the engine names the flag typed.

The engine (planner/) raises `InputError(field, message)` with the FIELD name (`tensor_parallel_size`, `batch`);
`planner.cli.main` prints `error: FLAG: message` through `flag_for`. The UI maps the same fields to widget labels
in `ui/labels.py`.
"""

from __future__ import annotations

FIELD_FLAGS = {
    # scenario (planner.core.scenario, planner.core.catalog, planner.core.hf_config)
    "model": "--model",
    "gpu": "--gpu",
    "gpu_memory_gb": "--gpu-memory-gb",
    "num_gpus": "--num-gpus",
    "tensor_parallel_size": "--tp",
    "weights": "--weights",
    "kv_cache_dtype": "--kv-dtype",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "max_model_len": "--max-model-len",
    "block_size": "--block-size",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "enforce_eager": "--enforce-eager",
    "context_tokens": "--context",
    "engine": "--engine",
    # KV offload tiers (planner.sim.offload_plan)
    "kv_offload": "--kv-offload",
    "cpu_bytes": "--cpu-offload-gib",
    "cpu_offload_gib": "--cpu-offload-gib",
    "ssd_bytes": "--ssd-offload-gib",
    "offload_host": "--offload-host",
    "hicache_write_policy": "--hicache-write-policy",
    # a static batch (planner.latency.metrics)
    "batch": "--batch",
    "input_tokens": "--input-tokens",
    "output_tokens": "--output-tokens",
    "concurrency": "--batch",  # estimate --mode continuous: B concurrent requests
    # traffic and the simulator (planner.traffic, planner.sim)
    "rate_per_s": "--rate",
    "num_users": "--users",
    "num_requests": "--num-requests",
    "cv": "--cv",
    "think_time_s": "--think-time",
    "max_queue": "--max-queue",
    "num_gpu_blocks": "--gpu-memory-utilization",
    "turns": "--turns",
    "system_prompt_tokens": "--system-prompt-tokens",
    "first_input": "--first-input-tokens",
    # the fleet (planner.sim.fleet, planner.sim.router)
    "replicas": "--replicas",
    "router": "--router",
    # capacity and recommend (planner.capacity)
    "target_rps": "--target-rate",
    "headroom": "--headroom",
    "rel_tol": "--rel-tol",
    "gpus": "--gpus",
    "workers": "--workers",
    "ray_address": "--ray",
    # techniques and validation
    "spec_k": "--k",
    "spec_alpha": "--alpha",
    "points": "--points",
    # parallelism and disaggregation (planner.core.specs, planner.capacity.disagg)
    "pipeline_parallel_size": "--pp",
    "data_parallel_size": "--dp",
    "expert_parallel_size": "--ep",
    "enable_expert_parallel": "--ep",
    "long_prefill_token_threshold": "--long-prefill-token-threshold",
    "kv_link": "--kv-link",
    "kv_link_latency_ms": "--kv-link-latency-ms",
    "kv_link_gb_s": "--kv-link-gb-s",
    "ep_size": "--ep",
    "moe_a2a_backend": "--moe-a2a-backend",
    "deepep_mode": "--deepep-mode",
    "enable_two_batch_overlap": "--enable-two-batch-overlap",
    "enable_mixed_chunk": "--enable-mixed-chunk",
    "scheduler_recv_interval": "--scheduler-recv-interval",
    "mem_fraction_static": "--mem-fraction-static",
    "batch_wait_timeout_iters": "--batch-wait-timeout-iters",
    "batch_wait_max_tokens_ratio": "--batch-wait-max-tokens-ratio",
    "max_prefill_tokens": "--max-prefill-tokens",
    "enable_chunked_prefill": "--enable-chunked-prefill",
    "attention_dp_timeout_iters": "--attention-dp-timeout-iters",
    "warmup_requests": "--warmup-requests",
    "client": "--client",
    "enable_eplb": "--enable-eplb",
    "ep_num_redundant_experts": "--ep-num-redundant-experts",
    # a given xPyD layout (planner.capacity.disagg_layout)
    "prefill_instances": "--prefill-instances",
    "prefill_tp": "--prefill-tp",
    "prefill_ep": "--prefill-ep",
    "decode_instances": "--decode-instances",
    "decode_tp": "--decode-tp",
    "decode_ep": "--decode-ep",
    "transfer_engine": "--transfer-engine",
    "handoff_ms": "--handoff-ms",
}


def flag_for(field: str) -> str:
    """The flag behind an engine field name (the field itself when it already is a flag or a file position).

    A compound field names its first word: "model num_attention_heads" (a field of the --model file) is printed
    "--model num_attention_heads"."""
    head, sep, rest = field.partition(" ")
    return FIELD_FLAGS.get(head, head) + sep + rest
