"""Charts for the "Validation" page: pure functions from planner.accuracy.validation /
planner.accuracy.profile_fit tables to figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#EECA3B", "#BAB0AC"]
SYMBOLS = ["circle", "diamond", "square", "triangle-up"]
BAND = 0.25  # the ±25 % lines around y = x
MIN_SHOWN = 0.1  # values below this (the ITL slope, ~7e-4 ms per context token) would stretch the log axes


def parity_chart(df: pd.DataFrame, color: str = "metric", title: str = "Predicted against measured") -> go.Figure:
    """Log-log scatter of predicted (y) against measured (x), one colour per `color` value, with y = x and ±25 %.

    Points in seconds are shown in ms (LMDeploy's TTFT and ITL rows); points measured below MIN_SHOWN (in their own
    unit) are left off the axes and counted in the title."""
    used = df[df["predicted"].notna()].copy()
    secs = used["unit"].astype(str).str.strip().eq("s")
    used.loc[secs, ["measured", "predicted"]] *= 1e3
    used.loc[secs, "unit"] = "ms"
    hidden = used[used["measured"] < MIN_SHOWN]
    if len(hidden) < len(used):
        used = used[used["measured"] >= MIN_SHOWN]
        if len(hidden):
            title += f" ({', '.join(hidden['id'])} below {MIN_SHOWN:g} off the axes: see the tables)"
    fig = go.Figure()
    if used.empty:
        fig.update_layout(title=title + " (no predicted points)", height=460)
        return fig
    lo = float(min(used["measured"].min(), used["predicted"].min())) / 1.5
    hi = float(max(used["measured"].max(), used["predicted"].max())) * 1.5
    line = np.geomspace(lo, hi, 50)
    fig.add_scatter(x=line, y=line, mode="lines", name="y = x", line=dict(color="black", width=1), hoverinfo="skip")
    for f, dash in ((1 + BAND, "dot"), (1 - BAND, "dot")):
        fig.add_scatter(
            x=line,
            y=line * f,
            mode="lines",
            name=f"±{BAND:.0%}",
            line=dict(color="gray", dash=dash, width=1),
            hoverinfo="skip",
            showlegend=f > 1,
        )
    for i, (key, g) in enumerate(used.groupby(color, sort=True)):
        fig.add_scatter(
            x=g["measured"],
            y=g["predicted"],
            mode="markers",
            name=str(key)[:40],
            marker=dict(
                size=8,
                color=PALETTE[i % len(PALETTE)],
                symbol=SYMBOLS[i // len(PALETTE) % len(SYMBOLS)],  # past 10 series a new shape: no repeated key
                line=dict(width=0.5, color="white"),
            ),
            customdata=np.c_[g["id"], g["unit"], g["error_pct"].round(1), g["gpu"], g["engine"]],
            hovertemplate="%{customdata[0]} · %{customdata[3]} · %{customdata[4]}<br>measured %{x:.4g} "
            "%{customdata[1]}<br>predicted %{y:.4g}<br>error %{customdata[2]}%<extra></extra>",
        )
    # decade ticks (1, 10, 100 … 10k, 1M: plotly's own SI labels; d3's ",~g" printed 1,000,000 as "1e+6"), not
    # plotly's default 1 2 5 10 2 5 labels
    fig.update_xaxes(type="log", dtick=1, title="measured (each point in its own unit: ms, tokens/s, blocks)")
    fig.update_yaxes(type="log", dtick=1, title="predicted", scaleanchor="x", scaleratio=1)
    fig.update_layout(title=title, height=520, margin=dict(t=50, b=40), legend=dict(font=dict(size=11)))
    return fig


def error_by_group_chart(summary: pd.DataFrame, by: str) -> go.Figure:
    """Median and 90th-percentile absolute % error per group, as grouped horizontal bars."""
    s = summary.sort_values("median_abs_error_pct")
    labels = [f"{k} (n={n})" for k, n in zip(s[by], s["n"])]
    fig = go.Figure()
    fig.add_bar(y=labels, x=s["median_abs_error_pct"], orientation="h", name="median", marker_color="#4C78A8")
    fig.add_bar(y=labels, x=s["p90_abs_error_pct"], orientation="h", name="90th percentile", marker_color="#F58518")
    fig.update_xaxes(title="absolute error (%)", rangemode="tozero")
    fig.update_yaxes(automargin=True)
    fig.update_layout(
        title=f"Absolute error by {by}", barmode="group", height=120 + 40 * len(s), margin=dict(t=50, b=40)
    )
    return fig


def before_after_chart(table: pd.DataFrame) -> go.Figure:
    """Signed % error of each uploaded value under the planner's profile and under the fitted one."""
    labels = [f"{p} · {m}" for p, m in zip(table["point"], table["metric"])]
    fig = go.Figure()
    fig.add_bar(x=labels, y=table["error_before_pct"], name="before (planner's profile)", marker_color="#BAB0AC")
    fig.add_bar(x=labels, y=table["error_after_pct"], name="after (fitted to your data)", marker_color="#54A24B")
    fig.add_hline(y=0, line_color="black", line_width=1)
    fig.update_yaxes(title="error, predicted vs measured (%)")
    fig.update_layout(
        title="Error on your points, before and after calibration", barmode="group", height=380, margin=dict(t=50, b=40)
    )
    return fig
