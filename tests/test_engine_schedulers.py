"""Each engine's scheduling policy takes effect in the serving simulator (planner/sim/serving.py
scheduler_config_for sets data/engines.yaml `policy`; `simulate --json` reports it as `scheduler_policy`)."""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.core.scenario import Scenario, resolve
from planner.sim.serving import result_summary, run_serving, scheduler_config_for
from planner.traffic.generators import open_loop

# The reproducer of the engine review: 300 requests of 4,000 + 800 tokens at 40 req/s on one A100-80GB overload
# the KV pool, so vLLM V1 (which admits on the first chunk) preempts; TensorRT-LLM's default GUARANTEED_NO_EVICT
# reserves prompt + max output at admission and never pauses a started request.
OVERLOAD = "simulate --gpu A100-80GB --rate 40 --num-requests 300 --input-tokens 4000 --output-tokens 800 --json"


def _simulate(engine: str, capsys) -> dict:
    assert main([*OVERLOAD.split(), "--engine", engine]) == 0
    return json.loads(capsys.readouterr().out)


def test_tensorrt_llm_never_preempts_where_vllm_does(capsys):
    trt, vllm = _simulate("tensorrt-llm", capsys), _simulate("vllm", capsys)
    assert (trt["scheduler_policy"], vllm["scheduler_policy"]) == ("guaranteed-no-evict", "vllm-v1")
    assert trt["preemptions"] == 0 and trt["completed"] == 300
    assert vllm["preemptions"] > 0 and vllm["completed"] == 300
    # reserving the whole answer admits fewer at once than vLLM's first-chunk admission
    assert trt["max_running"] < vllm["max_running"]


@pytest.mark.parametrize(
    "engine, policy",
    [
        ("vllm", "vllm-v1"),
        ("tensorrt-llm", "guaranteed-no-evict"),
        ("sglang", "sglang"),
        ("llama.cpp", "static-slots"),
        ("lmdeploy", "guaranteed-no-evict"),
    ],
)
def test_scheduler_config_carries_the_engines_policy(engine, policy):
    assert scheduler_config_for(resolve(Scenario()), engine).admission_policy == policy


def test_llama_cpp_concurrency_never_exceeds_its_slots():
    r = resolve(Scenario(gpu="A100-80GB"))
    wl = open_loop(200, 40.0, "fixed:4000", "fixed:800", seed=0)
    res = run_serving(r, wl, "llama.cpp", max_num_seqs=4, max_num_batched_tokens=2048)  # llama-server -np 4
    s = result_summary(res)
    assert res.config.admission_policy == "static-slots"
    assert s.completed == 200 and s.preemptions == 0
    assert s.max_running == 4  # the 4 slots fill up under this load and never overflow
    assert int(res.steps.num_seqs.max()) <= 4
