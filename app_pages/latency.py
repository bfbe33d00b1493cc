"""Latency & throughput: why the first token is slow, what TPOT is, and what batching does to users and server."""

import numpy as np
import pandas as pd
import streamlit as st

from planner.core.engine_defaults import ENGINES
from planner.core.errors import InputError
from planner.core.scenario import with_engine
from planner.latency.efficiency import FIT_FIELDS, efficiency_summary
from planner.latency.metrics import batching_tradeoff, estimate, given_rates, memory_limit, ridge_batch, sweep, what_ifs
from planner.latency.perf_model import PerfModel
from planner.traffic.clients import CLIENTS, DEFAULT_CLIENT
from ui.bands import band_of, bands_caption, metric_band
from ui.cached import continuous_cached
from ui.charts.latency import (
    breakdown_chart,
    per_user_chart,
    roofline_chart,
    server_chart,
    tradeoff_chart,
    what_if_chart,
)
from ui.labels import error_text
from ui.page_inputs import follow_scenario
from ui.state import current_scenario, resolved_or_stop
from ui.workload_widgets import scenario_lengths

st.title("Latency & throughput")
r = resolved_or_stop()

MODES = ["Continuous batching (as vllm bench serve)", "Static batch (primer §5)", "Given rates (primer §5)"]
mode = st.radio(
    "Mode",
    MODES,
    horizontal=True,
    key="latency_mode",
    help="Continuous: B clients each keep one request in flight (vllm bench serve --max-concurrency B); "
    "the engine chunks each new prompt among the running decodes. Static: one batch of B equal "
    "requests prefilled together, then decoded together (the primer's textbook model).",
)
req = scenario_lengths()
input_tokens, output_tokens = req.prompt_tokens, req.output_tokens
st.caption(
    f"Requests of **{input_tokens:,} prompt + {output_tokens:,} output tokens** ({req.source}): set them in "
    "the sidebar under **Workload and SLO**."
)
c = st.columns(4)
queue_ms = c[2].number_input(
    "Queue wait (ms)",
    0.0,
    1e6,
    40.0 if mode.startswith("Given") else 0.0,
    step=10.0,
    key=f"latency_queue_{mode[:5]}",
    disabled=mode.startswith("Continuous"),
    help="Added to TTFT. Continuous mode simulates the wait in the server's queue itself.",
)

# --- given rates: the primer's worked example --------------------------------------------------------------------
if mode.startswith("Given"):
    prefill_rate = c[3].number_input("Prefill rate (tokens/s)", 1.0, 1e9, 10_000.0, step=1000.0, key="latency_rate")
    g = st.columns(4)
    tpot_ms = g[0].number_input("TPOT at batch 1 (ms)", 0.01, 1e5, 25.0, key="latency_tpot")
    batch = g[1].number_input("Shared batch", 1, 100_000, 32, key="latency_given_batch")
    batch_tpot_ms = g[2].number_input("TPOT in that batch (ms)", 0.01, 1e5, 40.0, key="latency_batch_tpot")
    prefix = g[3].number_input(
        "Cached prefix tokens", 0, int(input_tokens), min(1500, int(input_tokens)), key="latency_prefix"
    )
    base = given_rates(input_tokens, output_tokens, queue_ms / 1e3, prefill_rate, tpot_ms / 1e3)
    half = given_rates(input_tokens // 2, output_tokens, queue_ms / 1e3, prefill_rate, tpot_ms / 1e3)
    cap = given_rates(input_tokens, max(1, output_tokens // 2), queue_ms / 1e3, prefill_rate, tpot_ms / 1e3)
    cached = given_rates(input_tokens, output_tokens, queue_ms / 1e3, prefill_rate, tpot_ms / 1e3, prefix)
    t = batching_tradeoff(tpot_ms / 1e3, batch_tpot_ms / 1e3, batch, base.ttft_s, output_tokens)
    m = st.columns(5)
    m[0].metric("TTFT", f"{base.ttft_s * 1e3:,.0f} ms")
    m[1].metric("Tokens/s per user", f"{base.tokens_per_s:,.1f}")
    m[2].metric("End-to-end", f"{base.e2e_s:,.3f} s")
    m[3].metric("Decode share", f"{base.decode_share:.0%}")
    m[4].metric("TTFT with cached prefix", f"{cached.ttft_s * 1e3:,.0f} ms")
    st.table(
        pd.DataFrame(
            [
                [
                    "prefill",
                    f"{input_tokens:,} / {prefill_rate:,.0f}",
                    f"{base.prefill_s * 1e3:,.0f} ms; TTFT {base.ttft_s * 1e3:,.0f} ms",
                ],
                ["tokens per second", f"1 / {tpot_ms / 1e3:g}", f"{base.tokens_per_s:,.1f}"],
                [
                    "end to end",
                    f"{base.ttft_s:.3f} + {output_tokens - 1} × {tpot_ms / 1e3:g}",
                    f"{base.e2e_s:.3f} s; decode {base.decode_share:.0%}",
                ],
                [
                    "halve the prompt",
                    f"{input_tokens // 2:,} prompt tokens",
                    f"{half.e2e_s:.3f} s ({base.e2e_s - half.e2e_s:.2f} s gain)",
                ],
                [
                    "cap the output",
                    f"{cap.ttft_s:.3f} + {max(1, output_tokens // 2) - 1} × {tpot_ms / 1e3:g}",
                    f"{cap.e2e_s:.3f} s",
                ],
                [
                    "cache a prefix",
                    f"prefill {input_tokens - prefix:,} tokens",
                    f"TTFT {base.ttft_s * 1e3:,.0f} → {cached.ttft_s * 1e3:,.0f} ms",
                ],
                [
                    f"batch of {batch}",
                    f"TPOT {batch_tpot_ms:g} ms",
                    f"{t.per_user_tokens_per_s:.0f} tokens/s per user; {t.e2e_s:.1f} s end to end",
                ],
                [
                    "server",
                    f"{batch} / {batch_tpot_ms / 1e3:g}",
                    f"{t.server_tokens_per_s:,.0f} tokens/s = "
                    f"{t.throughput_gain:.0f}× single, for {t.latency_factor:.1f}× per-token latency",
                ],
            ],
            columns=["step", "quantity", "value"],
        )
    )
    st.stop()

# --- model modes: predict the rates from the hardware -------------------------------------------------------------
continuous_mode = mode.startswith("Continuous")
follow_scenario("latency_engine", r.engine.id)  # starts from the sidebar's engine, follows it when it changes
engine = c[0].selectbox("Engine profile", ENGINES, key="latency_engine")
r = with_engine(r, engine)  # the page's engine runs the sidebar's scenario
if input_tokens + output_tokens > r.max_model_len:
    output_tokens = min(output_tokens, r.max_model_len // 2)
    cut = max(1, r.max_model_len - output_tokens)
    st.warning(
        f"Prompt + output = {req.context_tokens:,} tokens exceeds max_model_len {r.max_model_len:,}: vLLM would "
        "reject these requests. Raise it in the sidebar under "
        "**Engine settings (vLLM names) → max_model_len** "
        f"(or untick *Set max_model_len* for the model's {r.model.max_position_embeddings:,}), or shorten the "
        f"requests under **Workload and SLO**. Below: requests cut to {cut:,} + {output_tokens:,} tokens."
    )
    input_tokens = cut
try:
    limit = memory_limit(r, int(input_tokens), int(output_tokens))
except InputError as err:
    st.error(error_text(err))
    st.stop()
if limit < 1:
    st.info(
        f"Not one request of {input_tokens + output_tokens:,} tokens fits this deployment's KV pool: "
        "shorten the request, add GPUs or quantize (see *Does it fit?*)."
    )
    st.stop()
max_seqs = r.deployment.max_num_seqs
if continuous_mode:  # more clients than fit queue or get preempted, as on a real server
    top = max(2, min(4096, 2 * max(limit, max_seqs)))
    label = "Concurrency B (clients with one request in flight, per replica)"
else:  # vLLM never runs more than max_num_seqs sequences in a step, nor more than the KV pool holds
    top, label = max(1, min(limit, max_seqs)), "Batch size (requests decoding together, per replica)"
# The slider is a new widget when its maximum changes; it starts from the user's last choice clamped to the new
# maximum (not from a default), so a smaller pool never looks like a faster TPOT.
batch = st.slider(
    label,
    1,
    top,
    min(int(st.session_state.get("latency_batch_wanted", 32)), top),
    key="latency_batch",
    help=f"Memory limit {limit:,} requests of this length; max_num_seqs {max_seqs:,}.",
)
st.session_state["latency_batch_wanted"] = batch

pm = PerfModel(r)
# Continuous mode lets B exceed the memory limit (the extra requests queue or are preempted, as on a server); the
# static batch beside it cannot be larger than the KV pool holds, so it is shown at the limit, said so.
static_batch = min(batch, limit)
est = estimate(r, static_batch, int(input_tokens), int(output_tokens), queue_ms / 1e3, pm=pm)
sweep_max = min(limit, 4096)
batches = np.unique(np.r_[np.round(np.geomspace(1, sweep_max, 120)).astype(int), batch])
df = pd.DataFrame(sweep(pm, batches, int(input_tokens), int(output_tokens), queue_ms / 1e3))
status = {
    "calibrated": "calibrated",
    "partial": "partly calibrated",
    "transferred": "transferred (fitted on other GPU families)",
    "estimated": "estimated (no calibration)",
}
what = f"continuous batching at concurrency {batch}" if continuous_mode else f"static batch of {batch}"
st.caption(
    f"{r.model.name} · {r.deployment.num_gpus} × {r.gpu.name} · TP {pm.tp} · weights {r.weights.label} "
    f"(compute {pm.compute_dtype}) · KV {r.kv.label} · engine {engine} {r.engine.version}: {status[pm.choice.status]} "
    f"({pm.choice.source_key}) · {what} × ({input_tokens:,} in, {output_tokens:,} out)"
)
st.caption("Hardware basis: " + "; ".join(pm.hardware.notes) + " (data/gpus.yaml achieved_*, data/engines.yaml).")

if continuous_mode:
    sj = current_scenario().model_dump_json()
    client = st.selectbox(
        "Benchmark client",
        tuple(CLIENTS),
        index=tuple(CLIENTS).index(DEFAULT_CLIENT),
        format_func=lambda c: f"{c} ({CLIENTS[c].tool})",
        key="latency_client",
        help="Whose --max-concurrency / --concurrency B streams are simulated, as that tool runs them: all B "
        "started together, its warm-up and length rule (planner/traffic/clients.py cites each tool's source).",
    )
    ce = continuous_cached(sj, engine, batch, int(input_tokens), int(output_tokens), client)
    bands = {
        "ttft_s": band_of(r, "ttft", ce.ttft_s),
        "tpot_s": band_of(r, "tpot", ce.tpot_s),
        "e2e_s": band_of(r, "e2e", ce.e2e_s),
        "throughput_tokens_per_s": band_of(r, "throughput", ce.throughput_tokens_per_s),
        "requests_per_s": band_of(r, "throughput", ce.requests_per_s),
    }
    m = st.columns(4) + st.columns(4)
    m[0].metric(
        "TTFT",
        f"{ce.ttft_s * 1e3:,.1f} ms",
        help=f"mean; p95 {ce.ttft_p95_s * 1e3:,.1f} ms. The new "
        "prompt is chunked into steps shared with the running decodes (max_num_batched_tokens "
        f"{r.deployment.max_num_batched_tokens:,} per step).",
        **metric_band(bands["ttft_s"], "ttft_s"),
    )
    m[1].metric(
        "TPOT",
        f"{ce.tpot_s * 1e3:,.2f} ms",
        help=f"mean (e2e − TTFT) / (N − 1); p95 "
        f"{ce.tpot_p95_s * 1e3:,.2f} ms; includes the prompt chunks its steps carry",
        **metric_band(bands["tpot_s"], "tpot_s"),
    )
    m[2].metric("Tokens/s per user", f"{ce.tokens_per_s_per_user:,.1f}")
    m[3].metric("End-to-end", f"{ce.e2e_s:,.2f} s", **metric_band(bands["e2e_s"], "e2e_s"))
    m[4].metric(
        "Server throughput",
        f"{ce.throughput_tokens_per_s:,.0f} tok/s",
        help="output tokens, all replicas",
        **metric_band(bands["throughput_tokens_per_s"], "throughput_tokens_per_s"),
    )
    m[5].metric(
        "Requests/s",
        f"{ce.requests_per_s:,.2f}",
        help="all replicas; B / end-to-end per replica",
        **metric_band(bands["requests_per_s"], "requests_per_s"),
    )
    m[6].metric("Running per step", f"{ce.mean_running:,.1f}", help="time-weighted; ≤ max_num_seqs")
    m[7].metric(
        "Static batch TTFT",
        f"{est.ttft_s * 1e3:,.0f} ms",
        help="the primer's static batch of the same size: every prompt prefilled together (Static batch mode)"
        if static_batch == batch
        else f"the primer's static batch at the memory limit ({limit:,} requests; {batch:,} do not fit together)",
    )
    st.caption(bands_caption(list(bands.values())))
    if batch > limit:
        st.info(
            f"Concurrency {batch:,} is above the memory limit ({limit:,} requests of this length fit the KV pool): "
            "the simulation below runs them under queueing and preemption, as a server would; the static-batch "
            f"figures and formulas are for {limit:,}."
        )
    if ce.capped_by_max_num_seqs:
        st.warning(f"Concurrency {batch} > max_num_seqs {max_seqs}: the rest wait in the server's queue (in TTFT).")
    if ce.preemptions:
        st.warning(
            f"{ce.preemptions:,} preemptions: {batch} requests of this length outgrow the KV pool ({limit:,} fit)."
        )
    cb = np.unique(np.r_[np.round(np.geomspace(1, top, 10)).astype(int), batch])
    cdf = pd.DataFrame(
        [continuous_cached(sj, engine, int(b), int(input_tokens), int(output_tokens), client) for b in cb]
    )
    cdf["batch"] = cdf["concurrency"]
else:
    bands = {
        "ttft_s": band_of(r, "ttft", est.ttft_s),
        "tpot_s": band_of(r, "tpot", est.tpot_s),
        "e2e_s": band_of(r, "e2e", est.e2e_s),
        "throughput_tokens_per_s": band_of(r, "throughput", est.throughput_tokens_per_s),
    }
    m = st.columns(3) + st.columns(3)
    m[0].metric(
        "TTFT",
        f"{est.ttft_s * 1e3:,.1f} ms",
        help="queue wait + the whole batch's prefill",
        **metric_band(bands["ttft_s"], "ttft_s"),
    )
    m[1].metric(
        "TPOT",
        f"{est.tpot_s * 1e3:,.2f} ms",
        help="mean decode step over the generation",
        **metric_band(bands["tpot_s"], "tpot_s"),
    )
    m[2].metric("Tokens/s per user", f"{est.tokens_per_s_per_user:,.1f}")
    m[3].metric("End-to-end", f"{est.e2e_s:,.2f} s", **metric_band(bands["e2e_s"], "e2e_s"))
    m[4].metric(
        "Server throughput",
        f"{est.throughput_tokens_per_s:,.0f} tok/s",
        **metric_band(bands["throughput_tokens_per_s"], "throughput_tokens_per_s"),
    )
    m[5].metric(
        "Decode bound", est.bound, help=f"decode steps are {est.bound}-bound; prefill is {est.prefill_bound}-bound"
    )
    st.caption(bands_caption(list(bands.values())))
ridge_here, ridge_short = est.ridge_batch, ridge_batch(pm, 128)
if ridge_here:
    st.info(
        f"**Ridge point:** at this context a decode step turns compute-bound from batch **{ridge_here}**; "
        f"below it, adding requests costs little per step. Memory limit: **{limit}** requests."
    )
else:
    st.info(
        f"**Ridge point:** at {input_tokens + output_tokens // 2:,} tokens of context, decode stays "
        f"memory-bound at every batch: each request's KV cache grows the bytes as fast as its FLOPs"
        + (f" (with 128-token contexts it would turn compute-bound at batch {ridge_short})" if ridge_short else "")
        + f". Memory limit: **{limit}** requests."
    )

left, right = st.columns(2)
if continuous_mode:
    x_title = "concurrency B (requests in flight)"
    left.plotly_chart(
        per_user_chart(cdf, batch)
        .update_xaxes(title=x_title)
        .update_layout(title="Each user's speed as concurrency grows"),
        width="stretch",
        key="latency_chart_user",
    )
    right.plotly_chart(
        server_chart(cdf, batch)
        .update_xaxes(title=x_title)
        .update_layout(title="Server throughput and mean TTFT (continuous batching)"),
        width="stretch",
        key="latency_chart_server",
    )
    left.plotly_chart(
        tradeoff_chart(cdf).update_layout(title="Trade-off: per-user speed vs server throughput (continuous batching)"),
        width="stretch",
        key="latency_chart_tradeoff",
    )
else:
    left.plotly_chart(per_user_chart(df, batch), width="stretch", key="latency_chart_user")
    right.plotly_chart(server_chart(df, batch), width="stretch", key="latency_chart_server")
    left.plotly_chart(tradeoff_chart(df), width="stretch", key="latency_chart_tradeoff")
right.plotly_chart(breakdown_chart(df), width="stretch", key="latency_chart_breakdown")
left.plotly_chart(roofline_chart(df, ridge_here), width="stretch", key="latency_chart_roofline")
ifs = what_ifs(pm, static_batch, int(input_tokens), int(output_tokens), queue_ms / 1e3)
right.plotly_chart(what_if_chart(ifs), width="stretch", key="latency_chart_whatif")
st.caption(
    f"Halving the prompt saves {ifs[1]['saved_s']:.2f} s; capping the output at half saves "
    f"{ifs[2]['saved_s']:.2f} s. A prompt costs one pass, every output token costs a step."
)

b, e = est.step_time_breakdown, pm.eff
static_row = df.loc[df.batch == static_batch].iloc[0]
with st.expander("Formula: the decode step, with your numbers"):
    experts_touched = " + experts touched" if pm.num_experts else ""
    moe_experts = (
        f"(MoE: E × (1 − (1 − k/E)^b) = {pm.num_experts} × (1 − (1 − {pm.top_k}/{pm.num_experts})^{static_batch}) "
        "experts per layer)"
        if pm.num_experts
        else ""
    )
    st.markdown(f"""
- Weights read per step (per GPU) = {pm.dense_weight_bytes / 1e9:,.2f} GB{experts_touched}
  {moe_experts}
  at {r.gpu.hbm_bandwidth_gb_s:,.0f} GB/s × {e.memory_efficiency:.2f}
  → **{b["weights_read_s"] * 1e3:.2f} ms** when memory-bound
- KV read = batch × context × KV bytes per token per GPU = {static_batch} × {input_tokens + output_tokens // 2:,} ×
  {pm.kv_bytes_full + pm.kv_bytes_window:,.0f} B → **{b["kv_read_s"] * 1e3:.2f} ms**
- Compute = 2 × active parameters × batch /
  (peak {pm.peak_flops / 1e12:,.0f} TFLOP/s {pm.compute_dtype} × {e.matmul_efficiency:.2f})
  + attention → **{static_row["compute_time_s"] * 1e3:.2f} ms** (memory side
  {static_row["memory_time_s"] * 1e3:.2f} ms): the step takes the larger → **{est.bound}-bound**
- Communication (TP {pm.tp}) = {b["communication_s"] * 1e3:.2f} ms; fixed overhead = {b["overhead_s"] * 1e3:.2f} ms
- TPOT = **{est.tpot_s * 1e3:.2f} ms** (mean over contexts {input_tokens:,} … {input_tokens + output_tokens - 2:,})
""")
with st.expander("Formula: TTFT, end-to-end and throughput, with your numbers"):
    st.markdown(f"""
- Prefill of the batch = max(bytes / bandwidth, (2 × params × {static_batch} × {input_tokens:,} + attention) / FLOP/s)
  + overhead = **{est.prefill_s * 1e3:,.1f} ms** ({est.prefill_bound}-bound)
- TTFT = queue wait + prefill = {queue_ms:,.0f} ms + {est.prefill_s * 1e3:,.1f} ms = **{est.ttft_s * 1e3:,.1f} ms**
- End-to-end = TTFT + (N − 1) × TPOT = {est.ttft_s:.3f} + {output_tokens - 1} × {est.tpot_s:.4f} = **{est.e2e_s:.2f} s**
- Tokens/s per user = 1 / TPOT = **{est.tokens_per_s_per_user:,.1f}**
- Throughput = {r.deployment.num_replicas} replica(s) × B × N / (prefill + (N − 1) × TPOT)
  = {r.deployment.num_replicas} × {static_batch} × {output_tokens} / {est.e2e_s - queue_ms / 1e3:.2f} s
  = **{est.throughput_tokens_per_s:,.0f} tokens/s**
""")
with st.expander("Assumptions: efficiency constants and how well they fit"):
    st.markdown(
        f"Profile **{pm.choice.source_key}** ({status[pm.choice.status]}). {e.note or ''} Constants live in "
        "`data/efficiency.yaml`, fitted by `validation/fit_efficiency.py` on published measurements; "
        "`validation/accuracy.py` prints predicted against measured for every point. Equal requests, no "
        "prefix caching or speculative decoding; the memory limit is vLLM's paged pool. Continuous mode "
        "runs the serving simulator (planner/sim/continuous.py: B clients in a closed loop, the first "
        "and last B requests left out) on these step times; static mode is the primer's one-batch model."
    )
    st.dataframe(pd.DataFrame([{"constant": f, "value": getattr(e, f)} for f in FIT_FIELDS]), hide_index=True)
    groups = efficiency_summary().get("by_group", {})
    if groups:
        st.dataframe(pd.DataFrame([{"points": k, **v} for k, v in groups.items()]), hide_index=True)
