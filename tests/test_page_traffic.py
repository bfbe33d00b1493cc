"""Headless test of app_pages/traffic.py: first render, metrics, the sweep button, profiles, bad input."""

from __future__ import annotations

import base64
import json

import numpy as np
from conftest import ROOT
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "app_pages" / "traffic.py")
HEADLINE = {
    "Completed",
    "Rejected",
    "Throughput (tok/s)",
    "Goodput (req/s)",
    "Preemptions",
    "Prefix hit rate",
    "p95 TTFT (ms)",
    "p95 TPOT (ms)",
    "p95 end-to-end (ms)",
    "p95 queue wait (ms)",
    "Peak KV use",
    "Longest queue",
    "Sent (req/s)",
}


def load() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    return at


def labels(at: AppTest) -> set[str]:
    return {m.label for m in at.metric}


def values(arr) -> np.ndarray:
    """A plotly 7 data array: a list, or {"dtype", "bdata": base64} binary-packed."""
    if isinstance(arr, dict):
        return np.frombuffer(base64.b64decode(arr["bdata"]), dtype=np.dtype(arr["dtype"]))
    return np.asarray(arr)


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_first_render_shows_metrics_time_series_and_open_vs_closed():
    at = load()
    assert HEADLINE <= labels(at)
    assert at.metric[0].value == "1,000"
    assert at.session_state["load_seed"] == 0 and at.number_input(key="load_seed").value == 0
    sent = [m.value for m in at.metric if m.label == "Sent (req/s)"]
    assert len(sent) == 2  # open and closed loop side by side
    assert len(charts(at)) == 3  # time series, open-vs-closed bars, open-vs-closed series
    assert any("Press Run sweep" in i.value for i in at.info)
    assert any(c.value.startswith("Scheduler of vLLM: vllm-v1 (") for c in at.caption)  # the engine's policy


def test_sweep_button_runs_and_marks_the_knee():
    at = load()
    at.button(key="load_run_sweep").click().run()
    assert not at.exception
    knee = next(m.value for m in at.metric if m.label == "Capacity per replica (knee)")
    assert knee.endswith("req/s") and float(knee.split()[0]) > 0
    figs = charts(at)
    latency = next(
        f for f in figs if any("Time to first token" in a.get("text", "") for a in f["layout"].get("annotations", []))
    )
    assert any(a.get("text", "").startswith("knee") for a in latency["layout"]["annotations"])
    assert len(values(latency["data"][0]["x"])) == 7  # p95/p50 × TTFT/TPOT, 7 rates
    # + the failing points labelled with their verdict (the sweep runs past the knee)
    assert len(latency["data"]) == 5 and latency["data"][4]["mode"] == "markers+text"
    # the result survives a rerun with the same inputs, and goes stale when an input changes
    at.run()
    assert any(m.label == "Capacity per replica (knee)" for m in at.metric)
    at.number_input(key="load_seed").set_value(3).run()
    assert not any(m.label == "Capacity per replica (knee)" for m in at.metric)
    assert any("inputs changed" in i.value for i in at.info)


def test_profiles_render():
    at = load()
    for profile in ("code", "custom"):
        at.selectbox(key="load_profile").set_value(profile).run()
        assert not at.exception and HEADLINE <= labels(at)
    at.selectbox(key="load_arrival").set_value("gamma").run()
    assert not at.exception and at.number_input(key="load_cv").value == 2.0


def test_bad_length_spec_shows_an_error_and_keeps_inputs():
    at = load()
    at.selectbox(key="load_profile").set_value("custom").run()
    at.text_input(key="load_prompt_spec").input("zipf:2").run()
    assert not at.exception
    assert any("Prompt lengths" in e.value for e in at.error)
    assert at.text_input(key="load_prompt_spec").value == "zipf:2"
    assert at.selectbox(key="load_profile").value == "custom"


def test_upload_profile_asks_for_a_file():
    at = load()
    at.selectbox(key="load_profile").set_value("upload").run()
    assert not at.exception and any("Upload a trace" in i.value for i in at.info)


def test_rag_profile_turns_prefix_caching_on():
    at = load()
    at.selectbox(key="load_profile").set_value("rag").run()
    assert not at.exception and at.toggle(key="load_prefix_caching").value is True


def test_the_page_starts_from_the_scenario_workload_and_slo():
    from planner.core.scenario import Scenario
    from planner.core.workload import SLO, TrafficSpec

    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["scenario"] = Scenario(
        traffic=TrafficSpec(profile="custom", prompt="fixed:700", output="fixed:90", seed=5, num_requests=400),
        slo=SLO(ttft_p95_s=1.5, tpot_p95_s=0.05),
    )
    at.run()
    assert not at.exception
    assert at.selectbox(key="load_profile").value == "custom"
    assert at.text_input(key="load_prompt_spec").value == "fixed:700"
    assert at.number_input(key="load_seed").value == 5 and at.number_input(key="load_num_requests").value == 400
    assert (at.number_input(key="load_slo_ttft_ms").value, at.number_input(key="load_slo_tpot_ms").value) == (1500, 50)
