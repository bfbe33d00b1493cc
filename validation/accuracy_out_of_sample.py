"""Out-of-sample error of the latency model: predict points whose GPU family or engine the fit never saw.

    python -m validation.accuracy_out_of_sample               # in-sample, LOFO and LOEO, 2 workers
    python -m validation.accuracy_out_of_sample --iters 600   # cheaper refits (stated in the output)
    python -m validation.accuracy_out_of_sample --csv out.csv # also write every prediction
    python -m validation.accuracy_out_of_sample --write       # record the summary for the Validation page

validation/fit_efficiency.py fits one set of constants per engine on all its points (every GPU from its datasheet),
then a two-factor correction per (engine, GPU family). Three ways to score it on published_points.csv +
published_points_2.csv:

  in-sample  data/efficiency.yaml as fitted: each point predicted by its own family's profile (status calibrated)
  LOFO       leave one GPU family out: refit the engine's shared constants without that family's points (same
             priors, objective and Nelder-Mead as the script) and predict them from the datasheet (transferred).
             Where the remaining points never ran tensor-parallel, the all-reduce prior is the in-situ median of
             the other engines, themselves refitted without the held-out family.
             Engines measured on one family only (LMDeploy, Splitwise) have no LOFO.
  LOEO       leave one engine out: predict an engine's points with the per-constant median of the OTHER user
             engines' shared constants (what an engine without points gets; status estimated); a superseded
             version's (tensorrt-llm-0.9, vllm-0.6) others leave out its current release too. No refit: the
             engines are fitted separately, so the others' constants never saw the held-out engine.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from pathlib import Path

import pandas as pd
import yaml

from planner.accuracy.published_points import error_summary, evaluate
from planner.accuracy.validation import OUT_OF_SAMPLE_PATH
from planner.core.engine_defaults import base_engine
from planner.latency.efficiency import ENGINES, load_efficiency
from validation import fit_efficiency as fe

TARGETS = {"decode": 15.0, "prefill": 18.0, "throughput": 12.0}  # issue 15: medians out of sample
POINTS, RESOLVED, KEY = fe.usable_points()


def lofo_job(task):
    engine, family, iters = task
    t = time.time()
    train = [p for p in POINTS if p.engine == engine and RESOLVED[p.id].gpu.family != family]
    test = [p for p in POINTS if p.engine == engine and RESOLVED[p.id].gpu.family == family]
    overrides = None if fe.has_tensor_parallel(train) else in_situ_prior(engine, family, iters)
    prof = fe.fit_engine(train, RESOLVED, KEY, iters, overrides)
    df = evaluate(test, {KEY[p.id]: prof for p in test}, RESOLVED)
    return df.assign(
        scheme="LOFO", held_out=f"{engine}/{family}", status="transferred", train_points=len(train)
    ), time.time() - t


def in_situ_prior(engine: str, family: str, iters: int) -> dict:
    """The all-reduce prior of an engine whose training points never ran tensor-parallel, as the fit script sets
    it, from the other engines' constants fitted WITHOUT the held-out family (refitted where they have points on it)."""
    table = load_efficiency()
    fitted = {}
    for other in sorted({p.engine for p in POINTS} - {engine}):
        pts = [p for p in POINTS if p.engine == other]
        train = [p for p in pts if RESOLVED[p.id].gpu.family != family]
        if not fe.has_tensor_parallel(train):
            continue
        fitted[other] = (
            table[other]["default"] if len(train) == len(pts) else fe.fit_engine(train, RESOLVED, KEY, iters)
        )
    return fe.in_situ_allreduce_prior(fitted)


def lofo_tasks(iters: int) -> list:
    fams: dict[str, set] = {}
    for p in POINTS:
        fams.setdefault(p.engine, set()).add(RESOLVED[p.id].gpu.family)
    return [(e, f, iters) for e, fs in sorted(fams.items()) if len(fs) > 1 for f in sorted(fs)]


def loeo() -> pd.DataFrame:
    table = load_efficiency()
    frames = []
    for engine in sorted({p.engine for p in POINTS}):
        same = base_engine(engine)  # a superseded version's current release is no other engine
        others = {
            e: table[e]["default"]
            for e in ENGINES
            if e not in (engine, same) and e in table and table[e]["default"].status != "estimated"
        }
        prof = fe.estimated(others, "")
        test = [p for p in POINTS if p.engine == engine]
        frames.append(
            evaluate(test, {KEY[p.id]: prof for p in test}, RESOLVED).assign(
                scheme="LOEO", held_out=engine, status="estimated", train_points=0
            )
        )
    return pd.concat(frames, ignore_index=True)


def side_by_side(df: pd.DataFrame, by: str, schemes=("in-sample", "LOFO", "LOEO")) -> pd.DataFrame:
    parts = []
    for s in schemes:
        e = error_summary(df[df["scheme"] == s], by).set_index(by)
        parts.append(
            e[["points", "median_abs_pct", "p90_abs_pct"]].rename(
                columns={"points": f"{s} n", "median_abs_pct": f"{s} med", "p90_abs_pct": f"{s} p90"}
            )
        )
    return pd.concat(parts, axis=1).reset_index()


def write_summary(df: pd.DataFrame, iters: int) -> None:
    doc: dict = {}
    for s in ("in-sample", "LOFO", "LOEO"):
        for by in ("group", "family", "engine"):
            e = error_summary(df[df["scheme"] == s], by)
            doc.setdefault(s, {})[by] = {
                str(r[by]): {
                    "points": int(r["points"]),
                    "median_abs_pct": round(float(r["median_abs_pct"]), 1),
                    "p90_abs_pct": round(float(r["p90_abs_pct"]), 1),
                }
                for _, r in e.iterrows()
            }
    header = (
        f"# GENERATED by validation/accuracy_out_of_sample.py --write (Nelder-Mead 2 x {iters} iterations):\n"
        "# absolute % error of the latency model on published_points*.csv, in-sample vs\n"
        "# leave-one-GPU-family-out (LOFO) vs leave-one-engine-out (LOEO). Read by the Validation page.\n"
    )
    OUT_OF_SAMPLE_PATH.write_text(
        header + yaml.safe_dump({"summary": doc}, sort_keys=False, width=120), encoding="utf-8"
    )
    print(f"wrote {OUT_OF_SAMPLE_PATH}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=fe.ITERS, help=f"Nelder-Mead iterations per pass ({fe.ITERS})")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--csv", type=Path, help="write every prediction (all schemes) to this CSV")
    ap.add_argument("--write", action="store_true", help=f"write the summary to {OUT_OF_SAMPLE_PATH.name}")
    args = ap.parse_args(argv)
    start = time.time()
    ins = evaluate(POINTS, None, RESOLVED).assign(scheme="in-sample", held_out="", train_points=0)
    tl = lofo_tasks(args.iters)
    print(
        f"{len(POINTS)} usable points; {len(tl)} leave-one-family-out refits (Nelder-Mead 2 x {args.iters}"
        + ("" if args.iters == fe.ITERS else f", REDUCED from the script's {fe.ITERS}")
        + f"), {args.workers} workers",
        flush=True,
    )
    frames, secs = [ins, loeo()], 0.0
    with mp.get_context("fork").Pool(args.workers) as pool:
        for df, dt in pool.imap_unordered(lofo_job, tl):
            frames.append(df)
            secs += dt
            print(f"  LOFO {df['held_out'].iloc[0]:22s} {len(df):3d} points  {dt:5.0f}s", flush=True)
    df = pd.concat(frames, ignore_index=True)
    df["abs_error_pct"] = df["error_pct"].abs()
    df["family"] = df["id"].map(lambda i: RESOLVED[i].gpu.family)
    pd.set_option("display.width", 220)
    pd.set_option("display.max_rows", 500)

    def fmt(v):
        return f"{v:.1f}"

    for by in ("group", "engine", "family"):
        print(f"\nabsolute % error by {by}: in-sample vs leave-one-family-out vs leave-one-engine-out")
        print(side_by_side(df, by).to_string(index=False, float_format=fmt))
    print("\nleave-one-family-out, per held-out (engine/family)")
    g = df[df["scheme"] == "LOFO"].groupby("held_out")
    print(
        pd.DataFrame(
            {
                "points": g.size(),
                "train_points": g["train_points"].first(),
                "median_abs_pct": g["abs_error_pct"].median(),
                "median_signed_pct": g["error_pct"].median(),
            }
        )
        .reset_index()
        .to_string(index=False, float_format=fmt)
    )
    worst = df[df["scheme"] != "in-sample"].sort_values("abs_error_pct", ascending=False).head(12)
    print("\nlargest out-of-sample errors")
    print(
        worst[
            [
                "scheme",
                "id",
                "model",
                "gpu",
                "tp",
                "weights",
                "engine",
                "batch",
                "metric",
                "measured",
                "predicted",
                "error_pct",
            ]
        ].to_string(index=False, float_format=lambda v: f"{v:.4g}")
    )
    for s in ("in-sample", "LOFO", "LOEO"):
        grp = error_summary(df[df["scheme"] == s], "group").set_index("group")
        print(
            f"targets (median, {s:9s}): "
            + ", ".join(
                f"{k} ≤ {t:g}%: {grp.loc[k, 'median_abs_pct']:.1f}%" if k in grp.index else f"{k}: n/a"
                for k, t in TARGETS.items()
            )
            + f"; all {df[df['scheme'] == s]['abs_error_pct'].median():.1f}%"
        )
    if args.write:
        write_summary(df, args.iters)
    if args.csv:
        df.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    print(f"\nruntime {time.time() - start:.0f}s wall ({secs:.0f}s of refit CPU time), {args.workers} workers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
