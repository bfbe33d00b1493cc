"""Latency model v3 (issue 15, out of sample): what each part reaches (microbenchmarks), the engine's kernel path on
it (FP16 accumulate, no wgmma), the SM issue bound of latency-bound GEMV kernels, and the per-request cost."""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass

import numpy as np
import pytest

from planner.core.catalog import gpus
from planner.core.gpu_spec import ACHIEVED_DEFAULTS
from planner.core.scenario import Scenario, resolve, with_engine
from planner.core.specs import Deployment
from planner.latency.efficiency import profiles
from planner.latency.hardware import HOPPER_MMA_SYNC_FRACTION
from planner.latency.perf_model import PerfModel
from planner.sim.config import ConstantStepCost
from planner.sim.simulator import simulate
from planner.traffic.workload import Workload
from validation.fit_efficiency import PRIORS


def resolved(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", weights="bf16"):
    return resolve(Scenario(model=model, gpu=gpu, deployment=Deployment(weights=weights)))


# -- the catalogue -------------------------------------------------------------------------------------------------
def test_a_part_without_its_own_microbenchmark_takes_the_median_of_its_vendors_measured_parts():
    for vendor, defaults in ACHIEVED_DEFAULTS.items():
        parts = [g for g in gpus().values() if g.vendor == vendor]
        bw = [g.achieved_bandwidth_fraction for g in parts if g.achieved_bandwidth_fraction]
        mm = [g.achieved_matmul(dtype)[0] for g in parts for dtype in ("bf16",) if g.achieved_matmul(dtype)[1]]
        assert defaults == {"bandwidth": statistics.median(bw), "matmul": statistics.median(mm)}, vendor


def test_measured_fractions_are_cited_and_every_part_has_sms_and_a_clock():
    for g in gpus().values():
        assert g.sm_count and g.boost_clock_mhz and g.source.get("sm"), g.id
        assert (g.achieved_bandwidth_fraction is None) == ("achieved_bandwidth" not in g.source), g.id
        assert bool(g.achieved_matmul_fraction) == ("achieved_matmul" in g.source), g.id
        assert all(0 < v <= 1 for v in g.achieved_matmul_fraction.values()), g.id


def test_the_sm_bound_prior_saturates_every_calibration_part_so_only_data_can_make_it_bind():
    prior = PRIORS["sm_bytes_per_cycle"][0]
    for gid in ("A100-80GB", "A100-PCIe-80GB", "H100-SXM", "H100-PCIe", "RTX-3090", "RTX-4090", "MI300X"):
        g = gpus()[gid]
        assert g.sm_clocks_per_s * prior > g.hbm_bytes_per_s * g.achieved_bandwidth()[0], g.id


def test_the_sm_bound_applies_only_to_engines_with_issue_bound_gemv_kernels():
    # a B200 needs 23 B per SM-cycle to reach its stream bandwidth: a fitted bound of ~11 (what TensorRT-LLM's H100
    # points allow) would halve its decode speed; only llama.cpp declares the bound (data/engines.yaml)
    r = resolved(gpu="B200")
    for engine in ("vllm", "tensorrt-llm", "sglang", "lmdeploy"):
        pm = PerfModel(with_engine(r, engine))
        assert pm.sm_clocks_per_s is None
        assert pm.decode(1, 0).parts["weights_read_s"] == pytest.approx(weights_hand(pm)[1])
    assert PerfModel(with_engine(r, "llama.cpp")).sm_clocks_per_s == 148 * 1965e6


def test_status_of_the_hardware_basis_is_said_with_the_prediction():
    assert "measured" in PerfModel(resolved(gpu="H100-SXM")).hardware.notes[0]
    t4 = PerfModel(resolved(gpu="T4", weights="fp16")).hardware
    assert not t4.bandwidth_measured and "estimated" in t4.notes[0]
    assert t4.bandwidth_fraction == ACHIEVED_DEFAULTS["nvidia"]["bandwidth"]


# -- the engine's kernel path ----------------------------------------------------------------------------------------
def test_llamacpp_gets_the_fp16_accumulate_rate_on_a_geforce_part_and_vllm_the_fp32_accumulate_one():
    r = resolved(gpu="RTX-4090", weights="fp16")
    frac = r.gpu.achieved_matmul("fp16")[0]  # 0.99: torch matmul reaches the halved datasheet figure
    assert PerfModel(with_engine(r, "llama.cpp")).peak_flops == pytest.approx(330.3e12 * frac)
    assert PerfModel(with_engine(r, "vllm")).peak_flops == pytest.approx(165.2e12 * frac)
    a100 = resolved(gpu="A100-80GB", weights="fp16")  # datacenter parts: no such doubling
    assert (
        PerfModel(with_engine(a100, "llama.cpp")).peak_flops
        == PerfModel(with_engine(a100, "vllm")).peak_flops
        == pytest.approx(312e12 * 0.87)
    )


def test_an_engine_without_wgmma_kernels_runs_hopper_at_the_mma_sync_rate():
    assert HOPPER_MMA_SYNC_FRACTION == pytest.approx(35 / 75)  # FlashAttention-2 vs -3 on H100 (arXiv 2407.08608)
    r = resolved(gpu="H100-SXM", weights="fp16")
    assert PerfModel(with_engine(r, "llama.cpp")).peak_flops == pytest.approx(989.4e12 * 0.8 * 35 / 75)
    assert PerfModel(with_engine(r, "vllm")).peak_flops == pytest.approx(989.4e12 * 0.8)
    assert PerfModel(with_engine(resolved(gpu="A100-80GB"), "llama.cpp")).hardware.kernel_fraction == 1.0


# -- the SM issue bound ----------------------------------------------------------------------------------------------
def weights_hand(pm: PerfModel) -> tuple[float, float]:
    """(seconds to stream the weights at batch 1 by hand, the HBM side alone) for a dense 16-bit model."""
    e, w = pm.eff, pm.dense_weight_bytes
    w_layer = w / pm.num_layers
    hbm = pm.resolved.gpu.hbm_bytes_per_s * pm.resolved.gpu.achieved_bandwidth()[0]
    hbm *= e.memory_efficiency * w_layer / (w_layer + e.memory_half_bytes)
    sm = pm.resolved.gpu.sm_count * pm.resolved.gpu.boost_clock_mhz * 1e6 * e.sm_bytes_per_cycle
    return w / min(hbm, sm), w / hbm


def test_llamacpp_batch_1_decode_on_an_a100_is_bound_by_its_sms_and_on_a_4090_by_its_memory():
    # llama.cpp's fitted SM bound (~6.5 B per SM-cycle) makes the A100's 108 SMs x 1.41 GHz (~1.0 TB/s) the limit
    # below its 1.7 TB/s of stream bandwidth; the 4090's 128 SMs x 2.52 GHz (~2.1 TB/s) never bind its 0.9 TB/s.
    a100 = PerfModel(with_engine(resolved(gpu="A100-80GB", weights="fp16"), "llama.cpp"))
    hand, hbm_only = weights_hand(a100)
    assert a100.decode(1, 0).parts["weights_read_s"] == pytest.approx(hand, rel=1e-9)
    assert hand > 1.2 * hbm_only
    rtx = PerfModel(with_engine(resolved(gpu="RTX-4090", weights="fp16"), "llama.cpp"))
    hand, hbm_only = weights_hand(rtx)
    assert hand == pytest.approx(hbm_only) and rtx.decode(1, 0).parts["weights_read_s"] == pytest.approx(hand)


@pytest.mark.parametrize("engine", ["vllm", "llama.cpp", "tensorrt-llm"])
def test_more_sms_or_a_faster_clock_is_never_slower(engine):
    r = resolved(gpu="A100-80GB", weights="fp16")
    faster = dataclasses.replace(r, gpu=r.gpu.model_copy(update={"sm_count": 2 * r.gpu.sm_count}))
    for batch in (1, 8, 64):
        assert (
            PerfModel(with_engine(faster, engine)).decode(batch, 1000).total_s
            <= PerfModel(with_engine(r, engine)).decode(batch, 1000).total_s
        )


def test_a_better_measured_bandwidth_is_never_slower():
    r = resolved(gpu="MI300X", weights="fp8")
    better = dataclasses.replace(r, gpu=r.gpu.model_copy(update={"achieved_bandwidth_fraction": 0.95}))
    assert (
        PerfModel(with_engine(better, "vllm")).decode(1, 1000).total_s
        < PerfModel(with_engine(r, "vllm")).decode(1, 1000).total_s
    )


# -- the per-request cost ------------------------------------------------------------------------------------------
def test_a_prefill_pays_the_request_cost_once_per_prompt():
    pm = PerfModel(with_engine(resolved(), "lmdeploy"))
    assert pm.request_overhead_s == profiles()["lmdeploy"]["default"].request_overhead_s > 0
    b, p = np.array([1, 4]), 512
    bare = pm.step(b * p, b, 0, b * p * (p + 1) / 2).total_s
    assert pm.prefill(b, p).total_s == pytest.approx(bare + b * pm.request_overhead_s)


@dataclass(frozen=True)
class OneSecondPlusRequest(ConstantStepCost):
    request_overhead_s: float = 0.25


def test_the_simulator_adds_the_request_cost_to_the_step_that_starts_the_request():
    # Two requests (prompt 4, 3 tokens out) arrive at 0 and 0.5 s; 1 s per step + 0.25 s per starting request.
    # Step 0 (t 0 -> 1.25): A starts (1 request) and makes its first token.  Step 1 (1.25 -> 2.5): A decodes, B
    # starts (+0.25): B's first token at 2.5.  Steps 2, 3 (2.5 -> 3.5 -> 4.5): A finishes at 3.5, B at 4.5.
    wl = Workload(np.array([0.0, 0.5]), np.array([4, 4], np.int64), np.array([3, 3], np.int64))
    cfg = dict(num_gpu_blocks=64, block_size=4, max_num_seqs=8, max_num_batched_tokens=64)
    r = simulate(wl, cfg, OneSecondPlusRequest(1.0)).requests
    assert r.first_token_s.tolist() == [1.25, 2.5]
    assert r.finish_s.tolist() == [3.5, 4.5]
