"""Batching charts: pure functions from planner results / DataFrames to plotly figures (no streamlit here)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner.batching.report import latencies, requests_frame, steps_frame, waits
from planner.batching.step_model import BatchingRun

POLICY_COLORS = {
    "static": "#d62728",
    "continuous": "#1f77b4",
    "dynamic": "#2ca02c",
    "bucketed": "#2ca02c",
    "one queue": "#9467bd",
}
HELD_COLOR = "rgba(160,160,160,0.35)"  # static: slot held after the request's last token (waste)
MAX_BARS = 1500  # Gantt bars per policy; larger runs show the first requests admitted
MAX_CURVE_POINTS = 2000  # points per distribution curve
_TOP_LEGEND = dict(orientation="h", yanchor="bottom", y=1.12, x=0)  # above the plot and any subplot titles


def _color(name: str) -> str:
    return POLICY_COLORS.get(name, "#7f7f7f")


def _shade(hex_color: str, k: int) -> str:
    """Alternate two shades of a policy colour so neighbouring requests in one slot stay distinguishable."""
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    f = 1.0 if k % 2 == 0 else 0.65
    return f"rgb({int(r * f)},{int(g * f)},{int(b * f)})"


def gantt(results: dict[str, BatchingRun], max_bars: int = MAX_BARS) -> go.Figure:
    """Slots × steps, one panel per policy side by side; a bar is a request, grey is a slot held idle."""
    names = list(results)
    fig = make_subplots(
        rows=1,
        cols=len(names),
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=[_gantt_title(n, r, max_bars) for n, r in results.items()],
    )
    for col, (name, result) in enumerate(results.items(), start=1):
        df = requests_frame(result)
        df = df[~df["rejected"]].sort_values(["admitted", "slot"]).head(max_bars)
        nth_in_slot = df.groupby("slot").cumcount().to_numpy()
        hover = (
            "<b>%{customdata[0]}</b><br>slot %{y}<br>arrival %{customdata[1]}, admitted %{customdata[2]}"
            "<br>%{customdata[3]} tokens, done %{customdata[4]}, returned %{customdata[5]}<extra>" + name + "</extra>"
        )
        custom = df[["name", "arrival", "admitted", "output_tokens", "tokens_done", "finish"]].to_numpy()
        fig.add_trace(
            go.Bar(
                orientation="h",
                y=df["slot"],
                base=df["admitted"],
                x=df["output_tokens"],
                customdata=custom,
                hovertemplate=hover,
                name=f"{name}: generating",
                width=0.8,
                marker=dict(color=[_shade(_color(name), k) for k in nth_in_slot], line=dict(width=0)),
            ),
            row=1,
            col=col,
        )
        held = df[df["finish"] > df["tokens_done"]]
        if len(held):
            fig.add_trace(
                go.Bar(
                    orientation="h",
                    y=held["slot"],
                    base=held["tokens_done"],
                    x=held["finish"] - held["tokens_done"],
                    customdata=held[
                        ["name", "arrival", "admitted", "output_tokens", "tokens_done", "finish"]
                    ].to_numpy(),
                    hovertemplate=hover,
                    name=f"{name}: slot held, idle",
                    width=0.8,
                    marker=dict(color=HELD_COLOR, line=dict(width=0)),
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="decode step", row=1, col=col)
    slots = max(r.slots for r in results.values())
    fig.update_yaxes(range=[slots - 0.5, -0.5], dtick=1 if slots <= 16 else None)
    fig.update_yaxes(title_text="slot", row=1, col=1)
    fig.update_layout(
        barmode="overlay", height=max(260, 60 + 28 * slots), showlegend=False, margin=dict(l=40, r=10, t=40, b=40)
    )
    return fig


def _gantt_title(name: str, result: BatchingRun, max_bars: int) -> str:
    served = int((~result.rejected).sum())
    shown = f" (first {max_bars:,} of {served:,})" if served > max_bars else ""
    return f"{name}: done at step {result.end_step:,}{shown}"


def running_over_time(results: dict[str, BatchingRun]) -> go.Figure:
    """Requests generating at each step (the per-step records), one line per policy; the gap to slots is idle."""
    fig = go.Figure()
    for name, result in results.items():
        seg = steps_frame(result)
        x = np.append(seg["start"].to_numpy(), seg["end"].to_numpy()[-1:]) if len(seg) else []
        y = np.append(seg["running"].to_numpy(), seg["running"].to_numpy()[-1:]) if len(seg) else []
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line_shape="hv", name=name, line=dict(color=_color(name))))
    slots = max(r.slots for r in results.values())
    fig.add_hline(y=slots, line_dash="dot", annotation_text=f"{slots} slots", annotation_position="top left")
    fig.update_layout(
        xaxis_title="decode step",
        yaxis_title="requests generating",
        height=300,
        margin=dict(l=40, r=10, t=50, b=40),
        legend=_TOP_LEGEND,
        yaxis=dict(dtick=1 if slots <= 16 else None, rangemode="tozero"),
    )
    return fig


def _ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.sort(np.asarray(values, dtype=float))
    frac = np.arange(1, values.size + 1) / max(values.size, 1)
    if values.size > MAX_CURVE_POINTS:
        idx = np.linspace(0, values.size - 1, MAX_CURVE_POINTS).astype(int)
        values, frac = values[idx], frac[idx]
    return values, frac


def wait_latency_cdf(results: dict[str, BatchingRun]) -> go.Figure:
    """Share of requests served within x steps: wait (left) and latency (right), one curve per policy."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["wait = admitted − arrival", "latency = finished − arrival"])
    for name, result in results.items():
        for col, values in ((1, waits(result)), (2, latencies(result))):
            x, y = _ecdf(values)
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    mode="lines",
                    line_shape="hv",
                    name=name,
                    showlegend=col == 1,
                    line=dict(color=_color(name)),
                ),
                row=1,
                col=col,
            )
            fig.update_xaxes(title_text="steps", row=1, col=col)
    fig.update_yaxes(title_text="share of requests", tickformat=".0%", row=1, col=1)
    fig.update_yaxes(tickformat=".0%", row=1, col=2)  # both panels in percent (the right one showed 0.2, 0.4…)
    fig.update_layout(height=340, margin=dict(l=40, r=10, t=80, b=40), legend=_TOP_LEGEND)
    return fig


def spread_gap(sweep: pd.DataFrame) -> go.Figure:
    """Average latency and GPU busy against the spread of output lengths, static vs continuous."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["average latency (steps)", "GPU busy"])
    for name, df in sweep.groupby("policy", sort=False):
        for col, column in ((1, "avg_latency"), (2, "gpu_busy")):
            fig.add_trace(
                go.Scatter(
                    x=df["spread"],
                    y=df[column],
                    mode="lines+markers",
                    name=name,
                    showlegend=col == 1,
                    line=dict(color=_color(name)),
                ),
                row=1,
                col=col,
            )
            fig.update_xaxes(title_text="spread of output lengths (0 = all equal, 1 = as drawn)", row=1, col=col)
    fig.update_yaxes(tickformat=".0%", row=1, col=2)
    fig.update_layout(height=340, margin=dict(l=40, r=10, t=80, b=40), legend=_TOP_LEGEND)
    return fig


def padding_bars(results: dict[str, BatchingRun]) -> go.Figure:
    """Prompt tokens in admitted groups: real tokens vs padding filler, per queueing variant."""
    names = list(results)
    padding = [r.padding_tokens for r in results.values()]
    real = [r.padded_prompt_tokens - r.padding_tokens for r in results.values()]
    fig = go.Figure(
        [
            go.Bar(x=names, y=real, name="prompt tokens", marker_color="#1f77b4"),
            go.Bar(x=names, y=padding, name="padding", marker_color="#ff7f0e"),
        ]
    )
    fig.update_layout(
        barmode="stack",
        yaxis_title="tokens prefilled",
        height=300,
        margin=dict(l=40, r=10, t=50, b=40),
        legend=_TOP_LEGEND,
    )
    return fig
