"""Step-time terms of EP, DP attention, PP and multi-node placement (planner.latency.parallel), by hand."""

from __future__ import annotations

import dataclasses
import math

import pytest

from planner.core.catalog import get_gpu
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.latency import parallel
from planner.latency.perf_model import PerfModel

V3 = "deepseek-ai/DeepSeek-V3"


def _pm(model=V3, gpu="H200", gpu_update=None, **dep):
    d = Deployment(**{"weights": "fp8", "max_model_len": 32768, **dep})
    r = resolve(Scenario(model=model, gpu=gpu, deployment=d))
    if gpu_update:
        r = dataclasses.replace(r, gpu=r.gpu.model_copy(update=gpu_update))
    return PerfModel(r)


def test_one_tp_group_on_one_node_adds_nothing():
    pm = _pm(model="meta-llama/Llama-3.1-70B", num_gpus=8, tensor_parallel_size=8, weights="bf16")
    assert pm.parallel.extra_s(4096) == 0.0 and pm.parallel.expert_bytes_delta(64) == 0.0
    assert pm.parallel.warnings == []


def test_all_to_all_reproduces_deepep_intranode_ep8():
    # DeepEP (deepseek-ai/DeepEP@dd758caf docs/legacy.md), H800 with "~160 GB/s NVLink": 4,096 tokens per rank,
    # hidden 7,168, top-8, FP8 dispatch: 153 GB/s. DeepEP's bandwidth counts every dispatched byte, so its time is
    # 4,096 × 8 × 7,392 B / 153 GB/s = 1.583 ms per layer. Ours: 7/8 of the copies leave the GPU over NVLink:
    # 242.2 MB × 7/8 / (160 GB/s × 0.9) + 10 µs = 1.482 ms: 6.4% below the measurement (tolerance 10%).
    pm = _pm(
        gpu_update={"interconnect_bandwidth_gb_s": 160.0}, num_gpus=8, data_parallel_size=8, enable_expert_parallel=True
    )
    t = pm.parallel
    dispatch = 4096 * 8 * 7392 * 7 / 8 / (160e9 * 0.9) + 10e-6
    assert t.dispatch_bytes == 7168 + 7168 / 128 * 4 == 7392
    measured = 4096 * 8 * 7392 / 153e9
    assert dispatch == pytest.approx(measured, rel=0.10)
    combine = 4096 * 8 * 14336 * 7 / 8 / (160e9 * 0.9) + 10e-6
    assert t.all_to_all_s(4096) == pytest.approx(58 * (dispatch + combine))  # 58 MoE layers


def test_all_to_all_across_two_nodes_uses_the_nic():
    # EP 16 = DP 16 on two H200 nodes: 8 of 16 ranks are in the other node, so half the copies leave over the GPU's
    # 50 GB/s NIC (7 of 16 stay on NVLink, 9× faster). DeepEP internode EP16 (docs/legacy.md, CX7 400 Gb/s):
    # dispatch 43 GB/s of RDMA traffic, i.e. 4,096 × 8 × 7,392 B × 1/2 / 43 GB/s = 2.817 ms per layer; ours
    # 121.1 MB / (50 GB/s × 0.9) + 10 µs = 2.701 ms, 4.1% below (tolerance 10%; assumes DeepEP's figure counts
    # only the bytes that cross the network).
    pm = _pm(num_gpus=16, data_parallel_size=16, enable_expert_parallel=True)
    t = pm.parallel
    nic_dispatch = 4096 * 8 * 7392 / 2 / (50e9 * 0.9) + 10e-6
    assert nic_dispatch == pytest.approx(4096 * 8 * 7392 / 2 / 43e9, rel=0.10)
    nic = 4096 * 8 * (7392 + 14336) / 2 / 50e9
    nvlink = 4096 * 8 * (7392 + 14336) * 7 / 16 / 450e9
    assert nic > nvlink
    assert t.all_to_all_s(4096) == pytest.approx(58 * (nic / 0.9 + 2 * 10e-6))
    assert t.links.num_nodes == 2 and not t.links.tp_crosses_nodes and t.warnings == []


def test_uniform_routing_imbalance_and_a_zipf_skew():
    # 8 DP ranks × 64 tokens × top-8 over EP 8: m = 512 copies per rank; 1 + sqrt(2 ln 8 / 512) = 1.0901
    assert parallel.load_imbalance(256, 8, 8, 512) == pytest.approx(1 + math.sqrt(2 * math.log(8) / 512))
    assert parallel.load_imbalance(256, 8, 8, 512) == pytest.approx(1.0901, abs=1e-4)
    assert parallel.load_imbalance(256, 8, 1, 512) == 1.0  # no EP: every GPU holds a slice of every expert
    # Zipf(1) over 256 experts, 32 per rank: the first rank gets H(32) / H(256) = 4.0585 / 6.1243 = 0.6627
    assert parallel.zipf_rank_share(256, 8, 1.0) == pytest.approx(0.6627, abs=1e-4)
    assert parallel.zipf_rank_share(256, 8, 0.0) == pytest.approx(1 / 8)


def test_dp_attention_reads_each_gpus_own_expert_shard():
    # DP 8 + EP 8, 64 decode tokens per rank: a GPU holds 256/8 = 32 experts, touched by 8 × 64 = 512 tokens:
    # 32 × (1 − (1 − 8/256)^512) = 32.0 experts × 58 layers × 3 × 7168 × 2048 B (FP8) ≈ 81.7 GB.
    pm = _pm(num_gpus=8, data_parallel_size=8, enable_expert_parallel=True)
    expert = 58 * 3 * 7168 * 2048
    ours = 32 * expert * (1 - (1 - 8 / 256) ** 512)
    theirs = 256 * expert * (1 - (1 - 8 / 256) ** 64)  # what one TP=1 group of 64 tokens would read
    assert pm.parallel.expert_bytes_delta(64) == pytest.approx(ours - theirs)
    assert ours == pytest.approx(81.7e9, rel=0.01)


def test_pipeline_bubble_and_hand_off():
    assert parallel.pipeline_bubble_fraction(4, 1) == pytest.approx(3 / 4)  # one batch: 3 of 4 stages idle
    assert parallel.pipeline_bubble_fraction(4, 4) == pytest.approx(3 / 7)
    assert parallel.pipeline_bubble_fraction(4, 28) == pytest.approx(0.0968, abs=1e-4)
    # Llama-3.1-70B TP 8 × PP 2 = 16 GPUs over two nodes: one hand-off of 4,096 × 8,192 × 2 B over a 50 GB/s NIC
    pm = _pm(
        model="meta-llama/Llama-3.1-70B", weights="bf16", num_gpus=16, tensor_parallel_size=8, pipeline_parallel_size=2
    )
    assert pm.parallel.pipeline_s(4096) == pytest.approx(4096 * 8192 * 2 / 50e9 + 10e-6)


def test_tp_across_nodes_is_flagged_and_nine_times_slower_to_all_reduce():
    pm = _pm(model="meta-llama/Llama-3.1-405B", weights="fp8", num_gpus=16, tensor_parallel_size=16)
    t = pm.parallel
    assert t.links.tp_crosses_nodes and any(w.startswith("Slow: TP=16") for w in t.warnings)
    # NVLink 450 GB/s vs NIC 50 GB/s: all-reduce bytes take 9× as long, i.e. 8× PerfModel's figure extra
    assert t.cross_node_tp_s(1000) == pytest.approx(pm.comm_s_per_token * 1000 * 8)
    assert pm.step_time_s(1000, 1, 0, 500_500) > _pm(
        model="meta-llama/Llama-3.1-405B", weights="fp8", num_gpus=8, tensor_parallel_size=8
    ).step_time_s(1000, 1, 0, 500_500)


def test_gpus_without_a_listed_nic_assume_100g_ethernet():
    assert get_gpu("L40S").scale_out_bandwidth_gb_s is None
    pm = _pm(
        model="meta-llama/Llama-3.1-8B",
        gpu="L40S",
        weights="bf16",
        num_gpus=16,
        tensor_parallel_size=1,
        pipeline_parallel_size=16,
    )
    assert pm.parallel.links.nic_bytes_per_s == 12.5e9
    assert any("No per-GPU NIC" in w for w in pm.parallel.warnings)
