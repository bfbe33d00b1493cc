"""`python -m planner validate`: predicted against measured for a published_points.csv-format file (a contract).

JSON: {"points": [{"id", "metric", "measured", "predicted", "error_pct", "reason", "status", "group"}],
       "summary": {METRIC: {"n", "median_abs_error_pct", "p90_abs_error_pct"}}}
`predicted` and `error_pct` are null, with a `reason`, for a row the model cannot predict (unknown model or GPU,
a metric it does not compute, a free-text cell such as tp "mixed TP/PP/DP": the row is reported, the file goes on).
`status` says where the constants come from: calibrated (the engine's own points on that GPU family), transferred
(fitted on other families, predicted from the datasheet and measured fractions), estimated (no points for the
family or the engine).
A malformed CSV (missing column, a `value` that is not a positive number) exits 2 naming the row and column.
"""

from __future__ import annotations

import math
from pathlib import Path

from planner.accuracy.published_points import MEASUREMENTS_CSV
from planner.accuracy.validation import error_summary, overall, points_table, summary_dict
from planner.cli import emit
from planner.core.errors import InputError

POINT_KEYS = ("id", "metric", "measured", "predicted", "error_pct", "reason", "status", "group")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "validate",
        help="predicted against measured for a CSV of published measurements",
        description="Predict every row of a CSV in the format of published_points.csv and "
        "report the absolute % error per metric (median, 90th percentile).",
    )
    p.add_argument(
        "--points",
        type=Path,
        default=MEASUREMENTS_CSV,
        help="CSV in the format of data/measurements/published_points.csv (default: that file)",
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        df = points_table(args.points)
    except InputError as err:  # rows and columns are positions in the --points file
        raise InputError(err.field if err.field == "points" else f"points {err.field}", err.message) from None
    points = [{k: _clean(row[k]) for k in POINT_KEYS} for row in df.to_dict("records")]
    result = {"points": points, "summary": summary_dict(df)}
    emit(result, args.json, _text(df, args.points))
    return 0


def _clean(value):
    """NaN -> None (JSON null); numpy scalars -> Python numbers."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def _text(df, path: Path) -> str:
    o = overall(df)
    lines = [f"{path}: {o.n} of {len(df)} points predicted"]
    for _, r in df.iterrows():
        if r["reason"]:
            lines.append(
                f"  {r['id']:6s} {r['metric'][:30]:30s} measured {r['measured']:>10.4g}  not predicted: {r['reason']}"
            )
        else:
            lines.append(
                f"  {r['id']:6s} {r['metric'][:30]:30s} measured {r['measured']:>10.4g}  predicted "
                f"{r['predicted']:>10.4g}  error {r['error_pct']:+6.1f}%  ({r['profile']}, {r['status']})"
            )
    lines.append("\nabsolute % error by metric")
    s = error_summary(df)
    lines += [
        f"  {r['metric'][:34]:34s} n={r['n']:3d}  median {r['median_abs_error_pct']:5.1f}%  "
        f"p90 {r['p90_abs_error_pct']:5.1f}%"
        for _, r in s.iterrows()
    ]
    if o.n:
        lines.append(
            f"  {'all':34s} n={o.n:3d}  median {o.median_abs_error_pct:5.1f}%  p90 {o.p90_abs_error_pct:5.1f}%"
        )
    return "\n".join(lines)
