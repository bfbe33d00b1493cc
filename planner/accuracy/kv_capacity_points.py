"""vLLM's KV capacity against its logs: the GPU blocks the planner's vLLM pool predicts for each "# GPU blocks" line of
data/measurements/vllm_kv_observations.csv, under the vLLM version the log names (planner.memory.plan.plan_memory
(...).num_gpu_blocks; planner.memory.vllm_pool.vllm_era picks the profiler of that release). The rows are
out-of-sample except B10 (CUDA-graph constant) and B04 (per-peer non-torch constant); the published latency points
are planner.accuracy.validation's."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from planner.accuracy.validation import short_source
from planner.core.paths import measurements_dir
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.memory.plan import plan_memory

KV_CSV = measurements_dir() / "vllm_kv_observations.csv"
KV_METRIC = "gpu_blocks (vLLM KV capacity)"

# vLLM KV rows rebuilt as scenarios: id -> (model preset, gpu, tp, weights, max_model_len, max_num_batched_tokens,
# gpu_memory_utilization). V0 without chunked prefill profiled max_num_batched_tokens = max(max_model_len, 2048)
# (its default); B10's and B16's logs state theirs. The vLLM version of each comes from the CSV's engine_version
# (planner.memory.vllm_pool.vllm_era picks the profiler of that release).
KV_ROWS = {
    "B01": ("meta-llama/Llama-3.1-8B", "RTX-3090", 1, "bf16", 20000, 20000, 0.9),
    "B03": ("meta-llama/Llama-2-7b-hf", "A100-80GB", 1, "fp16", 4096, 4096, 0.9),
    "B04": ("meta-llama/Llama-2-70b-hf", "A100-80GB", 4, "fp16", 4096, 4096, 0.9),
    "B10": ("meta-llama/Llama-3.1-8B", "RTX-4090", 1, "bf16", 32768, 2048, 0.9),
    "B16": ("meta-llama/Llama-3.1-70B", "H100-SXM", 1, "int8", 2048, 2048, 0.98),
}
KV_NOT_MODELLED = (
    "logged by vLLM's profiler before PR #2031, which under-measured peak memory (the planner models the fix)"
)


def predicted_blocks(row_id: str, version: str | None = None) -> int:
    """GPU blocks the planner's vLLM pool predicts for one observation row (KV_ROWS), under the vLLM version its
    log names (`version` overrides it: '' = today's V1 rule)."""
    model, gpu, tp, weights, max_len, batched, util = KV_ROWS[row_id]
    dep = Deployment(
        num_gpus=tp,
        tensor_parallel_size=tp,
        weights=weights,
        max_model_len=max_len,
        max_num_batched_tokens=batched,
        gpu_memory_utilization=util,
    )
    r = resolve(Scenario(model=model, gpu=gpu, deployment=dep))
    version = kv_versions()[row_id] if version is None else version
    r = dataclasses.replace(r, engine=dataclasses.replace(r.engine, version=version))
    return plan_memory(r).num_gpu_blocks


def kv_versions(path: Path | None = None) -> dict[str, str]:
    """Each log's vLLM version (the CSV's engine_version column: a release, and V0/V1 where the log says)."""
    with open(path or KV_CSV, newline="", encoding="utf-8") as f:
        return {o["id"]: o["engine_version"] for o in csv.DictReader(f)}


def kv_table(path: Path | None = None) -> pd.DataFrame:
    """Observed against predicted GPU blocks for every vLLM log row."""
    with open(path or KV_CSV, newline="", encoding="utf-8") as f:
        obs = list(csv.DictReader(f))
    rows = []
    for o in obs:
        measured = float(o["gpu_blocks"])
        out = {
            "id": o["id"],
            "source": short_source(o["source"]),
            "model": o["model"],
            "gpu": o["gpu"],
            "engine": "vllm",
            "tp": o["tp"],
            "metric": KV_METRIC,
            "unit": "blocks",
            "measured": measured,
            "predicted": np.nan,
            "error_pct": np.nan,
            "vllm_version": o["vllm_version"],
            "engine_version": o["engine_version"],
            "reason": "" if o["id"] in KV_ROWS else KV_NOT_MODELLED,
        }
        if o["id"] in KV_ROWS:
            pred = float(predicted_blocks(o["id"]))
            out.update(predicted=pred, error_pct=100 * (pred - measured) / measured)
        rows.append(out)
    return pd.DataFrame(rows)
