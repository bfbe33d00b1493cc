"""Charts for the "Does it fit?" page: pure functions from planner results to plotly figures."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

COLORS = {
    "weights": "#4C78A8",
    "activations": "#F58518",
    "runtime overhead": "#B279A2",
    "KV pool": "#54A24B",
    "KV for requests": "#54A24B",
    "unused": "#D3D3D3",
    "free": "#D3D3D3",
}


def memory_stack(bars: dict[str, dict[str, float]], title: str) -> go.Figure:
    """Stacked bars: one per GPU (or per view), segments in decimal GB with the GiB figure on hover."""
    fig = go.Figure()
    parts = list(dict.fromkeys(p for bar in bars.values() for p in bar))
    for part in parts:
        values = [max(bar.get(part, 0.0), 0.0) / 1e9 for bar in bars.values()]
        fig.add_bar(
            name=part,
            x=list(bars),
            y=values,
            marker_color=COLORS.get(part),
            customdata=[v * 1e9 / 2**30 for v in values],
            hovertemplate=f"{part}: %{{y:.2f}} GB (%{{customdata:.2f}} GiB)<extra></extra>",
        )
    fig.update_layout(
        barmode="stack",
        title=title,
        yaxis_title="memory (GB = 1e9 bytes)",
        legend_title="",
        height=420,
        margin=dict(t=50, b=30),
    )
    return fig


def concurrency_vs_context(rows: list[dict]) -> go.Figure:
    """Max concurrent requests against tokens per request, for the three ways of counting."""
    df = pd.DataFrame(rows)
    fig = go.Figure()
    names = {
        "textbook": "textbook: floor((GPU − weights) / KV per request)",
        "vllm_paged": "vLLM paged pool (blocks)",
        "contiguous": "contiguous reservation of max_model_len",
    }
    for col, label in names.items():
        fig.add_scatter(x=df["context_tokens"], y=df[col], name=label, mode="lines+markers")
    fig.update_xaxes(type="log", tickvals=list(df["context_tokens"]), ticktext=[f"{c:,}" for c in df["context_tokens"]])
    fig.update_layout(
        title="Max concurrent requests against context length",
        xaxis_title="tokens per request (prompt + output, log scale)",
        yaxis_title="requests",
        height=420,
        legend=dict(orientation="h", y=-0.25),
        margin=dict(t=50),
    )
    return fig
