"""The sidebar's folded sections (ui/lazy_section.py): widgets drawn only while open, the same scenario either way,
and a value the user entered kept when its section closes."""

from __future__ import annotations

import json

import plotly.io
import plotly.tools
from apptest_helpers import app

from planner.batching.requests import SCENARIOS
from planner.batching.step_model import run_pair
from ui.charts import batching as charts
from ui.charts.frozen import FrozenFigure, freeze

SECTIONS = ("sb_open_engine", "sb_open_traffic", "sb_open_parallel", "sb_open_share")
# a value off its default in every folded section (engine settings, traffic details, parallelism)
SET = dict(
    sb_util=0.8,
    sb_set_maxlen=True,
    sb_max_len=32768,
    sb_block=32,
    sb_eager=True,
    sb_headroom=2.0,
    sb_e2e_on=True,
    sb_slo_e2e_s=30.0,
    sb_seed=7,
    sb_num_requests=500,
    sb_prefix=False,
    sb_pp=2,
    sb_num_gpus=2,
)


def _keys(at) -> set[str]:
    return {w.key for kind in ("slider", "checkbox", "number_input", "selectbox", "toggle") for w in at.get(kind)}


def test_closed_sections_draw_no_widgets_and_give_the_scenario_the_open_ones_give():
    closed = app(**SET)
    opened = app(**SET, **dict.fromkeys(SECTIONS, True))
    assert not closed.exception and not opened.exception
    assert {"sb_util", "sb_headroom", "sb_pp", "sb_eager"} <= _keys(opened)
    assert not {"sb_util", "sb_headroom", "sb_pp", "sb_eager"} & _keys(closed)  # their widgets are not drawn
    assert closed.session_state["scenario"] == opened.session_state["scenario"]
    s = closed.session_state["scenario"]
    d = s.deployment
    assert (d.gpu_memory_utilization, d.max_model_len, d.block_size, d.enforce_eager) == (0.8, 32768, 32, True)
    assert (s.headroom, s.slo.e2e_p99_s, s.traffic.seed, s.traffic.num_requests) == (2.0, 30.0, 7, 500)
    assert (d.enable_prefix_caching, d.pipeline_parallel_size) == (False, 2)
    assert app().session_state["scenario"] == app(**dict.fromkeys(SECTIONS, True)).session_state["scenario"]


def test_a_value_entered_in_an_open_section_outlives_closing_it():
    at = app(sb_open_engine=True)
    at.slider(key="sb_util").set_value(0.75).run()
    assert at.session_state["scenario"].deployment.gpu_memory_utilization == 0.75
    at.session_state["sb_open_engine"] = False  # the user folds the section
    at.run()
    at.run()  # and works on: the value stays
    assert not at.exception
    assert at.session_state["scenario"].deployment.gpu_memory_utilization == 0.75
    at.session_state["sb_open_engine"] = True  # unfolds it again: the slider shows what was entered
    at.run()
    assert at.session_state["sb_util"] == 0.75


def test_a_frozen_figure_sends_the_same_json():
    fig = charts.gantt(run_pair(SCENARIOS["burst"][0](seed=0), 8, 0))
    before = plotly.io.to_json(plotly.tools.return_figure_from_figure_or_data(fig, True), validate=False)
    frozen = freeze(fig)  # what st.plotly_chart does with it, twice
    assert isinstance(frozen, FrozenFigure)
    for _ in range(2):
        assert plotly.io.to_json(plotly.tools.return_figure_from_figure_or_data(frozen, True), validate=False) == before
    assert json.loads(before)["layout"]["height"] == frozen.layout.height  # still a figure to read
