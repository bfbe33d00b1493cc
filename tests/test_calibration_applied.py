"""A user's calibration (fitted on the Validation page) travels in the scenario and changes every prediction."""

from __future__ import annotations

from apptest_helpers import app

from planner.core.scenario import Calibration, Scenario, resolve, with_engine
from planner.core.scenario_codec import from_json, to_json
from planner.latency.efficiency import choose_profile
from planner.latency.metrics import estimate
from planner.latency.perf_model import PerfModel

BASE = choose_profile("vllm", "hopper").profile
SLOW = BASE.model_copy(update={"memory_efficiency": BASE.memory_efficiency / 2, "step_overhead_s": 0.005})
CAL = Calibration(engine="vllm", gpu_family="hopper", profile=SLOW, source="my_bench.json")


def test_perf_model_uses_the_calibration_for_its_engine_and_family():
    r = resolve(Scenario(calibration=CAL))
    pm = PerfModel(with_engine(r, "vllm"))
    assert pm.eff.memory_efficiency == SLOW.memory_efficiency
    assert "your calibration" in pm.choice.source_key and pm.choice.status == "calibrated"
    assert PerfModel(with_engine(r, "tensorrt-llm")).eff != pm.eff  # another engine keeps the catalogue's constants
    other_gpu = resolve(Scenario(gpu="A100-80GB", calibration=CAL))
    assert PerfModel(with_engine(other_gpu, "vllm")).eff == choose_profile("vllm", "ampere").profile


def test_estimates_follow_the_calibration():
    plain = estimate(resolve(Scenario()), 8, 1000, 200)
    calibrated = estimate(resolve(Scenario(calibration=CAL)), 8, 1000, 200)
    assert calibrated.tpot_s > plain.tpot_s * 1.5  # half the bandwidth efficiency, more overhead


def test_a_saved_scenario_keeps_its_calibration():
    s = Scenario(calibration=CAL)
    assert from_json(to_json(s)) == s


def test_the_sidebar_puts_the_stored_calibration_into_the_scenario():
    at = app(
        calibration_profile=SLOW,
        calibration_target={"engine": "vllm", "gpu_family": "hopper", "source": "my_bench.json"},
    )
    assert not at.exception
    assert at.session_state["scenario"].calibration == CAL
