"""Published measurements (data/measurements/published_points.csv and published_points_2.csv) as scenarios.

Each row maps to a Resolved scenario (model preset, catalogue GPU, TP, precisions), an engine profile and a
metric the model can compute in the row's own unit. A row the model cannot predict is kept with its reason in
`excluded`: measured under a request rate or offline continuous batching (needs the serving simulator), an unknown
model / GPU / precision, or a free-text cell (e.g. tp "mixed TP/PP/DP"). Cells are matched by their longest known
prefix, so "A100 80GB (DGX-A100)" is A100-80GB. llama.cpp's "layer split over N GPUs" runs the layers one GPU after
another: one step costs what it costs on one GPU, so it is predicted at TP 1. Shared by validation/fit_efficiency.py,
validation/accuracy*.py, `validate` and the pages.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.paths import measurements_dir, published_points_csv
from planner.core.scenario import Resolved, Scenario, resolve
from planner.core.specs import Deployment
from planner.latency.efficiency import EfficiencyProfile
from planner.latency.metrics import sweep
from planner.latency.perf_model import PerfModel

MEASUREMENTS_CSV = published_points_csv()
MEASUREMENTS_CSVS = (MEASUREMENTS_CSV, measurements_dir() / "published_points_2.csv")
NEEDS_SIMULATOR = "needs the serving simulator (measured at a request rate)"
NEEDS_SIMULATOR_OFFLINE = "needs the serving simulator (offline continuous batching of many prompts)"
LLAMACPP_UBATCH = 512  # llama-bench / llama.cpp n_ubatch default: prompts run in 512-token micro-batches

MODELS = {
    "meta-llama/Llama-2-7b": "meta-llama/Llama-2-7b-hf",
    "meta-llama/Llama-2-70b": "meta-llama/Llama-2-70b-hf",
    "mistralai/Mistral-7B (v0.1 assumed)": "mistralai/Mistral-7B-v0.1",
    "mistralai/Mixtral-8x7B (v0.1 assumed)": "mistralai/Mixtral-8x7B-v0.1",
    "Qwen/Qwen2.5-7B-Instruct": "Qwen/Qwen2.5-7B",
    "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8": "Qwen/Qwen2.5-7B",
    "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4": "Qwen/Qwen2.5-7B",
    "Qwen/Qwen2.5-7B-Instruct-AWQ": "Qwen/Qwen2.5-7B",
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama/Llama-3.1-8B",
    "meta-llama/Llama-3.1-8B": "meta-llama/Llama-3.1-8B",
    # Llama 3 and 3.1 share the architecture (3.1 only adds rope scaling for long context)
    "meta-llama/Meta-Llama-3-8B": "meta-llama/Llama-3.1-8B",
    "meta-llama/Meta-Llama-3-70B": "meta-llama/Llama-3.1-70B",
    "amd/Llama-3.1-70B-Instruct-FP8": "meta-llama/Llama-3.1-70B",
}
GPUS = {
    "H100 80GB": "H100-SXM",
    "A100 80GB": "A100-80GB",
    "A100 SXM 80GB": "A100-80GB",
    "A100 PCIe 80GB": "A100-PCIe-80GB",
    "H100 PCIe": "H100-PCIe",
    "RTX 3090": "RTX-3090",
    "RTX 4090": "RTX-4090",
    "MI300X": "MI300X",
}
WEIGHTS = {
    "fp8": "fp8",
    "fp16": "fp16",
    "bf16": "bf16",
    "gptq-int8": "gptq-int8",
    "gptq-int4": "gptq-int4",
    "awq": "awq-int4",
    "f16": "fp16",
    "Q4_K_M": "q4_k_m",
    "Q8_0": "q8_0",
}
KV = {"fp8": "fp8", "fp16": "fp16", "bf16": "bf16", "auto": "auto", "f16": "fp16", "not set": "auto"}
# A published point of an engine's superseded major version runs under that version's own calibration-only profile
# (planner.core.engine_defaults.CALIBRATION_ONLY), not the current release's constants. TensorRT-LLM 0.9.0's
# performance tables measured TensorRT engines under the C++ runtime; the release the planner models is 1.x (the
# PyTorch backend, which aiconfigurator's and InferenceMAX's rows measured). vLLM 0.6.x is the V0 engine; the V1
# engine (0.8 on) is the one modelled. Fitted with the current releases' rows, the 43 v0.9.0 points held
# TensorRT-LLM 1.x's per-step overhead at 2.46 ms (0.57 ms on 1.x's rows alone).
SUPERSEDED_VERSIONS = {
    ("tensorrt-llm", "0.9.0"): "tensorrt-llm-0.9",
    **{("vllm", v): "vllm-0.6" for v in ("0.6.0", "0.6.2", "0.6.3")},
}
ENGINES = {
    "TensorRT-LLM": "tensorrt-llm",
    "vLLM": "vllm",
    "SGLang": "sglang",
    "not stated (Splitwise profiling)": "splitwise",
    "llama.cpp": "llama.cpp",
    "LMDeploy": "lmdeploy",
}
# metric in the CSV -> (what the model computes, group for the error targets)
METRICS = {
    "output_throughput_per_gpu": ("throughput_per_gpu", "throughput"),
    "first_token_latency (TTFT)": ("prefill_ms", "prefill"),
    "prompt_time (TTFT)": ("prefill_ms", "prefill"),
    "prompt_time (batched prefill)": ("prefill_ms", "prefill"),
    "token_time (TBT/TPOT)": ("tpot_ms", "decode"),
    "generation_speed": ("generation_speed", "decode"),
    "ITL_fit_intercept": ("itl_intercept_ms", "decode"),
    "ITL_fit_slope": ("itl_slope_ms", "decode"),
    "decode_throughput_bs1": ("tg_rate", "decode"),
    "prefill_throughput_bs1": ("pp_rate", "prefill"),
    "first_token_latency_avg": ("prefill_s", "prefill"),
    "token_latency_p50": ("tpot_s", "decode"),
    "output_throughput": ("throughput", "throughput"),
    "end_to_end_latency": ("e2e_s", "throughput"),
}
OFFLINE_METRICS = ("offline_throughput",)
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
    return parse_row(row)


def parse_row(row: dict, gpu: str | None = None, engines: dict | None = None, model: str | None = None) -> Point:
    """A CSV row as a Point; a row the model cannot predict gets its reason in `excluded` (never raises on cells).
    `gpu` and `model` override the lookups (catalogue / preset ids), `engines` the engine table."""
    metric = row.get("metric") or ""
    kind, group = METRICS.get(metric) or next(
        (METRICS[k] for k in sorted(METRICS, key=len, reverse=True) if metric.startswith(k)), ("serving", "serving")
    )
    reasons = []
    if (row.get("qps") or "").strip():
        reasons.append(NEEDS_SIMULATOR)
    elif metric.startswith(OFFLINE_METRICS):
        reasons.append(NEEDS_SIMULATOR_OFFLINE)
    elif kind == "serving":
        reasons.append(f"metric {metric[:60]!r} is not one the model predicts")
    values = {}
    for name, table, cell in (
        ("model", MODELS, "model"),
        ("gpu", GPUS, "gpu"),
        ("weights", WEIGHTS, "weight_dtype"),
        ("kv_dtype", KV, "kv_dtype"),
        ("engine", engines or ENGINES, "engine"),
    ):
        if name == "gpu" and gpu:
            values[name] = gpu
            continue
        if name == "model" and model:
            values[name] = model
            continue
        try:
            values[name] = _first_word((row.get(cell) or "").strip(), table)
        except KeyError:
            values[name] = (row.get(cell) or "").strip()
            reasons.append(f"unknown {cell} {values[name][:50]!r}")
    values["engine"] = SUPERSEDED_VERSIONS.get(
        (values["engine"], (row.get("engine_version") or "").strip()), values["engine"]
    )
    tp, tp_reason = _tp(row.get("tp") or "")
    if tp_reason:
        reasons.append(tp_reason)
    num_gpus = _int(row.get("num_gpus") or "", tp) or tp
    excluded = "; ".join(reasons)
    return Point(
        id=row.get("id") or "",
        **values,
        tp=tp,
        num_gpus=num_gpus,
        input_len=_int(row.get("input_len") or "", 1),
        output_len=_int(row.get("output_len") or "", 1),
        batch=_int(row.get("batch_or_concurrency") or "", 1),
        metric=metric,
        kind=kind,
        group="serving" if excluded else _group(kind, group, row),
        value=_float(row.get("value")),
        unit=row.get("unit") or "",
        excluded=excluded,
    )


def _tp(text: str) -> tuple[int, str]:
    """(TP, reason it cannot be used): '4' -> 4; llama.cpp's 'layer split' -> 1 (layers run one GPU after another)."""
    t = text.strip()
    if re.fullmatch(r"\d+(\.0+)?", t):
        return int(float(t)), ""
    if "layer split" in t.lower():
        return 1, ""
    return 1, f"tp cell {t[:40]!r} is not a tensor-parallel size the model predicts"


def _float(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


def _group(kind: str, group: str, row: dict) -> str:
    """Static-batch throughput is its own group (the issue's target), latency points decode or prefill."""
    return "throughput" if kind == "throughput_per_gpu" else group


def load_points(path: Path | None = None) -> list[Point]:
    """Points of one CSV, or of every calibration CSV (published_points.csv and published_points_2.csv)."""
    out = []
    for p in [path] if path else MEASUREMENTS_CSVS:
        with open(p, newline="", encoding="utf-8") as f:
            out += [_point(row) for row in csv.DictReader(f)]
    return out


def scenario(p: Point) -> Resolved:
    dep = Deployment(
        num_gpus=p.tp,
        tensor_parallel_size=p.tp,
        weights=p.weights,
        kv_cache_dtype=p.kv_dtype,
        max_model_len=max(p.input_len + p.output_len, 4096),
    )
    return resolve(Scenario(model=p.model, gpu=p.gpu, deployment=dep, engine=p.engine))


def predict(p: Point, pm: PerfModel) -> float:
    """The model's value for a point, in the point's own unit: these are offline benchmarks (the engine's own, no
    API server), so TTFT and end-to-end are the passes alone (metrics.sweep `offline`)."""
    i, o, b = p.input_len, p.output_len, p.batch
    if p.kind == "prefill_ms":
        return 1e3 * float(pm.prefill(b, i).total_s)
    if p.kind == "prefill_s":
        return float(pm.prefill(b, i).total_s)
    if p.kind == "pp_rate":  # llama-bench pp N: N prompt tokens at batch 1, in n_ubatch micro-batches
        chunk = LLAMACPP_UBATCH if p.engine == "llama.cpp" else i
        starts = np.arange(0, i, chunk)
        return i / float(np.sum(pm.prefill(1, np.minimum(chunk, i - starts), starts).total_s))
    if p.kind == "tg_rate":  # llama-bench tg N: N tokens generated at batch 1 from `input_len` of context
        ctx = np.linspace(i, i + o - 1, 9)
        return 1.0 / float(np.mean(pm.decode(1, ctx).total_s))
    if p.kind in ("tpot_ms", "tpot_s"):
        return (1e3 if p.kind == "tpot_ms" else 1.0) * float(sweep(pm, [b], i, o, offline=True)["tpot_s"][0])
    if p.kind == "throughput_per_gpu":
        return float(sweep(pm, [b], i, o, offline=True)["throughput_tokens_per_s"][0]) / p.num_gpus
    if p.kind == "throughput":
        return float(sweep(pm, [b], i, o, offline=True)["throughput_tokens_per_s"][0])
    if p.kind == "e2e_s":
        return float(sweep(pm, [b], i, o, offline=True)["e2e_s"][0])
    if p.kind == "generation_speed":
        row = sweep(pm, [1], i, o, offline=True)
        return o / float(row["e2e_s"][0])
    t0 = float(pm.decode(b, 0).total_s)
    if p.kind == "itl_intercept_ms":
        return 1e3 * t0
    if p.kind == "itl_slope_ms":
        return 1e3 * (float(pm.decode(b, SLOPE_CONTEXT).total_s) - t0) / SLOPE_CONTEXT
    raise ValueError(f"{p.id}: cannot predict {p.metric!r}")


def evaluate(
    points: list[Point] | None = None,
    profiles: dict[str, EfficiencyProfile] | None = None,
    resolved: dict[str, Resolved] | None = None,
) -> pd.DataFrame:
    """Predicted against measured for every point; `profiles` maps 'engine/family' to a profile under test."""
    points = points if points is not None else load_points()
    rows = []
    for p in points:
        row = {
            "id": p.id,
            "model": p.model,
            "gpu": p.gpu,
            "tp": p.tp,
            "weights": p.weights,
            "engine": p.engine,
            "input_len": p.input_len,
            "output_len": p.output_len,
            "batch": p.batch,
            "metric": p.metric,
            "group": p.group,
            "unit": p.unit,
            "measured": p.value,
            "predicted": np.nan,
            "error_pct": np.nan,
            "profile": "",
            "status": "",
            "excluded": p.excluded,
        }
        if not p.excluded:
            r = resolved[p.id] if resolved else scenario(p)
            key = f"{p.engine}/{r.gpu.family}"
            pm = PerfModel(r, profile=(profiles or {}).get(key))
            pred = predict(p, pm)
            row.update(
                predicted=pred,
                error_pct=100 * (pred - p.value) / p.value,
                profile=key if profiles and key in profiles else pm.choice.source_key,
                status=pm.choice.status,
            )
        rows.append(row)
    return pd.DataFrame(rows)


def error_summary(df: pd.DataFrame, by: str = "metric") -> pd.DataFrame:
    """Median and 90th-percentile absolute % error per metric (or group), over the points used."""
    used = df[df["excluded"] == ""].assign(abs_error_pct=lambda d: d["error_pct"].abs())
    g = used.groupby(by)["abs_error_pct"]
    return pd.DataFrame(
        {"points": g.size(), "median_abs_pct": g.median(), "p90_abs_pct": g.quantile(0.9)}
    ).reset_index()
