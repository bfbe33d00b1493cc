"""How accurate is the planner? Predicted against measured for every published point, and the error summaries.

Two kinds of evidence (data/measurements):

    published_points.csv      latency / throughput points  -> planner.accuracy.published_points.predict under the
                                                               profile the point's (engine, GPU family) gets
    vllm_kv_observations.csv  vLLM "# GPU blocks" log lines -> planner.accuracy.kv_capacity_points (kv_table)

error % = 100 × (predicted − measured) / measured. A row the model cannot predict (unknown model or GPU, a metric
it does not compute, a point measured at a request rate) keeps `predicted` empty and says why in `reason`. Each
(engine, GPU family) is "calibrated" when data/efficiency.yaml holds a profile fitted on its own points, "partial"
when that fit had few points, and "estimated" when the engine's default profile stands in.
Note: the latency errors here are in-sample (the same points fitted the constants); the out-of-sample figures
(leave one GPU family out, leave one engine out) come from validation/accuracy_out_of_sample.py --write and are read
back by out_of_sample_summary().
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from planner.accuracy import names
from planner.accuracy import published_points as cp
from planner.core.catalog import DATA_DIR, _read_yaml, get_gpu, gpus, model_presets
from planner.core.engine_defaults import ENGINES
from planner.core.errors import InputError
from planner.core.user_files import read_user_text
from planner.latency.efficiency import EfficiencyProfile, choose_profile
from planner.latency.perf_model import PerfModel

MAX_POINTS_CSV_BYTES = 16 * 2**20  # the bundled CSV is ~100 KB; 16 MiB is ~150,000 rows
POINT_COLUMNS = (
    "id",
    "model",
    "gpu",
    "tp",
    "weight_dtype",
    "kv_dtype",
    "engine",
    "input_len",
    "output_len",
    "batch_or_concurrency",
    "qps",
    "metric",
    "value",
    "unit",
)
NUMERIC_COLUMNS = ("value",)  # must parse as a finite number; other cells (tp "mixed TP/PP/DP") give a row reason


# -- published latency / throughput points --------------------------------------------------------------------
def read_point_rows(path: Path | None = None, text: str | None = None) -> list[dict]:
    """The CSV's rows, checked for the columns and numbers every row needs (InputError names row and column)."""
    if text is None:
        text = read_user_text(Path(path or cp.MEASUREMENTS_CSV), "points", MAX_POINTS_CSV_BYTES)
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in POINT_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError("points", f"missing column(s) {', '.join(missing)} (format of published_points.csv)")
    rows = list(reader)
    if not rows:
        raise InputError("points", "has a header but no rows")
    for i, row in enumerate(rows, start=2):  # row 1 is the header
        for col in NUMERIC_COLUMNS:
            if col in row and (col != "num_gpus" or (row[col] or "").strip()):
                finite_positive(row[col], f"row {i} ({_printable(row.get('id') or 'no id')}), column {col}")
    return rows


def _printable(text: str) -> str:
    """A cell for an error message: as typed, or quoted when it holds a newline or another control character."""
    text = text[:40]
    return text if text.isprintable() else repr(text)


def finite_positive(text: str | None, where: str) -> float:
    """A cell as a positive finite number; InputError naming `where` otherwise (validate's files and CSVs)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise InputError(where, f"not a number: {str(text)[:40]!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(where, f"must be a positive finite number, got {str(text)[:40]!r}")
    return value


def to_point(row: dict) -> tuple[cp.Point | None, str]:
    """A row as a calibration Point (published_points' tables, then the catalogues' ids), or (None, why not)."""
    model, gpu = _model_id(row.get("model") or ""), _gpu_id(row.get("gpu") or "")
    if model is None:
        return None, f"unknown model {row.get('model')!r} (no preset of that name)"
    if gpu is None:
        return None, f"unknown GPU {row.get('gpu')!r} (not in data/gpus.yaml)"
    if not any((row.get("engine") or "").startswith(k) for k in cp.ENGINES):
        cp_engines = {**cp.ENGINES, (row.get("engine") or "").strip(): (row.get("engine") or "").strip().lower()}
    else:
        cp_engines = cp.ENGINES
    p = cp.parse_row(row, gpu=gpu, engines=cp_engines, model=model)
    if p.excluded:
        return None, p.excluded
    return p, ""


def _model_id(text: str) -> str | None:
    """A preset id only (a CSV row must not name files to read): the published points' table, the preset's own
    id, else a checkpoint of the same architecture (planner.accuracy.names: "-Instruct", "-FP8", Llama 3.3)."""
    try:
        model = cp._first_word(text.strip(), cp.MODELS)
    except KeyError:
        model = text.strip()
    exact = next((pid for pid in model_presets() if pid.lower() == model.lower()), None)
    return exact or names.resolve_model(text)[0]


def _gpu_id(text: str) -> str | None:
    try:
        return cp._first_word(text, cp.GPUS)
    except KeyError:
        pass
    try:
        return get_gpu(text.strip()).id
    except InputError:
        return names.resolve_gpu(text)[0]  # "H200 SXM 141GB" -> H200


def name_note(row: dict) -> str:
    """How a row's model and GPU names were read when neither the table nor an exact id matched them."""
    notes = []
    model, gpu = (row.get("model") or "").strip(), (row.get("gpu") or "").strip()
    try:
        cp._first_word(model, cp.MODELS)
    except KeyError:
        if not any(pid.lower() == model.lower() for pid in model_presets()):
            notes.append(names.resolve_model(model)[1])
    try:
        cp._first_word(gpu, cp.GPUS)
    except KeyError:
        try:
            get_gpu(gpu)
        except InputError:
            notes.append(names.resolve_gpu(gpu)[1])
    return "; ".join(n for n in notes if n)


def _predict_row(p: cp.Point, profiles: dict[str, EfficiencyProfile]) -> dict:
    """Predicted value, error, profile and status for one usable point (a reason instead when it fails)."""
    try:
        r = cp.scenario(p)
        key = f"{p.engine}/{r.gpu.family}"
        pm = PerfModel(r, profile=profiles.get(key))
        pred = cp.predict(p, pm)
    except (InputError, ValueError) as err:
        return {"reason": str(err)}
    status = "user-calibrated" if key in profiles else pm.choice.status
    return {
        "predicted": pred,
        "error_pct": 100 * (pred - p.value) / p.value,
        "profile": key if key in profiles else pm.choice.source_key,
        "status": status,
        "family": r.gpu.family,
    }


def points_table(
    path: Path | None = None, text: str | None = None, profiles: dict[str, EfficiencyProfile] | None = None
) -> pd.DataFrame:
    """Predicted against measured for every row of a published_points.csv-format file (one row per CSV row)."""
    rows = []
    for row in read_point_rows(path, text):
        p, reason = to_point(row)
        out = {
            "id": row["id"],
            "source": short_source(row.get("source", "")),
            "model": row["model"],
            "gpu": row["gpu"],
            "engine": row["engine"],
            "tp": row["tp"],
            "metric": row["metric"],
            "unit": row["unit"],
            "measured": float(row["value"]),
            "predicted": np.nan,
            "error_pct": np.nan,
            "profile": "",
            "status": "",
            "family": "",
            "group": "",
            "reason": reason,
            "note": name_note(row) if p is not None else "",
        }
        if p is not None:
            out.update(gpu=p.gpu, engine=p.engine, group=p.group, **_predict_row(p, profiles or {}))
        rows.append(out)
    return pd.DataFrame(rows)


def short_source(source: str) -> str:
    """'owner/repo @commit : path' -> 'owner/repo'; a GitHub issue/PR address -> 'owner/repo#N'; else the title."""
    m = re.match(r"https://github\.com/([^/]+/[^/]+)/(?:issues|pull)/(\d+)", source.strip())
    if m:
        return f"{m.group(1)}#{m.group(2)}"
    return source.split(" @")[0].split(" (")[0].strip()[:60] or "unknown"


# -- vLLM KV-capacity observations ----------------------------------------------------------------------------
# -- summaries ------------------------------------------------------------------------------------------------
def error_summary(df: pd.DataFrame, by: str | list[str] = "metric") -> pd.DataFrame:
    """n, median and 90th-percentile absolute % error per group, over the rows that were predicted."""
    used = df[df["predicted"].notna()].assign(abs_error_pct=lambda d: d["error_pct"].abs())
    g = used.groupby(by)["abs_error_pct"]
    return pd.DataFrame(
        {"n": g.size(), "median_abs_error_pct": g.median(), "p90_abs_error_pct": g.quantile(0.9)}
    ).reset_index()


def summary_dict(df: pd.DataFrame) -> dict[str, dict]:
    """{metric: {n, median_abs_error_pct, p90_abs_error_pct}} (the CLI's JSON summary)."""
    return {
        str(r["metric"]): {
            "n": int(r["n"]),
            "median_abs_error_pct": round(float(r["median_abs_error_pct"]), 2),
            "p90_abs_error_pct": round(float(r["p90_abs_error_pct"]), 2),
        }
        for _, r in error_summary(df).iterrows()
    }


@dataclass(frozen=True)
class Overall:
    n: int  # points predicted
    unpredicted: int
    median_abs_error_pct: float  # NaN when nothing was predicted
    p90_abs_error_pct: float


def overall(df: pd.DataFrame) -> Overall:
    """Points predicted, and the median and 90th-percentile absolute % error over all of them."""
    err = df["error_pct"].dropna().abs()
    return Overall(
        n=int(err.size),
        unpredicted=int(df["predicted"].isna().sum()),
        median_abs_error_pct=float(err.median()) if err.size else math.nan,
        p90_abs_error_pct=float(err.quantile(0.9)) if err.size else math.nan,
    )


def coverage_table(engines: tuple[str, ...] = ENGINES) -> pd.DataFrame:
    """Every catalogue GPU × user engine: calibrated / partial / estimated, and the profile it runs with."""
    rows = []
    for g in gpus().values():
        for engine in engines:
            c = choose_profile(engine, g.family)
            rows.append(
                {
                    "gpu": g.id,
                    "family": g.family,
                    "engine": engine,
                    "calibration": calibration_label(c.status),
                    "status": c.status,
                    "profile": c.source_key,
                    "points": c.profile.num_points,
                }
            )
    return pd.DataFrame(rows)


def calibration_label(status: str) -> str:
    """The three-way mark the page shows: calibrated (own points, also a user's fit), transferred, estimated."""
    if status in ("calibrated", "partial", "user-calibrated"):
        return "calibrated"
    return "transferred" if status == "transferred" else "estimated"


OUT_OF_SAMPLE_PATH = DATA_DIR / "accuracy_out_of_sample.yaml"


def out_of_sample_summary(path: Path | None = None) -> pd.DataFrame:
    """The errors validation/accuracy_out_of_sample.py --write recorded: one row per (scheme, by, key)."""
    path = path or OUT_OF_SAMPLE_PATH
    if not path.exists():
        return pd.DataFrame(columns=["scheme", "by", "key", "points", "median_abs_pct", "p90_abs_pct"])
    doc = _read_yaml(path).get("summary", {})
    rows = [
        {"scheme": scheme, "by": by, "key": key, **vals}
        for scheme, bys in doc.items()
        for by, keys in bys.items()
        for key, vals in keys.items()
    ]
    return pd.DataFrame(rows)


SERVING_OUT_OF_SAMPLE_PATH = DATA_DIR / "accuracy_aiconfigurator.yaml"
# the kinds validation/accuracy_loo.py --write records, in the order the page shows them
SERVING_KINDS = {
    "in_sample": "in sample",
    "leave_one_source_out": "one source out",
    "leave_one_model_out": "one model out",
    "leave_one_gpu_out": "one GPU out",
    "leave_one_engine_out": "one engine out",
    "out_of_sample_all_kinds": "all kinds",
}
SERVING_METRICS = ("ttft", "tpot", "throughput")


def serving_out_of_sample(path: Path | None = None) -> tuple[pd.DataFrame, dict[str, float], str]:
    """What validation/accuracy_loo.py --write recorded on aiconfigurator's loaded serving rows: one row per (kind,
    group) with its row count and each metric's median |error| and median signed error in %; "all" is the kind's
    whole; the per-metric targets (%); the run's method line. Empty without the file."""
    path = path or SERVING_OUT_OF_SAMPLE_PATH
    if not path.exists():
        return pd.DataFrame(columns=["kind", "group", "rows"]), {}, ""
    doc = _read_yaml(path)
    rows = [
        {"kind": kind, "group": group, "rows": int(v["rows"])} | _metric_columns(v)
        for key, kind in SERVING_KINDS.items()
        for group, v in _groups(doc.get(key, {}))
    ]
    return pd.DataFrame(rows), dict(doc.get("targets_pct", {})), str(doc.get("method", ""))


def serving_targets_missed(loo: pd.DataFrame, targets: dict[str, float]) -> list[tuple[str, str, float]]:
    """(metric, kind, median |error| %) of every out-of-sample kind whose whole misses its metric's target."""
    whole = loo[(loo["group"] == "all") & (loo["kind"] != SERVING_KINDS["in_sample"])]
    return [
        (m, row["kind"], float(row[f"{m} median |error| %"]))
        for row in whole.to_dict("records")
        for m in SERVING_METRICS
        if m in targets and row[f"{m} median |error| %"] > targets[m]
    ]


def _groups(section: dict):
    """(group, figures) of one kind: the kind's own figures are "all"; in sample's per-engine, per-class and per-GPU
    figures sit one level down ("engine vllm")."""
    if "rows" in section:
        yield "all", section
        return
    for name, v in section.items():
        if "rows" in v:
            yield name, v
        else:
            yield from ((f"{name} {k}", w) for k, w in v.items())


def _metric_columns(v: dict) -> dict[str, float]:
    out = {}
    for m in SERVING_METRICS:
        out[f"{m} median |error| %"] = float(v[f"{m}_median_abs_pct"])
        out[f"{m} median signed %"] = float(v[f"{m}_median_signed_pct"])
    return out


def pair_status(df: pd.DataFrame) -> pd.DataFrame:
    """The GPU/engine pairs of a points table with their calibration status and error."""
    used = df[df["predicted"].notna()]
    g = used.assign(abs_error_pct=used["error_pct"].abs()).groupby(["gpu", "engine", "profile", "status"])
    out = g["abs_error_pct"].agg(n="size", median_abs_error_pct="median").reset_index()
    return out.assign(calibration=out["status"].map(calibration_label))
