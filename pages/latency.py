"""Latency & throughput: why the first token is slow, what TPOT is, and what batching does to users and server."""
import numpy as np
import pandas as pd
import streamlit as st

from planner.latency.efficiency import ENGINES, FIT_FIELDS, efficiency_summary
from planner.core.errors import InputError
from planner.latency.metrics import batching_tradeoff, estimate, given_rates, memory_limit, ridge_batch, sweep, what_ifs
from planner.latency.perf_model import PerfModel
from ui.charts.latency import (breakdown_chart, per_user_chart, roofline_chart, server_chart, tradeoff_chart,
                               what_if_chart)
from ui.state import resolved_or_stop
from ui.labels import error_text

st.title("Latency & throughput")
r = resolved_or_stop()

mode = st.radio("Mode", ["Predict from the hardware", "Given rates (primer §5)"], horizontal=True, key="latency_mode")
c = st.columns(4)
input_tokens = c[0].number_input("Prompt tokens", 1, 1_000_000, 2000, step=100, key="latency_input")
output_tokens = c[1].number_input("Output tokens", 1, 1_000_000, 300, step=50, key="latency_output")
queue_ms = c[2].number_input("Queue wait (ms)", 0.0, 1e6, 40.0 if mode.startswith("Given") else 0.0, step=10.0,
                             key=f"latency_queue_{mode[:5]}")

# --- given rates: the primer's worked example --------------------------------------------------------------------
if mode.startswith("Given"):
    prefill_rate = c[3].number_input("Prefill rate (tokens/s)", 1.0, 1e9, 10_000.0, step=1000.0, key="latency_rate")
    g = st.columns(4)
    tpot_ms = g[0].number_input("TPOT at batch 1 (ms)", 0.01, 1e5, 25.0, key="latency_tpot")
    batch = g[1].number_input("Shared batch", 1, 100_000, 32, key="latency_given_batch")
    batch_tpot_ms = g[2].number_input("TPOT in that batch (ms)", 0.01, 1e5, 40.0, key="latency_batch_tpot")
    prefix = g[3].number_input("Cached prefix tokens", 0, int(input_tokens), min(1500, int(input_tokens)),
                               key="latency_prefix")
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
    st.table(pd.DataFrame([
        ["prefill", f"{input_tokens:,} / {prefill_rate:,.0f}", f"{base.prefill_s * 1e3:,.0f} ms; TTFT {base.ttft_s * 1e3:,.0f} ms"],
        ["tokens per second", f"1 / {tpot_ms / 1e3:g}", f"{base.tokens_per_s:,.1f}"],
        ["end to end", f"{base.ttft_s:.3f} + {output_tokens - 1} × {tpot_ms / 1e3:g}", f"{base.e2e_s:.3f} s; decode {base.decode_share:.0%}"],
        ["halve the prompt", f"{input_tokens // 2:,} prompt tokens", f"{half.e2e_s:.3f} s ({base.e2e_s - half.e2e_s:.2f} s gain)"],
        ["cap the output", f"{cap.ttft_s:.3f} + {max(1, output_tokens // 2) - 1} × {tpot_ms / 1e3:g}", f"{cap.e2e_s:.3f} s"],
        ["cache a prefix", f"prefill {input_tokens - prefix:,} tokens", f"TTFT {base.ttft_s * 1e3:,.0f} → {cached.ttft_s * 1e3:,.0f} ms"],
        [f"batch of {batch}", f"TPOT {batch_tpot_ms:g} ms", f"{t['per_user_tokens_per_s']:.0f} tokens/s per user; "
         f"{t['e2e_s']:.1f} s end to end"],
        ["server", f"{batch} / {batch_tpot_ms / 1e3:g}", f"{t['server_tokens_per_s']:,.0f} tokens/s = "
         f"{t['throughput_gain']:.0f}× single, for {t['latency_factor']:.1f}× per-token latency"],
    ], columns=["step", "quantity", "value"]))
    st.stop()

# --- model mode: predict the rates from the hardware --------------------------------------------------------------
engine = c[3].selectbox("Engine profile", ENGINES, key="latency_engine")
try:
    limit = memory_limit(r, int(input_tokens), int(output_tokens))
    if input_tokens + output_tokens > r.max_model_len:
        raise InputError("Prompt + output tokens", f"{input_tokens + output_tokens:,} exceeds max_model_len {r.max_model_len:,}")
except InputError as err:
    st.error(error_text(err))
    st.stop()
if limit < 1:
    st.info(f"Not one request of {input_tokens + output_tokens:,} tokens fits this deployment's KV pool: "
            "shorten the request, add GPUs or quantize (see *Does it fit?*).")
    st.stop()
batch = st.slider("Batch size (requests decoding together, per replica)", 1, limit, min(32, limit), key="latency_batch")

pm = PerfModel(r, engine)
est = estimate(r, batch, int(input_tokens), int(output_tokens), engine, queue_ms / 1e3, pm=pm)
sweep_max = min(limit, 4096)
batches = np.unique(np.r_[np.round(np.geomspace(1, sweep_max, 120)).astype(int), batch])
df = pd.DataFrame(sweep(pm, batches, int(input_tokens), int(output_tokens), queue_ms / 1e3))
status = {"calibrated": "calibrated", "partial": "partly calibrated",
          "transferred": "transferred (fitted on other GPU families)", "estimated": "estimated (no calibration)"}
st.caption(f"{r.model.name} · {r.deployment.num_gpus} × {r.gpu.name} · TP {pm.tp} · weights {r.weights.label} "
           f"(compute {pm.compute_dtype}) · KV {r.kv.label} · engine {engine}: {status[pm.choice.status]} "
           f"({pm.choice.source_key}) · static batch of {batch} × ({input_tokens:,} in, {output_tokens:,} out)")

m = st.columns(3) + st.columns(3)
m[0].metric("TTFT", f"{est.ttft_s * 1e3:,.1f} ms", help="queue wait + the whole batch's prefill")
m[1].metric("TPOT", f"{est.tpot_s * 1e3:,.2f} ms", help="mean decode step over the generation")
m[2].metric("Tokens/s per user", f"{est.tokens_per_s_per_user:,.1f}")
m[3].metric("End-to-end", f"{est.e2e_s:,.2f} s")
m[4].metric("Server throughput", f"{est.throughput_tokens_per_s:,.0f} tok/s")
m[5].metric("Decode bound", est.bound, help=f"decode steps are {est.bound}-bound; prefill is {est.prefill_bound}-bound")
ridge_here, ridge_short = est.ridge_batch, ridge_batch(pm, 128)
if ridge_here:
    st.info(f"**Ridge point:** at this context a decode step turns compute-bound from batch **{ridge_here}**; "
            f"below it, adding requests costs little per step. Memory limit: **{limit}** requests.")
else:
    st.info(f"**Ridge point:** at {input_tokens + output_tokens // 2:,} tokens of context, decode stays "
            f"memory-bound at every batch: each request's KV cache grows the bytes as fast as its FLOPs"
            + (f" (with 128-token contexts it would turn compute-bound at batch {ridge_short})" if ridge_short else "")
            + f". Memory limit: **{limit}** requests.")

left, right = st.columns(2)
left.plotly_chart(per_user_chart(df, batch), width="stretch", key="latency_chart_user")
right.plotly_chart(server_chart(df, batch), width="stretch", key="latency_chart_server")
left.plotly_chart(tradeoff_chart(df), width="stretch", key="latency_chart_tradeoff")
right.plotly_chart(breakdown_chart(df), width="stretch", key="latency_chart_breakdown")
left.plotly_chart(roofline_chart(df, ridge_here), width="stretch", key="latency_chart_roofline")
ifs = what_ifs(pm, batch, int(input_tokens), int(output_tokens), queue_ms / 1e3)
right.plotly_chart(what_if_chart(ifs), width="stretch", key="latency_chart_whatif")
st.caption(f"Halving the prompt saves {ifs[1]['saved_s']:.2f} s; capping the output at half saves "
           f"{ifs[2]['saved_s']:.2f} s. A prompt costs one pass, every output token costs a step.")

b, e = est.step_time_breakdown, pm.eff
with st.expander("Formula: the decode step, with your numbers"):
    st.markdown(f"""
- Weights read per step (per GPU) = {pm.dense_weight_bytes / 1e9:,.2f} GB{" + experts touched" if pm.num_experts else ""}
  {f"(MoE: E × (1 − (1 − k/E)^b) = {pm.num_experts} × (1 − (1 − {pm.top_k}/{pm.num_experts})^{batch}) experts per layer)" if pm.num_experts else ""}
  at {r.gpu.hbm_bandwidth_gb_s:,.0f} GB/s × {e.memory_efficiency:.2f} → **{b['weights_read_s'] * 1e3:.2f} ms** when memory-bound
- KV read = batch × context × KV bytes per token per GPU = {batch} × {input_tokens + output_tokens // 2:,} ×
  {pm.kv_bytes_full + pm.kv_bytes_window:,.0f} B → **{b['kv_read_s'] * 1e3:.2f} ms**
- Compute = 2 × active parameters × batch / (peak {pm.peak_flops / 1e12:,.0f} TFLOP/s {pm.compute_dtype} × {e.matmul_efficiency:.2f})
  + attention → **{df.loc[df.batch == batch, 'compute_time_s'].iloc[0] * 1e3:.2f} ms** (memory side
  {df.loc[df.batch == batch, 'memory_time_s'].iloc[0] * 1e3:.2f} ms): the step takes the larger → **{est.bound}-bound**
- Communication (TP {pm.tp}) = {b['communication_s'] * 1e3:.2f} ms; fixed overhead = {b['overhead_s'] * 1e3:.2f} ms
- TPOT = **{est.tpot_s * 1e3:.2f} ms** (mean over contexts {input_tokens:,} … {input_tokens + output_tokens - 2:,})
""")
with st.expander("Formula: TTFT, end-to-end and throughput, with your numbers"):
    st.markdown(f"""
- Prefill of the batch = max(bytes / bandwidth, (2 × params × {batch} × {input_tokens:,} + attention) / FLOP/s)
  + overhead = **{est.prefill_s * 1e3:,.1f} ms** ({est.prefill_bound}-bound)
- TTFT = queue wait + prefill = {queue_ms:,.0f} ms + {est.prefill_s * 1e3:,.1f} ms = **{est.ttft_s * 1e3:,.1f} ms**
- End-to-end = TTFT + (N − 1) × TPOT = {est.ttft_s:.3f} + {output_tokens - 1} × {est.tpot_s:.4f} = **{est.e2e_s:.2f} s**
- Tokens/s per user = 1 / TPOT = **{est.tokens_per_s_per_user:,.1f}**
- Throughput = {r.deployment.num_replicas} replica(s) × B × N / (prefill + (N − 1) × TPOT) = {r.deployment.num_replicas} ×
  {batch} × {output_tokens} / {est.e2e_s - queue_ms / 1e3:.2f} s = **{est.throughput_tokens_per_s:,.0f} tokens/s**
""")
with st.expander("Assumptions: efficiency constants and how well they fit"):
    st.markdown(f"Profile **{pm.choice.source_key}** ({status[pm.choice.status]}). {e.note or ''} Constants live in "
                "`data/efficiency.yaml`, fitted by `scripts/fit_efficiency.py` on published measurements; "
                "`benchmarks/accuracy.py` prints predicted against measured for every point. Static batching, "
                "equal requests, no prefix caching or speculative decoding; the memory limit is vLLM's paged pool.")
    st.dataframe(pd.DataFrame([{"constant": f, "value": getattr(e, f)} for f in FIT_FIELDS]), hide_index=True)
    groups = efficiency_summary().get("by_group", {})
    if groups:
        st.dataframe(pd.DataFrame([{"points": k, **v} for k, v in groups.items()]), hide_index=True)
