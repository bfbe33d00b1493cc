"""Disaggregation & parallelism charts: pure functions from planner rows to plotly figures."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.charts.axes import log_axis

_TOP_LEGEND = dict(orientation="h", yanchor="bottom", y=1.08, x=0)
STEP_PARTS = {
    "all_to_all_ms": "expert all-to-all",
    "imbalance_ms": "expert imbalance",
    "pipeline_ms": "pipeline",
    "cross_node_tp_ms": "TP across nodes",
}


def layout_bars(rows: list[dict]) -> go.Figure:
    """Requests held and decode tokens/s per layout, in two panels (their scales differ by orders of magnitude)."""
    df = pd.DataFrame([r for r in rows if r.get("fits") and "max_concurrency" in r])
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("requests of max_model_len held", "decode tokens/s at the batch")
    )
    if df.empty:
        return fig
    fig.add_trace(
        go.Bar(
            x=df["layout"],
            y=df["max_concurrency"],
            name="requests held",
            showlegend=False,
            hovertemplate="%{x}<br>%{y:,} requests<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=df["layout"],
            y=df["tokens_per_s"],
            name="tokens/s",
            showlegend=False,
            marker_color="#ff7f0e",
            hovertemplate="%{x}<br>%{y:,.0f} tokens/s<extra></extra>",
        ),
        row=1,
        col=2,
    )
    fig.update_layout(height=320, margin=dict(t=50, b=40))
    return fig


def step_parts(rows: list[dict]) -> go.Figure:
    """The parallelism terms of one decode step per layout (ms), stacked over the rest of the step."""
    df = pd.DataFrame([r for r in rows if r.get("fits") and "step_ms" in r])
    fig = go.Figure()
    if df.empty:
        return fig
    extra = sum(df[k] for k in STEP_PARTS)
    fig.add_trace(go.Bar(x=df["layout"], y=df["step_ms"] - extra, name="compute, memory, TP all-reduce, overhead"))
    for key, name in STEP_PARTS.items():
        if df[key].max() > 0:
            fig.add_trace(go.Bar(x=df["layout"], y=df[key], name=name))
    fig.update_layout(
        barmode="stack", height=320, margin=dict(t=50, b=40), legend=_TOP_LEGEND, yaxis_title="decode step (ms)"
    )
    return fig


def ratio_lines(rows: list[dict]) -> go.Figure:
    """Prefill instances per decode instance against the prompt length, one line per output length."""
    df = pd.DataFrame(rows)
    fig = go.Figure()
    for out, part in df.groupby("output_tokens"):
        fig.add_trace(
            go.Scatter(
                x=part["prompt_tokens"],
                y=part["prefill_per_decode"],
                mode="lines+markers",
                name=f"{out:,} output tokens",
                hovertemplate="prompt %{x:,}<br>%{y:,.2f} prefill per decode<extra></extra>",
            )
        )
    fig.add_hline(y=1, line=dict(color="#999", dash="dot"))
    fig.update_layout(
        height=340,
        margin=dict(t=50, b=40),
        legend=_TOP_LEGEND,
        xaxis=log_axis(df["prompt_tokens"]),  # decades, or 1-2-5 steps on a span under 1,000×
        yaxis=log_axis(df["prefill_per_decode"]),
        xaxis_title="prompt tokens",
        yaxis_title="prefill : decode instances",
    )
    return fig


def cost_bars(disagg_usd: float | None, agg_usd: float | None) -> go.Figure:
    """$/hour of the two deployments."""
    names, values = [], []
    for name, v in (("disaggregated", disagg_usd), ("aggregated (chunked prefill)", agg_usd)):
        if v is not None:
            names.append(name)
            values.append(v)
    fig = go.Figure(go.Bar(x=names, y=values, text=[f"${v:,.0f}/h" for v in values], textposition="auto"))
    fig.update_layout(height=280, margin=dict(t=30, b=40), yaxis_title="$ per hour for the target")
    return fig
