"""Capacity & cost charts: pure functions from probe rows / ranking rows / an autoscaling day to plotly figures."""

from __future__ import annotations

import re

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.charts.axes import log_axis

OK_COLOR, FAIL_COLOR, FRONT_COLOR, OTHER_COLOR = "#2ca02c", "#d62728", "#d62728", "#9aa7b8"
AUTO_COLOR, STATIC_COLOR, DEMAND_COLOR = "#1f77b4", "#7f7f7f", "#ff7f0e"
_TOP_LEGEND = dict(orientation="h", yanchor="bottom", y=1.08, x=0)
LATENCY_LABELS = {"e2e_p95_s": "p95 end-to-end (s)", "ttft_p95_s": "p95 TTFT (s)", "tpot_p95_s": "p95 TPOT (s)"}
COST_LABELS = {
    "usd_per_hour": "$ per hour for the target",
    "usd_per_million_output_tokens": "$ per million output tokens",
}


def short_reason(reason: str) -> str:
    """The failing criterion of a probe, short enough to print beside its marker: its name without the figures
    ("queue grows", "p95 TTFT"; "queue grows 6.20 r…" was cut at the chart's edge)."""
    if reason.startswith("offered"):
        return "≥ 95% of saturation"
    return re.split(r" [\d,.]+", reason.split(" (")[0].split(" > ")[0])[0]


def once_per_reason(reasons) -> list[str]:
    """short_reason for the first probe failing each criterion, "" for the rest (one label per criterion)."""
    seen, out = set(), []
    for reason in reasons:
        short = short_reason(reason) if reason else ""
        out.append(short if short and short not in seen else "")
        seen.add(short)
    return out


def search_probes(
    probes: list,
    capacity: float,
    slo_ttft_s: float,
    saturated_rps: float | None = None,
    slo_tpot_s: float | None = None,
) -> go.Figure:
    """Each simulated rate of the capacity search: its p95 TTFT and p95 TPOT side by side (either may bind), green
    when sustained; failed probes labelled with the criterion they failed, once per criterion (the first rate
    that fails it: the labels of neighbouring probes drew on top of each other); the capacity and the saturated
    throughput marked."""
    df = pd.DataFrame(probes).sort_values("rate_per_s")
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=("p95 TTFT (ms)", "p95 TPOT (ms)"))
    df = df.assign(label=once_per_reason(df["reason"]))
    for col, key in ((1, "ttft_p95_s"), (2, "tpot_p95_s")):
        for ok, color, name in ((True, OK_COLOR, "sustains the SLO"), (False, FAIL_COLOR, "fails")):
            part = df[df["sustains"] == ok]
            fig.add_trace(
                go.Scatter(
                    x=part["rate_per_s"],
                    y=pd.to_numeric(part[key], errors="coerce") * 1e3,
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    mode="markers" if ok else "markers+text",
                    marker=dict(color=color, size=10),
                    text=None if ok else list(part["label"]) if col == 1 else None,
                    textposition="top left",
                    textfont=dict(size=10, color=color),
                    customdata=part["reason"],
                    hovertemplate="%{x:,.3g} req/s<br>%{y:,.1f} ms<br>%{customdata}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.add_hline(y=slo_ttft_s * 1e3, line=dict(color="#999", dash="dot"), annotation_text="TTFT target", row=1, col=1)
    if slo_tpot_s:
        fig.add_hline(
            y=slo_tpot_s * 1e3, line=dict(color="#999", dash="dot"), annotation_text="TPOT target", row=1, col=2
        )
    for col in (1, 2):  # the lines in both panels, their labels in the first (None would print "new text")
        if saturated_rps:
            label = dict(annotation_text=f"saturated {saturated_rps:,.3g} req/s", annotation_position="bottom right")
            fig.add_vline(
                x=saturated_rps, line=dict(color="#999", dash="dot"), row=1, col=col, **(label if col == 1 else {})
            )
        if capacity > 0:
            label = dict(annotation_text=f"capacity {capacity:,.3g} req/s", annotation_position="top left")
            fig.add_vline(
                x=capacity, line=dict(color=OK_COLOR, dash="dash"), row=1, col=col, **(label if col == 1 else {})
            )
        fig.update_xaxes(title_text="arrival rate per replica (requests/s)", row=1, col=col)
        fig.update_yaxes(rangemode="tozero", row=1, col=col)
    fig.update_layout(height=340, margin=dict(t=70, b=40), legend=_TOP_LEGEND)
    return fig


def pareto(rows: list[dict], cost_key: str = "usd_per_hour", latency_key: str = "e2e_p95_s") -> go.Figure:
    """Cost against p95 latency for every feasible deployment; the Pareto frontier highlighted and joined."""
    df = pd.DataFrame([r for r in rows if r.get("feasible") and r.get(latency_key) is not None])
    fig = go.Figure()
    if df.empty:
        return fig
    for on, color, name, size in ((False, OTHER_COLOR, "dominated", 8), (True, FRONT_COLOR, "Pareto frontier", 12)):
        part = df[df["pareto"] == on].sort_values(latency_key)
        fig.add_trace(
            go.Scatter(
                x=part[latency_key],
                y=part[cost_key],
                mode="lines+markers" if on else "markers",
                name=name,
                marker=dict(color=color, size=size),
                line=dict(color=color, shape="hv"),
                text=part["id"],
                hovertemplate="%{text}<br>latency %{x:,.3g} s<br>cost %{y:,.3g}<extra></extra>",
            )
        )
    fig.update_xaxes(tickformat=",.3g")
    fig.update_yaxes(tickformat=",.3g")
    fig.update_layout(
        height=420,
        margin=dict(t=50, b=40),
        legend=_TOP_LEGEND,
        xaxis=log_axis(df[latency_key], ",.3~g"),  # at least three labels on a span under a decade
        yaxis=log_axis(df[cost_key], ",.3~g"),
        xaxis_title=LATENCY_LABELS.get(latency_key, latency_key) + " at the operating point, log",
        yaxis_title=COST_LABELS.get(cost_key, cost_key) + ", log",
    )
    return fig


def ranking_bars(rows: list[dict], top: int = 15) -> go.Figure:
    """$/hour of the cheapest `top` deployments (horizontal bars, cheapest on top)."""
    df = pd.DataFrame([r for r in rows if r.get("feasible")][:top])
    fig = go.Figure()
    if df.empty:
        return fig
    fig.add_trace(
        go.Bar(
            x=df["usd_per_hour"],
            y=df["id"],
            orientation="h",
            marker_color=AUTO_COLOR,
            text=[f"{n} × TP{t}" for n, t in zip(df["replicas"], df["tp"])],
            textposition="auto",
            hovertemplate="%{y}<br>$%{x:,.2f}/hour<extra></extra>",
        )
    )
    fig.update_layout(
        height=max(260, 24 * len(df) + 80),
        margin=dict(t=30, b=40, l=10),
        yaxis=dict(autorange="reversed"),
        xaxis_title="$ per hour for the target rate",
    )
    return fig


def autoscale_day(series: dict, static_replicas: int, slo_ttft_s: float) -> go.Figure:
    """Over the day: demand, replicas (ready + starting) against static peak provisioning, and p95 TTFT."""
    df = pd.DataFrame(series)
    hours = df["minute"] / 60.0
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.07,
        subplot_titles=("Demand (requests/s)", "Replicas", "p95 TTFT (ms; capped at 10× the SLO)"),
    )
    fig.add_trace(
        go.Scatter(x=hours, y=df["rate_per_s"], name="arrival rate", line=dict(color=DEMAND_COLOR)), row=1, col=1
    )
    fig.add_trace(
        go.Scatter(x=hours, y=df["replicas"], name="ready replicas", line=dict(color=AUTO_COLOR, shape="hv")),
        row=2,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=hours,
            y=df["replicas"] + df["starting"],
            name="ready + starting",
            line=dict(color=AUTO_COLOR, dash="dot", shape="hv"),
        ),
        row=2,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=hours, y=[static_replicas] * len(df), name="static peak", line=dict(color=STATIC_COLOR, dash="dash")
        ),
        row=2,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=hours, y=df["ttft_p95_s"].clip(upper=10 * slo_ttft_s) * 1e3, name="p95 TTFT", line=dict(color=FAIL_COLOR)
        ),
        row=3,
        col=1,
    )
    fig.add_hline(
        y=slo_ttft_s * 1e3,
        line=dict(color="#999", dash="dot"),
        row=3,
        col=1,
        annotation_text="TTFT target",
        annotation_position="top left",
    )
    fig.update_yaxes(rangemode="tozero", row=3, col=1)
    fig.update_yaxes(rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="hour of the day", row=3, col=1)
    fig.update_layout(height=620, margin=dict(t=60, b=40), legend=_TOP_LEGEND)
    return fig
