"""Charts for the "Does it fit?" page: pure functions from planner results to plotly figures."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from ui.charts.build import figure

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
    traces = []
    parts = list(dict.fromkeys(p for bar in bars.values() for p in bar))
    for part in parts:
        values = [max(bar.get(part, 0.0), 0.0) / 1e9 for bar in bars.values()]
        traces.append(
            {"type": "bar", "name": part, "x": list(bars), "y": values, "marker": {"color": COLORS.get(part)}}
            | {
                "customdata": [v * 1e9 / 2**30 for v in values],
                "hovertemplate": f"{part}: %{{y:.2f}} GB (%{{customdata:.2f}} GiB)<extra></extra>",
            }
        )
    layout = {
        "barmode": "stack",
        "title": {"text": title},
        "yaxis": {"title": {"text": "memory (GB = 1e9 bytes)"}},
        "legend": {"title": {"text": ""}},
        "height": 420,
        "margin": {"t": 50, "b": 30},
    }
    return figure(traces, layout)


def concurrency_vs_context(rows: list[dict], engine: str = "vLLM") -> go.Figure:
    """Max concurrent requests against tokens per request, for the three ways of counting (`engine`: the label of
    the engine whose pool the middle one is)."""
    df = pd.DataFrame(rows)
    names = {
        "textbook": "textbook: floor((GPU − weights) / KV per request)",
        "vllm_paged": f"{engine} KV pool (blocks)",
        "contiguous": "contiguous reservation of max_model_len",
    }
    x = df["context_tokens"].to_numpy()
    traces = [
        {"type": "scatter", "x": x, "y": df[col].to_numpy(), "name": label, "mode": "lines+markers"}
        for col, label in names.items()
    ]
    layout = {
        "title": {"text": "Max concurrent requests against context length"},
        "xaxis": {
            "type": "log",
            "tickvals": list(df["context_tokens"]),
            "ticktext": [f"{c:,}" for c in df["context_tokens"]],
            "title": {"text": "tokens per request (prompt + output, log scale)"},
        },
        "yaxis": {"title": {"text": "requests"}},
        "height": 420,
        "legend": {"orientation": "h", "y": -0.25},
        "margin": {"t": 50},
    }
    return figure(traces, layout)
