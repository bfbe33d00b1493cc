"""Traffic & load test: replay realistic traffic against one replica, sweep the load up, find the knee (primer §9)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st
from pydantic import ValidationError

from planner.capacity.load_sweep import estimate_capacity_rps, find_knee, open_vs_closed, rate_sweep
from planner.capacity.probe_workload import repeated_prompt_share
from planner.capacity.steady_state import MAX_QUEUE_GROWTH, STABILITY_MARGIN
from planner.core.engine import engine_for, get_engine, scheduler_policy
from planner.core.engine_defaults import ENGINES
from planner.core.errors import InputError, from_validation_error
from planner.core.scenario import Scenario, resolve, with_engine
from planner.core.workload import PROFILES, TrafficSpec
from planner.sim.policies import describe
from planner.sim.records import request_frame, step_frame
from planner.sim.run_summary import result_summary
from planner.sim.serving import Replica, run_serving
from planner.sim.settings import ServerSettings
from planner.traffic.generators import ARRIVAL_PROCESSES
from planner.traffic.profiles import mean_lengths, profile_workload
from planner.traffic.trace_refs import save_upload, web_length_spec
from planner.traffic.traces import load_trace
from ui.charts import load as charts
from ui.labels import error_text
from ui.long_run import progress_with_stop, show_if_stopped
from ui.state import current_scenario, resolved_or_stop
from ui.sweep_table import SWEEP_FORMATS, sweep_table
from ui.uploads import session_upload_dir

TIMING_LABELS = {"poisson": "Poisson at the rate", "trace": "the trace's own timing, rescaled to the rate"}


@st.cache_data(show_spinner=False, max_entries=8)
def _trace(path: str):
    return load_trace(path)


def _workload(t: TrafficSpec, rate: float):
    trace = _trace(t.trace_path) if t.profile == "upload" else None
    return profile_workload(
        t.profile,
        t.num_requests,
        rate,
        t.seed,
        prompt=t.prompt,
        output=t.output,
        arrival=t.arrival,
        cv=t.cv,
        trace=trace,
        prompt_pool=t.prompt_pool,
    )


def _replica(scenario_json: str, settings: ServerSettings) -> Replica:
    """The sidebar's scenario run as the page's settings say (its engine, prefix caching, queue, SLO, seed)."""
    return Replica(resolve(Scenario.model_validate_json(scenario_json)), settings)


@st.cache_data(show_spinner="Simulating…", max_entries=32)
def _run(scenario_json: str, settings: ServerSettings, t: TrafficSpec, rate: float):
    res = run_serving(_replica(scenario_json, settings), _workload(t, rate))
    return result_summary(res), step_frame(res, None), request_frame(res)  # every step: the chart keeps peaks


@st.cache_data(show_spinner="Simulating open and closed loop…", max_entries=16)
def _open_closed(scenario_json: str, settings: ServerSettings, t: TrafficSpec, rate: float, think_s: float):
    out = open_vs_closed(_replica(scenario_json, settings), rate, t.num_requests, t.prompt, t.output, think_s)
    frames = {"open loop": step_frame(out.open_result, None), "closed loop": step_frame(out.closed_result, None)}
    return {"open": out.open, "closed": out.closed}, out.num_users, frames  # the summaries: no runs in the cache


@st.cache_data(show_spinner=False, max_entries=32)
def _capacity(scenario_json: str, settings: ServerSettings, t: TrafficSpec) -> tuple[float, float, float]:
    if t.profile == "custom":  # a fixed sample, so the seed does not move the rate sliders
        prompt, output = mean_lengths(_workload(t.model_copy(update={"num_requests": 2000, "seed": 0}), 1.0))
    else:
        prompt, output = mean_lengths(_trace(t.trace_path or PROFILES[t.profile].trace))
    share = repeated_prompt_share(t)  # a prompt pool's repeats, served from the prefix cache
    return estimate_capacity_rps(_replica(scenario_json, settings), prompt, output, share), prompt, output


def _nice(x: float) -> float:
    """Round to 2 significant figures, so slider values read well."""
    return float(f"{x:.2g}")


def _reset_for_profile() -> None:
    st.session_state["load_prefix_caching"] = True  # vLLM V1's default, whatever the profile


def _ms(v: float | None) -> str:
    """Seconds as a millisecond figure (the unit is in the label)."""
    return "–" if v is None else f"{v * 1e3:,.0f}" if v >= 0.1 else f"{v * 1e3:,.1f}"


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.1%}"


for key, value in (
    ("load_profile", "chat"),
    ("load_seed", 0),
    ("load_num_requests", 1000),
    ("load_prefix_caching", True),
    ("load_queue_on", False),
    ("load_max_queue", 100),
    ("load_slo_ttft_ms", 2000),
    ("load_slo_tpot_ms", 100),
    ("load_sweep_points", 7),
    ("load_think_s", 5.0),
    ("load_prompt_pool", 0),
):
    st.session_state.setdefault(key, value)


def _follow_scenario_workload() -> None:
    """Start this page's traffic and SLO inputs from the scenario's (the sidebar's Workload and SLO) whenever those
    change; edits made here stay a what-if for this page until the sidebar's workload changes again."""
    s = current_scenario()
    signature = (s.traffic, s.slo)
    if st.session_state.get("load_synced_from") == signature:
        return
    st.session_state["load_synced_from"] = signature
    t = s.traffic

    def clamp(v, lo, hi):  # into the page widget's range
        return min(max(v, lo), hi)

    st.session_state.update(
        load_profile=t.profile,
        load_seed=min(t.seed, 2**31 - 1),
        load_num_requests=clamp(t.num_requests, 100, 20_000),
        # the deployment's --enable-prefix-caching (the sidebar's one switch), or the profile's own (rag's prefixes)
        load_prefix_caching=t.prefix_caching or s.deployment.enable_prefix_caching,
        load_slo_ttft_ms=clamp(round(s.slo.ttft_p95_s * 1e3), 1, 600_000),
        load_slo_tpot_ms=clamp(round(s.slo.tpot_p95_s * 1e3), 1, 10_000),
    )
    if t.profile == "custom":
        st.session_state.update(
            load_prompt_spec=t.prompt,
            load_output_spec=t.output,
            load_arrival=t.arrival,
            load_cv=clamp(float(t.cv), 0.1, 10.0),
            load_prompt_pool=clamp(t.prompt_pool, 0, 10_000_000),
        )
    elif t.arrival in TIMING_LABELS:
        st.session_state["load_timing"] = t.arrival


_follow_scenario_workload()
st.title("Traffic & load test")
st.caption(
    "Replay realistic traffic against one replica, sweep the arrival rate up and read TTFT and TPOT "
    "percentiles at each level: where latency climbs sharply is the capacity per replica (primer §9). "
    "One replica = one copy of the model; divide fleet traffic by the number of replicas."
)
scenario = current_scenario()
r = resolved_or_stop()
dep = r.deployment
engine_default = r.engine.batch_defaults(r.gpu)
st.caption(
    f"{r.model.name} · {dep.tensor_parallel_size} × {r.gpu.name} per replica · weights {r.weights.label} · "
    f"max_num_seqs {dep.max_num_seqs} · max_num_batched_tokens {dep.max_num_batched_tokens:,} "
    f"({r.engine.label} default for this GPU: {engine_default.max_num_seqs} / "
    f"{engine_default.max_num_batched_tokens:,})"
)

# --- traffic ---------------------------------------------------------------------------------------------
c = st.columns([2.2, 1, 1, 1])
profile = c[0].selectbox(
    "Traffic profile",
    list(PROFILES),
    format_func=lambda p: PROFILES[p].label,
    key="load_profile",
    on_change=_reset_for_profile,
)
seed = int(
    c[1].number_input(
        "Seed",
        min_value=0,
        max_value=2**31 - 1,
        step=1,
        key="load_seed",
        help="Seeds arrivals, lengths and the trace window: same seed, same run.",
    )
)
num_requests = int(
    c[2].number_input("Requests per run", min_value=100, max_value=20_000, step=100, key="load_num_requests")
)
engine = c[3].selectbox(
    "Engine",
    ENGINES,
    index=ENGINES.index(scenario.engine) if scenario.engine in ENGINES else 0,  # the scenario's until changed
    key="load_engine",
)
st.caption(f"Engine: {engine_for(engine).summary}.")
st.caption(PROFILES[profile].note)
st.caption(f"Scheduler of {get_engine(engine).label}: {describe(scheduler_policy(engine))}.")

prompt_spec = output_spec = ""
upload_path, cv, prompt_pool = "", 1.0, 0
if profile == "custom":
    c = st.columns([1.5, 1.5, 1, 0.8])
    prompt_spec = c[0].text_input(
        "Prompt lengths",
        "lognormal:mean=1000,sigma=0.8",
        key="load_prompt_spec",
        help="fixed:N · uniform:LO,HI · lognormal:mean=M,sigma=S[,max=X] · empirical:TRACE (azure_conv, "
        "azure_code, mooncake, or the name of a trace you uploaded with the upload profile)",
    )
    output_spec = c[1].text_input("Output lengths", "lognormal:mean=200,sigma=0.8", key="load_output_spec")
    arrival = c[2].selectbox("Arrivals", ARRIVAL_PROCESSES, key="load_arrival")
    if arrival == "gamma":
        cv = float(
            c[3].number_input(
                "Burstiness CV",
                0.1,
                10.0,
                2.0,
                step=0.5,
                key="load_cv",
                help="Coefficient of variation of the gaps: 1 = Poisson, > 1 = burstier.",
            )
        )
    prompt_pool = int(
        st.number_input(
            "Distinct prompts (0: every prompt new)",
            0,
            10_000_000,
            step=10,
            key="load_prompt_pool",
            help="Each request draws its prompt at random from this many distinct prompts, as aiperf's synthetic "
            "dataset does (100 unless --conversation-num says otherwise). With prefix caching on, a repeat the cache "
            "still holds skips its cached blocks: the Prefix hit rate metric shows the share of prompt tokens served.",
        )
    )
    try:  # a web input names no server file: bundled traces and this session's uploads only
        prompt_spec = web_length_spec(prompt_spec, "Prompt lengths", session_upload_dir())
        output_spec = web_length_spec(output_spec, "Output lengths", session_upload_dir())
    except InputError as err:
        st.error(error_text(err))
        st.stop()
else:
    arrival = st.radio(
        "Arrival timing", list(TIMING_LABELS), format_func=TIMING_LABELS.get, horizontal=True, key="load_timing"
    )
    if profile == "upload":
        upload = st.file_uploader(
            "Trace: Azure CSV (TIMESTAMP,ContextTokens,GeneratedTokens), Mooncake JSONL, or "
            "CSV arrival_s,prompt_tokens,output_tokens",
            type=["csv", "jsonl", "json", "txt"],
            key="load_upload",
        )
        if upload is None:
            st.info("Upload a trace to replay it, or pick a built-in profile.")
            st.stop()
        try:
            upload_path = str(save_upload(session_upload_dir(), upload.name, upload.getvalue()))
            _trace(upload_path)
        except InputError as err:
            st.error(f"Cannot read this trace: {error_text(err)}")
            st.stop()
    trace_ref = upload_path or PROFILES[profile].trace
    prompt_spec = output_spec = f"empirical:{trace_ref}"

with st.expander("Server options: prefix caching, queue limit, SLO", expanded=False):
    c = st.columns(4)
    prefix_caching = c[0].toggle(
        "Prefix caching",
        key="load_prefix_caching",
        help="On by default, as in vLLM V1: a preempted request re-hits its own "
        "cached blocks, and requests share prompt-prefix blocks (traces with "
        "hash_ids: Mooncake).",
    )
    queue_on = c[1].toggle("Queue limit (backpressure)", key="load_queue_on")
    max_queue = int(
        c[1].number_input("Max waiting requests", 0, 100_000, step=10, key="load_max_queue", disabled=not queue_on)
    )
    slo_ttft_ms = c[2].number_input("SLO: TTFT (ms)", 1, 600_000, step=100, key="load_slo_ttft_ms")
    slo_tpot_ms = c[3].number_input("SLO: TPOT (ms)", 1, 10_000, step=10, key="load_slo_tpot_ms")

sj = scenario.model_dump_json()
try:
    settings = ServerSettings.of(
        with_engine(r, engine),
        prefix_caching=prefix_caching,
        max_queue=max_queue if queue_on else None,
        slo_ttft_s=slo_ttft_ms / 1e3,
        slo_tpot_s=slo_tpot_ms / 1e3,
        seed=seed,
    )
    traffic = TrafficSpec(
        profile=profile,
        num_requests=num_requests,
        seed=seed,
        arrival=arrival,
        cv=cv,
        prompt=prompt_spec,
        output=output_spec,
        trace_path=upload_path,
        prefix_caching=prefix_caching,
        prompt_pool=prompt_pool,
    )
    cap, mean_prompt, mean_output = _capacity(sj, settings, traffic)
except ValidationError as err:
    st.error(error_text(from_validation_error(err)))
    st.stop()
except InputError as err:
    st.error(error_text(err))
    st.stop()
basis = (round(cap, 4), profile)
if st.session_state.get("load_cap_basis") != basis:  # new scenario or traffic: rates around its capacity
    st.session_state["load_cap_basis"] = basis
    st.session_state["load_rate"] = _nice(0.6 * cap)
    st.session_state["load_ovc_rate"] = _nice(0.9 * cap)
    st.session_state["load_sweep_range"] = (_nice(0.2 * cap), _nice(1.4 * cap))
rate_max = _nice(3 * cap)
run_prompt, run_output = mean_lengths(_workload(traffic, 1.0))  # the simulated requests, as the sidebar says
st.caption(
    f"Mean prompt {run_prompt:,.0f} tokens, mean output {run_output:,.0f} tokens over the {num_requests:,} "
    "simulated requests (the sidebar's and the Capacity page's figures)"
    + (
        f"; the whole trace averages {mean_prompt:,.0f} + {mean_output:,.0f}"
        if profile != "custom" and (round(run_prompt), round(run_output)) != (round(mean_prompt), round(mean_output))
        else ""
    )
    + f". Rough capacity from the latency model: ≈ {cap:,.3g} requests/s per replica (the sweep measures it)."
)

# --- one load level ----------------------------------------------------------------------------------------
st.header("One load level")
rate = st.slider("Arrival rate (requests/s)", _nice(cap / 50), rate_max, key="load_rate")
summary, steps, requests = _run(sj, settings, traffic, rate)
c = st.columns(4)
c[0].metric("Completed", f"{summary.completed:,}", help=f"of {summary.num_requests:,} requests")
c[1].metric(
    "Rejected",
    f"{summary.rejected:,}",
    help=f"{summary.rejected_too_long:,} longer than max_model_len {r.max_model_len:,} (prompt + output) or than "
    f"the KV pool; {summary.rejected_queue_full:,} refused by a full queue (backpressure).",
)
c[2].metric(
    "Throughput (tok/s)",
    f"{summary.throughput_tokens_per_s or 0:,.0f}",
    help="Output tokens per second across all requests (primer §2).",
)
c[3].metric(
    "Goodput (req/s)",
    f"{summary.goodput_requests_per_s or 0:,.2f}",
    help=f"Requests per second meeting TTFT ≤ {slo_ttft_ms:,} ms and TPOT ≤ {slo_tpot_ms:,} ms "
    f"({_pct(summary.slo_attainment)} of completed).",
)
over_len = int(((requests["prompt_tokens"] + requests["output_tokens"]) > r.max_model_len).sum())
if over_len:
    st.warning(
        f"{over_len:,} of {summary.num_requests:,} requests are longer than max_model_len {r.max_model_len:,} "
        "(prompt + output): vLLM rejects them at once, so they count as Rejected and in no latency. Raise it in "
        "the sidebar under **Engine settings (vLLM names) → max_model_len** if the model's window allows "
        f"({r.model.max_position_embeddings:,})."
    )
c = st.columns(4)
c[0].metric("p95 TTFT (ms)", _ms(summary.ttft_s.p95), help="Queue wait + prefill.")
c[1].metric("p95 TPOT (ms)", _ms(summary.tpot_s.p95), help="Time between streamed tokens.")
c[2].metric("p95 end-to-end (ms)", _ms(summary.e2e_s.p95))
c[3].metric("p95 queue wait (ms)", _ms(summary.queue_s.p95))
c = st.columns(4)
c[0].metric("Peak KV use", _pct(summary.peak_kv_use), help=f"of {summary.kv_pool_tokens:,} tokens")
c[1].metric("Longest queue", f"{summary.max_waiting:,}", help="Most requests waiting at once.")
c[2].metric("Preemptions", f"{summary.preemptions:,}", help="Requests evicted when the KV pool ran out.")
c[3].metric("Prefix hit rate", _pct(summary.prefix_hit_rate), help="Prompt tokens served from the prefix cache.")
table = pd.DataFrame(
    {
        label: {
            k: (float("nan") if v is None else v) * 1e3 for k, v in dataclasses.asdict(getattr(summary, key)).items()
        }
        for label, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("end-to-end", "e2e_s"), ("queue wait", "queue_s"))
    }
).T
st.dataframe(table.style.format("{:,.1f}"), key="load_latency_table")
st.caption(
    f"Milliseconds. {summary.source}. Simulated {summary.simulated_s:,.0f} s in "
    f"{summary.wall_s:.2f} s; seed {summary.seed}."
)
st.plotly_chart(charts.time_series({"run": steps}), key="load_time_series")
with st.expander("Per-request records"):
    st.caption(f"The first {min(len(requests), 1000):,} of {len(requests):,} requests; the CSV has them all.")
    st.dataframe(requests.head(1000), hide_index=True, key="load_requests_table")  # sent even while collapsed
    st.download_button(
        "Per-request records (CSV)", requests.to_csv(index=False), "requests.csv", "text/csv", key="load_requests_csv"
    )

# --- rate sweep ----------------------------------------------------------------------------------------------
st.header("Rate sweep: where is the knee?")
st.caption(
    "Knee = the highest rate, walking up from the lowest, that passes the same steady-state verdict as "
    "the Capacity page: warm-up and drain discarded, p95 TTFT and TPOT within the SLO (the goodput targets "
    f"above, else 2 s / 100 ms), a waiting queue growing by at most {MAX_QUEUE_GROWTH:.0%} of the rate per "
    f"second, and a rate at most {1 - STABILITY_MARGIN:.0%} of the replica's saturated throughput."
)
c = st.columns([3, 1, 1])
lo, hi = c[0].slider("Rates to sweep (requests/s)", _nice(cap / 50), rate_max, key="load_sweep_range")
points = c[1].slider("Points", 3, 12, key="load_sweep_points")
c[2].write("")
run_clicked = c[2].button("Run sweep", type="primary", key="load_run_sweep")
rates = [lo + (hi - lo) * k / (points - 1) for k in range(points)] if hi > lo else [lo]
sweep_key = (sj, settings, traffic, tuple(rates))
show_if_stopped("load_sweep_stop", "The sweep")
if run_clicked:
    box, bar = progress_with_stop("Sweeping…", key="load_sweep_stop")
    rows = rate_sweep(
        _replica(sj, settings),
        rates,
        lambda x: _workload(traffic, x),
        progress=lambda k, n: bar.progress(k / n, text=f"Rate {k} of {n} simulated"),
    )
    box.empty()
    st.session_state["load_sweep_result"] = (sweep_key, rows)
stored = st.session_state.get("load_sweep_result")
if stored and stored[0] == sweep_key:
    rows = stored[1]
    knee = find_knee(rows)
    c = st.columns(3)
    c[0].metric("Capacity per replica (knee)", f"{knee['rate_per_s']:,.3g} req/s" if knee else "below the range")
    c[1].metric("p95 TTFT at the knee (ms)", _ms(knee["ttft_p95_s"]) if knee else "–")
    c[2].metric("p95 TPOT at the knee (ms)", _ms(knee["tpot_p95_s"]) if knee else "–")
    st.plotly_chart(charts.sweep_latency(rows, knee), key="load_sweep_latency")
    st.plotly_chart(charts.sweep_throughput(rows, knee), key="load_sweep_throughput")
    with st.expander("Sweep table"):
        st.dataframe(
            sweep_table(rows),
            hide_index=True,
            key="load_sweep_table",
            column_config={
                name: st.column_config.NumberColumn(name, format=fmt) for name, fmt in SWEEP_FORMATS.items()
            },
        )
        st.caption(
            "Served and goodput: completions per second over the steady window (arrivals between their 10th and "
            "90th percentiles); goodput counts the requests within the p95 TTFT and TPOT targets, so it never "
            f"exceeds served. Rates: {points} points evenly spaced from {lo:,.3g} to {hi:,.3g} req/s, so the knee "
            f"is known to one step ({(hi - lo) / max(points - 1, 1):,.3g} req/s); the Capacity page bisects to 2%."
        )
elif stored:
    st.info("The inputs changed since the last sweep: press Run sweep again.")
else:
    st.info(f"Press Run sweep to simulate {points} rates × {num_requests:,} requests.")

# --- open vs closed loop -------------------------------------------------------------------------------------
st.header("Open vs closed loop on the same server")
st.caption(
    "Open loop: requests arrive at λ whatever the server does (real traffic). Closed loop: N users each "
    "send, wait for the reply, think, send again, with N = ⌈λ × (think + one request's reply time on a "
    "quiet server)⌉, the usual way to size a load test. When the server slows down the users slow down "
    "too, so the closed loop sends less than λ and hides the queue real traffic builds. Lengths only: "
    "no prefix sharing here."
)
c = st.columns(2)
ovc_rate = c[0].slider("Target rate λ (requests/s)", _nice(cap / 50), rate_max, key="load_ovc_rate")
think_s = c[1].slider("Think time (s, exponential)", 0.0, 60.0, step=0.5, key="load_think_s")
summaries, num_users, frames = _open_closed(sj, settings, traffic, ovc_rate, think_s)
for name, s in summaries.items():
    c = st.columns([1.2, 1, 1, 1, 1])
    c[0].markdown(f"**{name.capitalize()} loop**" + (f"  \n{num_users:,} users" if name == "closed" else ""))
    c[1].metric("Sent (req/s)", f"{s.offered_requests_per_s or 0:,.3g}")
    c[2].metric("p95 queue wait (ms)", _ms(s.queue_s.p95))
    c[3].metric("p95 TTFT (ms)", _ms(s.ttft_s.p95))
    c[4].metric("Longest queue", f"{s.max_waiting:,}")
st.plotly_chart(charts.compare_percentiles({f"{name} loop": s for name, s in summaries.items()}), key="load_ovc_bars")
st.plotly_chart(charts.time_series(frames), key="load_ovc_series")
