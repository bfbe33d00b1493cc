"""Batching charts: pure functions from planner results / DataFrames to plotly figures (no streamlit here)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from planner.batching.report import latencies, requests_frame, steps_frame, waits
from planner.batching.step_model import BatchingRun
from ui.charts.build import axes, axis_key, figure, side_by_side

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
_TWO_PANELS = {"height": 340, "margin": {"l": 40, "r": 10, "t": 80, "b": 40}, "legend": _TOP_LEGEND}


def _color(name: str) -> str:
    return POLICY_COLORS.get(name, "#7f7f7f")


def _shade(hex_color: str, k: int) -> str:
    """Alternate two shades of a policy colour so neighbouring requests in one slot stay distinguishable."""
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    f = 1.0 if k % 2 == 0 else 0.65
    return f"rgb({int(r * f)},{int(g * f)},{int(b * f)})"


def gantt(results: dict[str, BatchingRun], max_bars: int = MAX_BARS) -> go.Figure:
    """Slots × steps, one panel per policy side by side; a bar is a request, grey is a slot held idle."""
    layout = side_by_side([_gantt_title(n, r, max_bars) for n, r in results.items()], spacing=0.04, shared_y=True)
    traces = []
    columns = ["name", "arrival", "admitted", "output_tokens", "tokens_done", "finish"]
    for col, (name, result) in enumerate(results.items(), start=1):
        df = requests_frame(result)
        df = df[~df["rejected"]].sort_values(["admitted", "slot"]).head(max_bars)
        nth_in_slot = df.groupby("slot").cumcount().to_numpy()
        hover = (
            "<b>%{customdata[0]}</b><br>slot %{y}<br>arrival %{customdata[1]}, admitted %{customdata[2]}"
            "<br>%{customdata[3]} tokens, done %{customdata[4]}, returned %{customdata[5]}<extra>" + name + "</extra>"
        )
        bar = {"type": "bar", "orientation": "h", "hovertemplate": hover, "width": 0.8} | axes(col)
        traces.append(
            bar
            | {
                "y": df["slot"].to_numpy(),
                "base": df["admitted"].to_numpy(),
                "x": df["output_tokens"].to_numpy(),
                "customdata": df[columns].to_numpy(),
                "name": f"{name}: generating",
                "marker": {"color": [_shade(_color(name), k) for k in nth_in_slot], "line": {"width": 0}},
            }
        )
        held = df[df["finish"] > df["tokens_done"]]
        if len(held):
            traces.append(
                bar
                | {
                    "y": held["slot"].to_numpy(),
                    "base": held["tokens_done"].to_numpy(),
                    "x": (held["finish"] - held["tokens_done"]).to_numpy(),
                    "customdata": held[columns].to_numpy(),
                    "name": f"{name}: slot held, idle",
                    "marker": {"color": HELD_COLOR, "line": {"width": 0}},
                }
            )
        layout[axis_key("x", col)]["title"] = {"text": "decode step"}
    slots = max(r.slots for r in results.values())
    for key in [k for k in layout if k.startswith("yaxis")]:
        layout[key] |= {"range": [slots - 0.5, -0.5]} | ({"dtick": 1} if slots <= 16 else {})
    layout["yaxis"]["title"] = {"text": "slot"}
    layout |= {
        "barmode": "overlay",
        "height": max(260, 60 + 28 * slots),
        "showlegend": False,
        "margin": {"l": 40, "r": 10, "t": 40, "b": 40},
    }
    return figure(traces, layout)


def _gantt_title(name: str, result: BatchingRun, max_bars: int) -> str:
    served = int((~result.rejected).sum())
    shown = f" (first {max_bars:,} of {served:,})" if served > max_bars else ""
    return f"{name}: done at step {result.end_step:,}{shown}"


def running_over_time(results: dict[str, BatchingRun]) -> go.Figure:
    """Requests generating at each step (the per-step records), one line per policy; the gap to slots is idle."""
    traces = []
    for name, result in results.items():
        seg = steps_frame(result)
        x = np.append(seg["start"].to_numpy(), seg["end"].to_numpy()[-1:]) if len(seg) else []
        y = np.append(seg["running"].to_numpy(), seg["running"].to_numpy()[-1:]) if len(seg) else []
        traces.append(
            {"type": "scatter", "x": x, "y": y, "mode": "lines", "line": {"shape": "hv", "color": _color(name)}}
            | {"name": name}
        )
    slots = max(r.slots for r in results.values())
    return figure(
        traces,
        {
            "xaxis": {"title": {"text": "decode step"}},
            "yaxis": {"title": {"text": "requests generating"}, "rangemode": "tozero"}
            | ({"dtick": 1} if slots <= 16 else {}),
            "height": 300,
            "margin": {"l": 40, "r": 10, "t": 50, "b": 40},
            "legend": _TOP_LEGEND,
            # add_hline's shape and label: a dotted line across the plot at `slots`, its text at the top left
            "shapes": [
                {"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": slots, "y1": slots}
                | {"line": {"dash": "dot"}}
            ],
            "annotations": [
                {"text": f"{slots} slots", "showarrow": False, "xref": "x domain", "x": 0, "xanchor": "left"}
                | {"yref": "y", "y": slots, "yanchor": "bottom"}
            ],
        },
    )


def _ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.sort(np.asarray(values, dtype=float))
    frac = np.arange(1, values.size + 1) / max(values.size, 1)
    if values.size > MAX_CURVE_POINTS:
        idx = np.linspace(0, values.size - 1, MAX_CURVE_POINTS).astype(int)
        values, frac = values[idx], frac[idx]
    return values, frac


def wait_latency_cdf(results: dict[str, BatchingRun]) -> go.Figure:
    """Share of requests served within x steps: wait (left) and latency (right), one curve per policy."""
    layout = side_by_side(["wait = admitted − arrival", "latency = finished − arrival"])
    traces = []
    for name, result in results.items():
        for col, values in ((1, waits(result)), (2, latencies(result))):
            x, y = _ecdf(values)
            traces.append(
                {"type": "scatter", "x": x, "y": y, "mode": "lines", "name": name, "showlegend": col == 1}
                | {"line": {"shape": "hv", "color": _color(name)}}
                | axes(col)
            )
    for key in ("xaxis", "xaxis2"):
        layout[key]["title"] = {"text": "steps"}
    layout["yaxis"] |= {"title": {"text": "share of requests"}, "tickformat": ".0%"}
    layout["yaxis2"]["tickformat"] = ".0%"  # both panels in percent (the right one showed 0.2, 0.4…)
    return figure(traces, layout | _TWO_PANELS)


def spread_gap(sweep: pd.DataFrame) -> go.Figure:
    """Average latency and GPU busy against the spread of output lengths, static vs continuous."""
    layout = side_by_side(["average latency (steps)", "GPU busy"])
    traces = []
    for name, df in sweep.groupby("policy", sort=False):
        for col, column in ((1, "avg_latency"), (2, "gpu_busy")):
            traces.append(
                {"type": "scatter", "x": df["spread"].to_numpy(), "y": df[column].to_numpy(), "name": name}
                | {"mode": "lines+markers", "showlegend": col == 1, "line": {"color": _color(name)}}
                | axes(col)
            )
    for key in ("xaxis", "xaxis2"):
        layout[key]["title"] = {"text": "spread of output lengths (0 = all equal, 1 = as drawn)"}
    layout["yaxis2"]["tickformat"] = ".0%"
    return figure(traces, layout | _TWO_PANELS)


def padding_bars(results: dict[str, BatchingRun]) -> go.Figure:
    """Prompt tokens in admitted groups: real tokens vs padding filler, per queueing variant."""
    names = list(results)
    padding = [r.padding_tokens for r in results.values()]
    real = [r.padded_prompt_tokens - r.padding_tokens for r in results.values()]
    return figure(
        [
            {"type": "bar", "x": names, "y": real, "name": "prompt tokens", "marker": {"color": "#1f77b4"}},
            {"type": "bar", "x": names, "y": padding, "name": "padding", "marker": {"color": "#ff7f0e"}},
        ],
        {
            "title": {"text": "Prefill padding: one queue vs length buckets"},
            "barmode": "stack",
            "xaxis": {"title": {"text": "queueing"}},
            "yaxis": {"title": {"text": "tokens prefilled"}},
            "height": 320,
            "margin": {"l": 40, "r": 10, "t": 90, "b": 40},
            "legend": _TOP_LEGEND,
        },
    )
