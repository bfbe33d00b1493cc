"""`disagg` evaluates a given xPyD layout: TTFT = queueing + prefill + KV transfer + hand-off."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from planner.capacity.disagg_layout import (
    DECODE_STEPS_TO_FIRST_TOKEN,
    HANDOFF_FIXED_S,
    TRANSFER_ENGINES,
    PoolLayout,
    evaluate_layout,
)
from planner.capacity.disagg_pools import decode_step_s, kv_link, pool_replica, prefill_probe
from planner.cli import main
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.core.workload import SLO, TrafficSpec
from planner.latency.perf_model import PerfModel
from planner.memory import sizes as memory

LLAMA8 = "meta-llama/Llama-3.1-8B"
TRAFFIC = TrafficSpec(profile="custom", prompt="fixed:200", output="fixed:100", num_requests=200)
SLO_ = SLO(ttft_p95_s=2.0, tpot_p95_s=0.05)


def _scenario(model=LLAMA8, gpu="H100-SXM", **dep):
    return Scenario(model=model, gpu=gpu, deployment=Deployment(**{"max_model_len": 8192, **dep}))


def test_1p1d_tp8_ttft_floor_is_prefill_transfer_and_the_hand_off():
    # 1P1D, TP 8 + TP 8 over RDMA (NIXL). Before this the TTFT stopped at prefill + transfer (a prediction of
    # 13 ms against a measured floor of about 45 ms); the floor now adds the hand-off:
    #   floor = prefill(1 × 200 tokens) + 200 × KV bytes per token / link B/s + 10 us
    #           + 20 ms (proxy, second hop) + (1.5 + the output lag) × one decode step of one sequence
    #           + the request path (frontend, prompt pass's dispatch), as the prefill probe's TTFT has it
    s = _scenario()
    plan = evaluate_layout(s, 1.0, PoolLayout(1, 8), PoolLayout(1, 8), TRAFFIC, SLO_)
    r = resolve(s.model_copy(update={"deployment": s.deployment.model_copy(update={"tensor_parallel_size": 8})}))
    pm = PerfModel(r)  # the scenario engine: vllm
    link_b_s = 8 * r.gpu.scale_out_bandwidth_gb_s * 1e9 * 0.87  # 8 KV-head shards, one NIC each, NIXL's share
    transfer = 200 * memory.kv_bytes_per_token(r.model, r.kv_bytes) / link_b_s + 10e-6
    prefill = float(pm.prefill(1, 200.0).total_s)
    steps = 1.5 + pm.eff.first_token_lag_steps
    first_step = steps * decode_step_s(pm, 1, 200.0)
    assert plan.kv_transfer_s == pytest.approx(transfer)
    assert plan.ttft_floor_s == pytest.approx(pm.request_path_s + prefill + transfer + 0.020 + first_step)
    assert plan.ttft_floor_s - (prefill + transfer) > HANDOFF_FIXED_S  # the part the old model left out
    # at the target: the prefill instance's simulated p95 (queueing + prefill + transfer) + the hand-off
    assert plan.ttft_p95_s == pytest.approx(plan.prefill.latency_p95_s + plan.handoff_s)
    assert plan.handoff_s == pytest.approx(HANDOFF_FIXED_S + steps * plan.tpot_p95_s)
    assert steps > DECODE_STEPS_TO_FIRST_TOKEN  # vLLM's fitted lag (data/efficiency.yaml)
    assert plan.num_gpus == 16 and plan.meets_slo


def test_transfer_engines_move_kv_at_their_measured_share():
    # kvcache-ai/Mooncake README: 87 GB/s on 4 × 200 Gb/s RoCE, 2.4× TCP's rate on the same network
    r = resolve(_scenario(num_gpus=8, tensor_parallel_size=8))
    line = kv_link(r, "nic").bytes_per_s
    assert TRANSFER_ENGINES["mooncake"].efficiency * line == pytest.approx(0.87 * 8 * 50e9)
    assert TRANSFER_ENGINES["mooncake"].efficiency / TRANSFER_ENGINES["tcp"].efficiency == pytest.approx(2.4)
    tcp = evaluate_layout(_scenario(), 1.0, PoolLayout(1, 8), PoolLayout(1, 8), TRAFFIC, SLO_, transfer="tcp")
    rdma = evaluate_layout(_scenario(), 1.0, PoolLayout(1, 8), PoolLayout(1, 8), TRAFFIC, SLO_, transfer="mooncake")
    assert tcp.kv_transfer_s - 10e-6 == pytest.approx(2.4 * (rdma.kv_transfer_s - 10e-6))


def test_given_handoff_replaces_the_estimate():
    plan = evaluate_layout(_scenario(), 1.0, PoolLayout(1, 8), PoolLayout(1, 8), TRAFFIC, SLO_, handoff_fixed_s=0.1)
    assert plan.handoff_status == "given"
    lag = PerfModel(resolve(_scenario(num_gpus=8, tensor_parallel_size=8))).eff.first_token_lag_steps
    assert plan.handoff_s == pytest.approx(0.1 + (1.5 + lag) * plan.tpot_p95_s)


def test_prefill_p95_without_the_hand_off_is_the_search_figure():
    # the searched pools' TTFT (prefill_probe) is the prefill part; the given layout adds the hand-off on top
    s = _scenario()
    plan = evaluate_layout(s, 2.0, PoolLayout(2, 8), PoolLayout(1, 8), TRAFFIC, SLO_, transfer="mooncake")
    r = resolve(_scenario(num_gpus=8, tensor_parallel_size=8))
    base = kv_link(r, "nic")
    link = replace(base, bytes_per_s=base.bytes_per_s * 0.87)
    assert plan.prefill.latency_p95_s == pytest.approx(prefill_probe(pool_replica(r, TRAFFIC), TRAFFIC, 1.0, link)[0])


def test_decode_pool_of_dp8_ep8_and_bad_ep_names_the_flag(capsys):
    s = _scenario("deepseek-ai/DeepSeek-V3", "H200", weights="fp8")
    plan = evaluate_layout(s, 1.0, PoolLayout(1, 8), PoolLayout(1, 1, 8, 8), TRAFFIC, SLO_)
    assert plan.decode.gpus_per_instance == 8 and plan.decode.ep == 8 and plan.num_gpus == 16
    with pytest.raises(InputError) as err:
        evaluate_layout(s, 1.0, PoolLayout(1, 8), PoolLayout(1, 1, 8, 3), TRAFFIC, SLO_)
    assert err.value.field == "decode_ep"


def test_cli_given_layout(capsys):
    base = (
        f"disagg --model {LLAMA8} --gpu H100-SXM --profile custom --input-tokens 200 --output-tokens 100 "
        "--target-rate 1 --num-requests 200"
    ).split()
    given = ["--prefill-instances", "1", "--prefill-tp", "8", "--decode-instances", "1", "--decode-tp", "8"]
    assert main([*base, *given, "--transfer-engine", "mooncake", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "given" and out["prefill"]["tp"] == 8 and out["decode"]["instances"] == 1
    assert out["transfer_engine"] == "mooncake" and out["num_gpus"] == 16
    assert out["ttft_p95_s"] > out["prefill"]["latency_p95_s"] + 0.02
    assert main([*base, "--prefill-instances", "1", "--prefill-tp", "8"]) == 2
    assert "--decode-instances" in capsys.readouterr().err
