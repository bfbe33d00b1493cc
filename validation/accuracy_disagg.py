"""Disaggregated serving against aiconfigurator's measured xPyD runs: every `mode = disagg` row of
data/measurements/aiconfigurator/silicon_calibration.csv that the catalogue can express, run with its own layout
through planner.capacity.disagg_closed_loop (the `disagg` model of a given layout under a closed loop), printing the
median absolute error of mean TTFT and mean TPOT.

    python -m validation.accuracy_disagg

The mapping we use (aiconfigurator's columns, data/measurements/aiconfigurator/README.md):
- per role, `*_tp_size` is the attention TP, `*_attention_dp_size` the attention DP (an instance has TP × DP
  GPUs), `*_moe_ep_size` the EP over those GPUs (MoE-TP the rest), `*_num_workers` the instances (X, Y);
- `decode_batch_size` is the decode rank's batch limit; the client concurrency C is the run's
  `silicon_concurrency` (the id's `_cN`), a closed loop of C clients with fixed `isl` / `osl`;
- the dated benchmark files (937 rows) leave the worker counts and batch sizes blank: those runs are taken as
  1P1D with the decode batch C / decode DP (an assumption; printed apart from the rows that give them);
- models by planner.accuracy.names.resolve_model (DeepSeek-R1 as DeepSeek-V3, one architecture; an -NVFP4 or -FP8
  checkpoint as its base preset), weights by gemm_quant_mode (fp8 / fp8_block → fp8, nvfp4 → nvfp4), KV auto;
- systems h100_sxm, h200_sxm, b200_sxm, gb200 → H100-SXM, H200, B200, GB200 (NVL72: a role's EP group inside
  the rack stays on NVLink);
- a blank or 0 EP (vLLM rows without --enable-expert-parallel) is EP 1, a blank or 0 attention DP is DP 1;
- backends: trtllm → tensorrt-llm, sglang, vllm profiles; the KV moves over NIXL's RDMA share of the NICs.
Left out (counted and printed): PP > 1 roles, models without a preset, and layouts the engine itself refuses,
with its own message (planner/core/head_split.py): the 81 GB200 DeepSeek-R1 rows of the dated files whose role TP
(12-72, attention DP 1) does not divide the 128 query heads. vLLM, SGLang and TensorRT-LLM all refuse that attention
TP; the only way each starts N GPUs on 128 heads is attention DP (TensorRT-LLM's tensor_parallel_size N with
enable_attention_dp, SGLang's --tp N --dp N --enable-dp-attention: attention TP 1 × DP N). Those rows are also run
under that reading and printed apart (an assumption about the run, not counted in the figures above it).
Only the rows in this file are used (its README: the rest of the public file is held back as a check).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pandas as pd

from planner.accuracy.aiconfigurator_rows import WEIGHTS
from planner.accuracy.bench_protocol import protocol_of
from planner.accuracy.names import resolve_model
from planner.capacity.disagg_benchmark import simulate_benchmark
from planner.capacity.disagg_closed_loop import closed_loop
from planner.capacity.disagg_layout import PoolLayout
from planner.core.errors import InputError
from planner.core.paths import measurements_dir
from planner.core.scenario import Scenario
from planner.core.specs import Deployment

CSV = measurements_dir() / "aiconfigurator" / "silicon_calibration.csv"
GPUS = {"h100_sxm": "H100-SXM", "h200_sxm": "H200", "b200_sxm": "B200", "gb200": "GB200"}
ENGINES = {"trtllm": "tensorrt-llm", "sglang": "sglang", "vllm": "vllm"}


def concurrency(row) -> int:
    found = re.search(r"silicon_concurrency=(\d+)", str(row.silicon_data_source)) or re.search(r"_c(\d+)", row.id)
    if found:
        return int(found.group(1))
    return int(row.decode_batch_size * row.decode_attention_dp_size * row.decode_num_workers)  # aiconfigurator's C


def given_workers(row) -> bool:
    """The run lists its worker counts (X, Y) and decode batch; the dated benchmark files leave them blank."""
    return row.prefill_num_workers == row.prefill_num_workers  # not NaN


def size(value) -> int:
    """A layout column: blank (NaN) or 0 means not set, i.e. 1."""
    return max(int(value), 1) if value == value else 1


def pool(row, role: str, attention_dp: bool = False) -> PoolLayout:
    """The role's layout as given; `attention_dp`: a TP that splits no heads evenly read as attention DP."""
    g = lambda name: size(getattr(row, f"{role}_{name}"))  # noqa: E731
    workers = g("num_workers") if given_workers(row) else 1  # blank: assumed 1P1D
    tp, dp = g("tp_size"), g("attention_dp_size")
    if attention_dp and dp == 1 and HEADS % tp:
        tp, dp = 1, tp  # tensor_parallel_size N + enable_attention_dp: attention TP 1 × DP N
    return PoolLayout(workers, tp, dp, g("moe_ep_size"))


HEADS = 128  # DeepSeek-V3/R1 query heads: the only model of the rows whose TP does not divide its heads


ROLE_COLUMNS = ("tp_size",)
LAYOUT = [f"{role}_{c}" for role in ("prefill", "decode") for c in ROLE_COLUMNS]


def skip_reason(row) -> str:
    if any(getattr(row, c) != getattr(row, c) for c in LAYOUT):  # NaN: the role's layout is blank
        return "layout blank"
    if row.system not in GPUS:
        return f"no {row.system} entry"
    if row.gemm_quant_mode not in WEIGHTS:
        return f"{row.gemm_quant_mode} weights"
    if row.prefill_pp_size > 1 or row.decode_pp_size > 1:
        return "PP > 1"
    if resolve_model(row.model_path)[0] is None:
        return f"no preset for {row.model_path}"
    return ""


def decode_batch(row) -> int:
    """The decode rank's batch limit; where blank, the concurrency spread over the decode ranks."""
    if row.decode_batch_size == row.decode_batch_size:  # not NaN
        return int(row.decode_batch_size)
    workers = int(row.decode_num_workers) if given_workers(row) else 1
    return -(-concurrency(row) // (size(row.decode_attention_dp_size) * workers))


def scenario(row) -> Scenario:
    isl, osl = int(row.isl), int(row.osl)
    dep = Deployment(weights=WEIGHTS[row.gemm_quant_mode], max_model_len=isl + osl, max_num_seqs=decode_batch(row))
    s = Scenario(model=resolve_model(row.model_path)[0], gpu=GPUS[row.system], deployment=dep)
    return s.model_copy(update={"engine": ENGINES[row.backend]})


def rounds(row) -> int:
    """Rounds of C requests the row's client measured, the first a burst (planner.accuracy.bench_protocol)."""
    return protocol_of(row._asdict()).rounds


def predict(row, attention_dp: bool = False) -> tuple[float, float, float]:
    """(mean TTFT ms, mean TPOT ms, one prompt's prefill ms) under the analytic closed loop."""
    isl, osl = int(row.isl), int(row.osl)
    prefill, decode = pool(row, "prefill", attention_dp), pool(row, "decode", attention_dp)
    loop = closed_loop(
        scenario(row), concurrency(row), prefill, decode, isl, osl, decode_batch(row), burst_of=rounds(row)
    )
    return loop.ttft_s * 1e3, loop.tpot_s * 1e3, loop.prefill_s * 1e3


def simulate(row) -> tuple[float, float]:
    """(mean TTFT ms, mean TPOT ms) of the start-together request-level simulation (disagg_benchmark)."""
    isl, osl = int(row.isl), int(row.osl)
    batch = size(row.prefill_batch_size)
    run = simulate_benchmark(
        scenario(row),
        concurrency(row),
        pool(row, "prefill"),
        pool(row, "decode"),
        isl,
        osl,
        decode_batch(row),
        batch,
        burst_of=rounds(row),
    )
    return run.ttft_s * 1e3, run.tpot_s * 1e3


def read_as_attention_dp(row) -> dict:
    """A row the engine refuses, run with its head-splitting TP read as attention DP (module note)."""
    try:
        ttft, tpot, _ = predict(row, attention_dp=True)
    except InputError as err:
        return dict(refused=f"{err.field}: {err.message[:70]}")
    return dict(ttft_err=ttft / row.silicon_ttft_ms - 1, tpot_err=tpot / row.silicon_tpot_ms - 1)


def print_attention_dp_reading(refused: list[dict]) -> None:
    if not refused:
        return
    ran = pd.DataFrame([r for r in refused if "refused" not in r])
    print(
        f"rows the engine refuses, read as attention DP ({len(refused)}; {len(ran)} run, assumed 1P1D, not counted "
        f"above): median |error| TTFT {np.median(ran.ttft_err.abs()):.1%}, TPOT {np.median(ran.tpot_err.abs()):.1%}"
        if len(ran)
        else f"rows the engine refuses, read as attention DP: none run ({refused[0]['refused']})"
    )


def main() -> None:
    rows = pd.read_csv(CSV)
    rows = rows[rows["mode"] == "disagg"]
    skipped: Counter = Counter()
    out, refused = [], []
    for row in rows.itertuples(index=False):
        why = skip_reason(row)
        if why:
            skipped[why] += 1
            continue
        try:
            ttft, tpot, prefill = predict(row)
            sim = simulate(row) if given_workers(row) else (np.nan, np.nan)
        except InputError as err:
            skipped[f"{row.backend} {err.field}: {err.message[:70]}"] += 1
            if err.field in ("tensor_parallel_size", "prefill_tp", "decode_tp"):
                refused.append(read_as_attention_dp(row))
            continue
        out.append(
            dict(
                backend=row.backend,
                system=row.system,
                isl=row.isl,
                osl=row.osl,
                clients=concurrency(row),
                counts="given" if given_workers(row) else "blank (1P1D assumed)",
                ttft_err=ttft / row.silicon_ttft_ms - 1,
                tpot_err=tpot / row.silicon_tpot_ms - 1,
                sim_ttft_err=sim[0] / row.silicon_ttft_ms - 1,
                sim_tpot_err=sim[1] / row.silicon_tpot_ms - 1,
                light_ttft_ratio=row.silicon_ttft_ms / ttft,
            )
        )
    df = pd.DataFrame(out)
    print(f"{len(rows)} disaggregated rows; {len(df)} run, {sum(skipped.values())} left out:")
    for why, n in skipped.most_common():
        print(f"  {n:>4}  {why}")
    given = df[df.counts == "given"]
    for name, part in (("rows that give X, Y and the decode batch", given), ("all rows run", df)):
        print(
            f"{name} ({len(part)}): median |error| TTFT {np.median(part.ttft_err.abs()):.1%}, TPOT "
            f"{np.median(part.tpot_err.abs()):.1%}; signed TTFT {np.median(part.ttft_err):+.1%}, TPOT "
            f"{np.median(part.tpot_err):+.1%}"
        )
    print(
        f"start-together request-level simulation, given rows ({len(given)}): median |error| TTFT "
        f"{np.median(given.sim_ttft_err.abs()):.1%}, TPOT {np.median(given.sim_tpot_err.abs()):.1%}; signed TTFT "
        f"{np.median(given.sim_ttft_err):+.1%}, TPOT {np.median(given.sim_tpot_err):+.1%}"
    )
    light = df[df.clients <= 8]
    print(
        f"at <= 8 clients ({len(light)} rows, no queue to speak of): measured TTFT / predicted median "
        f"{np.median(light.light_ttft_ratio):.2f}x (quartiles {np.percentile(light.light_ttft_ratio, 25):.2f}-"
        f"{np.percentile(light.light_ttft_ratio, 75):.2f}x): the prefill and hand-off themselves are too short"
    )
    print_attention_dp_reading(refused)
    abs_err = df.assign(ttft=df.ttft_err.abs(), tpot=df.tpot_err.abs())
    by_counts = abs_err.groupby("counts")
    print(by_counts[["ttft", "tpot"]].median().map(lambda v: f"{v:.1%}").assign(rows=by_counts.size()).to_string())
    by = abs_err.groupby(["backend", "system"])
    print(by[["ttft", "tpot"]].median().map(lambda v: f"{v:.1%}").assign(rows=by.size()).to_string())


if __name__ == "__main__":
    main()
