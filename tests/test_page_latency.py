"""Headless test of app_pages/latency.py: it runs, shows the key metrics, reacts to widgets, and reruns fast."""

from __future__ import annotations

import json

from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.core.scenario import Scenario
from planner.core.specs import Deployment
from planner.core.workload import TrafficSpec

PAGE = str(ROOT / "app_pages" / "latency.py")
STATIC = "Static batch (primer §5)"
PRIMER = TrafficSpec(profile="custom", prompt="fixed:2000", output="fixed:300")  # the primer's request (§5)


def fresh(scenario: Scenario | None = None, mode: str | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=30)
    at.session_state["scenario"] = scenario or Scenario(traffic=PRIMER)
    if mode:
        at.session_state["latency_mode"] = mode
    return at.run()


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_continuous_batching_is_the_default():
    at = fresh()
    assert not at.exception and at.radio(key="latency_mode").value.startswith("Continuous")
    m = metrics(at)
    for label in (
        "TTFT",
        "TPOT",
        "Tokens/s per user",
        "End-to-end",
        "Server throughput",
        "Requests/s",
        "Static batch TTFT",
    ):
        assert label in m
    # the B streams start together and the groups prefilled together come back together: a staircase of waits
    # below the static batch's one pass over every prompt (planner.sim.continuous)
    assert float(m["TTFT"].split()[0].replace(",", "")) < float(m["Static batch TTFT"].split()[0].replace(",", ""))
    assert "2,000 prompt + 300 output tokens" in " ".join(c.value for c in at.caption)


def test_lengths_come_from_the_scenario():
    at = fresh(Scenario(traffic=TrafficSpec(profile="custom", prompt="fixed:700", output="fixed:90")))
    assert "700 prompt + 90 output tokens" in " ".join(c.value for c in at.caption)
    assert not [w for w in at.number_input if "tokens" in (w.label or "").lower()]  # no second length input


def test_prompt_over_max_model_len_says_where_and_keeps_the_charts():
    at = fresh(
        Scenario(
            traffic=TrafficSpec(profile="custom", prompt="fixed:9000", output="fixed:300"),
            deployment=Deployment(max_model_len=8192),
        )
    )
    assert not at.exception and not at.error
    text = " ".join(w.value for w in at.warning)
    assert "max_model_len 8,192" in text and "Engine settings" in text and "Workload and SLO" in text
    assert len(at.get("plotly_chart")) == 6


def test_batch_slider_clamps_to_the_new_maximum():
    at = fresh(mode=STATIC)
    at.slider(key="latency_batch").set_value(150).run()
    at.session_state["scenario"] = Scenario(traffic=PRIMER, deployment=Deployment(max_num_seqs=64))
    at.run()
    assert not at.exception
    assert at.slider(key="latency_batch").value == 64  # the new maximum, not the default 32
    assert at.slider(key="latency_batch").max == 64


def test_page_runs_and_shows_the_key_metrics():
    at = fresh(mode=STATIC)
    assert not at.exception
    m = metrics(at)
    for label in ("TTFT", "TPOT", "Tokens/s per user", "End-to-end", "Server throughput", "Decode bound"):
        assert label in m
    assert m["Decode bound"] in ("memory", "compute")
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    titles = [c["layout"]["title"]["text"] for c in charts]
    assert any("broken down" in t for t in titles) and any("Trade-off" in t for t in titles)


def test_a_bigger_batch_raises_tpot_and_throughput():
    at = fresh(mode=STATIC)
    before = metrics(at)
    at.slider(key="latency_batch").set_value(128).run()
    after = metrics(at)
    assert not at.exception
    assert float(after["TPOT"].split()[0]) > float(before["TPOT"].split()[0])
    assert float(after["Server throughput"].split()[0].replace(",", "")) > float(
        before["Server throughput"].split()[0].replace(",", "")
    )


def test_given_rates_mode_reproduces_the_primer():
    at = fresh()
    at.radio(key="latency_mode").set_value("Given rates (primer §5)").run()
    m = metrics(at)
    assert (m["TTFT"], m["Tokens/s per user"], m["End-to-end"], m["Decode share"]) == (
        "240 ms",
        "40.0",
        "7.715 s",
        "97%",
    )
    table = at.table[0].value
    text = " ".join(table["value"])
    for figure in ("3.965 s", "12.2 s", "800 tokens/s", "20×", "1.6×", "240 → 90 ms"):
        assert figure in text


def test_engine_switch_reruns():
    at = fresh()
    at.selectbox(key="latency_engine").set_value("tensorrt-llm").run()
    assert not at.exception
    assert "tensorrt-llm" in " ".join(c.value for c in at.caption)


def test_the_engine_profile_starts_from_the_scenarios_engine_and_follows_it():
    at = fresh(Scenario(traffic=PRIMER, engine="sglang"))
    assert not at.exception and at.selectbox(key="latency_engine").value == "sglang"
    assert "engine sglang" in " ".join(c.value for c in at.caption)
    at.selectbox(key="latency_engine").set_value("vllm").run()  # the user's pick stays while the scenario's does
    at.run()
    assert at.selectbox(key="latency_engine").value == "vllm"
    at.session_state["scenario"] = Scenario(traffic=PRIMER, engine="tensorrt-llm")  # the sidebar's engine changes
    at.run()
    assert not at.exception and at.selectbox(key="latency_engine").value == "tensorrt-llm"


def test_log_axes_tick_by_decade_and_legends_leave_the_right_axis_clear():
    at = fresh(mode=STATIC)
    for chart in (json.loads(c.proto.spec) for c in at.get("plotly_chart")):
        layout = chart["layout"]
        for name, axis in layout.items():
            if name.startswith(("xaxis", "yaxis")) and axis.get("type") == "log":
                assert axis.get("dtick") == 1, (layout["title"]["text"], name)  # 1, 10, 100: not "1 2 5 10 2 5"
        if "yaxis2" in layout:  # a right-hand axis: the legend sits below the plot, not over its labels
            assert layout["legend"]["orientation"] == "h" and layout["legend"]["y"] < 0, layout["title"]["text"]


def test_concurrency_above_the_memory_limit_runs_under_queueing_with_a_note():
    # the default 8B on H100 fits 311 chat requests; a share link with latency_batch=2048 restores 2,048
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["scenario"] = Scenario()
    at.session_state["latency_batch_wanted"] = 2048
    at.run()
    assert not at.exception and not at.error
    batch = at.slider(key="latency_batch").value
    note = " ".join(i.value for i in at.info)
    assert batch > 311 and "above the memory limit" in note and "queueing" in note
    m = metrics(at)
    assert "TTFT" in m and "Static batch TTFT" in m


def test_the_what_if_title_names_the_lever_that_saves_more():
    # the code profile: long prompts, short answers; halving the prompt saves more than halving the output
    at = fresh(Scenario(traffic=TrafficSpec(profile="custom", prompt="fixed:8000", output="fixed:20")))
    assert not at.exception
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    what_if = next(t for t in titles if t.startswith("What if"))
    assert what_if == "What if: prompt length is the bigger lever"
    assert "What if: output length is the bigger lever" in [
        json.loads(c.proto.spec)["layout"]["title"]["text"] for c in fresh().get("plotly_chart")
    ]


def test_right_axes_tick_on_their_own_round_numbers():
    # Streamlit's theme syncs a right axis to the left gridlines (25.3, 50.6, 75.9 …) unless it ticks on its own
    at = fresh(mode=STATIC)
    right = [json.loads(c.proto.spec)["layout"].get("yaxis2") for c in at.get("plotly_chart")]
    right = [axis for axis in right if axis]
    assert right and all(axis.get("tickmode") == "auto" for axis in right)
