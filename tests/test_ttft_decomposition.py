"""benchmarks/ttft_decomposition: a row's measured mean TTFT beside the simulator's two runs (clients spread out;
started together, with that run's first-round burst), and the burst weight that would reproduce the measurement."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from benchmarks.ttft_decomposition import decompose, implied_burst_weight
from planner.accuracy.aiconfigurator_rows import read_aiconfigurator
from planner.accuracy.bench_protocol import INFERENCEMAX
from planner.accuracy.serving_points import predict, predict_parts, resolved
from planner.core.paths import measurements_dir
from planner.latency.perf_model import PerfModel

CSV = measurements_dir() / "aiconfigurator" / "silicon_calibration.csv"
ROW = "_vllm_fp8_agg_1024x1024_c4_tp2_ep1_913"  # Llama-3.1-70B FP8 on 2 x H200, 4 clients, InferenceMAX's client


def test_the_burst_weight_by_hand():
    """measured 300 ms between a spread state of 100 and a burst of 2,100: a burst round weighing 0.1 (one round in
    ten, InferenceMAX's 10 measured rounds) gives 0.1 x 2,100 + 0.9 x 100 = 300; a burst no slower than the spread
    state tells nothing (NaN)."""
    df = pd.DataFrame(
        {"measured": [300.0, 100.0, 50.0], "spread": [100.0, 100.0, 100.0], "burst": [2100.0, 2100.0, 80.0]}
    )
    w = implied_burst_weight(df)
    assert w[0] == pytest.approx(0.1) and w[1] == 0.0 and math.isnan(w[2])


def test_the_two_runs_are_the_ones_validate_weighs():
    """predict's mean TTFT = the client's mix of the started-together run's burst round (1/R) and the steady state,
    (1 − φ) × spread + φ × lockstep with the engine profile's wave fraction φ (serving_points.predict)."""
    row = next(p for p in read_aiconfigurator(CSV.read_text()) if p.id.endswith(ROW))
    assert row.protocol == INFERENCEMAX and row.protocol.rounds == 10
    spread, wave = predict_parts(row)
    phi = PerfModel(resolved(row)).eff.wave_fraction
    steady = (1 - phi) * spread.ttft_ms + phi * wave.ttft_ms
    assert predict(row).ttft_ms == pytest.approx(0.1 * wave.burst_ttft_ms + 0.9 * steady)
    # a burst of 4 prompts on an idle server waits longer than the drifted clients' prompts
    assert wave.burst_ttft_ms > spread.ttft_ms
    out = decompose(row)
    assert (out["spread"], out["lockstep"], out["burst"]) == (spread.ttft_ms, wave.ttft_ms, wave.burst_ttft_ms)
    assert out["measured"] == pytest.approx(121.29, abs=0.01) and out["rounds"] == 10
