"""The resolved scenario carries its engine (and its traffic, SLO, target and headroom): no calculation below the CLI
and the UI picks an engine by default, so forgetting to pass one can no longer give vLLM silently."""

import importlib
import inspect
import pkgutil

import pytest

import planner
from planner.accuracy.published_points import load_points
from planner.core.engine import engine_for, engines, get_engine
from planner.core.errors import InputError
from planner.core.scenario import SLO, Scenario, TrafficSpec, resolve, with_engine
from planner.latency.efficiency import load_efficiency
from planner.latency.perf_model import PerfModel
from planner.sim.continuous import continuous

EDGES = ("planner.cli", "planner.__main__")  # where a default engine may live (argparse's --engine)


def _functions(module):
    for name, obj in vars(module).items():
        if inspect.isfunction(obj) and obj.__module__ == module.__name__:
            yield name, obj
        elif inspect.isclass(obj) and obj.__module__ == module.__name__:
            for attr, member in vars(obj).items():
                if inspect.isfunction(member):
                    yield f"{name}.{attr}", member


def engine_defaults_below_the_edges() -> list[str]:
    """Every function of planner/ (outside the CLI) whose `engine` parameter has a default."""
    found = []
    for info in pkgutil.walk_packages(planner.__path__, "planner."):
        if info.name.startswith(EDGES):
            continue
        module = importlib.import_module(info.name)
        for name, fn in _functions(module):
            param = inspect.signature(fn).parameters.get("engine")
            if param is not None and param.default is not inspect.Parameter.empty:
                found.append(f"{info.name}.{name}")
    return found


def test_no_planner_function_below_the_edges_defaults_the_engine():
    assert engine_defaults_below_the_edges() == []


def test_the_check_sees_a_default_engine(monkeypatch):
    import planner.memory.fixes as fixes

    def priced(r, engine: str = "vllm"):  # the bug class this test exists for
        return engine

    monkeypatch.setattr(fixes, "priced", priced, raising=False)
    priced.__module__ = fixes.__name__
    assert engine_defaults_below_the_edges() == ["planner.memory.fixes.priced"]


def test_resolved_keeps_engine_traffic_slo_target_and_headroom():
    traffic = TrafficSpec(profile="code", num_requests=500, seed=7)
    slo = SLO(ttft_p95_s=1.5, tpot_p95_s=0.04)
    r = resolve(Scenario(engine="tensorrt-llm", traffic=traffic, slo=slo, target_rate=12.0, headroom=1.5))
    assert r.engine is engines()["tensorrt-llm"]
    assert (r.traffic, r.slo, r.target_rate, r.headroom) == (traffic, slo, 12.0, 1.5)


def test_the_engine_flows_without_being_passed():
    """The step-time model and the simulator price with the scenario's engine; no argument names it."""
    s = Scenario(engine="tensorrt-llm", deployment={"max_model_len": 4096})
    assert PerfModel(resolve(s)).choice.engine == "tensorrt-llm"
    assert continuous(resolve(s), 2, 256, 16).engine == "tensorrt-llm"
    other = with_engine(resolve(s), "sglang")
    assert PerfModel(other).choice.engine == "sglang" and other.deployment == resolve(s).deployment


def test_every_engine_names_its_version_and_source():
    for e in engines().values():
        assert e.version and e.version_source and e.source, e.id
        assert set(e.kernel_path) == {"fp16_accumulate", "hopper_wgmma", "issue_bound_gemv"}
    # fitted on aiconfigurator's and InferenceMAX's 1.x rows; the v0.9.0 tables calibrate tensorrt-llm-0.9
    assert engines()["tensorrt-llm"].version == "1.0-1.3 (PyTorch backend)"
    assert engines()["sglang"].version == "0.5.1-0.5.9"


def test_a_superseded_major_version_runs_its_own_profile_under_its_engines_rules():
    """TensorRT-LLM 0.9.0's tables and vLLM 0.6's (V0) points calibrate their own profiles, not 1.x's and V1's."""
    by_engine = {}
    for p in load_points():
        by_engine.setdefault(p.engine, set()).add(p.id)
    assert len(by_engine["tensorrt-llm-0.9"]) == 43 and "tensorrt-llm" not in by_engine
    assert "vllm-0.6" in by_engine and "vllm" in by_engine  # V1's 0.10.0 (ROCm) points stay vLLM's
    old, trt = engine_for("tensorrt-llm-0.9"), get_engine("tensorrt-llm")
    assert (old.memory, old.policy, old.allreduce, old.version) == (trt.memory, trt.policy, trt.allreduce, "0.9.0")
    table = load_efficiency()
    assert table["tensorrt-llm-0.9"]["default"].num_points == 43
    assert table["tensorrt-llm"]["default"].note.startswith("shared constants fitted on 0 points and ")


def test_a_calibration_only_profile_runs_vllms_rules_under_its_own_name():
    e = engine_for("splitwise")
    vllm = get_engine("vllm")
    assert (e.id, e.memory, e.policy, e.allreduce) == ("splitwise", vllm.memory, vllm.policy, vllm.allreduce)
    assert PerfModel(resolve(Scenario(engine="splitwise", gpu="A100-80GB"))).choice.source_key.startswith("splitwise")
    with pytest.raises(InputError) as err:
        engine_for("no-such-engine")
    assert err.value.field == "engine"
