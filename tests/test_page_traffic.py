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


def test_long_series_are_downsampled_keeping_their_peaks():
    from ui.charts.load import MAX_POINTS, min_max_downsample

    at = load()
    for fig in charts(at):
        for trace in fig["data"]:
            assert len(values(trace.get("x", []))) <= MAX_POINTS, fig["layout"].get("title")  # was 19k per line
            assert trace["type"] != "scattergl"  # no WebGL context per chart
    x = np.arange(100_000.0)
    y = np.zeros_like(x)
    y[31_337] = 7.0  # a one-step queue spike
    xs, ys = min_max_downsample(x, y, 1000)
    assert len(xs) <= 1000 and ys.max() == 7.0 and xs[0] == 0 and xs[-1] == 99_999
    assert (np.diff(xs) > 0).all()
    # by hand, 10 points to 6: (6 - 2) / 2 = 2 buckets of 5, each its min and max, plus the first and last point,
    # none of which is an extreme of its bucket here (the old max_points / 2 buckets kept 3 x 2 + 2 = 8 points)
    y10 = np.array([1.0, 0.0, 5.0, 2.0, 3.0, 4.0, 9.0, 0.0, 6.0, 2.0])
    xs, ys = min_max_downsample(np.arange(10.0), y10, 6)
    assert xs.tolist() == [0, 1, 2, 6, 7, 9] and ys.tolist() == [1, 0, 5, 9, 0, 2]


def test_sweep_table_is_for_people_and_goodput_never_exceeds_served():
    at = load()
    at.button(key="load_run_sweep").click().run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "rate (req/s)" in d.value.columns)
    assert not [c for c in table.columns if "_" in c]  # was rate_per_s, ttft_p95_s, ...
    assert {"p95 TTFT (ms)", "p95 TPOT (ms)", "served (req/s)", "goodput (req/s)"} <= set(table.columns)
    ttft_ms = table["p95 TTFT (ms)"].dropna()
    assert (ttft_ms == ttft_ms.round(0)).all() and ttft_ms.max() > 1  # ms, rounded (was 0.1936… s)
    both = table[["served (req/s)", "goodput (req/s)"]].dropna()
    assert len(both) and (both["goodput (req/s)"] <= both["served (req/s)"] + 1e-9).all()
    assert any("grid" in c.value or "one step" in c.value for c in at.caption)
    labels = [t for f in charts(at) for tr in f["data"] if tr.get("mode") == "markers+text" for t in tr["text"] if t]
    assert labels and len(labels) == len(set(labels))  # once per failed criterion
    assert not [t for t in labels if "req/s" in t or " ms" in t]  # the criterion, not its figures (cut at the edge)


def test_requests_over_max_model_len_are_named_as_the_cause():
    from planner.core.scenario import Scenario
    from planner.core.specs import Deployment
    from planner.core.workload import TrafficSpec

    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["scenario"] = Scenario(
        traffic=TrafficSpec(profile="rag"), deployment=Deployment(max_model_len=8192)
    )
    at.run()
    assert not at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "longer than max_model_len 8,192" in warning and "Engine settings" in warning
    rejected = next(m for m in at.metric if m.label == "Rejected")
    assert int(rejected.value.replace(",", "")) > 0 and "max_model_len 8,192" in rejected.help


def test_the_mean_request_matches_the_sidebar():
    from planner.core.workload import TrafficSpec
    from ui.workload_widgets import lengths_of

    at = load()
    sidebar = lengths_of(TrafficSpec())  # the sidebar's and Capacity's figure: the simulated requests' mean
    text = " ".join(c.value for c in at.caption)
    assert f"Mean prompt {sidebar.prompt_tokens:,} tokens, mean output {sidebar.output_tokens:,} tokens" in text


def test_a_zero_queue_wait_is_shown_as_zero_not_missing():
    import math

    at = load()
    at.slider(key="load_rate").set_value(at.slider(key="load_rate").min).run()  # a quiet server: no request waits
    table = next(d.value for d in at.dataframe if "queue wait" in list(d.value.index))
    p50 = table.loc["queue wait", "p50"]
    assert not math.isnan(p50) and p50 >= 0  # 0 s read as missing ("None") before


def test_the_queue_chart_keeps_the_longest_queue():
    at = load()
    longest = int(next(m.value for m in at.metric if m.label == "Longest queue").replace(",", ""))
    series = charts(at)[0]  # the run's KV use, running batch and queue, in that order
    queue = values(series["data"][2]["y"])
    assert queue.max() == longest  # every-k-th-step thinning drew a flat 0 beside "Longest queue 1"


def test_distinct_prompts_are_served_from_the_prefix_cache():
    # 1,000 requests drawing from 20 prompts: all but the first drawing of each (and repeats admitted while their
    # first copy still prefills) hit the cache, so the page's Prefix hit rate goes from 0% to most of the tokens
    at = load()
    at.selectbox(key="load_profile").set_value("custom").run()
    at.text_input(key="load_prompt_spec").input("fixed:2000").run()
    hit = lambda: next(m.value for m in at.metric if m.label == "Prefix hit rate")  # noqa: E731
    assert not at.exception and hit() == "0.0%"
    at.number_input(key="load_prompt_pool").set_value(20).run()
    assert not at.exception and at.number_input(key="load_prompt_pool").value == 20
    assert float(hit().rstrip("%")) > 80


def test_a_custom_scenario_keeps_the_deployments_prefix_caching_and_its_prompt_pool():
    from planner.core.scenario import Scenario
    from planner.core.workload import TrafficSpec

    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["scenario"] = Scenario(
        traffic=TrafficSpec(profile="custom", prompt="fixed:2000", output="fixed:100", prompt_pool=20)
    )
    at.run()
    assert not at.exception
    assert at.toggle(key="load_prefix_caching").value is True  # vLLM V1's default: the deployment's switch
    assert at.number_input(key="load_prompt_pool").value == 20
    assert float(next(m.value for m in at.metric if m.label == "Prefix hit rate").rstrip("%")) > 80


def test_goodput_is_plotted_over_the_window_served_is_counted_over():
    # issue 56 #4: "Served vs offered" drew the run's goodput (whole makespan, drain included) above served (the
    # steady window's completions) under a caption saying goodput never exceeds served; the sweep row carries the
    # steady window's goodput (planner.capacity.load_sweep.steady_goodput_rps), counted over served's own window
    from ui.charts.load import sweep_throughput

    row = dict(
        rate_per_s=20.0,
        offered_requests_per_s=20.0,
        served_requests_per_s=16.0,
        goodput_requests_per_s=17.5,  # whole makespan: can exceed the steady window's served
        goodput_served_requests_per_s=15.2,
        throughput_tokens_per_s=3000.0,
        sustains=False,
        slo_ttft_s=2.0,
        slo_tpot_s=0.1,
    )
    fig = sweep_throughput([row])
    good = next(t for t in fig.data if t.name == "goodput (met the SLO)")
    served = next(t for t in fig.data if t.name == "served")
    assert list(good.y) == [15.2] and good.y[0] <= served.y[0]
