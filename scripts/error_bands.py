"""Write data/error_bands.yaml: per family, the 10th-90th percentile of measured / predicted out of sample.

    python -m benchmarks.accuracy_aiconfigurator --per-stratum 8 --csv /tmp/serving.csv   # ~2-5 min on 2 cores
    python -m benchmarks.accuracy_out_of_sample --iters 600 --csv /tmp/published.csv      # ~1-2 min
    python -m scripts.error_bands --serving /tmp/serving.csv --published /tmp/published.csv

Rows (every one a prediction the fit never saw):
  - serving at a client concurrency (aiconfigurator's silicon CSV through `validate`'s path), without the rows the
    fit sampled (the `fitted` column: 2 per engine/model/GPU, 6 for the GPU-family corrections). The rest were not
    fitted, but their models, GPUs and engines were, so these bands are in-distribution: leave-one-out errors
    (data/accuracy_aiconfigurator.yaml) are wider for a model, GPU or engine the fit never saw. Metrics: mean TTFT
    and mean TPOT, and from them the mean end-to-end latency TTFT + (OSL - 1) x TPOT and the throughput of the
    closed loop (N users x OSL / e2e, so its ratio is the inverse of e2e's);
  - published points (static batch, single request; data/measurements/published_points*.csv) predicted by a fit
    that left their GPU family out (LOFO): group decode -> tpot, prefill -> ttft, throughput -> throughput or e2e
    (a rate in tokens/s enters as the inverse ratio of the time it measures);
  - vLLM's KV capacity logs (planner.accuracy.kv_capacity_points.kv_table: GPU blocks under the log's vLLM version).
A family is (engine, model class, GPU generation, metric); every coarser family (a key replaced by "*") is written
too, so planner.accuracy.bands can fall back. Output is sorted and rounded: the same inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from planner.accuracy.aiconfigurator_rows import read_aiconfigurator
from planner.accuracy.bands import ANY, BANDS_PATH, generation, model_class
from planner.accuracy.kv_capacity_points import kv_table
from planner.accuracy.names import resolve_model
from planner.core.catalog import get_gpu, get_model
from planner.core.paths import measurements_dir

MIN_ROWS = 20
QUANTILES = (10, 50, 90)
AIC_CSV = measurements_dir() / "aiconfigurator" / "silicon_calibration.csv"
PUBLISHED_ENGINES = {"TensorRT-LLM": "tensorrt-llm", "vLLM": "vllm", "SGLang": "sglang", "LMDeploy": "lmdeploy"}


def _class_of(model: str) -> str:
    preset = resolve_model(model)[0] or model
    try:
        m = get_model(preset)
    except Exception:  # a published model without a preset: only Mixtral is MoE among them
        return "moe/mla" if "mixtral" in model.lower() else "dense"
    return model_class(m.is_moe, m.is_mla)


def serving_rows(path: Path) -> pd.DataFrame:
    """(engine, model_class, generation, metric, ratio) from accuracy_aiconfigurator's --csv."""
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    df = df[df["predicted"].notna() & (df["predicted"] > 0)]
    if "fitted" in df:  # the rows scripts/fit_efficiency.py sampled (either stage) are in sample: left out
        df = df[~df["fitted"].astype(str).str.lower().eq("true")]
    points = {p.id: p for p in read_aiconfigurator(AIC_CSV.read_text(encoding="utf-8"))}
    out = []
    for row_id, g in df.groupby("row", sort=True):
        p = points[row_id]
        fam = (p.engine, p.model_class or _class_of(p.model), generation(get_gpu(p.gpu_id).family))
        by = {m: (r["measured"], r["predicted"]) for m, r in zip(g["metric"], g.to_dict("records"))}
        for metric, key in (("ttft", "mean_ttft_ms"), ("tpot", "mean_tpot_ms")):
            if key in by:
                out.append((*fam, metric, by[key][0] / by[key][1]))
        if "mean_ttft_ms" in by and "mean_tpot_ms" in by:
            (tm, tp), (pm, pp) = by["mean_ttft_ms"], by["mean_tpot_ms"]
            e2e = (tm + (p.osl - 1) * pm) / (tp + (p.osl - 1) * pp)
            out += [(*fam, "e2e", e2e), (*fam, "throughput", 1 / e2e)]
    return pd.DataFrame(out, columns=["engine", "model_class", "generation", "metric", "ratio"])


def published_rows(path: Path) -> pd.DataFrame:
    """The LOFO predictions of accuracy_out_of_sample's --csv, as (family, metric, measured / predicted)."""
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    df = df[(df["scheme"] == "LOFO") & df["predicted"].notna() & (df["predicted"] > 0)]
    out = []
    for r in df.sort_values(["id"]).to_dict("records"):
        rate = "tokens/s" in str(r["unit"])
        metric = {"decode": "tpot", "prefill": "ttft"}.get(r["group"], "throughput" if rate else "e2e")
        ratio = r["measured"] / r["predicted"]
        if rate and metric in ("tpot", "ttft"):
            ratio = 1 / ratio  # a rate measures the inverse of the time the metric names
        engine = PUBLISHED_ENGINES.get(r["engine"], str(r["engine"]).lower())
        out.append((engine, _class_of(r["model"]), generation(r["family"]), metric, ratio))
    return pd.DataFrame(out, columns=["engine", "model_class", "generation", "metric", "ratio"])


# KV logs that set a constant of data/vllm_memory.yaml (B10 the V1 CUDA-graph term, B04 Dec 2023's TP peers, B16
# the V1-early residual): in sample, so left out of the bands
KV_IN_SAMPLE = ("B04", "B10", "B16")


def kv_rows() -> pd.DataFrame:
    kv = kv_table()
    kv = kv[kv["predicted"].notna() & ~kv["id"].isin(KV_IN_SAMPLE)]
    out = [
        (
            "vllm",
            _class_of(r["model"]),
            generation(_gpu_family(r["gpu"])),
            "kv_capacity",
            r["measured"] / r["predicted"],
        )
        for r in kv.to_dict("records")
    ]
    return pd.DataFrame(out, columns=["engine", "model_class", "generation", "metric", "ratio"])


def _gpu_family(name: str) -> str:
    from planner.accuracy.names import resolve_gpu

    gpu_id = resolve_gpu(name.split("x ")[-1])[0]
    return get_gpu(gpu_id).family if gpu_id else ""


def families(rows: pd.DataFrame) -> list[dict]:
    """Every family and each coarser one with its ratio percentiles, sorted."""
    keys = ("engine", "model_class", "generation")
    out = {}
    for mask in range(8):  # which of the three keys are replaced by "*"
        g = rows.copy()
        for i, k in enumerate(keys):
            if mask >> i & 1:
                g[k] = ANY
        for (e, c, gen, m), grp in g.groupby([*keys, "metric"], sort=True):
            r = np.sort(grp["ratio"].to_numpy())
            lo, med, hi = np.percentile(r, QUANTILES)
            out[(e, c, gen, m)] = {
                "engine": e,
                "model_class": c,
                "generation": gen,
                "metric": m,
                "rows": int(len(r)),
                "low": round(float(lo), 3),
                "median": round(float(med), 3),
                "high": round(float(hi), 3),
                "median_abs_pct": round(float(np.median(np.abs(1 / r - 1))) * 100, 1),
            }
    return [out[k] for k in sorted(out)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serving", type=Path, required=True, help="accuracy_aiconfigurator --csv output")
    ap.add_argument("--published", type=Path, help="accuracy_out_of_sample --csv output (LOFO rows)")
    ap.add_argument("--out", type=Path, default=BANDS_PATH)
    args = ap.parse_args(argv)
    parts = [serving_rows(args.serving), kv_rows()]
    if args.published:
        parts.append(published_rows(args.published))
    rows = pd.concat(parts, ignore_index=True)
    rows = rows[rows["ratio"].map(math.isfinite)]
    sources = {"serving": args.serving.name, "published": args.published.name if args.published else None}
    header = (
        "# GENERATED by scripts/error_bands.py (see its docstring for the commands): per family (engine, model\n"
        "# class, GPU generation, metric) the 10th / 50th / 90th percentile of measured / predicted, out of sample;\n"
        "# median_abs_pct = median |predicted - measured| / measured. Read by planner/accuracy/bands.py.\n"
    )
    body = {"min_rows": MIN_ROWS, "quantiles": list(QUANTILES), "inputs": sources, "bands": families(rows)}
    text = yaml.safe_dump(body, sort_keys=False, width=200, default_flow_style=None)
    args.out.write_text(header + text, encoding="utf-8")
    n = rows.groupby("metric").size().to_dict()
    print(f"wrote {args.out}: {len(body['bands'])} families from {len(rows)} rows {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
