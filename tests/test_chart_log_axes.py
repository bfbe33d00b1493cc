"""Every log axis on every page ticks by decade (1, 10, 100 …), never plotly's default "1 2 5 10 2 5 100"
(issue 16): the pages whose charts were not covered by test_page_latency's check."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

PAGES = ("validation", "disagg", "capacity", "techniques", "traffic", "fit")


@pytest.mark.parametrize("page", PAGES)
def test_log_axes_tick_by_decade(page):
    at = AppTest.from_file(str(ROOT / "app_pages" / f"{page}.py"), default_timeout=120).run()
    assert not at.exception
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert charts, f"{page}: no chart drawn"
    for chart in charts:
        layout = chart["layout"]
        for name, axis in layout.items():
            if name.startswith(("xaxis", "yaxis")) and axis.get("type") == "log":
                explicit = axis.get("dtick") == 1 or "tickvals" in axis
                assert explicit, (page, layout.get("title", {}).get("text"), name)


def _within(axis, lo: float, hi: float) -> list[float]:
    return [t for t in axis.tickvals or () if lo <= t <= hi]


def test_the_pareto_chart_labels_three_ticks_on_a_span_under_a_decade():
    # issue 27 #20: p95 latencies of 3-9 s under decade ticks showed one label ("10", outside the data)
    from ui.charts.capacity import pareto

    rows = [
        {"id": f"d{i}", "feasible": True, "pareto": i % 2 == 0, "e2e_p95_s": lat, "usd_per_hour": usd}
        for i, (lat, usd) in enumerate([(3.2, 40.0), (4.1, 22.0), (6.5, 9.5), (8.7, 2.7)])
    ]
    fig = pareto(rows)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert _within(fig.layout.xaxis, 3.2, 8.7) == [4.0, 5.0, 6.0, 7.0, 8.0]  # every digit: the span is 2.7×
    assert _within(fig.layout.yaxis, 2.7, 40.0) == [5.0, 10.0, 20.0]  # 1-2-5 steps: 15×


def test_log_ticks_by_span():
    from ui.charts.axes import log_ticks

    assert log_ticks([1, 5000]) is None  # decades: 1, 10, 100, 1,000 (dtick=1)
    assert log_ticks([2.7, 180]) == [5.0, 10.0, 20.0, 50.0, 100.0]  # two decades within: 1-2-5 steps
    assert log_ticks([5.1, 5.9]) == [5.1, 5.49, 5.9]  # too short for digits: the ends and their geometric middle
    assert log_ticks([7.0, 7.0]) == [7.0] and log_ticks([None, 0, -1]) is None


def test_validation_scatter_labels_a_million_without_an_exponent():
    # issue 27: d3's ",~g" printed the 1,000,000 tick as "1e+6"; plotly's own decade labels read "1M"
    import pandas as pd

    from ui.charts.validation import parity_chart

    df = pd.DataFrame(
        {"id": ["a", "b"], "measured": [2.0, 2e6], "predicted": [2.2, 1.9e6], "unit": ["ms", "tokens/s"]}
        | {"error_pct": [10.0, -5.0], "gpu": ["H100", "H100"], "engine": ["vllm", "vllm"], "metric": ["tpot", "tput"]}
    )
    fig = parity_chart(df, "metric", "t")
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert axis.type == "log" and axis.dtick == 1 and "g" not in (axis.tickformat or "")
