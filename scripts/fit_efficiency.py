"""Fit the engine efficiency constants (data/efficiency.yaml) on the published measurements. Rerun any time:

    python -m scripts.fit_efficiency            # fit and rewrite data/efficiency.yaml
    python -m scripts.fit_efficiency --dry-run  # fit and print, write nothing

Data: data/measurements/published_points.csv and published_points_2.csv (rows the model cannot predict are left
out with their reason). Two stages, so that constants transfer across GPUs:

  1. per ENGINE, one set of the constants of planner.latency.efficiency (FIT_FIELDS) on all its points, every GPU
     predicted from its datasheet: minimise Σ log(predicted / measured)² plus a weak log-normal prior per constant
     (PRIORS; weight PRIOR_WEIGHT: one prior sd costs as much as one point 10% off). This is the engine's `default`.
  2. per (engine, GPU family) with points, two correction factors (bandwidth ceiling, compute ceilings) with a
     tight prior at 1 (sd CORRECTION_SD): the family's own profile, "calibrated".

An engine without points (SGLang: its published points are all served at a request rate) gets the per-constant
median of the user engines' defaults, status "estimated". Optimiser: Nelder-Mead in log space (numpy only),
deterministic, so a rerun reproduces data/efficiency.yaml byte for byte.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import yaml

from planner.accuracy.optimize import nelder_mead
from planner.accuracy.published_points import error_summary, evaluate, load_points, predict, scenario
from planner.core.engine import engines
from planner.latency.efficiency import EFFICIENCY_PATH, ENGINES, FIT_FIELDS, EfficiencyProfile
from planner.latency.perf_model import PerfModel

# constant -> (prior value, prior sd in natural log, lower bound, upper bound). Prior values: small all-reduce 5-10 µs
# on H100 NVLink (vLLM PRs #24532, #24111; sglang PR #2904), kernel launch ~ µs per kernel (vLLM PR #1440), Marlin
# near-ideal 4-bit bandwidth up to batch 16-32 (IST-DASLab/marlin README). matmul_half_tokens is capped at 128, the
# M tile of Ampere/Hopper tensor-core GEMM kernels: a 1-row GEMM pads to at most one tile of rows.
# sm_bytes_per_cycle (used only by engines with issue_bound_gemv in engines.yaml): 16 B per SM-cycle saturates the
# stream bandwidth of every calibration part (A100: 1,700 GB/s / (108 SMs x 1.41 GHz) = 11 B; B200 needs 23), so the
# prior says "no issue bound" unless the engine's points show one. Other engines: the prior, unused.
PRIORS = {
    "matmul_efficiency": (0.6, 0.5, 0.05, 1.0),
    "attention_efficiency": (0.5, 0.7, 0.05, 1.0),
    "memory_efficiency": (0.85, 0.2, 0.2, 1.0),
    "step_overhead_s": (1e-3, 1.5, 1e-6, 0.05),
    "allreduce_latency_s": (8e-6, 0.7, 1e-6, 2e-4),
    "moe_efficiency": (0.7, 0.5, 0.05, 1.0),
    "memory_half_bytes": (2e6, 1.5, 1e3, 1e9),
    "matmul_half_tokens": (32.0, 0.7, 1.0, 128.0),
    "layer_overhead_s": (1e-5, 1.5, 1e-8, 1e-3),
    "seq_overhead_s": (2e-5, 1.5, 1e-8, 1e-3),
    "token_overhead_s": (1e-6, 2.0, 1e-9, 1e-4),
    "quant_memory_efficiency": (0.7, 0.5, 0.1, 1.0),
    "sm_bytes_per_cycle": (16.0, 1.0, 1.0, 64.0),
    "request_overhead_s": (2e-4, 2.0, 1e-7, 0.02),
}
assert tuple(PRIORS) == FIT_FIELDS
# Engine-specific priors (none now). TensorRT-LLM had a per-step prior of 0.2 ms and a per-layer one of 5 µs
# (compiled engine, C++ executor); its 43 points fit 2.3 ms per step, 4.7 prior sd away, and with the prior a fold
# without one GPU family explained short prefills by small-GEMM inefficiency instead: H100 FP8 TTFTs of 128 tokens
# came out 42-44% fast. A prior the engine's own data contradicts is not physics: the generic priors apply.
ENGINE_PRIORS: dict[str, dict] = {}
PRIOR_WEIGHT = 0.01  # = (log 1.105)²: one prior sd ~ one point 10% off
CORRECTION_SD = 0.15  # a family's correction: one sd = 15% on the bandwidth or compute ceiling
ITERS = 1500
SCALED = {"memory": ("memory_efficiency",), "compute": ("matmul_efficiency", "attention_efficiency")}


def clip_profile(x: np.ndarray, points: int, status: str = "calibrated", note: str = "") -> EfficiencyProfile:
    values = {}
    for (name, (_, _, lo, hi)), v in zip(PRIORS.items(), x):
        values[name] = float(min(max(math.exp(v), lo), hi))
    return EfficiencyProfile(**values, status=status, num_points=points, note=note)


def corrected(base: EfficiencyProfile, y, points: int = 0, note: str = "") -> EfficiencyProfile:
    """`base` with its bandwidth ceiling × exp(y[0]) and compute ceilings × exp(y[1]) (clipped at 1)."""
    upd = {f: min(1.0, getattr(base, f) * math.exp(v)) for v, fields in zip(y, SCALED.values()) for f in fields}
    return base.model_copy(update={**upd, "status": "calibrated", "num_points": points, "note": note})


_BASE: dict[str, PerfModel] = {}  # point id -> its scenario's PerfModel (geometry computed once per process)


def _model(p, resolved, prof: EfficiencyProfile) -> PerfModel:
    base = _BASE.get(p.id)
    if base is None:
        base = _BASE[p.id] = PerfModel(resolved[p.id], profile=prof)  # the point's scenario carries its engine
    return base.with_profile(prof)


def _data_term(points, resolved, key_of, prof_of) -> float:
    total = 0.0
    for p in points:  # as published_points.evaluate, without building a table (the fit's inner loop)
        total += math.log(predict(p, _model(p, resolved, prof_of(key_of[p.id]))) / p.value) ** 2
    return total


def priors(engine: str, overrides: dict | None = None) -> dict:
    return {**PRIORS, **ENGINE_PRIORS.get(engine, {}), **(overrides or {})}


def objective(x, points, resolved, key_of, pri: dict | None = None) -> float:
    prof = clip_profile(x, len(points))
    data = _data_term(points, resolved, key_of, lambda k: prof)
    pri = pri or (priors(points[0].engine) if points else PRIORS)
    prior = sum(((v - math.log(p)) / sd) ** 2 for v, (p, sd, _, _) in zip(x, pri.values()))
    return data + PRIOR_WEIGHT * prior


# A second start for the simplex: the SM issue bound active on every catalogued part (A100: 108 SMs x 1.41 GHz x 6 B
# = 0.91 TB/s, below its stream bandwidth), since an inactive bound is flat and a start at the prior never tries it.
# The fit keeps whichever start ends lower; the prior itself stays at "no bound".
START = {"sm_bytes_per_cycle": 6.0}


def has_tensor_parallel(points) -> bool:
    return any(p.tp > 1 for p in points)


def in_situ_allreduce_prior(fitted: dict[str, EfficiencyProfile]) -> dict:
    """For an engine whose points never ran tensor-parallel: the all-reduce latency the user engines that did were
    fitted to (their median, in situ: skew and synchronisation included), in place of the microbenchmark prior.
    Calibration-only engines (splitwise) are left out, as in `estimated`."""
    values = [
        p.allreduce_latency_s for engine, p in fitted.items() if engine in ENGINES
    ]  # user engines, as estimated()
    _, sd, lo, hi = PRIORS["allreduce_latency_s"]
    return {"allreduce_latency_s": (float(np.median(values)), sd, lo, hi)} if values else {}


def fit_engine(
    pts: list, resolved: dict, key_of: dict, iters: int = ITERS, prior_overrides: dict | None = None
) -> EfficiencyProfile:
    """Stage 1: one set of constants for all of an engine's points (all GPU families)."""
    pri = priors(pts[0].engine, prior_overrides)

    def f(v):
        return objective(v, pts, resolved, key_of, pri)

    issue_bound = engines()[pts[0].engine].issue_bound_gemv if pts[0].engine in engines() else False
    best = None
    for start in ({}, START) if issue_bound else ({},):  # with the SM bound: a second start where it is active
        x = nelder_mead(f, np.log([start.get(name, p) for name, (p, _, _, _) in pri.items()]), iters=iters)
        x = nelder_mead(f, x, step=0.1, iters=iters)  # restart: escape a flat simplex
        if best is None or f(x) < f(best):
            best = x
    prof = clip_profile(best, len(pts), status="transferred")
    if not issue_bound:  # the constant does not act on this engine: record "no bound", not a flat optimum
        prof = prof.model_copy(
            update={"sm_bytes_per_cycle": EfficiencyProfile.model_fields["sm_bytes_per_cycle"].default}
        )
    return prof


def fit_family(base: EfficiencyProfile, pts: list, resolved: dict, key_of: dict, iters: int = 300) -> np.ndarray:
    """Stage 2: the family's two log-correction factors."""

    def f(y):
        prof = corrected(base, y)
        prior = float(np.sum((y / CORRECTION_SD) ** 2))
        return _data_term(pts, resolved, key_of, lambda k: prof) + PRIOR_WEIGHT * prior

    return nelder_mead(f, np.zeros(2), step=0.1, iters=iters)


def estimated(defaults: dict[str, EfficiencyProfile], note: str) -> EfficiencyProfile:
    """Per-constant median of the given engines' defaults (an engine without points)."""
    med = {f: float(np.median([getattr(p, f) for p in defaults.values()])) for f in FIT_FIELDS}
    return EfficiencyProfile(**med, status="estimated", num_points=0, note=note)


def usable_points():
    points = [p for p in load_points() if not p.excluded]
    resolved = {p.id: scenario(p) for p in points}
    key_of = {p.id: f"{p.engine}/{resolved[p.id].gpu.family}" for p in points}
    return points, resolved, key_of


def fit_all(points=None, resolved=None, key_of=None, iters: int = ITERS, verbose: bool = True) -> tuple[dict, object]:
    """{'engine/family' or 'engine/default': profile} and the in-sample predictions."""
    if points is None:
        points, resolved, key_of = usable_points()
    fitted: dict[str, EfficiencyProfile] = {}
    by_engine: dict[str, list] = {}
    for p in points:
        by_engine.setdefault(p.engine, []).append(p)
    # engines with tensor-parallel points first: the others take their in-situ all-reduce latency as prior
    order = sorted(by_engine, key=lambda e: (not has_tensor_parallel(by_engine[e]), e))
    with_tp: dict[str, EfficiencyProfile] = {}
    for engine in order:
        pts = by_engine[engine]
        overrides = None if has_tensor_parallel(pts) else in_situ_allreduce_prior(with_tp)
        base = fit_engine(pts, resolved, key_of, iters, overrides)
        if has_tensor_parallel(pts):
            with_tp[engine] = base
        fams = sorted({key_of[p.id] for p in pts})
        fitted[f"{engine}/default"] = base.model_copy(
            update={
                "note": f"shared constants fitted on {len(pts)} points ({', '.join(k.split('/')[1] for k in fams)})"
            }
        )
        for key in fams:
            fp = [p for p in pts if key_of[p.id] == key]
            y = fit_family(base, fp, resolved, key_of)
            fitted[key] = corrected(
                base,
                y,
                len(fp),
                note=f"shared constants x family correction "
                f"(bandwidth {math.exp(y[0]):.3f}, compute {math.exp(y[1]):.3f}) on "
                + ", ".join(sorted(p.id for p in fp)),
            )
        if verbose:
            print(
                f"{engine:14s} {len(pts):3d} points  " + "  ".join(f"{f}={getattr(base, f):.3g}" for f in FIT_FIELDS),
                flush=True,
            )
    users = {k: v for k, v in fitted.items() if k.endswith("/default") and k.split("/")[0] in ENGINES}
    for engine in ENGINES:
        if f"{engine}/default" not in fitted:
            note = f"no points of its own: median of {', '.join(sorted(users))}"
            fitted[f"{engine}/default"] = estimated(users, note)
    df = evaluate(points, fitted, resolved)
    return fitted, df


def table(fitted: dict[str, EfficiencyProfile]) -> dict:
    out: dict[str, dict] = {}
    for key in sorted(fitted, key=lambda k: (k.split("/")[0], k.split("/")[1] != "default", k)):
        engine, family = key.split("/")
        out.setdefault(engine, {})[family] = _rounded(fitted[key].model_dump())
    return out


def _rounded(d: dict) -> dict:
    return {k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in d.items()}


def residuals(df) -> dict:
    def summ(by):
        s = error_summary(df, by)
        return {
            str(r[by]): {
                "points": int(r["points"]),
                "median_abs_pct": round(float(r["median_abs_pct"]), 1),
                "p90_abs_pct": round(float(r["p90_abs_pct"]), 1),
            }
            for _, r in s.iterrows()
        }

    df = df[df["excluded"] == ""].assign(profile_key=df["profile"])
    return {"by_group": summ("group"), "by_metric": summ("metric"), "by_profile": summ("profile_key")}


HEADER = """\
# Engine efficiency profiles (planner/latency/efficiency.py, used by planner/latency/perf_model.py).
# GENERATED by scripts/fit_efficiency.py from data/measurements/published_points.csv + published_points_2.csv; rerun
# it, do not edit by hand. Per engine, `default` holds constants shared by every GPU (fitted on all the engine's
# points, each GPU predicted from its datasheet); a family entry is that default times two fitted correction factors
# (bandwidth, compute; tight prior at 1). Fit: sum log(predicted/measured)^2 + weak log-normal priors, Nelder-Mead.
#   matmul_efficiency / memory_efficiency  ceilings of achieved / datasheet dense FLOP/s and HBM bandwidth
#   matmul_half_tokens / memory_half_bytes GEMM rows / weight bytes per layer per GPU that reach half the ceiling
#   attention_efficiency                   achieved / 16-bit peak FLOP/s of attention
#   step_overhead_s, layer_overhead_s, seq_overhead_s, token_overhead_s   fixed costs per step, layer, sequence, token
#   allreduce_latency_s                    one small (one-shot) all-reduce; algorithms in data/engines.yaml
#   moe_efficiency                         fraction of matmul efficiency that routed experts' grouped GEMMs reach
#   quant_memory_efficiency                bandwidth fraction of weight-only quantized kernels (Marlin, GGUF)
#   sm_bytes_per_cycle                     weight bytes one SM streams per clock (engines with issue_bound_gemv in
#                                          engines.yaml; 64 = no bound)
#   request_overhead_s                     once per request with its first prefill chunk
# Ceilings are fractions of what each part reaches in microbenchmarks (gpus.yaml achieved_*), not of its datasheet.
# status: calibrated (the family's own points), transferred (engine default, fitted on other families), estimated
# (an engine with no points: median of the user engines). measured_families: families with any point.
# `splitwise` is the unnamed engine behind the Splitwise profiling data (A100, Llama-2-70B): calibration only.
# residuals: in-sample absolute % error (median, 90th percentile); out-of-sample: benchmarks/accuracy_out_of_sample.py.
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--out", type=Path, default=EFFICIENCY_PATH)
    args = ap.parse_args(argv)
    fitted, df = fit_all()
    points, resolved, _ = usable_points()
    fams = sorted({r.gpu.family for r in resolved.values()})
    doc = {"profiles": table(fitted), "measured_families": fams, "residuals": residuals(df)}
    text = HEADER + yaml.safe_dump(doc, sort_keys=False, width=120)
    print(yaml.safe_dump({"residuals": doc["residuals"]}, sort_keys=False))
    if not args.dry_run:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
