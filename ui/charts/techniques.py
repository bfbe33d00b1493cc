"""Charts for the "Techniques" page: pure functions from planner results (DataFrames, dicts) to plotly figures."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

BLUE, GREEN, ORANGE, RED, PURPLE, GREY = "#4C78A8", "#54A24B", "#F58518", "#E45756", "#B279A2", "#9D9DA0"


def _layout(fig: go.Figure, title: str, height: int = 360) -> go.Figure:
    fig.update_layout(
        title=title, height=height, margin=dict(t=50, b=30, l=10, r=10), legend=dict(orientation="h", y=-0.2)
    )
    return fig


def _hline(fig: go.Figure, y: float, label: str = "", secondary_y: bool = False) -> None:
    """A dotted horizontal line across the plot (a shape: add_hline's annotation logic is slow)."""
    yref = "y2" if secondary_y else "y"
    fig.add_shape(type="line", xref="paper", x0=0, x1=1, yref=yref, y0=y, y1=y, line=dict(color=GREY, dash="dot"))
    if label:
        fig.add_annotation(
            xref="paper",
            x=0.01,
            yref=yref,
            y=y,
            text=label,
            showarrow=False,
            yanchor="bottom",
            xanchor="left",
            font=dict(color=GREY),
        )


def _vline(fig: go.Figure, x: float, y_top: float, label: str, y_bottom: float = 0.0) -> None:
    """A dotted vertical line drawn as a trace (works on log axes without log10 coordinates)."""
    fig.add_scatter(
        x=[x, x],
        y=[y_bottom, y_top],
        mode="lines+text",
        text=["", label],
        textposition="top right",
        line=dict(color=GREY, dash="dot"),
        showlegend=False,
        hoverinfo="skip",
    )


def speedup_chart(df: pd.DataFrame, batch: int) -> go.Figure:
    """Speed-up against batch size (one line per k), with the break-even line at 1×."""
    fig = go.Figure()
    for k, part in df.groupby("k"):
        fig.add_scatter(x=part["batch"], y=part["speedup"], name=f"k = {k}", mode="lines")
    _hline(fig, 1.0, "no gain")
    _vline(fig, batch, float(df["speedup"].max()), f"batch {batch}")
    fig.update_xaxes(type="log", dtick=1, tickformat=",d", title="batch size (sequences decoding together)")
    fig.update_yaxes(title="speed-up (× tokens/s per user)", rangemode="tozero")
    return _layout(fig, speedup_title(df))


def speedup_title(df: pd.DataFrame) -> str:
    """A title that says what the curves do: the best k's speed-up at the smallest against the largest batch."""
    ends = df.sort_values("batch").groupby("k")["speedup"].agg(["first", "last"])
    first, last = float(ends["first"].max()), float(ends["last"].max())
    if last < first * 0.95:
        return f"Speed-up fades as the batch grows ({first:.2f}× → {last:.2f}×)"
    if last > first * 1.05:
        return f"Speed-up grows with the batch here ({first:.2f}× → {last:.2f}×): decode stays memory-bound"
    return f"Speed-up holds across batch sizes (about {last:.2f}×)"


def best_k_chart(df: pd.DataFrame, best: int) -> go.Figure:
    """Speed-up for each k at the chosen batch (columns k, speedup), the best one highlighted."""
    colors = [GREEN if k == best else BLUE for k in df["k"]]
    fig = go.Figure(
        go.Bar(
            x=df["k"],
            y=df["speedup"],
            marker_color=colors,
            text=[f"{s:.2f}×" for s in df["speedup"]],
            textposition="outside",
        )
    )
    _hline(fig, 1.0)
    fig.update_xaxes(title="k (draft tokens per target pass)", dtick=1)
    fig.update_yaxes(title="speed-up", range=[0, max(1.0, float(df["speedup"].max())) * 1.2])
    return _layout(fig, f"Best k at this batch: {best}")


def ttft_chart(df: pd.DataFrame) -> go.Figure:
    """TTFT before and after prefix caching, for each way of estimating it (columns mode, case, ttft_ms)."""
    fig = go.Figure()
    for case, color in (("no cache", RED), ("prefix cached", GREEN)):
        part = df[df["case"] == case]
        fig.add_bar(
            x=part["mode"],
            y=part["ttft_ms"],
            name=case,
            marker_color=color,
            text=[f"{v:,.1f} ms" for v in part["ttft_ms"]],
            textposition="outside",
        )
    fig.update_yaxes(title="TTFT (ms)", rangemode="tozero")
    return _layout(fig, "TTFT with and without the cached prefix")


def paged_chart(contiguous: int, paged: int, contiguous_waste: float, paged_waste: float) -> go.Figure:
    """Max concurrent requests and wasted share of KV memory: contiguous reservation vs paged blocks."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("max concurrent requests", "KV memory wasted (%)"))
    names, colors = ["contiguous", "paged"], [RED, GREEN]
    fig.add_bar(
        x=names,
        y=[contiguous, paged],
        marker_color=colors,
        text=[f"{contiguous:,}", f"{paged:,}"],
        textposition="outside",
        showlegend=False,
        row=1,
        col=1,
    )
    fig.add_bar(
        x=names,
        y=[contiguous_waste * 100, paged_waste * 100],
        marker_color=colors,
        text=[f"{contiguous_waste:.1%}", f"{paged_waste:.2%}"],
        textposition="outside",
        showlegend=False,
        row=1,
        col=2,
    )
    return _layout(fig, "Paged blocks vs contiguous reservation")


def flash_chart(df: pd.DataFrame, tokens: int) -> go.Figure:
    """Score-matrix bytes per layer (standard, materialised) vs FlashAttention's HBM statistics, by length."""
    fig = go.Figure()
    fig.add_scatter(x=df["tokens"], y=df["standard_bytes"] / 1e9, name="standard: B × H × L² × bytes", line_color=RED)
    fig.add_scatter(x=df["tokens"], y=df["flash_bytes"] / 1e9, name="FlashAttention: B × H × L × 4 B", line_color=GREEN)
    _vline(
        fig,
        tokens,
        float(df["standard_bytes"].max() / 1e9),
        f"{tokens:,} tokens",
        y_bottom=float(df["flash_bytes"].min() / 1e9),
    )
    fig.update_xaxes(type="log", dtick=1, tickformat=",d", title="sequence length L (tokens)")
    fig.update_yaxes(type="log", dtick=1, tickformat=",~g", title="GB per layer in HBM")
    return _layout(fig, "Score memory: L² materialised, L tiled")


def quant_chart(df: pd.DataFrame) -> go.Figure:
    """Per format: weights and KV pool per GPU (stacked, GB) and decode tokens/s at batch 1 (markers)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_bar(x=df["label"], y=df["weight_bytes_per_gpu"] / 1e9, name="weights per GPU (GB)", marker_color=BLUE)
    fig.add_bar(x=df["label"], y=df["kv_pool_bytes_per_gpu"] / 1e9, name="KV pool per GPU (GB)", marker_color=GREEN)
    fig.add_scatter(
        x=df["label"],
        y=df["decode_tokens_per_s_batch1"],
        name="decode tokens/s at batch 1",
        mode="markers",
        marker=dict(color=ORANGE, size=10),
        secondary_y=True,
    )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title="GB per GPU", secondary_y=False)
    fig.update_yaxes(title="tokens/s per user", rangemode="tozero", secondary_y=True)
    return _layout(fig, "Fewer bits: smaller weights, more KV room, faster decode", 420)


def tp_chart(df: pd.DataFrame, gpu_bytes: float) -> go.Figure:
    """Weights per GPU (bars, with the GPU's memory) and TPOT (line) at each TP degree."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    labels = [f"TP {t}" for t in df["tp"]]
    fig.add_bar(
        x=labels,
        y=df["weights_per_gpu_bytes"] / 1e9,
        name="weights per GPU (GB)",
        marker_color=[BLUE if f else RED for f in df["fits"]],
    )
    _hline(fig, gpu_bytes / 1e9, "GPU memory")
    fig.add_scatter(
        x=labels,
        y=df["tpot_s"] * 1e3,
        name="TPOT at the batch (ms)",
        mode="lines+markers",
        line_color=ORANGE,
        secondary_y=True,
    )
    fig.add_scatter(
        x=labels,
        y=df["communication_s"] * 1e3,
        name="of which communication (ms)",
        mode="lines+markers",
        line_color=PURPLE,
        secondary_y=True,
    )
    fig.update_yaxes(title="GB per GPU", secondary_y=False)
    fig.update_yaxes(title="ms", rangemode="tozero", secondary_y=True)
    return _layout(fig, "Memory per GPU and TPOT by TP (red: no fit)")


def lora_chart(df: pd.DataFrame, max_loras: int) -> go.Figure:
    """Max concurrent requests as GPU adapter slots grow."""
    fig = go.Figure(
        go.Scatter(x=df["max_loras"], y=df["max_requests"], mode="lines", line_color=BLUE, name="max requests")
    )
    _vline(fig, max_loras, float(df["max_requests"].max()), f"--max-loras {max_loras}")
    fig.update_xaxes(title="adapter slots in GPU memory (--max-loras)")
    fig.update_yaxes(title="max concurrent requests", rangemode="tozero")
    return _layout(fig, "Each adapter slot comes out of the KV pool")
