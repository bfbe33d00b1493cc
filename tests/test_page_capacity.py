"""Headless test of app_pages/capacity.py: the default render (one capacity search), the ranking button, bad input."""

from __future__ import annotations

import json

import pytest
from apptest_helpers import app
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.core.scenario import Scenario
from planner.core.workload import SLO

PAGE = str(ROOT / "app_pages" / "capacity.py")


def load() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_default_render_shows_capacity_replicas_cost_and_a_day():
    at = load()
    m = metrics(at)
    for label in (
        "Capacity per replica (req/s)",
        "Replicas",
        "$ per hour",
        "$ per million output tokens",
        "Requests in SLO-violating minutes",
        "Replica-hours (autoscaled)",
        "vs static peak",
    ):
        assert label in m, label
    assert int(m["Replicas"]) >= 1 and m["$ per hour"].startswith("$")
    assert len(at.get("plotly_chart")) == 2  # search probes + the day
    assert at.button(key="cap_rank") is not None
    assert any(c.value.startswith("Scheduler of vLLM: vllm-v1 (") for c in at.caption)  # the engine's policy


def test_default_price_comes_from_the_catalogue():
    """H100-SXM at $2.69 per GPU-hour (data/gpus.yaml); AppTest cannot drive st.data_editor, so the override
    path is tested through capacity_plan(prices=...) in test_capacity.py."""
    at = load()
    cost = next(m for m in at.metric if m.label == "$ per hour")
    assert "$2.69 per GPU-hour" in cost.help


@pytest.mark.slow  # ~50 s on 2 cores: the ranking simulates every candidate deployment
def test_ranking_runs_behind_the_button_on_a_subset():
    at = load()
    at.session_state["scenario"] = Scenario(target_rate=5.0)  # the sidebar's workload: target 5 req/s
    at.run()
    at.button(key="cap_rank").click().run(timeout=300)
    assert not at.exception, at.exception
    rows = at.session_state["cap_ranking"][1]
    assert len(rows) >= 40 and rows[0]["rank"] == 1
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert any(t.get("name") == "Pareto frontier" for s in specs for t in s["data"])
    # the table is for people: named columns with units, rounded (issue 16: snake_case and 4 decimals)
    table = next(d.value for d in at.dataframe if "deployment" in d.value.columns)
    assert {"deployment", "req/s per replica", "$ per hour", "p95 TTFT (ms)", "p95 TPOT (ms)"} <= set(table.columns)
    assert not [c for c in table.columns if "_" in c]
    assert (table["$ per hour"].dropna() == table["$ per hour"].dropna().round(2)).all()
    # "Use this deployment" queues the ranked deployment for the sidebar
    feasible = [r for r in rows if r["feasible"]]
    at.selectbox(key="cap_use_pick").set_value(1).run()
    at.button(key="cap_use").click().run(timeout=300)
    pending = at.session_state["sb_pending_scenario"]
    assert (pending.gpu, pending.deployment.weights, pending.deployment.tensor_parallel_size) == (
        feasible[1]["gpu"],
        feasible[1]["weights"],
        feasible[1]["tp"],
    )
    assert pending.target_rate == 5.0  # the workload stays


def test_a_used_deployment_lands_in_the_sidebar():
    from planner.core.scenario import with_deployment

    chosen = with_deployment(Scenario(), "A100-80GB", "awq-int4", 2, 6)
    at = app(sb_pending_scenario=chosen, sb_pending_message="Loaded A100-80GB")
    assert not at.exception
    assert (
        at.session_state["sb_gpu"],
        at.session_state["sb_weights"],
        at.session_state["sb_tp"],
        at.session_state["sb_num_gpus"],
    ) == ("A100-80GB", "awq-int4", 2, 6)
    assert at.session_state["scenario"].deployment == chosen.deployment
    assert [t.value for t in at.toast] == ["Loaded A100-80GB"]


def test_tight_slo_is_reported_not_a_traceback():
    at = load()
    at.session_state["scenario"] = Scenario(slo=SLO(ttft_p95_s=0.01))  # the sidebar's SLO: p95 TTFT ≤ 10 ms
    at.run()
    assert not at.exception
    assert any("cannot meet this SLO" in w.value for w in at.warning)
