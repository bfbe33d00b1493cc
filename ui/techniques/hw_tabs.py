"""Techniques page, the tabs about formats and GPUs: quantization and tensor parallelism."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from planner.core.scenario import Resolved
from planner.techniques.quantization import ENGINE_LOADERS
from ui.charts.techniques import quant_chart, tp_chart
from ui.tables import text_column
from ui.techniques.data import Request, quant, seventy_b_case, tp


def _gb(series: pd.Series) -> pd.Series:
    return (series / 1e9).round(2)


def quant_tab(sj: str, r: Resolved, q: Request) -> None:
    df = quant(sj, q.tokens, q.batch)
    kv = df["kv_bytes_per_token"]
    same = df.loc[df["id"] != "fp32", "kv_bytes_per_token"].nunique() == 1
    m = st.columns(3)
    m[0].metric(
        "KV per token, every format",
        f"{kv.iloc[df.index[df['id'] == r.weights.id][0]]:,.0f} B",
        help="quantizing weights does not shrink the KV cache (FP32 weights would double it)",
    )
    best = df.loc[df["fits"]].sort_values("decode_tokens_per_s_batch1", ascending=False).head(1)
    if not best.empty:
        m[1].metric(
            "Fastest decode at batch 1",
            best["id"].iloc[0],
            help=f"{best['decode_tokens_per_s_batch1'].iloc[0]:,.0f} tokens/s",
        )
    m[2].metric(
        "Most requests",
        df.loc[df["max_requests"].idxmax(), "id"],
        help=f"{df['max_requests'].max():,} requests of {q.tokens:,} tokens",
    )
    table = pd.DataFrame(
        {
            "format": df["label"],
            "bits/weight": df["bits_per_weight"].round(3),
            "weights (GB)": _gb(df["weight_bytes"]),
            "KV B/token": kv.astype(int),
            "KV pool/GPU (GB)": _gb(df["kv_pool_bytes_per_gpu"]),
            "max requests": df["max_requests"],
            "tok/s batch 1": df["decode_tokens_per_s_batch1"].round(0),
            f"tok/s batch {q.batch}": df["decode_tokens_per_s_batch"].round(0),
            "engines": df["engines"].map(", ".join),
        }
    )
    st.dataframe(table, hide_index=True, key="tech_quant_table")
    st.plotly_chart(quant_chart(df), width="stretch", key="tech_chart_quant")
    st.markdown("\n".join(f"- {text}" for text in ENGINE_LOADERS.values()))
    with st.expander("Formula: weight formats, with your numbers"):
        st.markdown(f"""
- Weights = quantized parameters × bits / 8 (+ 16-bit embeddings and lm_head for GPTQ/AWQ/FP8/INT8/NF4); GGUF
  bits are llama.cpp's whole-file averages; GPTQ/AWQ g128 carry a scale and zero per 128 weights:
  4 + 20/128 = 4.156 bits
- KV per token = 2 × {r.model.num_layers} layers × {r.model.num_kv_heads} KV heads
  × {r.model.head_dim} × {r.kv_bytes:g} B:
  {"the same for every format below 32 bits" if same else "see the table"}: weights are quantized, activations and the
  cache stay 16-bit (use --kv-dtype fp8 to halve the cache)
- KV headroom = vLLM's pool per GPU after weights, activations and runtime memory; max requests = pool blocks //
  blocks of a {q.tokens:,}-token request
- Decode tokens/s = 1 / step (batch 1) and batch / step (batch {q.batch}, capped by memory) at context {q.tokens:,}
  from the roofline, with each format's dequantisation overhead (data/precisions.yaml)
""")


def tp_tab(sj: str, r: Resolved, q: Request) -> None:
    df = tp(sj, q.batch, q.context, q.tokens)
    fits = df.loc[df["fits"], "tp"]
    m = st.columns(3)
    m[0].metric("Smallest TP that fits", f"TP {fits.iloc[0]}" if len(fits) else "none up to 8")
    fastest = df.loc[df["fits"]].sort_values("tpot_batch1_s").head(1)
    if not fastest.empty:
        m[1].metric(
            "Lowest TPOT (batch 1)",
            f"{fastest['tpot_batch1_s'].iloc[0] * 1e3:,.2f} ms",
            help=f"at TP {fastest['tp'].iloc[0]}",
        )
    thr = df.loc[df["fits"]].sort_values("throughput_per_gpu_tokens_per_s", ascending=False).head(1)
    if not thr.empty:
        m[2].metric(
            "Most tokens/s per GPU",
            f"TP {thr['tp'].iloc[0]}",
            help=f"{thr['throughput_per_gpu_tokens_per_s'].iloc[0]:,.0f} tokens/s per GPU",
        )
    table = pd.DataFrame(
        {
            "TP": df["tp"],
            "weights/GPU (GB)": _gb(df["weights_per_gpu_bytes"]),
            "KV pool/GPU (GB)": _gb(df["kv_pool_per_gpu_bytes"]),
            "max requests": df["max_requests"],
            "fits": df["fits"],
            "TPOT batch 1 (ms)": (df["tpot_batch1_s"] * 1e3).round(2),
            "batch": df["batch"],
            "TPOT (ms)": (df["tpot_s"] * 1e3).round(2),
            "comm (ms)": (df["communication_s"] * 1e3).round(2),
            "tok/s": df["throughput_tokens_per_s"].round(0),
            "tok/s per GPU": df["throughput_per_gpu_tokens_per_s"].round(0),
            "note": df["note"],
        }
    )
    st.dataframe(
        table, hide_index=True, key="tech_tp_table", column_config={"note": text_column("note", table["note"])}
    )
    st.plotly_chart(tp_chart(df, r.gpu.marketed_bytes), width="stretch", key="tech_chart_tp")
    case = seventy_b_case(r.gpu.id)
    c70 = case.set_index("tp")
    st.info(
        f"**70B at FP16 on one {r.gpu.name}:** Llama-2-70B weighs {c70.loc[1, 'weights_per_gpu_bytes'] / 1e9:,.0f} GB "
        f"(≈ 140 GB) > {r.gpu.memory_gb:g} GB, so TP 1 "
        f"{'fits' if c70.loc[1, 'fits'] else 'does not fit'}; TP 2 puts "
        f"{c70.loc[2, 'weights_per_gpu_bytes'] / 1e9:,.0f} "
        f"GB on each GPU and {'fits' if c70.loc[2, 'fits'] else 'still does not fit'}"
        + (f" ({c70.loc[2, 'max_requests']:,} requests of 2,300 tokens)" if c70.loc[2, "fits"] else "")
        + "."
    )
    with st.expander("Formula: tensor parallelism, with your numbers"):
        st.markdown(f"""
- Weights per GPU = weights / TP; KV heads per GPU = max(1, {r.model.num_kv_heads} / TP) (replicated once TP exceeds
  the KV-head count); vLLM needs the {r.model.num_attention_heads} attention heads divisible by TP
- TPOT = max(bytes per GPU / bandwidth, FLOPs per GPU / peak) + communication + overhead; communication =
  2 × {r.model.num_layers} all-reduces per step × (latency × log2 TP + 2 (TP − 1)/TP × tokens × hidden × 2 B / link
  bandwidth) over {r.gpu.interconnect} at {r.gpu.interconnect_bandwidth_gb_s:,.0f} GB/s
- Throughput = batch / TPOT per replica of TP GPUs; per GPU = throughput / TP. Batch {q.batch} (capped by each
  degree's KV pool), context {q.context:,} tokens
- Assumptions: one replica of TP GPUs per row; pipeline parallelism left out
""")
