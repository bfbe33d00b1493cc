"""Each engine's scheduling policy takes effect in the serving simulator (planner/sim/serving.py
scheduler_config_for sets data/engines.yaml `policy`; `simulate --json` reports it as `scheduler_policy`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.cli import main
from planner.core.scenario import Scenario, resolve
from planner.sim.config import ConstantStepCost, LinearStepCost, scheduler_config
from planner.sim.policies import POLICY_NAMES
from planner.sim.records import REJECT_TOO_LONG
from planner.sim.run_summary import result_summary
from planner.sim.serving import Replica as ServingReplica
from planner.sim.serving import run_serving, scheduler_config_for
from planner.sim.settings import ServerSettings
from planner.sim.simulator import Replica, simulate
from planner.traffic.generators import closed_loop, open_loop
from planner.traffic.workload import Workload

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
        ("lmdeploy", "turbomind"),
    ],
)
def test_scheduler_config_carries_the_engines_policy(engine, policy):
    assert scheduler_config_for(resolve(Scenario(engine=engine))).admission_policy == policy


def test_llama_cpp_concurrency_never_exceeds_its_slots():
    # llama.cpp allocates slots × max_model_len cells at start: 4 × 8,192 here (4 × 131,072 would not fit)
    r = resolve(Scenario(gpu="A100-80GB", engine="llama.cpp", deployment={"max_model_len": 8192}))
    wl = open_loop(200, 40.0, "fixed:4000", "fixed:800", seed=0)
    settings = ServerSettings.of(r, max_num_seqs=4, max_num_batched_tokens=2048)  # llama-server -np 4
    res = run_serving(ServingReplica(r, settings), wl)
    s = result_summary(res)
    assert res.config.admission_policy == "static-slots"
    assert s.completed == 200 and s.preemptions == 0
    assert s.max_running == 4  # the 4 slots fill up under this load and never overflow
    assert int(res.steps.num_seqs.max()) <= 4


# --- hand-countable cases: a pool of 10 blocks of 4 tokens, every step takes 1 s (step k runs from t = k to k + 1)
def _workload(prompts, outputs) -> Workload:
    n = len(prompts)
    return Workload(np.zeros(n), np.asarray(prompts), np.asarray(outputs))


def _run(wl: Workload, policy: str, **kw):
    cfg = dict(
        num_gpu_blocks=10,
        block_size=4,
        max_num_seqs=8,
        max_num_batched_tokens=64,
        admission_policy=policy,
        enable_prefix_caching=False,
    )
    return simulate(wl, dict(cfg, **kw), ConstantStepCost(1.0)).requests


THREE = ([8, 8, 8], [8, 8, 8])  # three requests of 8 prompt + 8 output tokens at t = 0


def test_vllm_starts_all_three_and_preempts_the_newest_when_the_pool_runs_out():
    # step 0: 3 prompts of 8 tokens = 6 blocks; step 1: each decodes position 8 (3rd block each) -> 9 blocks;
    # step 5: position 12 needs a 4th block each, 1 is free -> request 2 (the newest) is preempted (recomputed,
    # no prefix caching); 0 and 1 finish at the end of step 7; request 2 restarts at step 8 with its 13 known
    # tokens, samples token 6 then, 7 and 8 at steps 9 and 10.
    r = _run(_workload(*THREE), "vllm-v1")
    assert r.first_scheduled_s.tolist() == [0.0, 0.0, 0.0]
    assert r.num_preemptions.tolist() == [0, 0, 1]
    assert r.finish_s.tolist() == [8.0, 8.0, 11.0]


@pytest.mark.parametrize(
    "policy, kw", [("guaranteed-no-evict", {}), ("sglang", {}), ("static-slots", {"max_num_seqs": 2})]
)
def test_reserving_policies_hold_the_third_request_back_until_the_first_two_finish(policy, kw):
    # guaranteed-no-evict: each reserves ceil((8 + 8) / 4) = 4 blocks, 4 + 4 + 4 > 10. SGLang: the third needs
    # 8 + 8 = 16 tokens beside 2 x 8 x 0.7 = 11.2 held back, 27.2 > 24 free tokens (6 blocks). static-slots: 2 slots
    # of 5 blocks. Either way the third starts at step 8, when the first two have finished, and nobody is preempted.
    r = _run(_workload(*THREE), policy, **kw)
    assert r.first_scheduled_s.tolist() == [0.0, 0.0, 8.0]
    assert r.first_token_s.tolist() == [1.0, 1.0, 9.0]
    assert r.finish_s.tolist() == [8.0, 8.0, 16.0]
    assert r.num_preemptions.sum() == 0


def test_static_slots_refuse_a_request_longer_than_a_slot():
    r = _run(_workload([8, 16], [8, 8]), "static-slots", max_num_seqs=2)  # a slot holds 5 x 4 = 20 tokens
    assert r.rejected.tolist() == [0, REJECT_TOO_LONG] and r.finish_s[0] == 8.0


@pytest.mark.parametrize(
    "policy, chunks", [("vllm-v1", [10, 2]), ("guaranteed-no-evict", [8, 4]), ("max-utilization", [8, 4])]
)
def test_tensorrt_llm_cuts_a_context_to_whole_blocks(policy, chunks):
    # a 12-token prompt, 10 tokens per step: vLLM computes 10 + 2; TensorRT-LLM's FCFS chunking rounds a partial
    # chunk down to the chunk unit (tokens_per_block = 4): 8 + 4
    res = simulate(
        _workload([12], [2]),
        dict(num_gpu_blocks=10, block_size=4, max_num_seqs=8, max_num_batched_tokens=10, admission_policy=policy),
        ConstantStepCost(1.0),
    )
    assert res.steps.new_tokens.tolist() == [*chunks, 1]


def test_turbomind_starts_a_request_only_when_its_whole_prompt_fits():
    # 8 blocks, 8 tokens per step, two prompts of 20 tokens (5 blocks) + 4 output tokens. vLLM starts request 1
    # with request 0's last 4-token chunk at step 2, then preempts it twice for lack of blocks; TurboMind waits
    # until 5 blocks are free: request 0 holds 6 blocks until it finishes at the end of step 5.
    wl = _workload([20, 20], [4, 4])
    kw = dict(num_gpu_blocks=8, max_num_batched_tokens=8)
    vllm, tm = _run(wl, "vllm-v1", **kw), _run(wl, "turbomind", **kw)
    assert vllm.first_scheduled_s.tolist() == [0.0, 2.0] and vllm.num_preemptions.tolist() == [0, 2]
    assert tm.first_scheduled_s.tolist() == [0.0, 6.0] and tm.num_preemptions.tolist() == [0, 0]
    assert tm.finish_s.tolist() == [6.0, 12.0]


def test_a_policy_that_never_preempts_raises_if_it_would():
    rep = Replica(
        _workload(*THREE),
        scheduler_config(num_gpu_blocks=10, block_size=4, admission_policy="static-slots"),
        ConstantStepCost(1.0),
        0,
    )
    with pytest.raises(RuntimeError, match="never preempts"):
        rep._preempt(0)


# --- laws every policy obeys, on an overloaded replica (200 blocks of 16 tokens, 300 requests at 50 req/s) -------
LOAD = open_loop(300, 50.0, "uniform:50,400", "uniform:50,300", seed=1)


def _loaded(policy: str):
    cfg = dict(num_gpu_blocks=200, block_size=16, max_num_seqs=16, max_num_batched_tokens=512, admission_policy=policy)
    return simulate(LOAD, cfg, LinearStepCost(0.01, 2e-5, 1e-6))


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_every_request_is_finished_or_refused_once_and_every_token_computed(policy):
    res = _loaded(policy)
    r = res.requests
    assert (r.finished ^ (r.rejected > 0)).all()  # conservation of requests
    done = r.finished
    computed = (r.prompt_tokens + r.output_tokens - 1)[done].sum() + r.recomputed_tokens.sum()
    assert res.steps.new_tokens.sum() == computed  # conservation of tokens (no prefix hits in this workload)
    if policy in ("guaranteed-no-evict", "static-slots"):
        assert r.num_preemptions.sum() == 0


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_littles_law_holds_on_the_step_records(policy):
    # L = lambda W: the time-average of requests in the system (running + waiting, from the step records) equals
    # the sum of the requests' times in the system over the run. Arrivals join at the next step boundary, so the
    # step records miss up to one step per request: within 2 % here (steps of ~10-30 ms, W of seconds).
    res = _loaded(policy)
    r, s = res.requests, res.steps
    served = r.finished
    in_system = float(((s.num_running + s.num_waiting) * s.duration_s).sum())
    sojourn = float((r.finish_s - r.arrival_s)[served].sum())
    assert in_system == pytest.approx(sojourn, rel=0.02)


def test_sglang_lpm_admits_the_longest_cached_prefix_first():
    # request 0 publishes prefix blocks a, b; requests 1 (no shared prefix) and 2 (prefix a, b) then wait behind a
    # full batch (max_num_seqs = 1): fcfs starts 1 before 2, lpm starts 2 first (2 cached entries against 0)
    ids = (np.array([1, 2]), np.array([7, 8]), np.array([1, 2]))
    wl = Workload(
        np.array([0.0, 0.5, 0.5]), np.array([32, 32, 32]), np.array([4, 4, 4]), prefix_ids=ids, prefix_block_tokens=16
    )
    cfg = dict(num_gpu_blocks=40, block_size=16, max_num_seqs=1, max_num_batched_tokens=64)
    fcfs = simulate(wl, dict(cfg, admission_policy="sglang"), ConstantStepCost(1.0)).requests
    lpm = simulate(wl, dict(cfg, admission_policy="sglang-lpm"), ConstantStepCost(1.0)).requests
    assert fcfs.first_scheduled_s[1] < fcfs.first_scheduled_s[2]
    assert lpm.first_scheduled_s[2] < lpm.first_scheduled_s[1]
    assert lpm.prefix_hit_tokens[2] > 0


@pytest.mark.parametrize(
    "policy, mixed, finish_0", [("sglang", False, 5.0), ("sglang", True, 4.0), ("vllm-v1", False, 4.0)]
)
def test_sglang_runs_a_prefill_batch_first_and_apart_from_decode(policy, mixed, finish_0):
    # steps of 1 s. Request 0 (8 + 4 tokens) is prefilled in [0, 1) and decodes in [1, 2); request 1 arrives at
    # 1.5 and joins the queue at t = 2. SGLang (no --enable-mixed-chunk) runs its prefill alone in [2, 3): request 0
    # is paused and samples tokens 3 and 4 in [3, 5), finishing at 5. vLLM (and SGLang with mixed chunks) decodes
    # request 0 beside the prompt in [2, 3), finishing at 4. Request 1 gets its first token at 3 and finishes at 6
    # either way.
    wl = Workload(np.array([0.0, 1.5]), np.array([8, 8]), np.array([4, 4]))
    cfg = dict(num_gpu_blocks=40, block_size=16, max_num_seqs=8, max_num_batched_tokens=64, admission_policy=policy)
    res = simulate(wl, dict(cfg, enable_mixed_chunk=mixed), ConstantStepCost(1.0))
    r = res.requests
    assert r.first_token_s.tolist() == [1.0, 3.0]
    assert r.finish_s.tolist() == [finish_0, 6.0]
    # SGLang's prefill step carries one sequence (the prompt), vLLM's mixed step two
    assert res.steps.num_seqs.tolist()[2] == (1 if policy == "sglang" and not mixed else 2)


def test_sglang_keeps_equal_closed_loop_clients_in_waves():
    # 3 zero-think clients, 8 + 4 tokens, a budget of one prompt a step, steps of 1 s. Each round SGLang prefills
    # the three prompts in three steps while the decodes wait (first tokens at 1, 2, 3), then decodes all three in
    # three steps: they finish together at 6 and come back together, so round 2 repeats it (7, 8, 9; finish 12)
    wl = closed_loop(3, 6, 0.0, "fixed:8", "fixed:4", "fixed")
    cfg = dict(num_gpu_blocks=40, block_size=16, max_num_seqs=3, max_num_batched_tokens=8, admission_policy="sglang")
    r = simulate(wl, cfg, ConstantStepCost(1.0)).requests
    assert (r.first_token_s - r.arrival_s).tolist() == [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]
    assert r.finish_s.tolist() == [6.0, 6.0, 6.0, 12.0, 12.0, 12.0]


def test_enable_mixed_chunk_reaches_the_scheduler_from_the_cli(capsys):
    # --enable-mixed-chunk (SGLang's own name) reaches the scheduler: vllm bench serve's 32 streams of 2,000 + 200
    # tokens, spread by --random-range-ratio 0.5 (prompts of 1,000-3,000 tokens, replies of 100-300) so that the
    # streams drift apart and prompts arrive among decodes (equal lengths started together stay one wave, whose
    # prompts never meet a decode). Without it every prefill batch (at most 8,192 // 1,000 = 8 prompts) is a step
    # of its own; with it the prompts ride in the decode steps, so the run takes between 320 / 8 = 40 and 320 fewer
    # steps (220 at this fit: 2,698 against 2,478), whatever the step costs
    cmd = "simulate --engine sglang --users 32 --num-requests 320 --input-tokens 2000 "
    cmd += "--output-tokens 200 --random-range-ratio 0.5 --json"
    out = {}
    for mixed in (False, True):
        assert main([*cmd.split(), *(["--enable-mixed-chunk"] if mixed else [])]) == 0
        out[mixed] = json.loads(capsys.readouterr().out)
    assert 40 <= out[False]["num_steps"] - out[True]["num_steps"] <= 320
    r = resolve(Scenario(engine="sglang", deployment={"enable_mixed_chunk": True}))
    assert scheduler_config_for(r).enable_mixed_chunk
