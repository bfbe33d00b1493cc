"""Published measurements (data/measurements/published_points.csv) as scenarios the model can predict.

Each row maps to a Resolved scenario (model preset, catalogue GPU, TP, precisions), an engine profile and a
metric the model can compute in the row's own unit. Rows measured under a request rate (serving benchmarks at a
QPS) depend on queueing and scheduling: they are kept but excluded, "needs the serving simulator". Shared by
scripts/fit_efficiency.py, benchmarks/accuracy.py and the pages.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.paths import published_points_csv
from planner.latency.efficiency import EfficiencyProfile
from planner.latency.metrics import sweep
from planner.latency.perf_model import PerfModel
from planner.core.scenario import Resolved, Scenario, resolve
from planner.core.specs import Deployment

MEASUREMENTS_CSV = published_points_csv()
NEEDS_SIMULATOR = "needs the serving simulator (measured at a request rate)"

MODELS = {"meta-llama/Llama-2-7b": "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-70b": "meta-llama/Llama-2-70b-hf",
          "mistralai/Mistral-7B (v0.1 assumed)": "mistralai/Mistral-7B-v0.1",
          "mistralai/Mixtral-8x7B (v0.1 assumed)": "mistralai/Mixtral-8x7B-v0.1",
          "Qwen/Qwen2.5-7B-Instruct": "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8": "Qwen/Qwen2.5-7B",
          "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4": "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct-AWQ": "Qwen/Qwen2.5-7B",
          "meta-llama/Llama-3.1-8B-Instruct": "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B": "meta-llama/Llama-3.1-8B"}
GPUS = {"H100 80GB": "H100-SXM", "A100 80GB": "A100-80GB"}
WEIGHTS = {"fp8": "fp8", "fp16": "fp16", "bf16": "bf16", "gptq-int8": "gptq-int8", "gptq-int4": "gptq-int4",
           "awq": "awq-int4"}
KV = {"fp8": "fp8", "fp16": "fp16", "bf16": "bf16", "auto": "auto"}
ENGINES = {"TensorRT-LLM": "tensorrt-llm", "vLLM": "vllm", "SGLang": "sglang", "not stated (Splitwise profiling)": "splitwise"}
# metric in the CSV -> (what the model computes, group for the error targets)
METRICS = {"output_throughput_per_gpu": ("throughput_per_gpu", "throughput"),
           "first_token_latency (TTFT)": ("prefill_ms", "prefill"), "prompt_time (TTFT)": ("prefill_ms", "prefill"),
           "prompt_time (batched prefill)": ("prefill_ms", "prefill"),
           "token_time (TBT/TPOT)": ("tpot_ms", "decode"), "generation_speed": ("generation_speed", "decode"),
           "ITL_fit_intercept": ("itl_intercept_ms", "decode"), "ITL_fit_slope": ("itl_slope_ms", "decode")}
SLOPE_CONTEXT = 65536  # the ITL fit spans 256 … 125k context tokens; the slope is read over 0 … 64k


@dataclass(frozen=True)
class Point:
    id: str
    model: str
    gpu: str
    tp: int
    num_gpus: int
    weights: str
    kv_dtype: str
    engine: str
    input_len: int
    output_len: int
    batch: int
    metric: str  # the CSV's metric name
    kind: str  # what the model computes (METRICS)
    group: str  # prefill | decode | throughput
    value: float
    unit: str
    excluded: str  # "" when usable


def _first_word(text: str, table: dict[str, str]) -> str:
    """Map '"fp16 (assumed)"' or '"A100 80GB (DGX-A100)"' by the longest known prefix."""
    for key in sorted(table, key=len, reverse=True):
        if text.startswith(key):
            return table[key]
    raise KeyError(text)


def _int(text: str, default: int = 0) -> int:
    m = re.search(r"\d+", text or "")
    return int(m.group()) if m else default


def _point(row: dict) -> Point:
    kind, group = METRICS.get(row["metric"], ("serving", "serving"))
    at_rate = bool(row["qps"].strip())
    excluded = NEEDS_SIMULATOR if at_rate or kind == "serving" else ""
    return Point(id=row["id"], model=MODELS[row["model"]], gpu=_first_word(row["gpu"], GPUS), tp=int(row["tp"]),
                 num_gpus=int(row["num_gpus"]), weights=_first_word(row["weight_dtype"], WEIGHTS),
                 kv_dtype=_first_word(row["kv_dtype"], KV), engine=ENGINES[row["engine"]],
                 input_len=_int(row["input_len"], 1), output_len=_int(row["output_len"], 1),
                 batch=_int(row["batch_or_concurrency"], 1), metric=row["metric"], kind=kind,
                 group="serving" if excluded else _group(kind, group, row), value=float(row["value"]),
                 unit=row["unit"], excluded=excluded)


def _group(kind: str, group: str, row: dict) -> str:
    """Static-batch throughput counts as decode-dominated when output ≥ input, else as mixed."""
    if kind != "throughput_per_gpu":
        return group
    return "decode" if _int(row["output_len"]) >= _int(row["input_len"]) else "mixed"


def load_points(path: Path | None = None) -> list[Point]:
    with open(path or MEASUREMENTS_CSV, newline="", encoding="utf-8") as f:
        return [_point(row) for row in csv.DictReader(f)]


def scenario(p: Point) -> Resolved:
    dep = Deployment(num_gpus=p.tp, tensor_parallel_size=p.tp, weights=p.weights, kv_cache_dtype=p.kv_dtype,
                     max_model_len=max(p.input_len + p.output_len, 4096))
    return resolve(Scenario(model=p.model, gpu=p.gpu, deployment=dep, engine=p.engine))


def predict(p: Point, pm: PerfModel) -> float:
    """The model's value for a point, in the point's own unit."""
    i, o, b = p.input_len, p.output_len, p.batch
    if p.kind == "prefill_ms":
        return 1e3 * float(pm.prefill(b, i).total_s)
    if p.kind == "tpot_ms":
        return 1e3 * float(sweep(pm, [b], i, o)["tpot_s"][0])
    if p.kind == "throughput_per_gpu":
        return float(sweep(pm, [b], i, o)["throughput_tokens_per_s"][0]) / p.num_gpus
    if p.kind == "generation_speed":
        row = sweep(pm, [1], i, o)
        return o / float(row["e2e_s"][0])
    t0 = float(pm.decode(b, 0).total_s)
    if p.kind == "itl_intercept_ms":
        return 1e3 * t0
    if p.kind == "itl_slope_ms":
        return 1e3 * (float(pm.decode(b, SLOPE_CONTEXT).total_s) - t0) / SLOPE_CONTEXT
    raise ValueError(f"{p.id}: cannot predict {p.metric!r}")


def evaluate(points: list[Point] | None = None, profiles: dict[str, EfficiencyProfile] | None = None,
             resolved: dict[str, Resolved] | None = None) -> pd.DataFrame:
    """Predicted against measured for every point; `profiles` maps 'engine/family' to a profile under test."""
    points = points if points is not None else load_points()
    rows = []
    for p in points:
        row = {"id": p.id, "model": p.model, "gpu": p.gpu, "tp": p.tp, "weights": p.weights, "engine": p.engine,
               "input_len": p.input_len, "output_len": p.output_len, "batch": p.batch, "metric": p.metric,
               "group": p.group, "unit": p.unit, "measured": p.value, "predicted": np.nan, "error_pct": np.nan,
               "profile": "", "status": "", "excluded": p.excluded}
        if not p.excluded:
            r = resolved[p.id] if resolved else scenario(p)
            key = f"{p.engine}/{r.gpu.family}"
            pm = PerfModel(r, p.engine, profile=(profiles or {}).get(key))
            pred = predict(p, pm)
            row.update(predicted=pred, error_pct=100 * (pred - p.value) / p.value,
                       profile=key if profiles and key in profiles else pm.choice.source_key, status=pm.choice.status)
        rows.append(row)
    return pd.DataFrame(rows)


def error_summary(df: pd.DataFrame, by: str = "metric") -> pd.DataFrame:
    """Median and 90th-percentile absolute % error per metric (or group), over the points used."""
    used = df[df["excluded"] == ""].assign(abs_error_pct=lambda d: d["error_pct"].abs())
    g = used.groupby(by)["abs_error_pct"]
    return pd.DataFrame({"points": g.size(), "median_abs_pct": g.median(),
                         "p90_abs_pct": g.quantile(0.9)}).reset_index()
