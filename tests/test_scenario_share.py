"""Scenarios travel as a URL query string and as a saved JSON file, and both restore exactly."""

from __future__ import annotations

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.core.catalog import get_model
from planner.core.errors import InputError
from planner.core.scenario import Calibration, Scenario
from planner.core.scenario_codec import from_json, from_query, to_json, to_query
from planner.core.specs import Deployment
from planner.core.workload import SLO, TrafficSpec
from planner.latency.efficiency import EfficiencyProfile

CALIBRATION = Calibration(
    engine="vllm",
    gpu_family="ampere",
    profile=EfficiencyProfile(
        matmul_efficiency=0.61234567,
        attention_efficiency=0.4,
        memory_efficiency=0.8,
        step_overhead_s=0.0031,
        allreduce_latency_s=1.25e-5,
        moe_efficiency=0.7,
        num_points=7,
        note="fitted on 7 points",
    ),
)

SCENARIOS = [
    Scenario(),
    Scenario(
        gpu="A100-80GB",
        context_tokens=2000,
        traffic=TrafficSpec(profile="custom", prompt="fixed:1700", output="fixed:300"),
        deployment=Deployment(
            num_gpus=8,
            tensor_parallel_size=4,
            weights="awq-int4",
            kv_cache_dtype="fp8",
            gpu_memory_utilization=0.85,
            max_model_len=16384,
            block_size=32,
            max_num_seqs=64,
            max_num_batched_tokens=4096,
            enforce_eager=True,
            enable_mixed_chunk=True,  # SGLang's switch travels too
            scheduler_recv_interval=10,  # and its receive interval
            mem_fraction_static=0.82,  # and its memory fraction
        ),
        engine="sglang",
    ),
    Scenario(model_spec=get_model("deepseek-ai/DeepSeek-V2-Lite"), gpu="L4", gpu_memory_gb=48),
    # the workload, SLO, target rate and the user's calibration travel too (issue 16)
    Scenario(
        model="meta-llama/Llama-3.1-70B",
        gpu="A100-80GB",
        deployment=Deployment(num_gpus=4, tensor_parallel_size=4),
        traffic=TrafficSpec(
            profile="custom", prompt="fixed:2000", output="fixed:300", seed=3, num_requests=600, prompt_pool=100
        ),
        slo=SLO(ttft_p95_s=1.5, tpot_p95_s=0.05, e2e_p99_s=30.5),
        target_rate=60,
        headroom=1.35,
        calibration=CALIBRATION,
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_query_round_trip_is_exact(scenario):
    assert from_query(to_query(scenario)) == scenario


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_json_round_trip_is_exact(scenario):
    assert from_json(to_json(scenario)) == scenario


@pytest.mark.parametrize(
    "params, field",
    [
        ({"tp": "two"}, "tp"),
        ({"util": "1.5"}, "util"),
        ({"gpus": "3", "tp": "2"}, "tp"),
        ({"eager": "perhaps"}, "eager"),
        ({"spec": "{not json"}, "spec"),
        ({"ctx": "-1"}, "ctx"),
        ({"rate": "-5"}, "rate"),
        ({"rate": "lots"}, "rate"),
        ({"profile": "video"}, "profile"),
        ({"ttft": "0"}, "ttft"),
        ({"headroom": "0.5"}, "headroom"),
        ({"cal": "vllm~ampere~notbase64!"}, "cal"),
        ({"cal": "vllm"}, "cal"),
        ({"pc": "perhaps"}, "pc"),
        ({"n": "many"}, "n"),
    ],
)
def test_bad_query_names_the_parameter(params, field):
    with pytest.raises(InputError) as err:
        from_query(params)
    assert field in err.value.field


@pytest.mark.parametrize(
    "text, reason",
    [
        ("{", "not valid JSON"),
        ("[]", "not a servingplan scenario"),
        ('{"gpu": "H100-SXM"}', "not a servingplan scenario"),
        ('{"servingplan_scenario": 1, "deployment": {"tensor_parallel_size": 0}}', "tensor_parallel_size"),
        ("x" * 300_000, "at most"),
    ],
)
def test_bad_scenario_json_is_rejected_with_the_reason(text, reason):
    with pytest.raises(InputError) as err:
        from_json(text)
    assert reason in str(err.value)


def _app_with_query(**params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def test_opening_a_shared_url_restores_the_scenario():
    expected = SCENARIOS[1]
    at = _app_with_query(**to_query(expected))
    assert not at.exception and not at.error
    assert at.session_state["scenario"] == expected
    assert at.session_state["sb_gpu"] == "A100-80GB" and at.session_state["sb_tp"] == 4


def test_shared_custom_model_restores_exactly():
    expected = SCENARIOS[2]
    at = _app_with_query(**to_query(expected))
    assert not at.exception and not at.error
    assert at.session_state["scenario"].model_spec == expected.model_spec


def test_the_url_follows_the_scenario():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    at.session_state["sb_gpu"] = "L40S"
    at.run()
    assert at.query_params["gpu"] in ("L40S", ["L40S"])


def test_a_bad_shared_url_is_reported_and_the_defaults_stay():
    at = _app_with_query(tp="3")
    assert any("Shared link ignored" in e.value and "tp" in e.value for e in at.error)
    assert at.session_state["scenario"].deployment.tensor_parallel_size == 1


def test_calibration_travels_compactly():
    q = to_query(SCENARIOS[-1])
    assert len(q["cal"]) < 250 and from_query(q).calibration == CALIBRATION


def test_a_link_from_before_the_workload_existed_still_loads():
    old = {"model": "meta-llama/Llama-3.1-8B", "gpu": "A100-80GB", "tp": "1", "ctx": "4096"}
    s = from_query(old)
    assert s.context_tokens == 4096 and s.slo == SLO() and s.target_rate == 50
    assert s.traffic == TrafficSpec(profile="custom", prompt="fixed:3796", output="fixed:300")


def test_a_shared_url_restores_workload_slo_and_calibration():
    expected = SCENARIOS[-1]
    at = _app_with_query(**to_query(expected))
    assert not at.exception and not at.error
    got = at.session_state["scenario"]
    assert got.model_copy(update={"calibration": None, "context_tokens": None}) == expected.model_copy(
        update={"calibration": None}
    )
    assert got.context_tokens == 2300  # prompt + output: the one request length every page uses
    assert got.calibration.profile == CALIBRATION.profile
    assert at.session_state["sb_profile"] == "custom" and at.session_state["sb_prompt"] == 2000
    assert at.session_state["sb_prompt_pool"] == 100  # the aiperf-style prompt pool travels (scenario_codec "pool")


def test_floats_travel_exactly():
    s = Scenario(slo=SLO(ttft_p95_s=1.2345678, tpot_p95_s=0.0123456789), target_rate=12.3456789)
    assert from_query(to_query(s)) == s


def test_a_shared_link_carries_the_page_inputs_that_change_the_answer():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for k, v in {
        **to_query(SCENARIOS[-1]),
        "latency_mode": "Static batch (primer §5)",
        "latency_batch": "24",
        "latency_engine": "tensorrt-llm",
        "cap_min_replicas": "3",
    }.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception and not at.error
    assert at.session_state["latency_mode"] == "Static batch (primer §5)"
    assert at.session_state["latency_batch_wanted"] == 24 and at.session_state["cap_min_replicas"] == 3
    assert at.session_state["latency_engine"] == "tensorrt-llm"


def test_bad_page_inputs_in_a_link_are_named_and_skipped():
    at = _app_with_query(**to_query(Scenario()), latency_batch="many", cap_amplitude="7")
    errors = " ".join(e.value for e in at.error)
    assert "latency_batch ignored" in errors and "cap_amplitude ignored" in errors
    assert at.session_state["scenario"] == at.session_state["scenario"].model_copy()  # the scenario still loads


def test_the_url_carries_the_page_inputs(monkeypatch):
    """page_query (the share box adds it to the scenario's query; AppTest reruns only the page after the first
    run, so the frame's URL update is checked in the browser)."""
    import ui.page_inputs as pi

    state = {"latency_mode": "Static batch (primer §5)", "latency_batch": 24, "cap_amplitude": 0.35, "other": 1}
    monkeypatch.setattr(pi.st, "session_state", state)
    q = pi.page_query()
    assert q == {"latency_mode": "Static batch (primer §5)", "latency_batch": "24", "cap_amplitude": "0.35"}
    restored: dict = {}
    monkeypatch.setattr(pi.st, "session_state", restored)
    assert pi.restore_page_inputs(q) == []
    assert restored == {"latency_mode": "Static batch (primer §5)", "latency_batch_wanted": 24, "cap_amplitude": 0.35}


def test_a_file_saved_before_the_workload_existed_keeps_its_request_length():
    s = from_json('{"servingplan_scenario": 1, "gpu": "L40S", "context_tokens": 4096}')
    assert s.context_tokens == 4096 and s.traffic.prompt == "fixed:3796" and s.traffic.output == "fixed:300"
    assert from_json(to_json(SCENARIOS[0])) == SCENARIOS[0]  # a current file is read as saved


def test_a_calibration_bomb_is_not_inflated():
    import base64
    import zlib

    bomb = base64.urlsafe_b64encode(zlib.compress(b"{" + b" " * 50_000_000 + b"}", 9)).decode().rstrip("=")
    assert len(bomb) < 100_000
    with pytest.raises(InputError) as err:
        from_query({"cal": f"vllm~ampere~{bomb}"})
    assert err.value.field == "URL parameter cal"


def test_an_unknown_engine_in_a_link_is_named():
    with pytest.raises(InputError) as err:
        from_query({"engine": "warp-drive"})
    assert err.value.field == "URL parameter engine"


def test_a_shared_link_keeps_its_engine():
    # the engine has no sidebar widget: before, the sidebar rebuilt the scenario with the default engine (vllm)
    s = Scenario(engine="sglang")
    at = _app_with_query(**to_query(s))
    assert not at.exception and not at.error
    assert at.session_state["scenario"].engine == "sglang"


def test_a_link_with_impossible_fitted_constants_is_ignored_naming_the_constant():
    # the core keeps the constants as a mapping; planner.latency.calibration checks them when the link is applied
    bad = CALIBRATION.model_copy(update={"profile": {**CALIBRATION.profile, "memory_efficiency": 1.7}})
    at = _app_with_query(**to_query(Scenario(calibration=bad)))
    assert any("Shared link ignored" in e.value and "memory_efficiency" in e.value for e in at.error)
    assert at.session_state["scenario"].calibration is None
