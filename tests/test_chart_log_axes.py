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
