"""Fit an engine efficiency profile to the user's own points, and export it as a data/efficiency.yaml entry.

Few points pin few constants, so only those the data can pin are fitted; the rest keep the current profile's values:

    TPOT at ≥ 2 distinct (batch, context) points   -> memory_efficiency and step_overhead_s
    TPOT at one point                              -> memory_efficiency
    TTFT at ≥ 1 point                              -> matmul_efficiency

Objective (as validation/fit_efficiency.py): Σ log(predicted / measured)² over the points plus a weak log-normal pull
towards the current profile (PRIOR_WEIGHT per prior standard deviation), minimised by Nelder-Mead in log space and
clipped to the physical bounds. The optimiser and bounds mirror the script's so both fits behave alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import yaml
from pydantic import ValidationError

from planner.accuracy.optimize import nelder_mead
from planner.accuracy.user_points import UserData, UserPoint
from planner.core.errors import InputError, from_validation_error
from planner.core.scenario import Resolved
from planner.latency.efficiency import FIT_FIELDS, EfficiencyProfile
from planner.latency.metrics import TPOT_SAMPLES, sweep
from planner.latency.perf_model import PerfModel

# constant -> (prior sd in natural log, lower bound, upper bound); same as validation/fit_efficiency.py PRIORS
BOUNDS = {
    "matmul_efficiency": (0.5, 0.05, 1.0),
    "attention_efficiency": (0.7, 0.05, 1.0),
    "memory_efficiency": (0.3, 0.2, 1.0),
    "step_overhead_s": (1.5, 1e-5, 0.1),
    "allreduce_latency_s": (1.5, 1e-7, 1e-3),
    "moe_efficiency": (0.5, 0.05, 1.0),
}
PRIOR_WEIGHT = 0.01  # = (log 1.105)²: one prior sd costs as much as one point 10% off


# -- predictions -------------------------------------------------------------------------------------------------
def predict_ms(pm: PerfModel, p: UserPoint) -> dict[str, float]:
    """Model TPOT (mean over the generation at batch B) and TTFT (prefill of ttft_batch prompts), in ms."""
    i, o = max(int(round(p.input_tokens)), 1), max(int(round(p.output_tokens)), 2)
    out = {}
    if p.tpot_ms is not None:
        out["TPOT"] = 1e3 * float(sweep(pm, [p.batch], i, o)["tpot_s"][0])
    if p.ttft_ms is not None:
        out["TTFT"] = 1e3 * float(pm.prefill(p.ttft_batch, i).total_s)
    return out


def predict_all_ms(pm: PerfModel, points) -> tuple[np.ndarray, np.ndarray]:
    """predict_ms for every point at once: (TPOT ms, TTFT ms) arrays, NaN where the point has no such measurement.

    Numpy over the points instead of a Python loop per point (a fit evaluates the model ~600 times): one prefill
    call for every TTFT, one decode call per count of decode contexts (decode_contexts: min(TPOT_SAMPLES, O − 1)
    evenly spaced contexts, the same for almost every point), the same numbers as predict_ms."""
    n = len(points)
    tpot, ttft = np.full(n, np.nan), np.full(n, np.nan)
    i = np.array([max(int(round(p.input_tokens)), 1) for p in points], dtype=float)
    o = np.array([max(int(round(p.output_tokens)), 2) for p in points], dtype=float)
    has_ttft = np.array([p.ttft_ms is not None for p in points], dtype=bool)
    has_tpot = np.array([p.tpot_ms is not None for p in points], dtype=bool)
    if has_ttft.any():
        b = np.array([p.ttft_batch for p in points], dtype=float)[has_ttft]
        ttft[has_ttft] = 1e3 * np.asarray(pm.prefill(b, i[has_ttft]).total_s, dtype=float)
    samples = np.maximum(1, np.minimum(TPOT_SAMPLES, o - 1)).astype(int)
    batch = np.array([p.batch for p in points], dtype=float)
    for k in np.unique(samples[has_tpot]):
        rows = has_tpot & (samples == k)
        start, last = i[rows], i[rows] + np.maximum(o[rows] - 2, 0)
        contexts = np.linspace(start, last, k, axis=1)  # decode_contexts, one row per point
        tpot[rows] = 1e3 * np.asarray(pm.decode(batch[rows, None], contexts).total_s).mean(axis=1)
    return tpot, ttft


def comparison(r: Resolved, points, before: EfficiencyProfile, after: EfficiencyProfile) -> pd.DataFrame:
    """One row per measured value: measured, predicted before and after, signed % errors (the scenario's engine)."""
    tpot_b, ttft_b = predict_all_ms(PerfModel(r, profile=before), points)
    tpot_a, ttft_a = predict_all_ms(PerfModel(r, profile=after), points)
    rows = []
    for j, p in enumerate(points):
        pb, pa = {"TPOT": tpot_b[j], "TTFT": ttft_b[j]}, {"TPOT": tpot_a[j], "TTFT": ttft_a[j]}
        for metric, measured in (("TPOT", p.tpot_ms), ("TTFT", p.ttft_ms)):
            if measured is None:
                continue
            rows.append(
                {
                    "point": p.label,
                    "metric": metric,
                    "batch": p.batch,
                    "input_tokens": p.input_tokens,
                    "output_tokens": p.output_tokens,
                    "measured_ms": measured,
                    "before_ms": pb[metric],
                    "after_ms": pa[metric],
                    "error_before_pct": 100 * (pb[metric] - measured) / measured,
                    "error_after_pct": 100 * (pa[metric] - measured) / measured,
                    "note": p.note,
                }
            )
    return pd.DataFrame(rows)


# -- the fit -------------------------------------------------------------------------------------------------------
def fields_to_fit(points) -> tuple[str, ...]:
    """The constants these points can pin (see the module note)."""
    tpot_keys = {(round(p.batch, 3), round(p.input_tokens + p.output_tokens / 2)) for p in points if p.tpot_ms}
    fields = []
    if any(p.ttft_ms for p in points):
        fields.append("matmul_efficiency")
    if tpot_keys:
        fields.append("memory_efficiency")
    if len(tpot_keys) >= 2:
        fields.append("step_overhead_s")
    return tuple(fields)


@dataclass(frozen=True)
class UserFit:
    """A fitted profile, what was fitted, and the errors on the uploaded points before and after."""

    profile: EfficiencyProfile
    base: EfficiencyProfile
    fitted_fields: tuple[str, ...]
    table: pd.DataFrame  # comparison()
    median_abs_before_pct: float
    median_abs_after_pct: float
    engine: str
    gpu_family: str
    notes: tuple[str, ...]


# The fit evaluates the model ~600 times over every point, numpy over the points (predict_all_ms): measured on the
# shared CI machine at load ~10, 20 points 0.37 s, 100 points 0.44 s, 1,000 points 3.0 s, 5,000 points 13 s of CPU
# (it was 167 ms per point with a Python loop per point: 100 points ~17 s, 2,000 past 600 s under load).
MAX_FIT_POINTS = 2_000  # ~6 s of fitting on one core; a benchmark sweep has 5-30 load levels


def fit_user_profile(r: Resolved, data: UserData, base: EfficiencyProfile, source: str = "upload") -> UserFit:
    """Fit the pinnable constants of `base` to the uploaded points for this scenario's GPU and engine (r.engine)."""
    points, fields = data.points, fields_to_fit(data.points)
    if len(points) > MAX_FIT_POINTS:  # the fit's cost grows with the points (600 model evaluations of each)
        raise InputError(
            source, f"has {len(points):,} points; the fit takes at most {MAX_FIT_POINTS:,} (keep one per load level)"
        )

    def profile_at(x: np.ndarray) -> EfficiencyProfile:
        values = base.model_dump(include=set(FIT_FIELDS))
        for name, v in zip(fields, x):
            _, lo, hi = BOUNDS[name]
            values[name] = float(min(max(math.exp(v), lo), hi))
        return EfficiencyProfile(**values, status=base.status, num_points=0, note="")

    measured = np.array([[np.nan if v is None else v for v in (p.tpot_ms, p.ttft_ms)] for p in points], dtype=float)
    has = ~np.isnan(measured)

    def objective(x: np.ndarray) -> float:
        predicted = np.column_stack(predict_all_ms(PerfModel(r, profile=profile_at(x)), points))
        data_term = float(np.sum(np.log(predicted[has] / measured[has]) ** 2))
        prior = sum(((v - math.log(getattr(base, n))) / BOUNDS[n][0]) ** 2 for n, v in zip(fields, x))
        return data_term + PRIOR_WEIGHT * prior

    x0 = np.log([getattr(base, n) for n in fields])
    x = nelder_mead(objective, x0, iters=600, tol=1e-10) if fields else x0
    n_values = sum((p.tpot_ms is not None) + (p.ttft_ms is not None) for p in points)
    status = "calibrated" if n_values >= 6 and len(fields) == 3 else "partial"
    note = (
        f"fitted on {len(points)} uploaded point(s) from {source} ({data.kind}): "
        f"{', '.join(fields) or 'nothing'}; other constants kept from the planner's profile"
    )
    fitted = profile_at(x).model_copy(update={"status": status, "num_points": len(points), "note": note})
    table = comparison(r, points, base, fitted)
    return UserFit(
        profile=fitted,
        base=base,
        fitted_fields=fields,
        table=table,
        median_abs_before_pct=float(table["error_before_pct"].abs().median()),
        median_abs_after_pct=float(table["error_after_pct"].abs().median()),
        engine=r.engine.id,
        gpu_family=r.gpu.family,
        notes=data.notes,
    )


def profile_yaml(fit: UserFit) -> str:
    """The fitted constants as a data/efficiency.yaml entry: profiles -> engine -> GPU family -> constants."""
    entry = {k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in fit.profile.model_dump().items()}
    header = (
        f"# servingplan user calibration: merge under `profiles:` of data/efficiency.yaml\n"
        f"# fitted: {', '.join(fit.fitted_fields) or 'nothing'}; median |error| on the uploaded points "
        f"{fit.median_abs_before_pct:.1f}% before -> {fit.median_abs_after_pct:.1f}% after\n"
    )
    return header + yaml.safe_dump({"profiles": {fit.engine: {fit.gpu_family: entry}}}, sort_keys=False, width=120)


def profile_from_yaml(text: str) -> tuple[str, str, EfficiencyProfile]:
    """Read back a downloaded entry: (engine, family, profile) of the first engine/family in the file."""
    try:
        doc = yaml.safe_load(text)
        engine, families = next(iter(doc["profiles"].items()))
        family, values = next(iter(families.items()))
        return engine, family, EfficiencyProfile(**values)
    except ValidationError as err:
        raise from_validation_error(err, prefix="profile YAML: ") from None
    except (yaml.YAMLError, KeyError, TypeError, AttributeError, StopIteration):
        raise InputError("profile YAML", "expected profiles: ENGINE: FAMILY: constants") from None


def applicable_profile(
    target: dict | None, profile: EfficiencyProfile | None, engine: str, gpu_family: str
) -> EfficiencyProfile | None:
    """The user's fitted profile when it was fitted for this engine and GPU family, else None (use the catalogue's)."""
    if profile is None or not target:
        return None
    same = target.get("engine") == engine.lower() and target.get("gpu_family") == gpu_family.lower()
    return profile if same else None
