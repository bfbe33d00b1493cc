"""Load-test charts: pure functions from sweep rows / step frames / summaries to plotly figures (no streamlit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner.sim.records import ServingSummary
from ui.charts.capacity import once_per_reason

RUN_COLORS = {"open loop": "#d62728", "closed loop": "#1f77b4", "run": "#1f77b4"}
P95_COLOR, P50_COLOR, KNEE_COLOR = "#d62728", "#1f77b4", "#2ca02c"
_TOP_LEGEND = dict(orientation="h", yanchor="bottom", y=1.1, x=0)


def _mark_knee(fig: go.Figure, knee: dict | None, cols: int) -> None:
    """A dashed vertical line at the knee in every panel, labelled inside the first (left of the line, top)."""
    if knee is None:
        return
    for col in range(1, cols + 1):
        label = (
            dict(
                annotation_text=f"knee {knee['rate_per_s']:,.3g} req/s",
                annotation_position="top left",
                annotation_font_color=KNEE_COLOR,
            )
            if col == 1
            else {}
        )
        fig.add_vline(x=knee["rate_per_s"], line=dict(color=KNEE_COLOR, dash="dash", width=2), row=1, col=col, **label)


def sweep_latency(rows: list[dict], knee: dict | None = None) -> go.Figure:
    """p95 (and p50) TTFT and TPOT against the offered rate, the knee marked; milliseconds."""
    df = pd.DataFrame(rows)
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.1,
        subplot_titles=("Time to first token (ms)", "Time per output token (ms)"),
    )
    for col, metric in enumerate(("ttft", "tpot"), start=1):
        for stat, color, dash in (("p95", P95_COLOR, "solid"), ("p50", P50_COLOR, "dot")):
            fig.add_trace(
                go.Scatter(
                    x=df["rate_per_s"],
                    y=df[f"{metric}_{stat}_s"] * 1e3,
                    mode="lines+markers",
                    name=stat,
                    line=dict(color=color, dash=dash),
                    legendgroup=stat,
                    showlegend=col == 1,
                    hovertemplate=f"%{{x:,.3g}} req/s<br>{metric.upper()} {stat} %{{y:,.1f}} ms<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="offered load (requests/s)", row=1, col=col)
    if "sustains" in df and (~df["sustains"].astype(bool)).any():  # why each failing point fails (the verdict)
        bad = df[~df["sustains"].astype(bool)]
        fig.add_trace(
            go.Scatter(
                x=bad["rate_per_s"],
                y=bad["ttft_p95_s"] * 1e3,
                mode="markers+text",
                name="fails the verdict",
                marker=dict(color=P95_COLOR, symbol="x", size=11),
                text=once_per_reason(bad["reason"]),
                textposition="top left",  # into the plot: the last rate sits at the right edge
                textfont=dict(size=10, color=P95_COLOR),
                customdata=bad["reason"],
                hovertemplate="%{x:,.3g} req/s<br>%{customdata}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    _mark_knee(fig, knee, 2)
    fig.update_layout(height=380, margin=dict(t=70, b=40), legend=_TOP_LEGEND)
    return fig


def sweep_throughput(rows: list[dict], knee: dict | None = None) -> go.Figure:
    """Served against offered requests/s (the diagonal = keeping up) and output tokens/s."""
    df = pd.DataFrame(rows)
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.1,
        subplot_titles=("Served vs offered (requests/s)", "Throughput (output tokens/s)"),
    )
    offered = df["offered_requests_per_s"].fillna(df["rate_per_s"])
    top = float(max(offered.max(), df["rate_per_s"].max()))
    fig.add_trace(
        go.Scatter(x=[0, top], y=[0, top], mode="lines", name="served = offered", line=dict(color="#999", dash="dot")),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=df["rate_per_s"],
            y=df["served_requests_per_s"],
            mode="lines+markers",
            name="served",
            line=dict(color=P50_COLOR),
            hovertemplate="%{x:,.3g} req/s offered<br>%{y:,.3g} req/s served<extra></extra>",
        ),
        row=1,
        col=1,
    )
    if any(k in df and df[k].notna().any() for k in ("slo_ttft_s", "slo_tpot_s")):
        fig.add_trace(
            go.Scatter(
                x=df["rate_per_s"],
                # the steady window's goodput, the window `served` is counted over (load_sweep.steady_goodput_rps);
                # the run's goodput_requests_per_s spans the whole makespan and plotted above served (issue 56 #4)
                y=df["goodput_served_requests_per_s"]
                if "goodput_served_requests_per_s" in df
                else df["goodput_requests_per_s"],
                mode="lines+markers",
                name="goodput (met the SLO)",
                line=dict(color=KNEE_COLOR),
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        go.Scatter(
            x=df["rate_per_s"],
            y=df["throughput_tokens_per_s"],
            mode="lines+markers",
            name="output tokens/s",
            line=dict(color=P95_COLOR),
            showlegend=False,
            hovertemplate="%{x:,.3g} req/s<br>%{y:,.0f} tokens/s<extra></extra>",
        ),
        row=1,
        col=2,
    )
    for col in (1, 2):
        fig.update_xaxes(title_text="offered load (requests/s)", row=1, col=col)
    _mark_knee(fig, knee, 2)
    fig.update_layout(height=340, margin=dict(t=70, b=40), legend=_TOP_LEGEND)
    return fig


MAX_POINTS = 1500  # per line: a chart ~1,000 px wide shows no more (min and max of each pixel-wide bucket)


def min_max_downsample(x: np.ndarray, y: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most `max_points` points of a long series that keep its shape: the series cut into (max_points − 2) / 2
    buckets of equal count, each kept as its minimum and maximum in time order (a queue's peaks and a KV pool's
    dips survive, unlike every-k-th sampling); first and last points kept on top (so the buckets leave room for
    them: max_points / 2 buckets gave up to max_points + 2). Short series come back as they are."""
    x, y = np.asarray(x), np.asarray(y)
    n = len(x)
    if n <= max_points:
        return x, y
    edges = np.linspace(0, n, max(max_points - 2, 0) // 2 + 1).astype(int)
    keep = {0, n - 1}
    for a, b in zip(edges[:-1], edges[1:]):
        if b > a:
            seg = y[a:b]
            keep.update((a + int(np.argmin(seg)), a + int(np.argmax(seg))))
    idx = np.array(sorted(keep))
    return x[idx], y[idx]


def time_series(frames: dict[str, pd.DataFrame]) -> go.Figure:
    """KV use, running batch and queue length over simulated time, one line per run (step_frame rows), each
    downsampled to MAX_POINTS (min_max_downsample): a run has one row per engine step, tens of thousands, which
    the browser would otherwise receive and draw (58k WebGL points on the Traffic page before)."""
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=("KV cache in use (% of pool)", "Running batch (requests)", "Queue (requests waiting)"),
    )
    for name, df in frames.items():
        color = RUN_COLORS.get(name, "#7f7f7f")
        for row, (col, scale) in enumerate((("kv_use", 100.0), ("num_running", 1.0), ("num_waiting", 1.0)), start=1):
            x, y = min_max_downsample(df["time_s"].to_numpy(), df[col].to_numpy() * scale)
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    mode="lines",
                    name=name,
                    line=dict(color=color, width=1),
                    legendgroup=name,
                    showlegend=row == 1,
                ),
                row=row,
                col=1,
            )
    fig.update_xaxes(title_text="simulated time (s)", row=3, col=1)
    fig.update_layout(height=560, margin=dict(t=60, b=40), legend=_TOP_LEGEND, showlegend=len(frames) > 1)
    return fig


def compare_percentiles(summaries: dict[str, ServingSummary]) -> go.Figure:
    """Grouped bars: queue wait and TTFT at p50/p95/p99 for each run (ms)."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=("Queue wait (ms)", "TTFT (ms)"))
    for name, s in summaries.items():
        for col, key in enumerate(("queue_s", "ttft_s"), start=1):
            stats = ("p50", "p95", "p99")
            fig.add_trace(
                go.Bar(
                    x=list(stats),
                    y=[(getattr(getattr(s, key), k) or 0.0) * 1e3 for k in stats],
                    name=name,
                    marker_color=RUN_COLORS.get(name, "#7f7f7f"),
                    legendgroup=name,
                    showlegend=col == 1,
                    hovertemplate="%{x}: %{y:,.1f} ms<extra>" + name + "</extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_layout(barmode="group", height=320, margin=dict(t=60, b=30), legend=_TOP_LEGEND)
    return fig
