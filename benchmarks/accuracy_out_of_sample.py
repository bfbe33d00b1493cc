"""Out-of-sample error of the latency model: refit the efficiency constants without the points being predicted.

    python -m benchmarks.accuracy_out_of_sample               # LOO + leave-one-source-out, 2 workers
    python -m benchmarks.accuracy_out_of_sample --iters 400   # cheaper refits (stated in the output)
    python -m benchmarks.accuracy_out_of_sample --csv out.csv # also write every prediction

benchmarks/accuracy.py reports in-sample errors (the points it scores also fitted the constants). Here every
prediction comes from a profile fitted without the predicted point(s), with the fit of scripts/fit_efficiency.py
(same priors, objective, Nelder-Mead and its two passes; the profile of the held-out point's own (engine, GPU
family) group is refitted, the other groups do not affect it):

  in-sample  all points of the group fitted, each point predicted (what fit_all / accuracy.py measure; refitted
             here with the same code, so the three columns differ only by what was held out)
  LOO        leave one point out: refit the group without it, predict it
  LOSO       leave one source block out: refit the group without a whole block, predict the block. Block =
             the model, in groups with more than one model (TensorRT-LLM: a model the group never saw);
             else the CSV metric, in groups with more than one (Splitwise: TPOT vs TTFT vs batched prefill;
             vLLM/hopper: ITL intercept vs slope); else the weight dtype (vLLM/ampere Qwen2.5-7B: bf16 vs the
             quantised checkpoints). A table per block follows, plus an extra Splitwise "leave one TP out".
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np
import pandas as pd

from scripts import fit_efficiency as fe

from planner.accuracy.published_points import error_summary, evaluate, load_points, scenario
from planner.accuracy.optimize import nelder_mead

TARGETS = {"decode": 15.0, "prefill": 20.0}  # as benchmarks/accuracy.py
ITERS = 1500  # planner.accuracy.optimize.nelder_mead's default, used by fit_all

POINTS = [p for p in load_points() if not p.excluded]
RESOLVED = {p.id: scenario(p) for p in POINTS}
KEY = {p.id: f"{p.engine}/{RESOLVED[p.id].gpu.family}" for p in POINTS}
GROUPS: dict[str, list] = {}
for _p in POINTS:
    GROUPS.setdefault(KEY[_p.id], []).append(_p)


def fit_group(key: str, pts: list, iters: int):
    """The body of fit_efficiency.fit_all's loop for one group (fit_all itself only fits all points at once)."""
    x0 = np.log([p for p, _, _, _ in fe.PRIORS.values()])
    def f(v):
        return fe.objective(v, pts, RESOLVED, key)

    x = nelder_mead(f, x0, iters=iters)
    x = nelder_mead(f, x, step=0.1, iters=iters)  # restart, as fit_all
    return fe.clip_profile(x, len(pts))


def block_of(p, key: str) -> str:
    pts = GROUPS[key]
    if len({q.model for q in pts}) > 1:
        return f"model={p.model}"
    if len({q.metric for q in pts}) > 1:
        return f"metric={p.metric}"
    return f"weights={p.weights}"


def job(task):
    """task = (scheme, key, label, held-out ids, iters) -> predictions of the held-out points."""
    scheme, key, label, held, iters = task
    t = time.time()
    # in-sample: fit on every point of the group and predict them all; otherwise fit without the held-out ids
    train = GROUPS[key] if scheme == "in-sample" else [p for p in GROUPS[key] if p.id not in held]
    prof = fit_group(key, train, iters)
    test = [p for p in GROUPS[key] if p.id in held]
    df = evaluate(test, {key: prof}, RESOLVED).assign(scheme=scheme, block=label, train_points=len(train))
    return df, time.time() - t


def tasks(iters: int) -> list:
    out = [("in-sample", key, "all", frozenset(p.id for p in pts), iters) for key, pts in GROUPS.items()]
    out += [("LOO", KEY[p.id], p.id, frozenset([p.id]), iters) for p in POINTS]
    blocks: dict[tuple, set] = {}
    for p in POINTS:
        blocks.setdefault((KEY[p.id], block_of(p, KEY[p.id])), set()).add(p.id)
        if p.engine == "splitwise":
            blocks.setdefault((KEY[p.id], f"extra: tp={p.tp}"), set()).add(p.id)
    out += [("LOSO", key, label, frozenset(ids), iters) for (key, label), ids in sorted(blocks.items())]
    return out


def run(task_list: list, workers: int) -> tuple[pd.DataFrame, dict]:
    t0, frames, secs = time.time(), [], {}
    with mp.get_context("fork").Pool(workers) as pool:
        for i, (df, dt) in enumerate(pool.imap_unordered(job, task_list), 1):
            frames.append(df)
            s = df["scheme"].iloc[0]
            secs[s] = secs.get(s, 0.0) + dt
            if i % 5 == 0 or i == len(task_list):
                print(f"  {i:3d}/{len(task_list)} refits done, {time.time() - t0:6.1f}s elapsed", flush=True)
    return pd.concat(frames, ignore_index=True), secs


def side_by_side(df: pd.DataFrame, by: str, schemes=("in-sample", "LOO", "LOSO")) -> pd.DataFrame:
    parts = []
    for s in schemes:
        sub = df[(df["scheme"] == s) & ~df["block"].str.startswith("extra")]
        e = error_summary(sub, by).set_index(by)
        if not parts:
            parts.append(e[["points"]])
        parts.append(e[["median_abs_pct", "p90_abs_pct"]].rename(
            columns={"median_abs_pct": f"{s} med", "p90_abs_pct": f"{s} p90"}))
    return pd.concat(parts, axis=1).reset_index()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=ITERS, help=f"Nelder-Mead iterations per pass (fit_all: {ITERS})")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--csv", type=Path, help="write every prediction (all schemes) to this CSV")
    args = ap.parse_args(argv)
    start = time.time()
    tl = tasks(args.iters)
    n_loso = sum(t[0] == "LOSO" for t in tl)
    print(f"{len(POINTS)} usable points in {len(GROUPS)} engine/family groups; "
          f"{len(GROUPS)} in-sample fits + {len(POINTS)} LOO refits + {n_loso} LOSO refits, "
          f"Nelder-Mead 2 passes x {args.iters} iterations"
          + ("" if args.iters == ITERS else f" (REDUCED from fit_all's {ITERS})") + f", {args.workers} workers")
    df, secs = run(tl, args.workers)
    df["abs_error_pct"] = df["error_pct"].abs()
    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 500)
    fmt = "{:.1f}".format

    # sanity: the in-sample refit should reproduce data/efficiency.yaml's predictions
    yaml_df = evaluate(POINTS, None, RESOLVED).set_index("id")
    ins = df[df["scheme"] == "in-sample"].set_index("id")
    drift = (ins["predicted"] / yaml_df.loc[ins.index, "predicted"] - 1).abs().max() * 100
    print(f"\nin-sample refit vs data/efficiency.yaml: max prediction difference {drift:.2f}%")

    for by in ("group", "metric", "profile"):
        print(f"\nabsolute % error by {by}: in-sample vs leave-one-out vs leave-one-source-out")
        print(side_by_side(df, by).to_string(index=False, float_format=fmt))

    print("\nleave-one-source-out, per held-out block (train_points = points left to fit the group)")
    lo = df[df["scheme"] == "LOSO"]
    g = lo.groupby(["profile", "block"], sort=True)
    per = pd.DataFrame({"points": g.size(), "train_points": g["train_points"].first(),
                        "median_abs_pct": g["abs_error_pct"].median(), "p90_abs_pct": g["abs_error_pct"].quantile(0.9),
                        "median_signed_pct": g["error_pct"].median()}).reset_index()
    print(per.to_string(index=False, float_format=fmt))

    worst = df[df["scheme"] == "LOO"].sort_values("abs_error_pct", ascending=False).head(10)
    print("\nlargest leave-one-out errors")
    cols = ["id", "model", "gpu", "tp", "weights", "input_len", "output_len", "batch", "metric", "measured",
            "predicted", "error_pct", "profile"]
    print(worst[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))

    for s in ("in-sample", "LOO", "LOSO"):
        groups = error_summary(df[(df["scheme"] == s) & ~df["block"].str.startswith("extra")], "group").set_index("group")
        print(f"targets (median, {s:9s}): " + ", ".join(f"{gname} ≤ {t:g}%: {groups.loc[gname, 'median_abs_pct']:.1f}%"
                                                    for gname, t in TARGETS.items()))
    if args.csv:
        df.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    print(f"\nruntime {time.time() - start:.0f}s wall ({', '.join(f'{k} {v:.0f}s' for k, v in secs.items())} of "
          f"fit CPU time), {args.workers} workers, Nelder-Mead 2 x {args.iters} iterations per fit")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
