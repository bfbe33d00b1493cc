"""Disaggregated prefill/decode (planner.capacity.disagg): KV transfer by hand, the never-cheaper rule, the CLI
contract, and DistServe's published numbers (Zhong et al., OSDI'24, arXiv 2401.09670)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.capacity.disagg import disagg_plan
from planner.capacity.disagg_pools import _prefill_workload, kv_link, kv_transfer_s
from planner.capacity.rate_match import rate_matched
from planner.cli import main
from planner.core.model_spec import ModelSpec
from planner.core.scenario import Scenario, resolve, with_engine
from planner.core.specs import Deployment
from planner.core.workload import SLO, TrafficSpec
from planner.latency.perf_model import PerfModel
from planner.sim.records import latencies
from planner.sim.serving import Replica, run_serving

LONG = TrafficSpec(profile="custom", prompt="fixed:8000", output="fixed:300", num_requests=200)
# OPT-13B / OPT-66B as DistServe serves them (facebook/opt-* config.json: ReLU MLP, LayerNorm, biases, tied vocab)
OPT13 = ModelSpec(
    name="facebook/opt-13b",
    model_type="opt",
    hidden_size=5120,
    num_layers=40,
    num_attention_heads=40,
    num_kv_heads=40,
    head_dim=128,
    intermediate_size=20480,
    vocab_size=50272,
    max_position_embeddings=2048,
    tie_word_embeddings=True,
    mlp_kind="plain",
    norm_kind="layer",
    qkv_bias=True,
    o_bias=True,
    mlp_bias=True,
    torch_dtype="float16",
)
OPT66 = OPT13.model_copy(
    update={
        "name": "facebook/opt-66b",
        "hidden_size": 9216,
        "num_layers": 64,
        "num_attention_heads": 72,
        "num_kv_heads": 72,
        "intermediate_size": 36864,
    }
)


def _r(model="meta-llama/Llama-3.1-70B", gpu="H100-SXM", spec=None, **dep):
    d = Deployment(**{"weights": "bf16", "max_model_len": 32768, **dep})
    return resolve(Scenario(model=model, model_spec=spec, gpu=gpu, deployment=d))


def test_kv_transfer_by_hand():
    # Llama-3.1-70B: 80 layers × 2 × 8 KV heads × 128 × 2 B = 327,680 B/token; an 8,000-token prompt = 2.621 GB.
    # A TP 8 prefill instance sends its 8 head shards over 8 NICs of 50 GB/s: 2.621e9 / 400e9 + 10 µs = 6.564 ms
    r = _r(num_gpus=8, tensor_parallel_size=8)
    link = kv_link(r, "nic")
    assert link.bytes_per_s == 8 * 50e9
    assert float(kv_transfer_s(r, 8000, link)) == pytest.approx(8000 * 327_680 / 400e9 + 10e-6)
    assert float(kv_transfer_s(r, 8000, link)) == pytest.approx(6.564e-3, abs=1e-6)
    # TP 2 has 2 shards: 2 NICs; NVLink in one node: 2 × 450 GB/s
    r2 = _r(num_gpus=2, tensor_parallel_size=2)
    assert kv_link(r2, "nic").bytes_per_s == 100e9 and kv_link(r2, "nvlink").bytes_per_s == 900e9


def test_distserve_kv_size_and_bandwidth_for_opt_66b():
    # DistServe §3.3: "the KV cache size of a single 512-token request on OPT-66B is approximately 1.13GB ...
    # an average arrival rate of 10 rps ... 90Gbps". 2 × 64 × 9,216 × 2 B × 512 = 1,207,959,552 B = 1.125 GiB;
    # × 10/s × 8 bit = 90.0 Gibit/s. The paper counts in powers of two; we match both figures within 0.5%.
    r = _r(
        spec=OPT66,
        model=OPT66.name,
        gpu="A100-80GB",
        num_gpus=4,
        tensor_parallel_size=4,
        weights="fp16",
        max_model_len=2048,
    )
    one_gb_s = kv_link(r, gb_s=1.0, latency_s=0.0)
    kv = float(kv_transfer_s(r, 512, one_gb_s)) * 1e9  # seconds at 1 GB/s = bytes / 1e9
    assert kv == 1_207_959_552
    assert kv / 2**30 == pytest.approx(1.13, rel=0.005)
    assert kv * 10 * 8 / 2**30 == pytest.approx(90, rel=0.005)


def test_distserve_2p1d_goodput_per_gpu():
    # DistServe §1/Fig. 1 (13B, A100, 512 in / 64 out, 90% attainment): colocated 1.6 rps per GPU; prefill-only
    # 5.6 rps, decode-only 10 rps per GPU; "2 GPUs for prefill and 1 GPU for decoding ... 10 rps, or equally 3.3
    # rps per GPU, which is 2.1x". Our rate matching picks the same 2P1D and reproduces 3.33 and 2.08×.
    m = rate_matched(10.0, prefill_rate=5.6, decode_rate=10.0)
    assert (m.prefill_instances, m.decode_instances, m.gpus) == (2, 1, 3)
    assert m.rps_per_gpu == pytest.approx(3.3, abs=0.05)  # the paper rounds to one decimal
    assert m.rps_per_gpu / 1.6 == pytest.approx(2.1, abs=0.05)


def test_opt13b_prefill_time_against_distserve_profile():
    # DistServe's profiled OPT-13B TP1 prefill on A100-80GB (LLMServe/DistServe@82831f16
    # simdistserve/estimators/profile_data/profiler-a100-80g.distserve.json): 18.10 + 0.1019 × 512
    # + 7.12e-6 × 512² = 72.1 ms for one 512-token prompt. DistServe runs its own C++ engine (SwiftTransformer,
    # cuBLAS GEMMs); the nearest profile is TensorRT-LLM's, transferred to Ampere from its Hopper and Blackwell
    # rows: 68.5 ms, −5.0% at session 12's fit (a known miss at −16% in the fits before it), 63.7 ms, −11.8% since
    # session 21's closed-loop fix (its matmul efficiency 0.79 → 0.82). The tolerance is the published points'
    # one-GPU-family-out prefill error, 15.9% (README, accuracy_out_of_sample), not an in-sample 10%.
    pm = PerfModel(
        with_engine(
            _r(spec=OPT13, model=OPT13.name, gpu="A100-80GB", weights="fp16", max_model_len=2048), "tensorrt-llm"
        )
    )
    distserve_ms = 18.10254647486372 + 0.1019122572698738 * 512 + 7.122264314252114e-06 * 512**2
    assert float(pm.prefill(1, 512).total_s) * 1e3 == pytest.approx(distserve_ms, rel=0.16)


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_prefill_pool_queueing_matches_distserve_m_d_1(rho):
    # DistServe §3.1 Eq. 1: one prefill instance, Poisson rate R, prompts of one length served one at a time in D:
    # mean TTFT = D + R D² / (2 (1 − R D)) (M/D/1). ρ = R D = 0.5 -> 1.5 D; 0.8 -> 3 D. Within 10% over 3,000 requests.
    r = _r(
        spec=OPT13, model=OPT13.name, gpu="A100-80GB", weights="fp16", max_model_len=2048, max_num_batched_tokens=512
    )  # one 512-token prompt per step
    traffic = TrafficSpec(profile="custom", prompt="fixed:512", output="fixed:64", num_requests=3000, seed=1)
    front = Replica(r).scheduler_config.frontend_latency_s  # in every client-side TTFT, outside the queue
    lone = latencies(run_serving(Replica(r), _prefill_workload(traffic, 0.01)))["ttft_s"]  # no queueing
    d = float(np.nanmean(lone)) - front
    rate = rho / d
    ttft = latencies(run_serving(Replica(r), _prefill_workload(traffic, rate)))["ttft_s"]
    assert float(np.mean(ttft)) - front == pytest.approx(d + rate * d * d / (2 * (1 - rho)), rel=0.10)


def test_never_cheaper_when_the_kv_transfer_alone_exceeds_the_ttft_target():
    # 8,000-token prompts × 327,680 B = 2.62 GB over a 1 GB/s link: 2.62 s > the 2 s TTFT target
    s = Scenario(
        model="meta-llama/Llama-3.1-70B", gpu="H100-SXM", deployment=Deployment(weights="bf16", max_model_len=32768)
    )
    plan = disagg_plan(s, 5.0, LONG, SLO(ttft_p95_s=2.0, tpot_p95_s=0.05), link_gb_s=1.0, compare=False)
    assert plan.prefill is None and not plan.feasible and not plan.cheaper
    assert all("KV transfer" in c.reason for c in plan.prefill_options)
    out = plan.to_dict()
    assert out["usd_per_hour"] is None and out["cheaper"] is False


def test_llama70b_long_prompts_disagg_cli_contract(capsys):
    args = [
        "disagg",
        "--model",
        "meta-llama/Llama-3.1-70B",
        "--gpu",
        "H100-SXM",
        "--max-model-len",
        "32768",
        "--profile",
        "custom",
        "--input-tokens",
        "8000",
        "--output-tokens",
        "300",
        "--num-requests",
        "200",
        "--target-rate",
        "10",
        "--slo-ttft-p95",
        "2",
        "--slo-tpot-p95",
        "0.05",
        "--json",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    for pool in ("prefill", "decode"):
        assert {"gpus_per_instance", "tp", "instances", "max_rate_per_instance"} <= set(out[pool])
        assert out[pool]["max_rate_per_instance"] > 0
    assert {"replicas", "gpus", "usd_per_hour", "usd_per_million_output_tokens"} <= set(out["aggregated"])
    gpus = out["prefill"]["gpus"] + out["decode"]["gpus"]
    assert out["usd_per_hour"] == pytest.approx(gpus * out["usd_per_gpu_hour"])
    # $/M output tokens = $/h / (10 req/s × 300 tokens × 3600 s) × 1e6
    assert out["usd_per_million_output_tokens"] == pytest.approx(out["usd_per_hour"] / (10 * 300 * 3600) * 1e6)
    assert out["kv_transfer_s"] == pytest.approx(8000 * 327_680 / (out["prefill"]["tp"] * 50e9) + 10e-6)
    assert out["cheaper"] == (out["usd_per_hour"] < out["aggregated"]["usd_per_hour"])


def test_walkthrough_when_to_disaggregate():
    from planner.teaching.disagg_walkthrough import DisaggInputs
    from planner.teaching.walkthroughs import run_walkthrough

    s = {x.number: x for x in run_walkthrough("disaggregation")}
    assert s["1"].result == "419.4 MB"  # 512 × 819,200 B (OPT-13B: 2 × 40 × 5,120 × 2)
    assert s["2"].result == "8.40 ms"  # 419.43 MB / 50 GB/s + 0.01 ms
    assert (s["4"].value, s["5"].value, s["7"].value) == (2, 1, 7)  # ceil(10/5.6), ceil(10/10), ceil(10/1.6)
    assert s["6"].result == "3.33 req/s"
    # over 1 GB/s the 419 MB take 419 ms: more than the 250 ms target on their own
    slow = {x.number: x for x in run_walkthrough("disaggregation", DisaggInputs(link_gb_s=1.0))}
    assert slow["3"].value > 100 and "never disaggregate" in slow["3"].note


def test_recommend_ranks_disaggregated_options_with_the_rest(capsys):
    args = [
        "recommend",
        "--model",
        "meta-llama/Llama-3.1-70B",
        "--gpus",
        "H100-SXM",
        "--precisions",
        "bf16",
        "--tps",
        "4,8",
        "--max-model-len",
        "32768",
        "--profile",
        "custom",
        "--input-tokens",
        "8000",
        "--output-tokens",
        "300",
        "--num-requests",
        "200",
        "--target-rate",
        "10",
        "--slo-ttft-p95",
        "2",
        "--slo-tpot-p95",
        "0.05",
        "--workers",
        "1",
        "--disagg",
        "--json",
    ]
    assert main(args) == 0
    rows = json.loads(capsys.readouterr().out)["options"]
    disagg = [r for r in rows if r.get("disaggregated")]
    assert len(disagg) == 1 and "P×TP" in disagg[0]["id"]
    feasible = [r for r in rows if r["feasible"]]
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert [r["usd_per_hour"] for r in feasible] == sorted(r["usd_per_hour"] for r in feasible)
    d = disagg[0]  # $/h = GPUs × $2.69 (H100-SXM in data/gpus.yaml)
    assert d["usd_per_hour"] == pytest.approx(d["num_gpus"] * 2.69)


def test_decode_pool_is_littles_law_at_the_largest_batch_within_the_tpot_target():
    from planner.capacity.disagg_pools import decode_capacity, decode_step_s, decode_tpot_at

    r = _r(num_gpus=8, tensor_parallel_size=8)
    slo = SLO(ttft_p95_s=2.0, tpot_p95_s=0.03)
    cap = decode_capacity(Replica(r), 8000, 300, slo)
    pm = PerfModel(r)
    n, ctx = cap.batch, 8000 + 150  # mean context while decoding: prompt + output / 2
    p95 = lambda k: decode_step_s(pm, k + 1.645 * k**0.5, ctx)  # noqa: E731
    assert p95(n) <= 0.03 < p95(n + 1)  # the largest batch whose p95 step meets the target
    # Little's law: n requests each decoding 299 steps of t(n): λ = n / (299 × t(n))
    assert cap.max_rate_per_instance == pytest.approx(n / (299 * decode_step_s(pm, n, ctx)))
    # at that rate the fixed point n = λ × 299 × t(n) comes back to the same batch, so the same p95 TPOT
    assert decode_tpot_at(Replica(r), cap.max_rate_per_instance, 8000, 300) == pytest.approx(p95(n), rel=1e-3)


def test_layerwise_transfer_hides_behind_the_prefill():
    from planner.capacity.disagg_pools import visible_transfer_s

    r = _r(num_gpus=8, tensor_parallel_size=8)
    pm = PerfModel(r)
    prefill = float(pm.prefill(1, 8000).total_s)
    fast = kv_link(r, "nic", layerwise=True)  # 6.56 ms, far below the prefill: only one layer's share shows
    assert float(visible_transfer_s(r, 8000, fast, pm)) == pytest.approx(float(kv_transfer_s(r, 8000, fast)) / 80)
    slow = kv_link(r, gb_s=1.0, layerwise=True)  # 2.62 s: longer than the prefill, the rest shows
    t = float(kv_transfer_s(r, 8000, slow))
    assert float(visible_transfer_s(r, 8000, slow, pm)) == pytest.approx(t - prefill * 79 / 80)
    assert float(visible_transfer_s(r, 8000, kv_link(r, gb_s=1.0), pm)) == pytest.approx(t)  # sent after
    # the rule holds with overlap too: the whole transfer precedes the first decoded token
    s = Scenario(
        model="meta-llama/Llama-3.1-70B", gpu="H100-SXM", deployment=Deployment(weights="bf16", max_model_len=32768)
    )
    plan = disagg_plan(s, 5.0, LONG, SLO(ttft_p95_s=2.0, tpot_p95_s=0.05), link_gb_s=1.0, compare=False, layerwise=True)
    assert not plan.feasible and not plan.cheaper
