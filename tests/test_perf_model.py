"""Roofline invariants of planner.latency.perf_model, and the calibration error targets (a regression fails here)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.accuracy.published_points import error_summary, evaluate
from planner.core.scenario import Scenario, resolve, with_engine
from planner.core.specs import Deployment
from planner.latency.expert_routing import expected_experts
from planner.latency.metrics import ridge_batch, sweep
from planner.latency.perf_model import BREAKDOWN_KEYS, PerfModel


def resolved(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", tp=1, weights="bf16", kv="auto"):
    dep = Deployment(num_gpus=tp, tensor_parallel_size=tp, weights=weights, kv_cache_dtype=kv)
    return resolve(Scenario(model=model, gpu=gpu, deployment=dep))


SCENARIOS = [
    ("meta-llama/Llama-3.1-8B", "H100-SXM", 1),
    ("mistralai/Mixtral-8x7B-v0.1", "H100-SXM", 2),
    ("meta-llama/Llama-2-70b-hf", "A100-80GB", 4),
    ("mistralai/Mistral-7B-v0.1", "L4", 1),
]
BATCHES = np.arange(1, 1025)


@pytest.mark.parametrize("model, gpu, tp", SCENARIOS)
def test_tpot_never_falls_as_the_batch_grows(model, gpu, tp):
    df = sweep(PerfModel(resolved(model, gpu, tp)), BATCHES, 1000, 200)
    assert np.all(np.diff(df["tpot_s"]) >= -1e-15)


@pytest.mark.parametrize("model, gpu, tp", SCENARIOS)
def test_throughput_never_falls_while_memory_bound(model, gpu, tp):
    pm = PerfModel(resolved(model, gpu, tp))
    df = sweep(pm, BATCHES, 128, 128)
    memory = df["bound"] == "memory"
    first_compute = np.argmax(~memory) if (~memory).any() else len(BATCHES)
    decode_rate = BATCHES / df["tpot_s"]
    assert np.all(np.diff(decode_rate[:first_compute]) > 0)
    assert np.all(np.diff(df["throughput_tokens_per_s"][:first_compute]) > 0)


def test_batch_1_decode_is_memory_bound_and_long_prefill_compute_bound():
    pm = PerfModel(resolved())
    assert pm.decode(1, 1000).bound == "memory"
    assert pm.prefill(1, 8192).bound == "compute"


def test_ridge_point_is_where_compute_overtakes_memory():
    pm = PerfModel(resolved())
    ridge = ridge_batch(pm, 128)
    assert ridge is not None and ridge > 1
    assert pm.decode(ridge - 1, 128).bound == "memory"
    assert pm.decode(ridge, 128).bound == "compute"


def test_moe_expected_distinct_experts():
    assert expected_experts(8, 2, 1) == pytest.approx(2)  # one token: its top-2
    assert expected_experts(8, 2, 4) == pytest.approx(8 * (1 - 0.75**4))  # 5.46875
    assert expected_experts(8, 2, 512) == pytest.approx(8)
    assert expected_experts(128, 8, 1) == pytest.approx(8)


def test_moe_decode_reads_more_experts_as_the_batch_grows():
    pm = PerfModel(resolved("mistralai/Mixtral-8x7B-v0.1", tp=2))
    small, big = pm.decode(1, 0), pm.decode(64, 0)
    assert big.bytes_read > small.bytes_read
    # batch 1 reads the shared layers + 2 of 8 experts; a big batch reads them all
    assert small.bytes_read - pm.kv_bytes_full - pm.act_bytes_per_token - pm.act_bytes_per_seq == pytest.approx(
        pm.dense_weight_bytes + 2 * pm.expert_bytes
    )


def test_tp_adds_communication_and_splits_weights():
    one, two = PerfModel(resolved(tp=1)), PerfModel(resolved(tp=2))
    assert one.decode(8, 1000).parts["communication_s"] == 0
    assert two.decode(8, 1000).parts["communication_s"] > 0
    assert two.dense_weight_bytes == pytest.approx(one.dense_weight_bytes / 2)
    assert two.comm_s_per_token > 0 and two.comm_fixed_s > 0


def test_fp8_compute_only_where_the_gpu_has_it():
    hopper, ampere = PerfModel(resolved(weights="fp8")), PerfModel(resolved(gpu="A100-80GB", weights="fp8"))
    # datasheet dense FLOP/s x what a large-GEMM sweep reaches on the part (gpus.yaml: H100 FP8 70.9%, A100 BF16 86.9%)
    assert hopper.compute_dtype == "fp8" and hopper.peak_flops == pytest.approx(1978.9e12 * 0.71)
    assert ampere.compute_dtype == "bf16" and ampere.peak_flops == pytest.approx(312e12 * 0.87)
    assert ampere.dequant > hopper.dequant  # weight-only FP8 on Ampere pays a dequantisation cost


def test_quantized_weights_read_fewer_bytes_and_decode_faster():
    bf16, int4 = PerfModel(resolved()), PerfModel(resolved(weights="gptq-int4"))
    assert int4.dense_weight_bytes < 0.4 * bf16.dense_weight_bytes
    assert int4.dequant > 0
    assert int4.decode(1, 500).total_s < bf16.decode(1, 500).total_s


def test_breakdown_sums_to_the_step():
    for step in (PerfModel(resolved()).decode(64, 3000), PerfModel(resolved(tp=2)).prefill(4, 2048)):
        assert set(step.parts) == set(BREAKDOWN_KEYS)
        assert sum(step.parts.values()) == pytest.approx(step.total_s)
        assert step.total_s == pytest.approx(
            max(step.memory_s, step.compute_s) + step.parts["communication_s"] + step.parts["overhead_s"]
        )


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(SCENARIOS), new=st.integers(1, 20000), seqs=st.integers(1, 512), ctx=st.integers(0, 40000))
def test_fast_path_matches_the_vectorised_path(model, new, seqs, ctx):
    pm = PerfModel(resolved(*model))
    seqs = min(seqs, new)
    kv, pairs = seqs * ctx, new * ctx + new
    assert pm.step_time_s(new, seqs, kv, pairs) == pytest.approx(
        float(pm.step(new, seqs, kv, pairs).total_s), rel=1e-12
    )


def test_status_calibrated_transferred_estimated():
    # own points -> calibrated; the engine's shared constants on a family measured only with other engines
    # (llama.cpp on ada) -> transferred; a family nobody measured (Turing: T4) -> estimated, from the datasheet
    assert PerfModel(with_engine(resolved(gpu="A100-80GB"), "tensorrt-llm-0.9")).choice.status == "calibrated"
    # TensorRT-LLM 1.x has no Ampere rows of its own: its shared constants, from Hopper and Blackwell
    assert PerfModel(with_engine(resolved(gpu="A100-80GB"), "tensorrt-llm")).choice.status == "transferred"
    pm = PerfModel(resolved("mistralai/Mistral-7B-v0.1", gpu="L4"))
    assert pm.choice.status == "transferred" and pm.choice.source_key == "vllm/default"
    assert PerfModel(resolved("mistralai/Mistral-7B-v0.1", gpu="T4")).choice.status == "estimated"
    # Blackwell and SGLang are calibrated by aiconfigurator's rows (validation/fit_efficiency.py)
    assert PerfModel(resolved(gpu="B200")).choice.status == "calibrated"
    assert PerfModel(with_engine(resolved(gpu="H100-SXM"), "sglang")).choice.status == "calibrated"


def test_calibration_error_targets():
    df = evaluate()
    used = df[df["excluded"] == ""]
    assert len(used) >= 80 and used["predicted"].notna().all()
    assert set(df.loc[df["excluded"] != "", "engine"]) <= {"vllm", "vllm-0.6", "sglang"}  # the serving-at-QPS points
    groups = error_summary(df, "group").set_index("group")["median_abs_pct"]
    assert groups["decode"] <= 15.0
    assert groups["prefill"] <= 20.0
