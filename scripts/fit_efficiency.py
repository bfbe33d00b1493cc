"""Fit the engine efficiency constants (data/efficiency.yaml) on the published measurements. Rerun any time:

    .venv/bin/python scripts/fit_efficiency.py            # fit and rewrite data/efficiency.yaml
    .venv/bin/python scripts/fit_efficiency.py --dry-run  # fit and print, write nothing

For every (engine, GPU family) with points, the six constants of planner.efficiency minimise
Σ log(predicted / measured)² over its points plus a weak log-normal prior per constant (weight PRIOR_WEIGHT: one
prior standard deviation costs as much as one point 10% off), so a constant the points cannot pin stays near its
prior instead of wandering. Optimiser: Nelder-Mead in log space (numpy only). Points measured at a request rate
need the serving simulator and are left out. Each engine's `default` (for uncalibrated families) is the per-constant
median of its fitted families.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.calibration_points import error_summary, evaluate, load_points, scenario  # noqa: E402
from planner.efficiency import EFFICIENCY_PATH, FIT_FIELDS, EfficiencyProfile  # noqa: E402

# constant -> (prior value, prior sd in natural log, lower bound, upper bound)
PRIORS = {"matmul_efficiency": (0.6, 0.5, 0.05, 1.0), "attention_efficiency": (0.5, 0.7, 0.05, 1.0),
          "memory_efficiency": (0.8, 0.3, 0.2, 1.0), "step_overhead_s": (2e-3, 1.5, 1e-5, 0.1),
          "allreduce_latency_s": (1e-5, 1.5, 1e-7, 1e-3), "moe_efficiency": (0.7, 0.5, 0.05, 1.0)}
PRIOR_WEIGHT = 0.01  # = (log 1.105)²: one prior sd ~ one point 10% off


def clip_profile(x: np.ndarray, points: int, status: str = "calibrated", note: str = "") -> EfficiencyProfile:
    values = {}
    for (name, (_, _, lo, hi)), v in zip(PRIORS.items(), x):
        values[name] = float(min(max(math.exp(v), lo), hi))
    return EfficiencyProfile(**values, status=status, num_points=points, note=note)


def objective(x, points, resolved, key) -> float:
    prof = clip_profile(x, len(points))
    df = evaluate(points, {key: prof}, resolved)
    data = float(np.sum(np.log(df["predicted"] / df["measured"]) ** 2))
    prior = sum(((v - math.log(p)) / sd) ** 2 for v, (p, sd, _, _) in zip(x, PRIORS.values()))
    return data + PRIOR_WEIGHT * prior


def nelder_mead(f, x0: np.ndarray, step: float = 0.4, iters: int = 1500, tol: float = 1e-9) -> np.ndarray:
    """Minimise f from x0 (standard reflection / expansion / contraction / shrink)."""
    simplex = [x0] + [x0 + step * np.eye(len(x0))[i] for i in range(len(x0))]
    values = [f(x) for x in simplex]
    for _ in range(iters):
        order = np.argsort(values)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < tol:
            break
        centroid = np.mean(simplex[:-1], axis=0)
        xr = centroid + (centroid - simplex[-1])
        fr = f(xr)
        if fr < values[0]:
            xe = centroid + 2 * (centroid - simplex[-1])
            fe = f(xe)
            simplex[-1], values[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (simplex[-1] - centroid)
            fc = f(xc)
            if fc < values[-1]:
                simplex[-1], values[-1] = xc, fc
            else:
                simplex = [simplex[0] + 0.5 * (s - simplex[0]) for s in simplex]
                values = [f(s) for s in simplex]
    return simplex[int(np.argmin(values))]


def fit_all() -> tuple[dict, object]:
    points = [p for p in load_points() if not p.excluded]
    resolved = {p.id: scenario(p) for p in points}
    groups: dict[str, list] = {}
    for p in points:
        groups.setdefault(f"{p.engine}/{resolved[p.id].gpu.family}", []).append(p)
    fitted: dict[str, EfficiencyProfile] = {}
    x0 = np.log([p for p, _, _, _ in PRIORS.values()])
    for key, pts in sorted(groups.items()):
        x = nelder_mead(lambda v: objective(v, pts, resolved, key), x0)
        x = nelder_mead(lambda v: objective(v, pts, resolved, key), x, step=0.1)  # restart: escape a flat simplex
        kinds = {p.kind for p in pts}
        status = "calibrated" if len(pts) >= 6 and len(kinds) >= 2 else "partial"
        ids = ", ".join(sorted(p.id for p in pts))
        fitted[key] = clip_profile(x, len(pts), status, note=f"fitted on {ids}")
        print(f"{key:24s} {len(pts):3d} points  " + "  ".join(f"{f}={getattr(fitted[key], f):.4g}" for f in FIT_FIELDS))
    df = evaluate(points, fitted, resolved)
    return fitted, df


def table(fitted: dict[str, EfficiencyProfile]) -> dict:
    out: dict[str, dict] = {}
    for key, prof in fitted.items():
        engine, family = key.split("/")
        out.setdefault(engine, {})[family] = _rounded(prof.model_dump())
    for engine, fams in out.items():
        med = {f: float(np.median([fams[k][f] for k in fams])) for f in FIT_FIELDS}
        fams["default"] = _rounded({**med, "status": "estimated", "num_points": 0,
                                    "note": f"median of the {engine} families above; used for any other GPU family"})
    return out


def _rounded(d: dict) -> dict:
    return {k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in d.items()}


def residuals(df) -> dict:
    def summ(by):
        s = error_summary(df, by)
        return {str(r[by]): {"points": int(r["points"]), "median_abs_pct": round(float(r["median_abs_pct"]), 1),
                             "p90_abs_pct": round(float(r["p90_abs_pct"]), 1)} for _, r in s.iterrows()}
    df = df.assign(profile_key=df["profile"])
    return {"by_group": summ("group"), "by_metric": summ("metric"), "by_profile": summ("profile_key")}


HEADER = """\
# Engine efficiency profiles: how close each engine gets to a GPU family's roofline (planner/efficiency.py).
# GENERATED by scripts/fit_efficiency.py from ../shared/data/measurements/published_points.csv; rerun it, do not
# edit by hand. Fit: per (engine, GPU family), minimise sum log(predicted/measured)^2 over that family's points plus a
# weak log-normal prior per constant (priors in the script), Nelder-Mead in log space. Points measured at a request
# rate (SGLang/vLLM serving at 4 and 8 QPS) need the serving simulator and are excluded from the fit and the errors.
#   matmul_efficiency      achieved / dense peak FLOP/s of linear layers (peak of the weights' compute dtype)
#   attention_efficiency   achieved / 16-bit peak FLOP/s of attention
#   memory_efficiency      achieved / peak HBM bandwidth (weights, KV cache, activations)
#   step_overhead_s        fixed cost of one forward pass (kernel launches, scheduler, sampling), seconds
#   allreduce_latency_s    latency of one TP all-reduce per log2(TP) hop, seconds (bytes go at the link bandwidth)
#   moe_efficiency         fraction of matmul_efficiency that routed experts' grouped GEMMs reach
# status: calibrated (>= 6 points of >= 2 kinds), partial (fewer: unpinned constants stay at their priors),
# estimated (the engine default, used for GPU families without points). `splitwise` is the unnamed engine behind
# the Splitwise profiling data (A100, Llama-2-70B): a calibration-only profile, not offered to users.
# residuals: absolute % error of predicted vs measured (median, 90th percentile); see benchmarks/accuracy.py.
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--out", type=Path, default=EFFICIENCY_PATH)
    args = ap.parse_args(argv)
    fitted, df = fit_all()
    doc = {"profiles": table(fitted), "residuals": residuals(df)}
    text = HEADER + yaml.safe_dump(doc, sort_keys=False, width=120)
    print(yaml.safe_dump({"residuals": doc["residuals"]}, sort_keys=False))
    if not args.dry_run:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
