"""Where a closed-loop row's mean TTFT sits between the simulator's two runs: clients spread out, and clients started
together (whose first round is the burst of N on an idle server).

    python -m benchmarks.ttft_decomposition                    # 4 rows per (engine, model, GPU), 2 processes
    python -m benchmarks.ttft_decomposition --all --csv d.csv  # every aggregated closed-loop row, and each row

For every aggregated closed-loop row of aiconfigurator's silicon split whose client is known (planner.accuracy.
bench_protocol), the two simulations planner.accuracy.serving_points.predict weighs (`predict_parts`), under the
constants of data/efficiency.yaml:

  spread     mean TTFT of the measured rounds, clients started spread over one cycle (the drifted state)
  lockstep   mean TTFT of the measured rounds, clients started together (the later rounds of a burst start)
  burst      mean TTFT of that run's first round: N prompts arriving in one step on an idle server
  predicted  what `validate` predicts (the profile's wave_fraction and the protocol's burst weight 1/R applied)
  w          (measured − spread) / (burst − spread): the weight a burst round would need beside the spread state
             for the mix to equal the measured mean; the protocol's own weight is 1/R (R measured rounds of N)

Printed, per engine × client × clients (≤ 4, 5–16, 17–64, 65–128, 129–256, more): the median of log(measured / x)
for x = spread, lockstep, burst and predicted (0: that run's mean is the measured one), the median w against 1/R,
and the rows. A positive log ratio is a simulated TTFT below the measured one. No fit, no wall-clock assertion; the
figures are read in docs/research/ttft_gaps.md (gap 5).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

import numpy as np
import pandas as pd

from planner.accuracy.aiconfigurator_rows import read_aiconfigurator
from planner.accuracy.serving_points import predict_parts, resolved, weighed
from planner.accuracy.serving_traces import stratified_sample
from planner.core.errors import InputError
from planner.core.paths import measurements_dir
from planner.latency.perf_model import PerfModel

CSV = measurements_dir() / "aiconfigurator" / "silicon_calibration.csv"
CLIENT_BINS = [0, 4, 16, 64, 128, 256, 1_000_000]
SEED = 1  # the draw accuracy_loo scores (a draw other than the fit's)


def closed_loop_rows(per_stratum: int | None) -> list:
    """Aggregated rows the planner can simulate whose client is known and ran a closed loop (no request rate)."""
    points = read_aiconfigurator(CSV.read_text())
    rows = stratified_sample(points, per_stratum, SEED)
    return [p for p in rows if not p.excluded and p.protocol is not None and not p.request_rate and p.ttft_ms]


def decompose(p) -> dict:
    """One row's measured mean TTFT beside the spread, lockstep and burst means and the prediction (ms)."""
    row = {"row": p.id, "engine": p.engine, "client": p.protocol.name.split(":")[0], "clients": p.concurrency}
    row |= {"isl": p.isl, "osl": p.osl, "measured": p.ttft_ms, "rounds": p.protocol.rounds}
    try:
        r = resolved(p)
        spread, wave = predict_parts(p, r=r)
        row |= {"spread": spread.ttft_ms, "lockstep": wave.ttft_ms, "burst": wave.burst_ttft_ms}
        row["predicted"] = weighed(p, spread, wave, PerfModel(r).eff.wave_fraction).ttft_ms  # predict's, not rerun
    except (InputError, ValueError) as err:
        row["reason"] = str(err)
    return row


def implied_burst_weight(df: pd.DataFrame) -> pd.Series:
    """(measured − spread) / (burst − spread); NaN where the burst does not exceed the spread state."""
    gap = df["burst"] - df["spread"]
    return ((df["measured"] - df["spread"]) / gap).where(gap > 0)


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    ok = df.dropna(subset=["spread", "lockstep", "burst", "predicted"]).copy()
    ok["clients_bin"] = pd.cut(ok["clients"], CLIENT_BINS, labels=["≤4", "5-16", "17-64", "65-128", "129-256", ">256"])
    for col in ("spread", "lockstep", "burst", "predicted"):
        ok[f"log {col}"] = np.log(ok["measured"] / ok[col])
    ok["w"] = implied_burst_weight(ok)
    ok["1/R"] = 1.0 / ok["rounds"]
    cols = ["log spread", "log lockstep", "log burst", "log predicted", "w", "1/R"]
    out = ok.groupby(["engine", "client", "clients_bin"], observed=True)[cols].median()
    out["rows"] = ok.groupby(["engine", "client", "clients_bin"], observed=True).size()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-stratum", type=int, default=4, help="rows per (engine, model, GPU)")
    ap.add_argument("--all", action="store_true", help="every aggregated closed-loop row")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--csv", help="also write every row's figures here")
    args = ap.parse_args(argv)
    t0 = time.time()
    rows = closed_loop_rows(None if args.all else args.per_stratum)
    if args.jobs > 1:
        with mp.get_context("fork").Pool(args.jobs) as pool:
            out = pool.map(decompose, rows, chunksize=4)
    else:
        out = [decompose(p) for p in rows]
    df = pd.DataFrame(out)
    print(f"{len(df)} closed-loop rows simulated twice in {time.time() - t0:.0f} s ({args.jobs} workers)")
    if "reason" in df:
        print(f"{df['reason'].notna().sum()} rows the planner cannot simulate")
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(summarise(df).round(2).to_string())
    if args.csv:
        df.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
