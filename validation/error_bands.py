"""Write data/error_bands.yaml: per family, the 10th-90th percentile of measured / predicted out of sample.

    python -m validation.accuracy_loo --serving-only --families --csv /tmp/loo.csv   # see its docstring
    python -m validation.accuracy_out_of_sample --iters 600 --csv /tmp/published.csv      # ~1-2 min
    python -m validation.error_bands --serving /tmp/loo.csv --published /tmp/published.csv

Rows (every one a prediction the fit never saw):
  - serving at a client concurrency: each aiconfigurator row of a "source:" fold of accuracy_loo, predicted through
    `simulate` (its flags, the fold's constants as --calibration) by a fit that never saw its whole campaign, so
    neither its launch nor its client. Metrics: mean TTFT and mean TPOT, and from them the mean end-to-end latency
    TTFT + (OSL - 1) x TPOT and the throughput of the closed loop (N users x OSL / e2e, so its ratio is the inverse
    of e2e's). Their coverage is checked source by source (`coverage`: the band built without a source, against
    that source's rows) and written as coverage_leave_one_source_out;
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

from planner.accuracy.bands import ANY, BANDS_PATH, Family, band, generation, model_class, table_from_mapping
from planner.accuracy.kv_capacity_points import kv_table
from planner.accuracy.names import resolve_model
from planner.core.catalog import get_gpu, get_model

MIN_ROWS = 20
QUANTILES = (10, 50, 90)
PUBLISHED_ENGINES = {"TensorRT-LLM": "tensorrt-llm", "vLLM": "vllm", "SGLang": "sglang", "LMDeploy": "lmdeploy"}


def _class_of(model: str) -> str:
    preset = resolve_model(model)[0] or model
    try:
        m = get_model(preset)
    except Exception:  # a published model without a preset: only Mixtral is MoE among them
        return "moe/mla" if "mixtral" in model.lower() else "dense"
    return model_class(m.is_moe, m.is_mla)


def serving_rows(path: Path) -> pd.DataFrame:
    """(engine, model_class, generation, metric, ratio, source) from validation/accuracy_loo's --csv: each row of a
    "source:" fold, predicted through `simulate` with the constants fitted without its whole source (campaign)."""
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    df = df[df["fold"].astype(str).str.startswith("source:")]
    df = df[(df["predicted_ttft_ms"] > 0) & (df["predicted_tpot_ms"] > 0)]
    out = []
    for r in df.sort_values(["row"]).to_dict("records"):
        fam = (r["engine"], r["model_class"], generation(get_gpu(r["gpu"]).family))
        tm, tp = r["measured_ttft_ms"], r["predicted_ttft_ms"]
        pm, pp = r["measured_tpot_ms"], r["predicted_tpot_ms"]
        e2e = (tm + (r["osl"] - 1) * pm) / (tp + (r["osl"] - 1) * pp)
        src = r["source"]
        out += [(*fam, "ttft", tm / tp, src), (*fam, "tpot", pm / pp, src)]
        out += [(*fam, "e2e", e2e, src), (*fam, "throughput", 1 / e2e, src)]
    return pd.DataFrame(out, columns=["engine", "model_class", "generation", "metric", "ratio", "source"])


def coverage(rows: pd.DataFrame) -> dict:
    """How often a held-out source's measurements fall inside the band built without that source: for each source,
    the bands of every other source's rows (families, the same fallback as planner.accuracy.bands), then the share of
    its rows with low <= measured / predicted <= high; per metric and per (engine, model class, generation, metric)
    family, over every source in turn. A check the bands cannot pass by construction."""
    inside: list[tuple] = []
    for src in sorted(rows["source"].dropna().unique()):
        train, test = rows[rows["source"] != src], rows[rows["source"] == src]
        table = table_from_mapping({"min_rows": MIN_ROWS, "bands": families(train)})
        for r in test.to_dict("records"):
            fam = Family(r["engine"], r["model_class"], r["generation"], r["metric"])
            b = band(fam, 1.0, table)
            if b is not None:
                inside.append((fam, b.ratio_low <= r["ratio"] <= b.ratio_high))
    out: dict = {"by_metric": {}, "by_family": {}}
    for metric in sorted({f.metric for f, _ in inside}):
        hits = [ok for f, ok in inside if f.metric == metric]
        out["by_metric"][metric] = {"rows": len(hits), "inside_pct": round(100 * float(np.mean(hits)), 1)}
    fams = sorted({f for f, _ in inside}, key=lambda f: (f.metric, f.engine, f.model_class, f.generation))
    for f in fams:
        hits = [ok for g, ok in inside if g == f]
        key = f"{f.engine} {f.model_class} {f.generation} {f.metric}"
        out["by_family"][key] = {"rows": len(hits), "inside_pct": round(100 * float(np.mean(hits)), 1)}
    return out


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
    return pd.DataFrame(out, columns=["engine", "model_class", "generation", "metric", "ratio"]).assign(source="")


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
    return pd.DataFrame(out, columns=["engine", "model_class", "generation", "metric", "ratio"]).assign(source="")


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
    ap.add_argument("--serving", type=Path, required=True, help="validation.accuracy_loo --csv output")
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
        "# GENERATED by validation/error_bands.py (see its docstring for the commands): per family (engine, model\n"
        "# class, GPU generation, metric) the 10th / 50th / 90th percentile of measured / predicted, out of sample;\n"
        "# median_abs_pct = median |predicted - measured| / measured. Read by planner/accuracy/bands.py.\n"
    )
    served = rows[rows["source"] != ""]
    body = {"min_rows": MIN_ROWS, "quantiles": list(QUANTILES), "inputs": sources, "bands": families(rows)}
    body["coverage_leave_one_source_out"] = coverage(served)
    text = yaml.safe_dump(body, sort_keys=False, width=200, default_flow_style=None)
    args.out.write_text(header + text, encoding="utf-8")
    n = rows.groupby("metric").size().to_dict()
    print(f"wrote {args.out}: {len(body['bands'])} families from {len(rows)} rows {n}")
    print(yaml.safe_dump({"coverage": body["coverage_leave_one_source_out"]["by_metric"]}, sort_keys=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
