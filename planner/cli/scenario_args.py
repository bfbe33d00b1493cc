"""The "memory flags" every scenario subcommand shares, and their translation into a Scenario."""

from __future__ import annotations

import argparse

import yaml
from pydantic import ValidationError

from planner.cli.flags import FIELD_FLAGS
from planner.core.catalog import DEFAULT_GPU, DEFAULT_MODEL, get_model
from planner.core.engine_defaults import DEFAULT_ENGINE, ENGINES
from planner.core.errors import InputError, from_validation_error
from planner.core.scenario import Calibration, Resolved, Scenario, resolve
from planner.core.specs import Deployment
from planner.core.user_files import read_user_text


def add_scenario_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model and hardware")
    g.add_argument("--model", default=DEFAULT_MODEL, help="preset id (Hugging Face repo id) or path to a config.json")
    gpu = g.add_mutually_exclusive_group()
    gpu.add_argument("--gpu", default=None, help=f"GPU id from data/gpus.yaml (default {DEFAULT_GPU})")
    gpu.add_argument("--gpu-memory-gb", type=float, default=None, help="a custom GPU with this many decimal GB")
    g.add_argument("--num-gpus", type=int, default=None, help="GPUs in the deployment (default: --tp)")
    g.add_argument("--tp", type=int, default=1, help="tensor-parallel size")
    g.add_argument("--pp", type=int, default=1, help="pipeline-parallel size (stages of layers)")
    g.add_argument(
        "--dp", type=int, default=1, help="data-parallel attention ranks per instance (vLLM --data-parallel-size)"
    )
    g.add_argument(
        "--ep",
        type=int,
        default=1,
        help="expert-parallel size: 1 (experts TP-sharded), TP × DP (vLLM --enable-expert-parallel), or a divisor "
        "of TP × DP with MoE-TP = TP × DP / EP (TensorRT-LLM moe_expert_parallel_size, SGLang --ep-size)",
    )
    w = p.add_argument_group("wide expert parallelism (SGLang's names; need --ep > 1)")
    w.add_argument(
        "--moe-a2a-backend",
        choices=("none", "deepep"),
        default="none",
        help="expert all-to-all: none (the engine's own) or deepep (DeepEP's kernels)",
    )
    w.add_argument(
        "--deepep-mode",
        choices=("auto", "normal", "low_latency"),
        default="auto",
        help="DeepEP kernels: normal (prefill), low_latency (decode), auto (by the step)",
    )
    w.add_argument(
        "--enable-two-batch-overlap",
        action="store_true",
        help="two micro-batches: one's dispatch/combine hides behind the other's compute",
    )
    w.add_argument("--enable-eplb", action="store_true", help="EPLB expert placement (balances hot experts)")
    w.add_argument(
        "--ep-num-redundant-experts", type=int, default=0, help="redundant expert slots for EPLB (implies EPLB)"
    )
    g.add_argument(
        "--weights",
        default=None,
        help="weight precision id (see data/precisions.yaml); default: the "
        "checkpoint's own format (e.g. fp8 for DeepSeek-V3), else bf16",
    )
    g.add_argument("--kv-dtype", default="auto", help="KV-cache dtype: auto fp16 bf16 fp8")
    e = p.add_argument_group("engine (limits by vLLM's names; each engine maps them onto its own)")
    e.add_argument(
        "--engine",
        default=DEFAULT_ENGINE,
        choices=ENGINES,
        help="serving engine: its memory rule, scheduler, batch defaults and efficiency profile (default vllm)",
    )
    e.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    e.add_argument(
        "--max-model-len",
        type=int,
        default=None,
        help="default: the model's context window, derived from config.json as `vllm serve` derives it; the app's "
        "default too (Engine settings)",
    )
    e.add_argument("--block-size", type=int, default=16)
    e.add_argument("--max-num-seqs", type=int, default=None, help="default: vLLM's default for the GPU")
    e.add_argument("--max-num-batched-tokens", type=int, default=None, help="default: vLLM's default for the GPU")
    e.add_argument(
        "--no-enable-prefix-caching",
        dest="enable_prefix_caching",
        action="store_false",
        help="turn vLLM V1's prefix caching off (on by default)",
    )
    e.add_argument(
        "--long-prefill-token-threshold",
        type=int,
        default=0,
        help="most prompt tokens one request computes per step (0 = off, vLLM's default)",
    )
    e.add_argument("--enforce-eager", action="store_true", help="no CUDA graphs")
    e.add_argument(
        "--enable-mixed-chunk",
        action="store_true",
        help="SGLang: prompt chunks share a step with the decodes (off, SGLang's default: a prefill batch runs "
        "first and alone); other engines ignore it",
    )
    e.add_argument(
        "--scheduler-recv-interval",
        type=int,
        default=1,
        help="SGLang: the scheduler reads new requests every N decode steps (default 1: every step); an arrival "
        "waits about N / 2 steps more for its first token",
    )
    e.add_argument(
        "--mem-fraction-static",
        type=float,
        default=None,
        help="SGLang: the share of GPU memory for weights and the KV pool (default: SGLang's own for the GPU, TP and "
        "chunk size)",
    )
    e.add_argument(
        "--batch-wait-timeout-iters",
        type=int,
        default=0,
        help="TensorRT-LLM (extra-options YAML): prompts wait up to N iterations to be batched (default 0: off)",
    )
    e.add_argument(
        "--batch-wait-max-tokens-ratio",
        type=float,
        default=0.0,
        help="TensorRT-LLM (extra-options YAML): the wait ends once the waiting prompts and the decodes hold this "
        "share of max_num_tokens (0 to 1; default 0: off)",
    )
    e.add_argument(
        "--max-prefill-tokens",
        type=int,
        default=None,
        help="SGLang: prompt tokens a prefill batch takes beyond its first prompt (default: up to the chunk)",
    )
    e.add_argument(
        "--enable-chunked-prefill",
        choices=("true", "false"),
        default=None,
        help="chunked prefill on or off (TensorRT-LLM enable_chunked_prefill, vLLM --no-enable-chunked-prefill; "
        "default: the engine's own): off, a prompt must fit one step's token budget whole",
    )
    e.add_argument(
        "--attention-dp-timeout-iters",
        type=int,
        default=0,
        help="TensorRT-LLM attention_dp_config (enable_balance: true, timeout_iters N): a rank holds its prompts up "
        "to N steps until every rank has one (default 0: off)",
    )
    e.add_argument(
        "--context", type=int, default=None, help="tokens per request (prompt + output); default max-model-len"
    )
    e.add_argument(
        "--calibration",
        default=None,
        metavar="FILE",
        help="efficiency constants you fitted on your own runs (YAML or JSON: engine, gpu_family, profile: {constant: "
        "value}, source; the Validation page's calibration download): they replace data/efficiency.yaml's for that "
        "engine and GPU family",
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def _default_weights(args: argparse.Namespace) -> str:
    """--weights, else the preset checkpoint's own format (its quantization_config), else bf16."""
    if args.weights:
        return args.weights
    try:
        return get_model(args.model).quantized_weights or "bf16"
    except InputError:
        return "bf16"  # the bad --model is reported by resolve, naming --model


def _expert_parallel(args: argparse.Namespace) -> int:
    """--ep divides TP × DP (MoE-TP × EP = TP × DP; TensorRT-LLM llm_args.py, SGLang --ep-size <= --tp-size)."""
    tp, dp, ep = args.tp, getattr(args, "dp", 1), getattr(args, "ep", 1)
    if ep < 1 or ep > tp * dp or (tp * dp) % ep:
        raise InputError(
            "--ep",
            f"must divide TP × DP = {tp * dp} (the MoE layers span TP × DP GPUs as MoE-TP × EP), got {ep}",
        )
    return ep


def _check_wide_ep(args: argparse.Namespace) -> None:
    """The wide-EP flags act on the expert all-to-all: each needs --ep > 1."""
    if getattr(args, "ep_num_redundant_experts", 0) < 0:
        raise InputError("--ep-num-redundant-experts", f"must be >= 0, got {args.ep_num_redundant_experts}")
    if getattr(args, "ep", 1) > 1:
        return
    for flag, on in (
        ("--moe-a2a-backend", getattr(args, "moe_a2a_backend", "none") != "none"),
        ("--enable-two-batch-overlap", getattr(args, "enable_two_batch_overlap", False)),
        ("--enable-eplb", getattr(args, "enable_eplb", False)),
        ("--ep-num-redundant-experts", getattr(args, "ep_num_redundant_experts", 0) > 0),
    ):
        if on:
            raise InputError(flag, "acts on the experts' all-to-all: set --ep > 1 (e.g. --ep equal to TP × DP)")


# options of one engine only (the launch holds, SGLang's memory fraction): (flag, its engine, the attribute, its
# default)
_ENGINE_OPTIONS = (
    ("--scheduler-recv-interval", "sglang", "scheduler_recv_interval", 1),
    ("--mem-fraction-static", "sglang", "mem_fraction_static", None),
    ("--batch-wait-timeout-iters", "tensorrt-llm", "batch_wait_timeout_iters", 0),
    ("--batch-wait-max-tokens-ratio", "tensorrt-llm", "batch_wait_max_tokens_ratio", 0.0),
    ("--max-prefill-tokens", "sglang", "max_prefill_tokens", None),
    ("--attention-dp-timeout-iters", "tensorrt-llm", "attention_dp_timeout_iters", 0),
)


def _check_engine_options(args: argparse.Namespace) -> None:
    """One engine's option set for another engine is refused by name: that engine has no such option, so it would
    not act."""
    engine = getattr(args, "engine", DEFAULT_ENGINE)
    for flag, owner, attr, off in _ENGINE_OPTIONS:
        if getattr(args, attr, off) != off and engine != owner:
            raise InputError(flag, f"is {owner}'s option (--engine {owner}); {engine} has no such setting")


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    pp, dp = getattr(args, "pp", 1), getattr(args, "dp", 1)
    for flag, value in (("--tp", args.tp), ("--pp", pp), ("--dp", dp)):
        if value < 1:
            raise InputError(flag, f"must be a whole number >= 1, got {value}")
    _check_wide_ep(args)
    _check_engine_options(args)
    values = {
        "num_gpus": args.num_gpus or args.tp * pp * dp,
        "tensor_parallel_size": args.tp,
        "pipeline_parallel_size": pp,
        "data_parallel_size": dp,
        "enable_expert_parallel": _expert_parallel(args) > 1,
        "ep_size": _expert_parallel(args),
        "weights": _default_weights(args),
        "kv_cache_dtype": args.kv_dtype,
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "max_model_len": args.max_model_len,
        "block_size": args.block_size,
        "max_num_seqs": args.max_num_seqs,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "enforce_eager": args.enforce_eager,
        "enable_prefix_caching": getattr(args, "enable_prefix_caching", True),
        "long_prefill_token_threshold": getattr(args, "long_prefill_token_threshold", 0),
        "enable_mixed_chunk": getattr(args, "enable_mixed_chunk", False),
        "enable_chunked_prefill": _on_off(getattr(args, "enable_chunked_prefill", None)),
        **{attr: getattr(args, attr, off) for _, _, attr, off in _ENGINE_OPTIONS},
        "moe_a2a_backend": getattr(args, "moe_a2a_backend", "none"),
        "deepep_mode": getattr(args, "deepep_mode", "auto"),
        "enable_two_batch_overlap": getattr(args, "enable_two_batch_overlap", False),
        "enable_eplb": getattr(args, "enable_eplb", False),
        "ep_num_redundant_experts": getattr(args, "ep_num_redundant_experts", 0),
    }
    try:
        dep = Deployment(**values)
    except ValidationError as err:
        e = from_validation_error(err)
        # a validation error names the flag the user typed (planner.cli.flags); cross-field checks have no field of
        # their own: they concern --num-gpus against --tp
        raise InputError(FIELD_FLAGS.get(e.field, "--num-gpus"), e.message.removeprefix("Value error, ")) from None
    if args.context is not None and args.context <= 0:
        raise InputError("--context", "must be a positive number of tokens")
    if args.gpu_memory_gb is not None and not 0.1 <= args.gpu_memory_gb <= 100_000:
        raise InputError("--gpu-memory-gb", "must be from 0.1 to 100,000 GB")
    return Scenario(
        model=args.model,
        gpu=args.gpu or DEFAULT_GPU,
        gpu_memory_gb=args.gpu_memory_gb,
        deployment=dep,
        context_tokens=args.context,
        engine=getattr(args, "engine", DEFAULT_ENGINE),
        calibration=calibration_from_file(getattr(args, "calibration", None)),
    )


MAX_CALIBRATION_BYTES = 1_000_000


def calibration_from_file(path: str | None) -> Calibration | None:
    """--calibration FILE as the scenario's Calibration (engine, gpu_family, profile, source); a bad file is one
    message naming --calibration. The constants themselves are checked where a step time uses them
    (planner.latency.calibration)."""
    if path is None:
        return None
    text = read_user_text(path, "--calibration", MAX_CALIBRATION_BYTES)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise InputError("--calibration", f"{str(path)[:120]} is not YAML or JSON: {str(err)[:160]}") from None
    if not isinstance(doc, dict):
        raise InputError("--calibration", "must be a mapping with engine, gpu_family and profile")
    try:
        return Calibration(**doc)
    except (ValidationError, TypeError) as err:
        e = from_validation_error(err) if isinstance(err, ValidationError) else None
        detail = f"{e.field}: {e.message}" if e else str(err)[:160]
        raise InputError("--calibration", detail) from None


def _on_off(value: str | None) -> bool | None:
    return None if value is None else value == "true"


def resolved_from_args(args: argparse.Namespace) -> Resolved:
    return resolve(scenario_from_args(args))
