"""Any MoE layout the engines accept: attention TP × DP, MoE-TP × EP over the same GPUs, and what each
rank holds and which collectives it runs."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from pydantic import ValidationError

from planner.cli import main
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.latency.collectives import collectives
from planner.latency.parallel import links_for
from planner.latency.perf_model import PerfModel
from planner.memory.plan import plan_memory

V3 = "deepseek-ai/DeepSeek-V3"
# DeepSeek-V3's parameters by where they live (planner.core.params, checked against the published 671B in
# tests/test_parallel_memory.py): 58 MoE layers × 256 experts × 3 × 7168 × 2048 routed-expert weights,
# 129,280 × 7168 × 2 vocabulary matrices (embedding + lm_head, untied), and the rest (attention, dense layers,
# shared experts, routers, norms).
ROUTED = 58 * 256 * 3 * 7168 * 2048  # 653,908,770,816
VOCAB = 129_280 * 7168 * 2  # 1,853,358,080
REST = 671_026_404_352 - ROUTED - VOCAB  # 15,264,275,456


def _resolved(gpu="H200", **dep):
    d = Deployment(**{"weights": "fp8", "max_model_len": 32768, **dep})
    return resolve(Scenario(model=V3, gpu=gpu, deployment=d))


def test_trtllm_deepseek_r1_recipe_tp8_ep4_per_gpu_weights_by_hand():
    # TensorRT-LLM's DeepSeek-R1 recipe on 8 × H200: tensor_parallel_size 8, moe_expert_parallel_size 4, so
    # moe_tensor_parallel_size = 8 / 4 = 2. FP8 checkpoint: 1 B per weight, vocabulary kept at 2 B.
    #   attention and the rest / TP 8           = 15,264,275,456 / 8          =  1,908,034,432 B
    #   vocabulary (2 B) / TP 8                  = 1,853,358,080 × 2 / 8       =    463,339,520 B
    #   experts: 256 / EP 4 = 64 whole experts, each sliced over MoE-TP 2:
    #            653,908,770,816 × 64 / 256 / 2                                = 81,738,596,352 B
    #   total                                                                  = 84,109,970,304 B (84.1 GB)
    r = _resolved(num_gpus=8, tensor_parallel_size=8, ep_size=4)
    assert r.deployment.expert_parallel_size == 4 and r.deployment.moe_tensor_parallel_size == 2
    plan = plan_memory(r)
    assert plan.weight_bytes_per_gpu == REST / 8 + VOCAB * 2 / 8 + ROUTED * 64 / 256 / 2 == 84_109_970_304
    assert plan.expert_parallel_size == 4 and plan.fits


def test_tp8_ep4_is_accepted_by_the_cli(capsys):
    assert main(["memory", "--model", V3, "--gpu", "H200", "--tp", "8", "--ep", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["expert_parallel_size"] == 4 and out["moe_tensor_parallel_size"] == 2
    assert out["weight_bytes_per_gpu"] == 84_109_970_304
    ops = {(c["op"], c["group"]) for c in out["collectives"]}
    assert ops == {("all-reduce", "attention TP"), ("all-to-all", "EP (dispatch + combine)"), ("all-reduce", "MoE-TP")}


def test_ep_must_divide_tp_times_dp():
    with pytest.raises(ValidationError, match="ep_size must divide"):
        Deployment(num_gpus=8, tensor_parallel_size=8, ep_size=3)
    # EP = TP × DP is vLLM's default layout, stored as the boolean alone
    d = Deployment(num_gpus=8, tensor_parallel_size=1, data_parallel_size=8, ep_size=8)
    assert d.ep_size is None and d.enable_expert_parallel and d.expert_parallel_size == 8


def test_dp72_ep72_on_h100_fits_with_four_experts_on_the_fullest_rank(capsys):
    # 256 experts over 72 ranks: vLLM's determine_expert_map gives the first 256 mod 72 = 40 ranks 4 experts and
    # the others 3 (vllm/model_executor/layers/fused_moe/layer.py); the fullest holds
    #   15,264,275,456 + 1,853,358,080 × 2 + 653,908,770,816 × 4 / 256 = 29,188,316,160 B (29.2 GB)
    # and the deployment starts: fits must agree with the KV pool and the requests beside it.
    args = ["memory", "--model", V3, "--gpu", "H100-SXM", "--num-gpus", "72", "--dp", "72", "--ep", "72", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["weight_bytes_per_gpu"] == REST + VOCAB * 2 + ROUTED * 4 / 256 == 29_188_316_160
    assert out["fits"] is True and out["kv_pool_bytes_per_gpu"] > 40e9 and out["deployment_max_concurrency"] > 0
    assert any(w.startswith("Uneven experts") for w in out["warnings"])
    # requests per DP rank and per deployment, both shown: 72 ranks × the rank's whole requests
    assert out["requests_per_dp_rank"] * 72 == out["deployment_max_concurrency"]


def test_collectives_of_dp_attention_without_ep_and_of_pipeline_across_nodes():
    # TP 2 × DP 4 without EP: the MoE layers are sliced over all 8 GPUs, so each DP rank's tokens are all-gathered
    # before an MoE layer and reduce-scattered after; PP 2 puts the second stage on the next 8-GPU node.
    r = _resolved(num_gpus=16, tensor_parallel_size=2, data_parallel_size=4, pipeline_parallel_size=2)
    rows = [(c.op, c.size, c.link) for c in collectives(r)]
    assert rows == [
        ("all-reduce", 2, "NVLink"),
        ("all-gather", 8, "NVLink"),
        ("reduce-scatter", 8, "NVLink"),
        ("send/recv", 2, "NIC"),
    ]


def test_ep_over_two_nodes_runs_its_all_to_all_on_the_nic_and_inside_nvl72_on_nvlink():
    r = _resolved(num_gpus=16, tensor_parallel_size=1, data_parallel_size=16, enable_expert_parallel=True)
    assert [(c.op, c.link) for c in collectives(r)] == [("all-to-all", "NIC")]
    nvl72 = r.gpu.model_copy(update={"nvlink_domain_gpus": 72})
    r72 = dataclasses.replace(r, gpu=nvl72)
    assert [(c.op, c.link) for c in collectives(r72)] == [("all-to-all", "NVLink")]


def test_capacity_prices_a_dp8_ep8_instance_as_8_gpus(capsys):
    # TP 1 × DP 8 + EP 8 is one engine instance of 1 × 8 GPUs; capacity priced it as 1 GPU.
    # The search runs one DP rank; an instance serves 8 ranks' rate, and costs 8 GPUs × $/GPU-hour.
    args = "capacity --model deepseek-ai/DeepSeek-V3 --gpu H200 --tp 1 --dp 8 --ep 8 --target-rate 20"
    assert main([*args.split(), "--num-requests", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gpus_per_replica"] == 8 and out["data_parallel_size"] == 8
    assert out["num_gpus"] == out["replicas"] * 8
    assert out["usd_per_hour"] == pytest.approx(out["num_gpus"] * out["usd_per_gpu_hour"])
    # replicas = ceil(target × headroom / instance rate), the instance rate being 8 DP ranks' rate
    assert out["replicas"] == math.ceil(20 * out["headroom"] / out["max_rate_per_replica"] - 1e-9)


def test_an_nvl72_domain_keeps_tp16_and_ep32_on_nvlink():
    # GB200 NVL72: 72 GPUs share one NVLink domain across 18 trays of 4 (the field nvlink_domain_gpus). TP 16 spans
    # four trays yet its all-reduces stay on NVLink, so the cross-node TP term is zero; on 8-GPU HGX nodes it pays
    # the NVLink/NIC ratio. EP 32's all-to-all: no copy leaves the domain, so its NIC share is zero.
    hgx = _resolved("B200", num_gpus=16, tensor_parallel_size=16)
    nvl72 = dataclasses.replace(hgx, gpu=hgx.gpu.model_copy(update={"gpus_per_node": 4, "nvlink_domain_gpus": 72}))
    assert PerfModel(hgx).parallel.cross_node_tp_s(64) > 0
    assert PerfModel(nvl72).parallel.cross_node_tp_s(64) == 0
    ep = _resolved("B200", num_gpus=32, tensor_parallel_size=1, data_parallel_size=32, enable_expert_parallel=True)
    ep72 = dataclasses.replace(ep, gpu=ep.gpu.model_copy(update={"gpus_per_node": 4, "nvlink_domain_gpus": 72}))
    assert links_for(ep).ep_ranks_per_node == 8 and links_for(ep72).ep_ranks_per_node == 32
    assert PerfModel(ep72).parallel.all_to_all_s(64) < PerfModel(ep).parallel.all_to_all_s(64)
