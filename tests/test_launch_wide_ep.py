"""Wide expert parallelism in vLLM's and TensorRT-LLM's launch lines: DeepEP's kernels, (dual/two-)batch overlap and
EPLB with redundant experts under each engine's own names, every flag one its parser (or config schema) knows at the
pinned commits of planner/core/engine_flags.py. SGLang's are tested in tests/test_expert_parallel.py."""

from __future__ import annotations

import json

import pytest
import yaml

from planner.capacity.launch import launch_plan
from planner.core.engine_flags import (
    KNOWN_FLAGS,
    SOURCES,
    TRTLLM_MOE_BACKENDS,
    TRTLLM_YAML_KEYS,
    VLLM_ALL2ALL_BACKENDS,
    VLLM_EPLB_CONFIG_KEYS,
    VLLM_WIDE_EP_SOURCE,
)
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment

V3 = "deepseek-ai/DeepSeek-V3"


def _wide_ep(mode: str = "low_latency", **changes):
    # SGLang's LMSYS decode layout: attention DP 72 = EP 72 on H100, DeepEP, two-batch overlap, EPLB, 32 redundant
    dep = dict(
        num_gpus=72,
        tensor_parallel_size=1,
        data_parallel_size=72,
        enable_expert_parallel=True,
        weights="fp8",
        max_model_len=8192,
        moe_a2a_backend="deepep",
        deepep_mode=mode,
        enable_two_batch_overlap=True,
        enable_eplb=True,
        ep_num_redundant_experts=32,
    )
    return resolve(Scenario(model=V3, gpu="H100-SXM", deployment=Deployment(**{**dep, **changes})))


def _arg(argv, flag):
    return argv[argv.index(flag) + 1]


@pytest.mark.parametrize("mode, backend", [("low_latency", "deepep_low_latency"), ("normal", "deepep_high_throughput")])
def test_vllm_wide_ep_flags_are_its_parsers(mode, backend):
    plan = launch_plan(_wide_ep(mode), "vllm")
    for c in plan.commands:
        assert set(c.flags) <= KNOWN_FLAGS["vllm"], f"{VLLM_WIDE_EP_SOURCE}: {set(c.flags) - KNOWN_FLAGS['vllm']}"
        argv = c.argv
        assert "--enable-expert-parallel" in argv and "--enable-dbo" in argv and "--enable-eplb" in argv
        assert _arg(argv, "--all2all-backend") == backend and backend in VLLM_ALL2ALL_BACKENDS
        eplb = json.loads(_arg(argv, "--eplb-config"))
        assert eplb == {"num_redundant_experts": 32} and set(eplb) <= VLLM_EPLB_CONFIG_KEYS


def test_vllm_redundant_experts_switch_eplb_on_as_its_validator_demands():
    # vllm/config/parallel.py: "num_redundant_experts is set to 32 but EPLB is not enabled" otherwise
    argv = launch_plan(_wide_ep(enable_eplb=False), "vllm").commands[0].argv
    assert "--enable-eplb" in argv and "--eplb-config" in argv
    off = dict(moe_a2a_backend="none", enable_two_batch_overlap=False, enable_eplb=False, ep_num_redundant_experts=0)
    plain = launch_plan(_wide_ep(**off), "vllm").commands[0].argv
    assert not {"--all2all-backend", "--enable-dbo", "--enable-eplb", "--eplb-config"} & set(plain)


def _yaml_keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _yaml_keys(v)}
    return set()


def test_trtllm_wide_ep_is_moe_config_wideep_with_its_load_balancer_slots():
    plan = launch_plan(_wide_ep(), "tensorrt-llm")
    assert set(plan.commands[0].flags) <= KNOWN_FLAGS["tensorrt-llm"], SOURCES["tensorrt-llm"]
    options = yaml.safe_load(plan.files["extra-llm-api-options.yaml"])
    assert _yaml_keys(options) <= TRTLLM_YAML_KEYS
    assert options["enable_attention_dp"] is True and options["moe_expert_parallel_size"] == 72
    moe = options["moe_config"]
    assert moe["backend"] == "WIDEEP" and moe["backend"] in TRTLLM_MOE_BACKENDS
    # slots = 256 routed experts + 32 redundant = 288 (the wide-EP example's own figure); online EPLB
    assert moe["load_balancer"] == {"num_slots": 288, "layer_updates_per_iter": 1}
    assert any("two-batch overlap" in n for n in plan.notes)  # not passed, said so


def test_trtllm_without_wide_ep_asks_no_moe_config():
    off = dict(moe_a2a_backend="none", enable_two_batch_overlap=False, enable_eplb=False)
    options = yaml.safe_load(launch_plan(_wide_ep(**off), "tensorrt-llm").files["extra-llm-api-options.yaml"])
    assert options["moe_config"]["load_balancer"]["layer_updates_per_iter"] == 0  # 32 redundant: offline placement
    none = launch_plan(_wide_ep(**off, ep_num_redundant_experts=0), "tensorrt-llm")
    assert "moe_config" not in yaml.safe_load(none.files["extra-llm-api-options.yaml"])


def test_xpyd_roles_get_deepeps_kernels_for_their_phase():
    # SGLang's auto mode picks normal kernels for prefill and low-latency ones for decode; vLLM has no auto, so an
    # xPyD layout's lines say it per role: deepep_high_throughput for prefill, deepep_low_latency for decode
    from planner.capacity.disagg_layout import PoolLayout
    from planner.capacity.launch_disagg import disagg_launch_plan

    dep = Deployment(weights="fp8", max_model_len=8192, moe_a2a_backend="deepep", deepep_mode="auto")
    for engine, flag, modes in (
        ("vllm", "--all2all-backend", ("deepep_high_throughput", "deepep_low_latency")),
        ("sglang", "--deepep-mode", ("normal", "low_latency")),
    ):
        s = Scenario(model=V3, gpu="H200", deployment=dep, engine=engine)
        plan = disagg_launch_plan(s, engine, PoolLayout(1, 1, 8, 8), PoolLayout(1, 1, 8, 8))
        by_role = {c.role: c.argv for c in plan.commands}
        assert (_arg(by_role["prefill"], flag), _arg(by_role["decode"], flag)) == modes
