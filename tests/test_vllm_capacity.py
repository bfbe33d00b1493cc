"""The engine-realistic pool against published vLLM logs (data/measurements/vllm_kv_observations.csv).

Each row is rebuilt as a scenario with the settings its log states (and vLLM's defaults of its time where it
states none). Errors are signed (predicted − observed) / observed, in % of GPU blocks.
"""
from __future__ import annotations

import csv
import statistics

import pytest

from planner.core.paths import measurements_dir
from planner.accuracy.validation import KV_ROWS as ROWS
from planner.accuracy.validation import predicted_blocks

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
    # B01 is vLLM ~0.6, which did not reserve CUDA-graph memory in the pool (−14%); B04 is 70B TP=4 after PR #2031,
    # whose profiler counted ~14 GB per GPU we do not model (+46%). Both stated in the README.
    assert -20 < errs["B01"] < 0
    assert 30 < errs["B04"] < 60
    assert statistics.median(abs(e) for e in errs.values()) < 10
