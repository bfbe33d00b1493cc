"""Figures built from plain dicts in one pass.

Plotly validates and re-walks the figure on every `make_subplots`, `add_trace`, `update_layout` and `update_xaxes`
call: the Batching page's Gantt (make_subplots + 2 traces per panel + 5 updates) took 70–120 ms and its three charts
~250 ms, while the same figure handed to `go.Figure` as one dict takes ~4 ms. Under many sessions a chart built on
a cache miss holds the one server process's interpreter (README, "Many users"), so charts on the pages a slider
redraws are built here.
"""

from __future__ import annotations

import plotly.graph_objects as go


def figure(traces: list[dict], layout: dict) -> go.Figure:
    """A figure from trace dicts (each with its `type`) and a layout dict, validated once."""
    return go.Figure({"data": traces, "layout": layout})


def side_by_side(titles: list[str], spacing: float | None = None, shared_y: bool = False) -> dict:
    """The layout keys of `make_subplots(rows=1, cols=len(titles), ...)`: x/y axis pairs side by side, panel
    titles as annotations (font 16, centred above each panel), the later y axes matching the first when shared."""
    n = len(titles)
    gap = 0.2 / n if spacing is None else spacing  # make_subplots' default horizontal_spacing
    width = (1 - gap * (n - 1)) / n
    layout: dict = {"annotations": []}
    for i in range(n):
        start = i * (width + gap)
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", "domain": [start, start + width]}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "domain": [0.0, 1.0]}
        if shared_y and i:
            layout[f"yaxis{suffix}"] |= {"matches": "y", "showticklabels": False}
        layout["annotations"].append(
            {
                "font": {"size": 16},
                "showarrow": False,
                "text": titles[i],
                "x": start + width / 2,
                "xanchor": "center",
                "xref": "paper",
                "y": 1.0,
                "yanchor": "bottom",
                "yref": "paper",
            }
        )
    return layout


def axes(panel: int) -> dict:
    """A trace's axis references for panel `panel` (1-based) of `side_by_side`."""
    suffix = "" if panel == 1 else str(panel)
    return {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}


def axis_key(letter: str, panel: int) -> str:
    """The layout key of panel `panel`'s x or y axis: xaxis, xaxis2, …"""
    return f"{letter}axis" + ("" if panel == 1 else str(panel))
