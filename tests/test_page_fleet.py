"""Headless test of app_pages/fleet.py: the router comparison and one router's replicas."""

from __future__ import annotations

from conftest import ROOT
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "app_pages" / "fleet.py")


def load() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["fleet_num"] = 200  # a small run keeps the test short
    return at.run()


def test_first_render_compares_every_router_and_shows_the_replicas():
    at = load()
    assert not at.exception
    routers = at.dataframe[0].value["router"].tolist()
    assert routers == ["round-robin", "least-outstanding", "least-kv", "prefix-aware"]
    assert len(at.dataframe[1].value) == 4  # four replicas by default
    assert {"p95 TTFT (ms)", "Prefix hit rate", "Completed"} <= {m.label for m in at.metric}
    assert [m.value for m in at.metric if m.label == "Completed"] == ["200"]
    # the shared 2,000-token system prompt draws every request to the replica that holds it: the page says so
    assert any("Hot spot" in w.value for w in at.warning)


def test_choosing_a_router_and_a_replica_count_reruns():
    at = load()
    at.number_input(key="fleet_replicas").set_value(2)
    at.selectbox(key="fleet_router").set_value("round-robin")
    at.run()
    assert not at.exception
    frame = at.dataframe[1].value
    assert frame["requests"].tolist() == [100, 100]  # round robin: even by construction


def test_bad_input_is_one_sentence_not_a_traceback():
    at = load()
    at.number_input(key="fleet_later").set_value(1)
    at.number_input(key="fleet_system").set_value(200_000)  # longer than max_model_len: every turn is rejected
    at.run()
    assert not at.exception
    assert [m.value for m in at.metric if m.label == "Completed"] == ["0"]
    assert [m.value for m in at.metric if m.label == "p95 TTFT (ms)"] == ["–"]


def test_sizing_the_fleet_under_each_router_shows_replicas_and_dollars():
    at = load()
    at.number_input(key="fleet_replicas").set_value(1)
    at.button(key="fleet_size").click().run()
    assert not at.exception and not at.error
    sized = at.dataframe[2].value
    assert sized["router"].tolist() == ["round-robin", "least-outstanding", "least-kv", "prefix-aware"]
    found = sized.dropna(subset=["replicas"])
    assert (found["replicas"] >= 1).all() and (found["usd_per_hour"] > 0).all()
    if len(found) < len(sized):  # 200 turns of 50 sessions with 5 s think times may not offer the rate: said
        assert any("An empty count" in c.value for c in at.caption)


def test_offload_on_against_off_sizes_both_and_says_whether_it_pays():
    at = load()
    at.number_input(key="fleet_think").set_value(30.0)  # turns come back after their blocks may have left the GPU
    at.checkbox(key="fleet_offload_go").check()
    at.run()
    assert not at.exception
    table = at.dataframe[2].value
    assert table[""].tolist() == ["off", "on"]
    assert table["prefix_hit_rate"].tolist()[1] >= 0
    verdicts = [m.value for m in [*at.success, *at.info] if "ffload" in m.value]
    assert verdicts and verdicts[0].startswith("Offload")


def test_a_stopped_run_waits_for_the_button_then_runs():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["fleet_num"] = 300  # not run by the tests above: not among the finished runs
    at.session_state["fleet_stop_stopped"] = True  # what the Stop button's callback leaves (ui/long_run.py)
    at.run()
    assert not at.exception
    assert not at.dataframe  # the same run does not start again by itself
    assert any("stopped before it finished" in i.value for i in at.info)
    at.button(key="fleet_run").click().run()
    assert not at.exception
    assert [m.value for m in at.metric if m.label == "Completed"] == ["300"]
