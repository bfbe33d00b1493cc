"""The engine-realistic pool against published vLLM logs (data/measurements/vllm_kv_observations.csv).

Each row is rebuilt as a scenario with the settings its log states (and vLLM's defaults of its time where it
states none). Errors are signed (predicted − observed) / observed, in % of GPU blocks.
"""

from __future__ import annotations

import csv
import statistics

import pytest

from planner.accuracy.validation import KV_ROWS as ROWS
from planner.accuracy.validation import predicted_blocks
from planner.core.paths import measurements_dir

OBSERVATIONS = measurements_dir() / "vllm_kv_observations.csv"


def _observed() -> dict[str, int]:
    with OBSERVATIONS.open() as f:
        return {row["id"]: int(row["gpu_blocks"]) for row in csv.DictReader(f)}


def errors_pct() -> dict[str, float]:
    observed = _observed()
    return {rid: 100 * (predicted_blocks(rid) - observed[rid]) / observed[rid] for rid in ROWS}


@pytest.mark.parametrize("row_id", ["B03", "B10"])
def test_close_to_logs_of_unmodified_profiler(row_id):
    # B03 (Llama-2-7B, A100-80GB) was not used in the fit; B10 fixed the CUDA-graph constant.
    assert abs(errors_pct()[row_id]) < 2.0


def test_summary_error_over_all_observations():
    errs = errors_pct()
    # B01 is vLLM ~0.6, which did not reserve CUDA-graph memory in the pool (−14%). B04 (70B TP=4 after PR #2031,
    # Dec 2023) needed ~4.2 GiB of non-torch memory per TP peer; the per-peer constant comes from PR #10511 (1.79 GiB,
    # v0.6.5), so B04 stays over-predicted (+28%, was +46% with the unfitted 0.25 GiB).
    assert -20 < errs["B01"] < 0
    assert 15 < errs["B04"] < 35
    assert statistics.median(abs(e) for e in errs.values()) < 10


def test_non_torch_per_tp_peer_reproduces_pr_10511():
    # vLLM PR #10511: Llama-3-8B on H100, non_torch_memory 1.79 GiB at TP1 and 3.58 GiB at TP2: +1.79 GiB per peer
    from planner.core.specs import Deployment
    from planner.memory.vllm_pool import runtime_overhead_bytes

    one, _ = runtime_overhead_bytes(Deployment(num_gpus=1, tensor_parallel_size=1), interconnect="NVLink 4")
    two, _ = runtime_overhead_bytes(Deployment(num_gpus=2, tensor_parallel_size=2), interconnect="NVLink 4")
    assert (two - one) / 2**30 == pytest.approx(3.58 - 1.79, abs=0.005)
    pcie, _ = runtime_overhead_bytes(Deployment(num_gpus=2, tensor_parallel_size=2), interconnect="PCIe 4.0 x16")
    assert pcie < two  # no NVLink channels: the 0.25 GiB assumption
