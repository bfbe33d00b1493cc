"""`python -m planner validate`: predicted against measured for a file of measurements, read as it is (a contract).

Formats, told apart by their columns: published_points.csv (one metric per row), and aiconfigurator's silicon CSV
(mean TTFT and TPOT of N closed-loop users per row: each predicted by the serving simulator as `simulate --users N`
would, planner.accuracy.serving_points), and a client's own result files (`vllm bench serve --save-result` JSON,
SGLang `bench_serving` JSONL, a GuideLLM report: planner.accuracy.user_points) on the replica --model, --gpu, --tp
and --engine name: a run at --max-concurrency N as N closed-loop users, a run at a request rate as Poisson arrivals.
Common names are resolved ("H200 SXM 141GB" -> H200, an "-Instruct" or "-FP8" checkpoint -> the preset of the same
architecture) and each point's `note` says so.

JSON: {"points": [{"id", "metric", "measured", "predicted", "error_pct", "reason", "status", "group", "note"}],
       "summary": {METRIC: {"n", "median_abs_error_pct", "p90_abs_error_pct"}},
       "format": "published_points" | "aiconfigurator" | "benchmark_serving" | "sglang_bench_serving" | "guidellm"
                 | "aiperf" (AIPerf's profile_export_aiperf.json: planner.accuracy.aiperf_export),
       "rows": rows (CSV lines or result objects), "rows_predicted", "rows_skipped", "skip_reasons": {REASON: rows}}
`predicted` and `error_pct` are null, with a `reason`, for a row the model cannot predict (unknown model or GPU,
a metric it does not compute, a free-text cell such as tp "mixed TP/PP/DP": the row is reported, the file goes on).
`status` says where the constants come from: calibrated (the engine's own points on that GPU family), transferred
(fitted on other families, predicted from the datasheet and measured fractions), estimated (no points for the
family or the engine).
A malformed CSV (missing column, a `value` that is not a positive number) exits 2 naming the row and column.
Serving rows are simulated once per distinct set of `simulate` flags (identical rows share a run), on the worker
pool (planner.capacity.worker_pool; --workers) when a file has 40 or more of them, with progress lines on stderr for
20 or more.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import sys
import time
from pathlib import Path

from planner.accuracy.aiconfigurator_rows import is_aiconfigurator, read_aiconfigurator
from planner.accuracy.published_points import MEASUREMENTS_CSV
from planner.accuracy.serving_points import (
    ServingPoint,
    ServingPrediction,
    prediction,
    serving_table,
    simulate_flags,
    upload_points,
)
from planner.accuracy.user_points import parse_upload
from planner.accuracy.validation import MAX_POINTS_CSV_BYTES, error_summary, overall, points_table, summary_dict
from planner.capacity.worker_pool import map_in_pool
from planner.cli import emit
from planner.cli.simulate_cmd import simulate_argv
from planner.core.engine_defaults import ENGINES
from planner.core.errors import InputError
from planner.core.user_files import read_user_text

POOL_MIN_ROWS = 40  # fewer distinct rows run in this process: starting the pool's workers costs ~2 s
POOL_WORKERS = 4
PROGRESS_MIN_ROWS = 20
PROGRESS_EVERY_S = 5.0
POINT_KEYS = ("id", "metric", "measured", "predicted", "error_pct", "reason", "status", "group", "note")


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
    u = p.add_argument_group("a client's result file (vllm bench serve JSON, SGLang bench_serving JSONL, GuideLLM)")
    u.add_argument("--model", default=None, help="preset the runs served (default: the file's model id)")
    u.add_argument("--gpu", default=None, help="GPU the runs ran on (the file does not record it)")
    u.add_argument("--tp", type=int, default=1, help="tensor-parallel size of the replica")
    u.add_argument("--engine", default="vllm", choices=ENGINES, help="engine that served the runs")
    u.add_argument("--weights", default=None, help="weight precision id (default: the checkpoint name's, else bf16)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes that simulate the rows (default: up to 4 when a file has 40 or more distinct rows, else 1)",
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.workers is not None and not 1 <= args.workers <= 64:
        raise InputError("--workers", "must be a whole number from 1 to 64")
    try:
        fmt, df = read_table(args.points, args)
    except InputError as err:  # rows and columns are positions in the --points file
        raise InputError(err.field if err.field == "points" else f"points {err.field}", err.message) from None
    points = [{k: _clean(row[k]) for k in POINT_KEYS} for row in df.to_dict("records")]
    result = {"points": points, "summary": summary_dict(df), "format": fmt, **row_counts(df)}
    emit(result, args.json, _text(df, args.points))
    return 0


def read_table(path: Path, args=None):
    """(format, predicted-against-measured table) for the file, its format told by its content."""
    text = read_user_text(Path(path), "points", MAX_POINTS_CSV_BYTES).removeprefix("\ufeff")  # regular files only
    workers = getattr(args, "workers", None)
    try:
        if text.lstrip()[:1] in "{[":  # a client's own results: the replica comes from the flags
            data = parse_upload(Path(path).name, text)
            a = args or argparse.Namespace(model=None, gpu=None, tp=1, engine="vllm", weights=None)
            points = upload_points(data, a.model, a.gpu, a.tp, a.engine, a.weights)
            return data.kind, serving_table(points, predictions(points, workers))
        header = next(csv.reader(io.StringIO(text)), [])
        if is_aiconfigurator(header):
            points = read_aiconfigurator(text)
            return "aiconfigurator", serving_table(points, predictions(points, workers))
        return "published_points", points_table(text=text)
    except csv.Error as err:  # a cell over the csv module's 131,072-character limit, a NUL, a stray quote
        raise InputError("points", f"is not a readable CSV ({str(err)[:80]})") from None


def predictions(points: list[ServingPoint], workers: int | None = None, seed: int = 0):
    """`predict(point, seed)` for serving_table, every row simulated first: identical rows (the same simulate flags)
    once, many rows on the worker pool (planner.capacity.worker_pool), progress on stderr for a long file. A row
    whose simulation refuses it keeps the refusal as its reason, as serving_table does for a row it runs itself."""
    usable = [p for p in points if not p.excluded]
    keys = {p.id: tuple(_flags_or_reason(p, seed)) for p in usable}
    unique = sorted({k for k in keys.values() if k and k[0] != _REASON})
    workers = (
        workers
        if workers is not None
        else (min(POOL_WORKERS, os.cpu_count() or 1) if len(unique) >= POOL_MIN_ROWS else 1)
    )
    progress = _Progress(len(unique)) if len(unique) >= PROGRESS_MIN_ROWS else None
    if workers > 1 and len(unique) > 1:
        results = map_in_pool(_simulate_one, unique, workers, "planner.cli.validate_cmd", progress)
    else:
        results = []
        for k, key in enumerate(unique, start=1):
            results.append(_simulate_one(key))
            if progress:
                progress(k, len(unique))
    done = dict(zip(unique, results))

    def predict(p: ServingPoint, _seed: int = 0) -> ServingPrediction:
        key = keys.get(p.id) or tuple(_flags_or_reason(p, seed))
        result = done.get(key) if key[0] != _REASON else InputError(key[1], key[2])
        if result is None:
            result = _simulate_one(key)
        if isinstance(result, InputError):
            raise result
        return result

    return predict


_REASON = "\x00reason"  # marks a row whose flags could not be built (not a flag a user types)


def _flags_or_reason(p: ServingPoint, seed: int) -> list[str]:
    try:
        return simulate_flags(p, seed)
    except (InputError, ValueError) as err:
        return [_REASON, getattr(err, "field", "row"), str(getattr(err, "message", err))]


def _simulate_one(flags: tuple[str, ...]) -> ServingPrediction | InputError:
    """One row's prediction through `simulate` (a worker's task): its refusal returned, not raised, so one row
    that cannot be simulated does not stop the pool."""
    try:
        return prediction(simulate_argv(list(flags)))
    except InputError as err:
        return err
    except ValueError as err:
        return InputError("simulate", str(err)[:200])


class _Progress:
    """`validate: 120 of 3,833 distinct rows simulated (32 s)` on stderr, at most every PROGRESS_EVERY_S."""

    def __init__(self, total: int):
        self.total, self.start, self.last = total, time.monotonic(), 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_S or done == total:
            self.last = now
            print(
                f"validate: {done:,} of {total:,} distinct rows simulated ({now - self.start:.0f} s)", file=sys.stderr
            )


def predict_point(p: ServingPoint, seed: int = 0) -> ServingPrediction:
    """A measured serving row's predicted means: its flags (serving_points.simulate_flags) through `simulate`, the
    command a user runs."""
    return prediction(simulate_argv(simulate_flags(p, seed)))


def row_counts(df) -> dict:
    """CSV rows predicted and skipped, and how many rows each reason skipped (a row is one CSV line)."""
    rows = df.drop_duplicates("row" if "row" in df else "id")
    skipped = rows[rows["reason"] != ""]
    return {
        "rows": len(rows),
        "rows_predicted": len(rows) - len(skipped),
        "rows_skipped": len(skipped),
        "skip_reasons": {str(k): int(v) for k, v in skipped["reason"].value_counts().items()},
    }


def _clean(value):
    """NaN -> None (JSON null); numpy scalars -> Python numbers."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def _text(df, path: Path) -> str:
    o, counts = overall(df), row_counts(df)
    lines = [
        f"{path}: {o.n} of {len(df)} points predicted; {counts['rows_predicted']} of {counts['rows']} rows "
        f"predicted, {counts['rows_skipped']} skipped"
    ]
    lines += [f"  skipped {n:4d} rows: {reason}" for reason, n in counts["skip_reasons"].items()]
    for _, r in df.iterrows():
        if r["reason"]:
            lines.append(
                f"  {r['id']:6s} {r['metric'][:30]:30s} measured {r['measured']:>10.4g}  not predicted: {r['reason']}"
            )
        else:
            lines.append(
                f"  {r['id']:6s} {r['metric'][:30]:30s} measured {r['measured']:>10.4g}  predicted "
                f"{r['predicted']:>10.4g}  error {r['error_pct']:+6.1f}%  ({r['profile']}, {r['status']})"
                + (f"  [{r['note']}]" if r["note"] else "")
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
