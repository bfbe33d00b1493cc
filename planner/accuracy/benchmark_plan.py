"""A load test for the scenario: the `vllm serve` line with the planner's settings, and benchmark commands that sweep
the request rate around the planner's predicted capacity, so the user can measure and upload the results.

Capacity (requests/s) = replicas × B × N / (prefill + (N − 1) × TPOT) / N at B = min(max_num_seqs, requests that
fit the KV pool): the static-batch throughput of planner.latency.metrics divided by output tokens. The sweep runs
from 10% to 125% of it, so the knee where latency climbs shows up in the results. Commands use vLLM's CLI names
(`vllm serve`, `vllm bench serve`; older releases ship the latter as benchmarks/benchmark_serving.py with the same
flags) and GuideLLM's `guidellm benchmark`.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass

from planner.core.scenario import Resolved, Scenario
from planner.latency.metrics import memory_limit, sweep
from planner.latency.perf_model import PerfModel

RATE_FRACTIONS = (0.1, 0.25, 0.5, 0.75, 1.0, 1.25)  # of the predicted capacity
SECONDS_PER_RATE = 120  # prompts per rate = rate × this (at least MIN_PROMPTS)
MIN_PROMPTS = 50
DTYPE = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
# weight precision id -> vLLM --quantization; checkpoint formats need a checkpoint quantized that way
QUANTIZATION = {
    "fp8": "fp8",
    "gptq-int4": "gptq_marlin",
    "gptq-int8": "gptq_marlin",
    "awq-int4": "awq_marlin",
    "nf4": "bitsandbytes",
}
NEEDS_CHECKPOINT = {"gptq-int4": "a GPTQ", "gptq-int8": "a GPTQ", "awq-int4": "an AWQ", "int8": "a W8A8 INT8"}


@dataclass(frozen=True)
class LoadTestPlan:
    serve: str  # the vllm serve command line
    bench: str  # a shell loop of vllm bench serve over the rates
    guidellm: str  # the GuideLLM sweep equivalent
    rates: tuple[float, ...]  # requests/s
    capacity_rps: float  # the planner's predicted capacity
    notes: tuple[str, ...]


def model_id(s: Scenario, r: Resolved) -> str:
    """What `vllm serve` is pointed at: the preset's Hugging Face id (a custom model needs its own path)."""
    return r.model.name if s.model_spec is not None else s.model


def serve_args(s: Scenario, r: Resolved) -> list[str]:
    """`vllm serve MODEL ...` with every engine setting the planner assumed."""
    dep = r.deployment
    args = ["vllm", "serve", model_id(s, r), "--tensor-parallel-size", str(dep.tensor_parallel_size)]
    if dep.num_replicas > 1:
        args += ["--data-parallel-size", str(dep.num_replicas)]
    args += [
        "--gpu-memory-utilization",
        f"{dep.gpu_memory_utilization:g}",
        "--max-model-len",
        str(r.max_model_len),
        "--max-num-seqs",
        str(dep.max_num_seqs),
        "--max-num-batched-tokens",
        str(dep.max_num_batched_tokens),
        "--block-size",
        str(dep.block_size),
    ]
    if r.weights.id in DTYPE:
        args += ["--dtype", DTYPE[r.weights.id]]
    if r.weights.id in QUANTIZATION:
        args += ["--quantization", QUANTIZATION[r.weights.id]]
    if r.kv.id == "fp8":
        args += ["--kv-cache-dtype", "fp8"]
    if dep.enforce_eager:
        args.append("--enforce-eager")
    return args


def capacity_rps(r: Resolved, input_tokens: int, output_tokens: int, pm: PerfModel | None = None) -> float:
    """Requests/s the deployment completes at its largest batch (all replicas), per the roofline model under the
    scenario's engine."""
    batch = max(1, min(r.deployment.max_num_seqs, memory_limit(r, input_tokens, output_tokens)))
    row = sweep(pm or PerfModel(r), [batch], input_tokens, output_tokens)
    return float(row["throughput_tokens_per_s"][0]) / output_tokens


def sweep_rates(capacity: float) -> tuple[float, ...]:
    """RATE_FRACTIONS of the capacity, rounded to two significant figures, without repeats."""
    rates = []
    for f in RATE_FRACTIONS:
        x = capacity * f
        rounded = float(f"{x:.2g}") if x > 0 else 0.0
        if rounded > 0 and rounded not in rates:
            rates.append(rounded)
    return tuple(rates)


def load_test_plan(
    s: Scenario, r: Resolved, input_tokens: int, output_tokens: int, pm: PerfModel | None = None, port: int = 8000
) -> LoadTestPlan:
    """Commands to measure this scenario at the prompt and output lengths given."""
    model = model_id(s, r)
    cap = capacity_rps(r, input_tokens, output_tokens, pm)
    rates = sweep_rates(cap)
    runs = " ".join(f"{_fmt(x)}:{max(MIN_PROMPTS, math.ceil(x * SECONDS_PER_RATE))}" for x in rates)
    bench = "\n".join(
        [
            f"for RUN in {runs}; do  # request rate (req/s):number of prompts",
            "  RATE=${RUN%%:*}; PROMPTS=${RUN##*:}",
            f"  vllm bench serve --model {shlex.quote(model)} --base-url http://localhost:{port} \\",
            f"    --dataset-name random --random-input-len {input_tokens} --random-output-len {output_tokens} "
            "--ignore-eos \\",
            '    --request-rate "$RATE" --num-prompts "$PROMPTS" --percentile-metrics ttft,tpot,itl,e2el \\',
            '    --save-result --result-dir results --result-filename "rate-${RATE}.json"',
            "done",
        ]
    )
    guidellm = (
        f"guidellm benchmark --target http://localhost:{port} --model {shlex.quote(model)} --rate-type sweep "
        f"--rate {len(rates)} --max-seconds {SECONDS_PER_RATE} "
        f'--data "prompt_tokens={input_tokens},output_tokens={output_tokens}" --output-path guidellm.json'
    )
    notes = [
        f"predicted capacity ≈ {cap:.3g} requests/s; the sweep covers {_fmt(rates[0])} … {_fmt(rates[-1])} req/s",
        "--ignore-eos makes every request generate exactly the output length asked for",
        "e2el in --percentile-metrics saves mean_e2el_ms, which the calibration uses for Little's law",
    ]
    if r.weights.id in NEEDS_CHECKPOINT:
        notes.append(
            f"weights {r.weights.label}: point vLLM at {NEEDS_CHECKPOINT[r.weights.id]} checkpoint of "
            "the model (vLLM reads the format from its config)"
        )
    if r.weights.id.startswith("q"):
        notes.append(
            f"weights {r.weights.label} are a GGUF file: vLLM's GGUF support is experimental; measure "
            "with the engine you will run"
        )
    if r.engine.id != "vllm":
        notes.append(
            f"the rates are {r.engine.label}'s predicted capacity; the commands start vLLM (the benchmark client "
            f"works against any OpenAI-compatible server: start {r.engine.label} with the same limits instead)"
        )
    if s.model_spec is not None:
        notes.append("custom model: replace the model name with its Hugging Face id or local path")
    return LoadTestPlan(
        serve=" ".join(shlex.quote(a) for a in serve_args(s, r)),
        bench=bench,
        guidellm=guidellm,
        rates=rates,
        capacity_rps=cap,
        notes=tuple(notes),
    )


def _fmt(x: float) -> str:
    return f"{x:g}"
