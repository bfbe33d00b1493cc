"""Charts for the "Latency & throughput" page: pure functions from planner.latency.metrics results to plotly figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

PART_LABELS = {
    "weights_read_s": "weights read",
    "kv_read_s": "KV read",
    "activations_s": "activations",
    "compute_s": "compute",
    "communication_s": "communication",
    "overhead_s": "overhead",
}
PART_COLORS = {
    "weights_read_s": "#4C78A8",
    "kv_read_s": "#54A24B",
    "activations_s": "#F58518",
    "compute_s": "#E45756",
    "communication_s": "#B279A2",
    "overhead_s": "#9D9DA0",
}


LOG_AXIS = dict(type="log", dtick=1, tickformat=",d", minor=dict(ticks="outside", showgrid=False))  # 1, 10, 100 …
LEGEND_BELOW = dict(orientation="h", y=-0.22, x=0)  # below the plot: never over the right-hand axis labels


def _marks(batches: np.ndarray) -> np.ndarray:
    """Batch sizes to label: powers of two within the sweep, plus its last one."""
    powers = [b for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096) if b <= batches.max()]
    return np.unique(np.array(powers + [int(batches.max())]))


def _marker_line(fig: go.Figure, x: float, y_top: float, label: str, secondary_y: bool | None = None) -> None:
    """A dashed vertical line at x drawn as a trace (shapes on log axes would need log10 coordinates)."""
    kwargs = {} if secondary_y is None else {"secondary_y": secondary_y}
    fig.add_scatter(
        x=[x, x],
        y=[0, y_top],
        mode="lines+text",
        text=["", label],
        textposition="top right",
        line=dict(color="gray", dash="dot"),
        showlegend=False,
        hoverinfo="skip",
        **kwargs,
    )


def per_user_chart(df: pd.DataFrame, batch: int) -> go.Figure:
    """TPOT (ms) and per-user tokens/s against batch size."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_scatter(x=df["batch"], y=df["tpot_s"] * 1e3, name="TPOT (ms)", line_color="#E45756")
    fig.add_scatter(
        x=df["batch"], y=df["tokens_per_s_per_user"], name="tokens/s per user", line_color="#4C78A8", secondary_y=True
    )
    _marker_line(fig, batch, float(df["tpot_s"].max() * 1e3), f"batch {batch}", secondary_y=False)
    fig.update_xaxes(LOG_AXIS, title="batch size (requests decoding together)")
    fig.update_yaxes(title="TPOT (ms)", rangemode="tozero", secondary_y=False)
    # tickmode "auto": Streamlit's theme syncs a right axis to the left one's gridlines (ticks at 25.3, 50.6, …)
    fig.update_yaxes(title="tokens/s per user", rangemode="tozero", tickmode="auto", showgrid=False, secondary_y=True)
    fig.update_layout(
        title="Each user's speed as the batch grows", height=400, margin=dict(t=50, b=30), legend=LEGEND_BELOW
    )
    return fig


def server_chart(df: pd.DataFrame, batch: int) -> go.Figure:
    """Server output throughput and TTFT (the whole batch's prefill) against batch size."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_scatter(
        x=df["batch"], y=df["throughput_tokens_per_s"], name="server throughput (tokens/s)", line_color="#54A24B"
    )
    fig.add_scatter(x=df["batch"], y=df["ttft_s"] * 1e3, name="TTFT (ms)", line_color="#F58518", secondary_y=True)
    _marker_line(fig, batch, float(df["throughput_tokens_per_s"].max()), f"batch {batch}", secondary_y=False)
    fig.update_xaxes(LOG_AXIS, title="batch size")
    fig.update_yaxes(title="output tokens/s", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title="TTFT (ms)", rangemode="tozero", tickmode="auto", showgrid=False, secondary_y=True)
    fig.update_layout(
        title="Server throughput and time to first token", height=400, margin=dict(t=50, b=30), legend=LEGEND_BELOW
    )
    return fig


def tradeoff_chart(df: pd.DataFrame) -> go.Figure:
    """Per-user tokens/s (x) against server throughput (y), batch sizes marked along the curve."""
    fig = go.Figure()
    fig.add_scatter(
        x=df["tokens_per_s_per_user"],
        y=df["throughput_tokens_per_s"],
        mode="lines",
        name="curve",
        line_color="#4C78A8",
        customdata=df["batch"],
        hovertemplate="batch %{customdata}: %{x:.1f} tokens/s per user, %{y:,.0f} tokens/s<extra></extra>",
    )
    marked = df[df["batch"].isin(_marks(df["batch"].to_numpy()))]
    fig.add_scatter(
        x=marked["tokens_per_s_per_user"],
        y=marked["throughput_tokens_per_s"],
        mode="markers+text",
        text=[f"B={b}" for b in marked["batch"]],
        textposition="top right",
        name="batch size",
        marker=dict(size=8, color="#E45756"),
    )
    fig.update_layout(
        title="Trade-off: per-user speed vs server throughput",
        height=400,
        xaxis_title="tokens/s per user (1 / TPOT)",
        yaxis_title="server output tokens/s",
        showlegend=False,
        margin=dict(t=50, b=30),
    )
    return fig


def breakdown_chart(df: pd.DataFrame) -> go.Figure:
    """Stacked decode-step time (ms) at the marked batch sizes: the winning side of the roofline plus fixed costs."""
    rows = df[df["batch"].isin(_marks(df["batch"].to_numpy()))]
    fig = go.Figure()
    x = [f"B={b}" for b in rows["batch"]]
    for key, label in PART_LABELS.items():
        fig.add_bar(
            name=label,
            x=x,
            y=rows[key] * 1e3,
            marker_color=PART_COLORS[key],
            hovertemplate=f"{label}: %{{y:.2f}} ms<extra></extra>",
        )
    fig.update_layout(
        barmode="stack",
        title="Decode step time, broken down",
        yaxis_title="ms per step",
        height=400,
        legend_title="",
        margin=dict(t=50, b=30),
    )
    return fig


def roofline_chart(df: pd.DataFrame, ridge: int | None) -> go.Figure:
    """Memory time and compute time of a decode step against batch: the step takes the larger."""
    fig = go.Figure()
    fig.add_scatter(x=df["batch"], y=df["memory_time_s"] * 1e3, name="memory: bytes / bandwidth", line_color="#4C78A8")
    fig.add_scatter(x=df["batch"], y=df["compute_time_s"] * 1e3, name="compute: FLOPs / FLOP/s", line_color="#E45756")
    if ridge and ridge <= df["batch"].max():
        top = float(max(df["memory_time_s"].max(), df["compute_time_s"].max()) * 1e3)
        fig.add_scatter(
            x=[ridge, ridge],
            y=[top / 1e3, top],
            mode="lines+text",
            text=["", f"ridge: batch {ridge}"],
            textposition="bottom right",
            line=dict(color="black", dash="dash"),
            showlegend=False,
        )
    fig.update_xaxes(LOG_AXIS, title="batch size")
    fig.update_yaxes(LOG_AXIS, title="ms per decode step", tickformat=",~g")
    fig.update_layout(title="Memory-bound or compute-bound?", height=400, margin=dict(t=50, b=30), legend=LEGEND_BELOW)
    return fig


def what_if_chart(rows: list[dict]) -> go.Figure:
    """End-to-end latency for the request as given, with the prompt halved, and with the output capped; the title
    names the lever that saves more on these numbers."""
    df = pd.DataFrame(rows)
    prompt_gain, output_gain = df["e2e_s"].iloc[0] - df["e2e_s"].iloc[1], df["e2e_s"].iloc[0] - df["e2e_s"].iloc[2]
    lever = (
        "output length is the bigger lever"
        if output_gain > prompt_gain
        else "prompt length is the bigger lever"
        if prompt_gain > output_gain
        else "prompt and output length save the same"
    )
    fig = go.Figure(
        go.Bar(
            x=df["case"],
            y=df["e2e_s"],
            marker_color=["#9D9DA0", "#4C78A8", "#54A24B"],
            text=[f"{v:.2f} s" for v in df["e2e_s"]],
            textposition="outside",
        )
    )
    fig.update_layout(
        title=f"What if: {lever}",
        yaxis_title="end-to-end latency (s)",
        height=340,
        margin=dict(t=50, b=30),
    )
    return fig
