"""Batching: static vs continuous on the same requests, and the one-GPU dynamic batcher (primer §6)."""

from __future__ import annotations

import streamlit as st

from planner.batching.requests import SCENARIOS, primer_six, to_csv
from planner.core.errors import InputError
from ui.batching_view import SWEEP_MAX_REQUESTS, Inputs, comparison, dynamic, tables
from ui.labels import error_text

SOURCES = {
    "six": "Six requests (primer §6)",
    "burst": "Burst: 200 at step 0",
    "steady": "Steady: one every 10–50 steps",
    "upload": "Upload a CSV",
}


def _steps(value: float) -> str:
    """A step count for a metric (its label names the unit): two decimals while small, whole steps once they would
    not fit."""
    return f"{value:,.2f}" if value < 1000 else f"{value:,.0f}"


def _apply_scenario_defaults() -> None:
    """Switching to a built-in set resets slots and max wait to its textbook values (an upload keeps them)."""
    if st.session_state["batching_source"] not in SCENARIOS:
        return
    _, slots, max_wait = SCENARIOS[st.session_state["batching_source"]]
    st.session_state["batching_slots"] = slots
    st.session_state["batching_max_wait"] = max_wait
    st.session_state["batching_spread"] = 1.0


st.session_state.setdefault("batching_source", "six")
st.session_state.setdefault("batching_slots", 3)
st.session_state.setdefault("batching_max_wait", 0)
st.session_state.setdefault("batching_spread", 1.0)

st.title("Batching: static vs continuous")
st.caption(
    "Time in decode steps: each step gives every running request one token, prefill is ignored and a step "
    "costs the same at any batch size. A request admitted at step s needing n tokens finishes at s + n."
)

c1, c2 = st.columns([3, 1])
source = c1.radio(
    "Requests",
    list(SOURCES),
    format_func=SOURCES.get,
    horizontal=True,
    key="batching_source",
    on_change=_apply_scenario_defaults,
)
seed = c2.number_input(
    "Seed",
    min_value=0,
    max_value=2**31 - 1,
    value=0,
    step=1,
    key="batching_seed",
    disabled=source not in ("burst", "steady"),
)
c1, c2, c3 = st.columns(3)
slots = c1.slider("Slots (requests running at once)", 1, 32, key="batching_slots")
max_wait = c2.slider("Static max wait (steps the oldest waits for a full batch)", 0, 200, key="batching_max_wait")
spread = c3.slider("Spread of output lengths (0 = all equal, 1 = as given)", 0.0, 1.5, step=0.25, key="batching_spread")

csv_text = None
if source == "upload":
    upload = st.file_uploader(
        "CSV with columns name,arrival,output_tokens (optional prompt_tokens)", type=["csv"], key="batching_upload"
    )
    st.download_button(
        "Template CSV (the six requests)", to_csv(primer_six()), "requests.csv", "text/csv", key="batching_template"
    )
    if upload is None:
        st.info("Upload a CSV of requests to simulate them, or pick a built-in set above.")
        st.stop()
    csv_text = upload.getvalue().decode("utf-8", errors="replace")

inputs = Inputs(source, int(seed), csv_text, float(spread), int(slots), int(max_wait))
try:
    view = comparison(inputs)  # a bad upload or spread raises here (errors are not cached)
except InputError as err:
    st.error(f"Cannot use these requests: {error_text(err)}")
    st.stop()

st.subheader(f"{view.num_requests:,} requests on {slots} slots")
for name, s in view.summaries.items():
    cols = st.columns([0.8, 1, 1, 1, 1, 1], vertical_alignment="center")
    cols[0].markdown(f"**{name.capitalize()}**")
    cols[1].metric("Done at step", f"{s.end_step:,}")
    cols[2].metric("GPU busy", f"{s.gpu_busy:.1%}")
    cols[3].metric("Average wait (steps)", _steps(s.avg_wait))
    cols[4].metric("Average latency (steps)", _steps(s.avg_latency))
    cols[5].metric("p95 latency (steps)", _steps(s.p95_latency))
st.caption(
    "GPU busy = useful slot-steps / (slots × last step). Wait = step admitted − arrival; latency = step "
    "finished − arrival (static: every request returns when its batch's longest finishes). Percentiles: "
    "numpy 'linear'."
)

figs = view.figures
st.plotly_chart(figs["gantt"], key="batching_gantt")
st.caption("Hover a bar to see the request. Grey: a static slot held idle until the batch's longest request ends.")
st.plotly_chart(figs["running"], key="batching_running")
st.plotly_chart(figs["cdf"], key="batching_cdf")

st.subheader("The gap widens as output lengths vary more")
if "sweep" in figs:
    st.plotly_chart(figs["sweep"], key="batching_sweep")
else:
    st.info(f"The spread sweep runs for up to {SWEEP_MAX_REQUESTS:,} requests; use the spread slider instead.")

# drawn only on request: three tables of up to 5,000 rows each cost every rerun their Arrow conversion
if st.toggle("Show the per-request and summary tables", key="batching_show_tables"):
    t = tables(inputs)
    st.dataframe(t["summary"], hide_index=True, key="batching_summary_table")
    st.dataframe(t["static"], hide_index=True, key="batching_static_table")
    st.dataframe(t["continuous"], hide_index=True, key="batching_cont_table")
    st.download_button("These requests as CSV", t["csv"], "requests.csv", "text/csv", key="batching_csv")

st.header("One-GPU dynamic batcher")
st.caption(
    "The interview design: requests queue; a batch fires when the max batch size waits or the oldest has "
    "waited the max wait (the latency-throughput dial); length buckets keep padding down; a queue limit "
    "rejects new requests (backpressure); generation is continuous."
)
c1, c2, c3 = st.columns(3)
max_batch = c1.slider("Max batch size (capped at the slots)", 1, 32, value=8, key="batching_dyn_max_batch")
dyn_wait = c2.slider("Max wait (steps)", 0, 200, value=10, key="batching_dyn_max_wait")
queue_limit = c3.slider(
    "Queue limit (requests waiting; more are rejected)", 0, 1000, value=50, key="batching_dyn_queue_limit"
)
c1, c2, c3 = st.columns(3)
limit_queue = c3.toggle(
    "Queue limit on",
    value=True,
    key="batching_dyn_limit_on",
    help="Backpressure: arrivals that would push the queue past the limit are rejected.",
)
bucketing = c1.toggle(
    "Length buckets",
    value=True,
    key="batching_dyn_bucketing",
    help="One queue per prompt-length bucket (edges 128, 256, 512, 1024 tokens).",
)
hold = c2.toggle(
    "Static generation",
    value=False,
    key="batching_dyn_hold",
    help="Hold each batch until its longest request finishes, instead of continuous generation.",
)

dyn = dynamic(
    inputs, (int(max_batch), int(dyn_wait), int(queue_limit) if limit_queue else None, bool(hold), bool(bucketing))
)
ds, one, bucketed = dyn.chosen, dyn.one_queue, dyn.bucketed
cols = st.columns(5)
cols[0].metric("Rejected", f"{ds.rejected:,}", help="Turned away because the queue was full.")
cols[1].metric("Padding share", f"{ds.padding_share:.1%}")
cols[2].metric(
    "Padding saved",
    f"{one.padding_share - bucketed.padding_share:.1%}",
    help="By length buckets: padding share with one queue minus with buckets.",
)
cols[3].metric("Prefill batches", f"{ds.num_batches:,}", help="Groups admitted together: one prefill pass each.")
cols[4].metric("p95 latency (steps)", _steps(ds.p95_latency))
st.plotly_chart(dyn.gantt, key="batching_dyn_gantt")
if dyn.padding is not None:
    st.plotly_chart(dyn.padding, key="batching_dyn_padding")
else:
    st.info("These requests have no prompt_tokens, so there is no padding to save.")
