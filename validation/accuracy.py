"""Predicted against measured for every published calibration point, and the error per metric and group.

    python -m validation.accuracy          # table + summary
    python -m validation.accuracy --csv    # the full table as CSV on stdout

Uses the constants in data/efficiency.yaml as they are (rerun validation/fit_efficiency.py first after a model
change). Points measured at a request rate are listed but excluded: they need the serving simulator. Note these
are in-sample errors: the same points fitted the constants.
"""

from __future__ import annotations

import sys

import pandas as pd

from planner.accuracy.published_points import error_summary, evaluate

TARGETS = {"decode": 15.0, "prefill": 18.0, "throughput": 12.0}  # medians the issue asks for (out of sample; this
# script is in-sample: see validation/accuracy_out_of_sample.py for the honest figures)


def main(argv: list[str]) -> int:
    df = evaluate()
    if "--csv" in argv:
        print(df.to_csv(index=False))
        return 0
    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 500)
    used = df[df["excluded"] == ""]
    cols = [
        "id",
        "model",
        "gpu",
        "tp",
        "weights",
        "engine",
        "input_len",
        "output_len",
        "batch",
        "metric",
        "group",
        "measured",
        "predicted",
        "error_pct",
        "profile",
        "status",
    ]
    print(used[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    skipped = df[df["excluded"] != ""]
    print(f"\nnot predicted: {len(skipped)} points")
    for reason, ids in skipped.groupby("excluded")["id"]:
        print(f"  {reason}: {', '.join(ids)}")
    for by in ("metric", "group", "profile", "status"):
        print(f"\nabsolute % error by {by}")
        print(error_summary(df, by).to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    groups = error_summary(df, "group").set_index("group")
    ok = all(groups.loc[g, "median_abs_pct"] <= t for g, t in TARGETS.items())
    print(
        "\ntargets (median): "
        + ", ".join(f"{g} ≤ {t:g}%: {groups.loc[g, 'median_abs_pct']:.1f}%" for g, t in TARGETS.items())
        + ("  OK" if ok else "  MISSED")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
