"""Fleet charts: pure functions from the router comparison and per-replica frames to plotly figures."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

ROUTER_COLORS = {
    "round-robin": "#7f7f7f",
    "least-outstanding": "#1f77b4",
    "least-kv": "#9467bd",
    "prefix-aware": "#2ca02c",
}


def router_bars(table: pd.DataFrame) -> go.Figure:
    """Per router: p95 TTFT (ms), prefix hit rate and prompt tokens computed, side by side."""
    panels = (
        ("p95 TTFT (ms)", table["ttft_p95_s"].fillna(0) * 1e3, "%{y:,.1f} ms"),
        ("Prefix hit rate", table["prefix_hit_rate"], "%{y:.1%}"),
        ("Prompt tokens computed", table["prefill_tokens"], "%{y:,.0f}"),
    )
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.08, subplot_titles=[p[0] for p in panels])
    colors = [ROUTER_COLORS.get(r, "#7f7f7f") for r in table["router"]]
    for col, (title, y, fmt) in enumerate(panels, start=1):
        fig.add_trace(
            go.Bar(
                x=table["router"],
                y=y,
                marker_color=colors,
                showlegend=False,
                hovertemplate="%{x}: " + fmt + "<extra>" + title + "</extra>",
            ),
            row=1,
            col=col,
        )
    fig.update_yaxes(tickformat=".0%", row=1, col=2)
    fig.update_layout(height=320, margin=dict(t=50, b=30))
    return fig


def replica_bars(frame: pd.DataFrame, router: str) -> go.Figure:
    """Requests per replica under one router (a hot spot shows as one tall bar)."""
    fig = go.Figure(
        go.Bar(
            x=frame["replica"].astype(str),
            y=frame["requests"],
            marker_color=ROUTER_COLORS.get(router, "#7f7f7f"),
            hovertemplate="replica %{x}: %{y:,} requests<extra></extra>",
        )
    )
    fig.update_layout(height=280, margin=dict(t=30, b=30), xaxis_title="replica", yaxis_title="requests", title=router)
    return fig
