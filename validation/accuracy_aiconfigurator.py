"""Loaded serving accuracy on aiconfigurator's silicon calibration split (data/measurements/aiconfigurator/).

    python -m validation.accuracy_aiconfigurator                 # stratified sample (8 rows per stratum)
    python -m validation.accuracy_aiconfigurator --per-stratum 3 # quicker
    python -m validation.accuracy_aiconfigurator --all           # every aggregated row
    python -m validation.accuracy_aiconfigurator --csv out.csv   # also write every prediction

Every aggregated row goes through the path `validate` takes (planner.accuracy.serving_points: the row's engine,
GPU, model preset, weights and TP/PP/DP/EP, and its client, as `simulate` flags run through the CLI:
planner.cli.validate_cmd.predict_point; the client's N streams started together, its warm-up left out). A stratum
is one (engine, model, GPU); the sample takes up to --per-stratum rows of each, chosen with a seeded generator from
the rows sorted by id, so a rerun is identical.

Printed: the fraction of rows the planner can predict (and why the rest cannot), then the median |error| of mean
TTFT, mean TPOT and throughput overall and per engine, per model class (dense; MoE/MLA), per GPU and per model.
validation/fit_efficiency.py fits data/efficiency.yaml on up to 4 rows per (engine, model, GPU) of this file (seed 0:
validation.serving_traces.stratified_sample) and each GPU family's two corrections on up to 6 (the same seeded
draw, larger), so these figures are of groups the fit saw, on the whole simulator (the fit re-prices traces); the
`fitted` column marks the rows either stage used, and the line "rows not fitted" scores the others.
Leave-one-model/GPU/engine-out figures: validation/accuracy_loo.py.

--csv columns: those of validate's table (id, row, model, gpu, engine, metric, measured, predicted, error_pct, ...),
then model_class, fitted, concurrency, isl, osl, measured_throughput_tok_s, predicted_throughput_tok_s (throughput:
concurrency × osl / (TTFT + (osl − 1) × TPOT), the closed loop's output tokens per second, from each side's means).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import pandas as pd

from planner.accuracy.aiconfigurator_rows import read_aiconfigurator
from planner.accuracy.serving_points import serving_table
from planner.cli.validate_cmd import predict_point
from planner.core.paths import measurements_dir
from validation.fit_efficiency import FAMILY_PER_STRATUM, SERVING_PER_STRATUM
from validation.serving_traces import stratified_sample

CSV = measurements_dir() / "aiconfigurator" / "silicon_calibration.csv"
# data/efficiency.yaml was fitted on a sample of these rows (the `fitted` column); the rest were never fitted
HELD_OUT = {
    "engine": "per engine:",
    "model_class": "by model class (dense; MoE or MLA):",
    "gpu": "per GPU:",
    "model": "per model:",
    "fitted": "rows the fit used (True) and did not (False):",
}
FIT_SEED = 0  # the seed validation/fit_efficiency.py draws both stages' rows with (fit_traces' default)


def sample(points, per_stratum: int | None, seed: int):
    """Aggregated rows, up to `per_stratum` per (engine, model, GPU) (None: all), reproducibly."""
    return stratified_sample(points, per_stratum, seed)


def throughput(p, means: dict, k: int) -> float:
    """Output tokens/s of N closed-loop clients from mean TTFT and TPOT (k = 0 measured, 1 predicted)."""
    if "mean_ttft_ms" not in means or "mean_tpot_ms" not in means:
        return float("nan")
    ttft, tpot = means["mean_ttft_ms"][k] / 1e3, means["mean_tpot_ms"][k] / 1e3
    return p.concurrency * p.osl / (ttft + (p.osl - 1) * tpot)


def reason_kind(reason: str) -> str:
    """A skip reason without the row's own values (for counting)."""
    for kind in ("unknown model", "MoE layers split", "MoE group", "unknown GPU", "leaves no KV pool"):
        if kind in reason:
            return kind
    return reason[:60] if reason else ""


def report(df: pd.DataFrame, label: str) -> list[str]:
    used = df[df["predicted"].notna()].assign(abs_err=lambda d: d["error_pct"].abs())
    lines = [f"\n{label}: median |error| (median signed error) of mean TTFT / mean TPOT (rows)"]
    for by in (None, "engine", "model_class", "gpu", "model", "fitted"):
        groups = [("all", used)] if by is None else sorted(used.groupby(by), key=lambda kv: str(kv[0]))
        if by in HELD_OUT:
            lines.append(f"  {HELD_OUT[by]}")
        for name, g in groups:
            ttft, tpot = (g[g["metric"] == m] for m in ("mean_ttft_ms", "mean_tpot_ms"))
            thr = 100 * (ttft["predicted_throughput_tok_s"] / ttft["measured_throughput_tok_s"] - 1)
            lines.append(
                f"  {(by or ''):11s} {str(name)[:34]:34s} TTFT {ttft['abs_err'].median():6.1f}% "
                f"({ttft['error_pct'].median():+6.1f}%)  TPOT {tpot['abs_err'].median():6.1f}% "
                f"({tpot['error_pct'].median():+6.1f}%)  thr {thr.abs().median():6.1f}% ({thr.median():+6.1f}%)  "
                f"({len(ttft)} rows)"
            )
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-stratum", type=int, default=8, help="rows per (engine, model, GPU) (default 8)")
    ap.add_argument("--all", action="store_true", help="every aggregated row")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", default=None, help="write every prediction to this CSV")
    args = ap.parse_args(argv)
    points = read_aiconfigurator(CSV.read_text(encoding="utf-8"))
    rows = sample(points, None if args.all else args.per_stratum, args.seed)
    t0 = time.time()
    df = serving_table(rows, predict_point)
    wall = time.time() - t0
    by_row = {p.id: p for p in rows}
    df["model_class"] = [by_row[r].model_class or "unknown" for r in df["row"]]
    df["model"] = [by_row[r].preset or by_row[r].model for r in df["row"]]
    fitted = {p.id for k in (SERVING_PER_STRATUM, FAMILY_PER_STRATUM) for p in sample(points, k, FIT_SEED)}
    df["fitted"] = [r in fitted for r in df["row"]]
    df["concurrency"] = [by_row[r].concurrency for r in df["row"]]
    df["isl"] = [by_row[r].isl for r in df["row"]]
    df["osl"] = [by_row[r].osl for r in df["row"]]
    means = {  # row -> {metric: (measured, predicted)}
        r: dict(zip(g["metric"], zip(g["measured"], g["predicted"]))) for r, g in df.groupby("row", sort=False)
    }
    for col, k in (("measured_throughput_tok_s", 0), ("predicted_throughput_tok_s", 1)):
        df[col] = [throughput(by_row[r], means[r], k) for r in df["row"]]
    per_row = df.drop_duplicates("row")
    ok = per_row["reason"] == ""
    n_agg = sum("disaggregated" not in p.excluded for p in points)
    print(
        f"{CSV.name}: {len(points)} rows, {n_agg} aggregated; sampled {len(rows)} aggregated rows "
        f"({'all' if args.all else f'up to {args.per_stratum} per engine/model/GPU'}, seed {args.seed})"
    )
    print(
        f"predictable: {ok.sum()} of {len(per_row)} = {ok.mean():.0%}  (simulated in {wall:.1f} s, "
        f"{wall / max(ok.sum(), 1) * 1e3:.0f} ms per row)"
    )
    for kind, n in Counter(reason_kind(r) for r in per_row.loc[~ok, "reason"]).most_common():
        print(f"  skipped {n:4d}: {kind}")
    print("\n".join(report(df, "groups the fit saw (out of sample: validation/accuracy_loo.py)")))
    if args.csv:
        df.to_csv(args.csv, index=False)
        print(f"\nwrote {args.csv}")


if __name__ == "__main__":
    main()
