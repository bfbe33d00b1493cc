"""Validation: how accurate is the planner? Published measurements, calibration from your own load test, and the plan
for that load test."""

from pathlib import Path

import pandas as pd
import streamlit as st

from planner.accuracy.bands import ANY, band_records
from planner.accuracy.benchmark_plan import load_test_plan
from planner.accuracy.kv_capacity_points import KV_CSV, kv_table
from planner.accuracy.profile_fit import MAX_FIT_POINTS, applicable_profile, fit_user_profile, profile_yaml
from planner.accuracy.published_points import MEASUREMENTS_CSVS
from planner.accuracy.user_points import CSV_COLUMNS, parse_upload
from planner.accuracy.validation import (
    coverage_table,
    error_summary,
    out_of_sample_summary,
    overall,
    pair_status,
    points_table,
    serving_out_of_sample,
    serving_targets_missed,
)
from planner.core.engine_defaults import ENGINES
from planner.core.errors import InputError
from planner.core.safe_text import display_name, inline_markdown
from planner.core.scenario import Scenario, resolve, with_engine
from planner.latency.efficiency import FIT_FIELDS, choose_profile
from planner.latency.metrics import memory_limit, sweep
from planner.latency.perf_model import PerfModel
from ui.charts.validation import before_after_chart, error_by_group_chart, parity_chart
from ui.labels import error_text
from ui.state import PROFILE_KEY, TARGET_KEY, current_scenario, resolved_or_stop  # noqa: E402  (the sidebar puts the calibration into the scenario)
from ui.uploads import upload_limit
from ui.workload_widgets import scenario_lengths

SERVING_METRIC_NAMES = {"ttft": "TTFT", "tpot": "TPOT", "throughput": "throughput"}
BAND_METRICS = {
    "tpot": "TPOT at concurrency",
    "ttft": "TTFT at concurrency",
    "throughput": "throughput",
    "e2e": "end-to-end latency",
    "kv_capacity": "KV capacity (vLLM)",
}
BAND_LEVELS = {
    "engine × model class × GPU generation": ("engine", "model class", "GPU generation"),
    "engine": ("engine",),
    "model class": ("model class",),
    "GPU generation": ("GPU generation",),
    "all rows": (),
}
MAX_UPLOAD_BYTES = 4_000_000  # a sweep's result files are kilobytes; 4 MB holds ~100,000 CSV rows, past the fit's cap
ERROR_COLUMNS = {"median_abs_error_pct": "median |error| %", "p90_abs_error_pct": "p90 |error| %"}


@st.cache_data(show_spinner=False)
def published(points_csv: str, kv_csv: str, mtimes: tuple[float, ...]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Predicted against measured for the measurement files (points_csv: paths joined by '|'; mtimes key the cache)."""
    pts = pd.concat([points_table(Path(p)) for p in points_csv.split("|")], ignore_index=True)
    return pts, kv_table(Path(kv_csv))


@st.cache_data(show_spinner=False)
def published_figures(points_csv: str, kv_csv: str, mtimes: tuple[float, ...], color: str):
    """The parity scatter and the error-by-metric bars (plotly builds them slowly: ~60 ms)."""
    both = pd.concat(published(points_csv, kv_csv, mtimes), ignore_index=True)
    return parity_chart(both, color), error_by_group_chart(error_summary(both, "metric"), "metric")


@st.cache_data(show_spinner=False, max_entries=8)
def fitted(text: str, name: str, scenario_json: str, engine: str):
    """Parse an upload and fit the profile for the scenario run by `engine` (cached on text, scenario, engine)."""
    data = parse_upload(name, text, max_points=MAX_FIT_POINTS)  # reading stops at the fit's limit, and says so
    r = with_engine(resolve(Scenario.model_validate_json(scenario_json)), engine)
    return data, fit_user_profile(r, data, choose_profile(engine, r.gpu.family).profile, name)


st.title("Validation")
st.caption(
    "How accurate is the planner? Every published measurement against the model's prediction, your own "
    "benchmark to make it exact for your setup, and the commands to measure it."
)
s, r = current_scenario(), resolved_or_stop()

files = (
    "|".join(str(p) for p in MEASUREMENTS_CSVS),
    str(KV_CSV),
    tuple(p.stat().st_mtime for p in (*MEASUREMENTS_CSVS, KV_CSV)),
)
pts, kv = published(*files)
both = pd.concat([pts, kv], ignore_index=True)
tab_pub, tab_cal, tab_plan = st.tabs(["Published measurements", "Calibrate from your benchmark", "Load-test plan"])

# --- 1. published measurements -------------------------------------------------------------------------------------
with tab_pub:
    o, ok = overall(pts), overall(kv)
    m = st.columns(4)
    m[0].metric(
        "Latency points predicted",
        f"{o.n} of {len(pts)}",
        help=f"{o.unpredicted} measured at a request rate or offline need the serving simulator",
    )
    m[1].metric("Median |error|", f"{o.median_abs_error_pct:.1f}%", help="latency and throughput points")
    m[2].metric("90th percentile |error|", f"{o.p90_abs_error_pct:.1f}%")
    m[3].metric(
        "KV capacity: median |error|",
        f"{ok.median_abs_error_pct:.1f}%",
        help=f"vLLM '# GPU blocks' log lines, {ok.n} of {len(kv)} rebuilt as scenarios",
    )
    color = st.selectbox("Colour points by", ["metric", "gpu", "engine", "source"], key="val_color")
    parity, by_metric = published_figures(*files, color)
    st.plotly_chart(parity, width="stretch", key="val_chart_parity")
    st.caption(
        "In-sample for the latency points: the same measurements fitted data/efficiency.yaml. The KV rows "
        "are rebuilt under the vLLM version each log names (V0 / V1 profilers); out of sample except B10, B04 "
        "and B16, which set their era's constant. Dotted lines: ±25%."
    )
    st.subheader("Out of sample: GPU families and engines the fit never saw")
    oos = out_of_sample_summary()
    if oos.empty:
        st.info("Run `python -m validation.accuracy_out_of_sample --write` to record the out-of-sample errors.")
    else:
        by = st.radio("Errors by", ["group", "family", "engine"], horizontal=True, key="val_oos_by")
        wide = oos[oos["by"] == by].pivot_table(index="key", columns="scheme", values="median_abs_pct")
        counts = oos[oos["by"] == by].pivot_table(index="key", columns="scheme", values="points")
        wide = wide.join(counts.add_suffix(" points")).reset_index().rename(columns={"key": by})
        st.dataframe(wide.round(1), hide_index=True, width="stretch", key="val_table_oos")
        st.caption(
            "Median |error| %. in-sample: the family's own profile (calibrated); LOFO: the engine's constants "
            "refitted without that GPU family, predicted from the datasheet and the part's measured fractions "
            "(transferred); LOEO: an engine predicted with the median constants of the other engines (estimated)."
        )
    st.subheader("Out of sample under load: sources, models, GPUs and engines the fit never saw")
    loo, targets, method = serving_out_of_sample()
    if loo.empty:
        st.info("Run `python -m validation.accuracy_loo --serving-only --families --per-stratum 6 --write`.")
    else:
        kinds = loo[loo["group"] == "all"].set_index("kind")
        shown = kinds[["rows"] + [f"{m} median |error| %" for m in SERVING_METRIC_NAMES]].rename(
            columns={f"{m} median |error| %": f"{name} median |error| %" for m, name in SERVING_METRIC_NAMES.items()}
        )
        st.dataframe(shown.reset_index().rename(columns={"kind": "held out"}), hide_index=True, key="val_table_loo")
        missed = serving_targets_missed(loo, targets)
        over = [f"{SERVING_METRIC_NAMES[m]} {kind} ({value:.1f}%)" for m, kind, value in missed]
        goal = ", ".join(f"{SERVING_METRIC_NAMES[m]} ≤ {v:g}%" for m, v in targets.items() if m in SERVING_METRIC_NAMES)
        st.caption(
            "Loaded serving runs at a client concurrency (aiconfigurator's silicon CSV): mean TTFT, mean TPOT and "
            "the closed loop's throughput, each row predicted through `simulate` with its flags (the command a user "
            "runs) by a fit that never saw its source (the whole benchmark campaign), its model, its GPU or its "
            "engine (an engine held out takes the others' median constants and their request path fitted on their "
            f"rows). Targets (median, out of sample): {goal}. "
            + (f"Above target: {'; '.join(over)}. " if over else "Every target met. ")
            + f"Method: {method}"
        )
        with_groups = [k for k in kinds.index if ((loo["kind"] == k) & (loo["group"] != "all")).any()]
        kind = st.selectbox("Groups of", with_groups, index=min(1, len(with_groups) - 1), key="val_loo_kind")
        groups = loo[(loo["kind"] == kind) & (loo["group"] != "all")].drop(columns="kind")
        groups = groups.rename(
            columns=lambda c: " ".join([SERVING_METRIC_NAMES.get(c.split()[0], c.split()[0])] + c.split()[1:])
        )
        st.dataframe(groups.round(1), hide_index=True, width="stretch", key="val_table_loo_groups")
    st.subheader("Out of sample per family: the error band every page shows")
    bands = pd.DataFrame(band_records())
    c = st.columns(2)
    metric = c[0].selectbox("Metric", BAND_METRICS, format_func=BAND_METRICS.get, key="val_band_metric")
    level = c[1].selectbox("Family", list(BAND_LEVELS), key="val_band_level")
    keep = bands["metric"] == metric
    for col in ("engine", "model class", "GPU generation"):
        keep &= (bands[col] != ANY) if col in BAND_LEVELS[level] else (bands[col] == ANY)
    shown = bands[keep].drop(columns="metric").sort_values("rows", ascending=False)
    st.dataframe(shown, hide_index=True, width="stretch", key="val_table_bands")
    st.caption(
        f"{int(bands[keep]['rows'].sum()):,} rows, each predicted by a fit that never saw its source: loaded serving "
        "runs at a client concurrency (aiconfigurator's silicon CSV, each row through `simulate` with its flags and "
        "the constants fitted without its whole campaign; end-to-end = TTFT + (OSL − 1) × TPOT, throughput its "
        "inverse; checked source by source: TTFT 81%, TPOT 66%, end-to-end and throughput 70% of held-out "
        "measurements inside the band built without their source, docs/accuracy.md), published points "
        "predicted with their own GPU family left out of the fit, and vLLM's KV logs. A prediction "
        "takes the band of the nearest family with enough rows (same engine, model class and GPU generation, then "
        "coarser): the prediction × the 10th and 90th percentile of measured / predicted. Regenerate with "
        "`python -m validation.error_bands` (README)."
    )
    st.subheader("Error by source, metric and GPU")
    table = error_summary(both, ["source", "metric", "gpu"]).round(1).rename(columns=ERROR_COLUMNS)
    st.dataframe(table, hide_index=True, width="stretch", key="val_table_errors")
    st.plotly_chart(by_metric, width="stretch", key="val_chart_metric")
    st.subheader("Calibrated or estimated: the GPU/engine pairs measured")
    pairs = pair_status(pts)[["gpu", "engine", "calibration", "status", "profile", "n", "median_abs_error_pct"]]
    st.dataframe(pairs.round(1).rename(columns=ERROR_COLUMNS), hide_index=True, width="stretch", key="val_table_pairs")
    st.caption(
        "calibrated: the engine has points on that GPU family (its correction applies); transferred: the "
        "engine's shared constants, fitted on other families, with this GPU's datasheet; estimated: nobody "
        "measured this family, or the engine has no points of its own."
    )
    with st.expander("Every GPU × engine a user can pick: calibrated, transferred or estimated"):
        st.dataframe(coverage_table(), hide_index=True, width="stretch", key="val_table_coverage")
    with st.expander("vLLM KV capacity: observed against predicted GPU blocks"):
        st.dataframe(
            kv[
                [
                    "id",
                    "model",
                    "gpu",
                    "tp",
                    "vllm_version",
                    "engine_version",
                    "measured",
                    "predicted",
                    "error_pct",
                    "reason",
                ]
            ].round(1),
            hide_index=True,
            width="stretch",
            key="val_table_kv",
        )
    with st.expander("Every point, with the reason when it is not predicted"):
        cols = [
            "id",
            "source",
            "model",
            "gpu",
            "engine",
            "metric",
            "unit",
            "measured",
            "predicted",
            "error_pct",
            "profile",
            "status",
            "reason",
        ]
        st.dataframe(pts[cols].round(2), hide_index=True, width="stretch", key="val_table_points")

# --- 2. calibration from the user's own results ---------------------------------------------------------------------
with tab_cal:
    engine = st.selectbox(
        "Engine you measured",
        ENGINES,
        index=ENGINES.index(s.engine) if s.engine in ENGINES else 0,  # the scenario's engine until changed
        key="val_engine",
    )
    base = choose_profile(engine, r.gpu.family)
    st.caption(
        f"Fits the constants of **{base.engine}/{r.gpu.family}** (now {base.status}, from "
        f"{base.source_key}) for {r.model.name} on {r.deployment.num_gpus} × {r.gpu.name}, TP "
        f"{r.deployment.tensor_parallel_size}, weights {r.weights.label}: set the sidebar to what you measured."
    )
    up = st.file_uploader(
        "vLLM benchmark_serving --save-result JSON, GuideLLM JSON report, or CSV",
        type=["json", "jsonl", "csv"],
        key="val_upload",
        **upload_limit(MAX_UPLOAD_BYTES),
    )
    pasted = st.text_area(
        "…or paste the file's contents",
        key="val_paste",
        height=100,
        placeholder=",".join(CSV_COLUMNS) + "\n8,512,256,10.5,133.9",
    )
    raw = up.getvalue()[: MAX_UPLOAD_BYTES + 1] if up is not None else pasted.strip()[: MAX_UPLOAD_BYTES + 1]
    text = raw.decode("utf-8-sig", errors="replace") if isinstance(raw, bytes) else raw
    name = display_name(up.name) if up is not None else "pasted text"
    data = fit = None
    if len(raw) > MAX_UPLOAD_BYTES:
        st.error(
            f"{inline_markdown(name)}: larger than {MAX_UPLOAD_BYTES:,} bytes; not read (keep one row per load level)"
        )
    elif not text:
        stored = st.session_state.get(TARGET_KEY)
        if stored and st.button(
            f"Clear the calibration from {stored['source']} ({stored['engine']}/{stored['gpu_family']})",
            key="val_clear",
        ):
            st.session_state.pop(PROFILE_KEY, None)
            st.session_state.pop(TARGET_KEY, None)
        st.info(
            f"Upload the result of a load test (see *Load-test plan*), or a CSV with columns "
            f"{', '.join(CSV_COLUMNS)} (one of the two times may be blank). With TPOT at two or more batch "
            "sizes or contexts the memory efficiency and step overhead are fitted; with TTFT, the matmul "
            "efficiency; the other constants keep the planner's values."
        )
    else:
        try:
            data, fit = fitted(text, name, s.model_dump_json(), engine)
        except InputError as err:
            st.error(error_text(err))  # escaped: a file's text cannot form a link
        except (ValueError, TypeError, RecursionError) as err:  # a reader's gap: one line, never a traceback
            st.error(f"{inline_markdown(name)}: not a readable result file ({type(err).__name__})")
    if fit is not None:
        if data.model_id and data.model_id.lower() not in (s.model.lower(), r.model.name.lower()):
            st.warning(
                f"The results name model {inline_markdown(repr(data.model_id[:120]))}; the scenario is "
                f"{inline_markdown(r.model.name)}. "
                "Pick the measured model in the sidebar, or the fit describes the wrong model."
            )
        c = st.columns(3)
        c[0].metric("Points read", f"{len(data.points)} ({data.kind})")
        c[1].metric("Median |error| before", f"{fit.median_abs_before_pct:.1f}%")
        c[2].metric(
            "Median |error| after",
            f"{fit.median_abs_after_pct:.1f}%",
            delta=f"{fit.median_abs_after_pct - fit.median_abs_before_pct:.1f} pts",
            delta_color="inverse",
        )
        for note in data.notes:
            st.caption(f"Approximation: {inline_markdown(note)}.")
        st.plotly_chart(before_after_chart(fit.table), width="stretch", key="val_chart_before_after")
        consts = pd.DataFrame(
            [
                {
                    "constant": f,
                    "planner": getattr(fit.base, f),
                    "fitted": getattr(fit.profile, f),
                    "from your data": f in fit.fitted_fields,
                }
                for f in FIT_FIELDS
            ]
        )
        st.dataframe(
            consts,
            hide_index=True,
            width="stretch",
            key="val_table_constants",
            column_config={c: st.column_config.NumberColumn(format="%.4g") for c in ("planner", "fitted")},
        )
        st.dataframe(fit.table.round(2), hide_index=True, width="stretch", key="val_table_fit")
        if st.toggle(
            "Apply to the scenario (other pages use these constants for this GPU family and engine)",
            value=True,
            key="val_apply",
        ):
            st.session_state[PROFILE_KEY] = fit.profile
            st.session_state[TARGET_KEY] = {"engine": fit.engine, "gpu_family": fit.gpu_family, "source": name}
        else:
            st.session_state.pop(PROFILE_KEY, None)
            st.session_state.pop(TARGET_KEY, None)
        st.download_button(
            "Download the constants (data/efficiency.yaml entry)",
            profile_yaml(fit),
            file_name=f"efficiency-{fit.engine}-{fit.gpu_family}.yaml",
            mime="application/x-yaml",
            key="val_download",
        )

# --- predictions with the calibration, and the load-test plan -------------------------------------------------------
measured = with_engine(r, st.session_state.get("val_engine", s.engine))  # the scenario run by the engine measured
user_profile = applicable_profile(
    st.session_state.get(TARGET_KEY),
    st.session_state.get(PROFILE_KEY),
    measured.engine.id,
    r.gpu.family,
)
pm = PerfModel(measured, profile=user_profile)
with tab_cal:
    if user_profile is not None:
        i, o = 1024, 256
        limit = max(1, memory_limit(r, i, o))
        batches = sorted({b for b in (1, 8, 32, 128) if b <= limit} | {min(limit, 256)})
        planner_pm = PerfModel(measured, profile=choose_profile(pm.choice.engine, r.gpu.family).profile)
        a, b = sweep(planner_pm, batches, i, o), sweep(pm, batches, i, o)
        st.markdown(f"**The scenario with your calibration** ({i:,} prompt, {o} output tokens, static batches)")
        st.dataframe(
            pd.DataFrame(
                {
                    "batch": batches,
                    "TTFT planner (ms)": a["ttft_s"] * 1e3,
                    "TTFT calibrated (ms)": b["ttft_s"] * 1e3,
                    "TPOT planner (ms)": a["tpot_s"] * 1e3,
                    "TPOT calibrated (ms)": b["tpot_s"] * 1e3,
                }
            ).round(2),
            hide_index=True,
            width="stretch",
            key="val_table_scenario",
        )

with tab_plan:
    req = scenario_lengths()
    input_tokens, output_tokens = req.prompt_tokens, max(2, req.output_tokens)
    st.caption(
        f"Requests of **{input_tokens:,} prompt + {output_tokens:,} output tokens** ({req.source}): set them "
        "in the sidebar under **Workload and SLO**."
    )
    if input_tokens + output_tokens > r.max_model_len:
        st.error(f"Prompt + output tokens: {input_tokens + output_tokens:,} exceeds max_model_len {r.max_model_len:,}")
        st.stop()
    if memory_limit(r, input_tokens, output_tokens) < 1:
        st.info("Not one request of this length fits the KV pool: see *Does it fit?*.")
        st.stop()
    plan = load_test_plan(s, r, input_tokens, output_tokens, pm=pm)
    st.markdown("**1. Start the server with the planner's settings**")
    st.code(plan.serve, language="bash", wrap_lines=True)
    st.markdown("**2. Sweep the request rate** (one result JSON per rate; upload any of them under *Calibrate*)")
    st.code(plan.bench, language="bash", wrap_lines=True)
    st.markdown("**…or with GuideLLM** (one JSON report for the whole sweep)")
    st.code(plan.guidellm, language="bash", wrap_lines=True)
    for note in plan.notes:
        st.caption(note)
