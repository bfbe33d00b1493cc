"""Disaggregated serving against aiconfigurator's measured xPyD runs: every `mode = disagg` row of
data/measurements/aiconfigurator/silicon_calibration.csv that the catalogue can express, run with its own layout
through planner.capacity.disagg_closed_loop (the `disagg` model of a given layout under a closed loop), printing the
median absolute error of mean TTFT and mean TPOT.

    python -m benchmarks.accuracy_disagg

The mapping we use (aiconfigurator's columns, data/measurements/aiconfigurator/README.md):
- per role, `*_tp_size` is the attention TP, `*_attention_dp_size` the attention DP (an instance has TP × DP
  GPUs), `*_moe_ep_size` the EP over those GPUs (MoE-TP the rest), `*_num_workers` the instances (X, Y);
- `decode_batch_size` is the decode rank's batch limit; the client concurrency C is the run's
  `silicon_concurrency` (the id's `_cN`), a closed loop of C clients with fixed `isl` / `osl`;
- the dated benchmark files (937 rows) leave the worker counts and batch sizes blank: those runs are taken as
  1P1D with the decode batch C / decode DP (an assumption; printed apart from the rows that give them);
- DeepSeek-R1 is run as DeepSeek-V3 (one architecture), FP8 weights (the checkpoint's), KV auto;
- backends: trtllm → tensorrt-llm, sglang, vllm profiles; the KV moves over NIXL's RDMA share of the NICs.
Left out (counted and printed): GB200 rows (no GB200 entry in data/gpus.yaml on this branch), FP4 rows (no NVFP4
weight format), PP > 1 roles.
Only the rows in this file are used (its README: the rest of the public file is held back as a check).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pandas as pd

from planner.capacity.disagg_closed_loop import closed_loop
from planner.capacity.disagg_layout import PoolLayout
from planner.core.errors import InputError
from planner.core.paths import measurements_dir
from planner.core.scenario import Scenario
from planner.core.specs import Deployment

CSV = measurements_dir() / "aiconfigurator" / "silicon_calibration.csv"
GPUS = {"h100_sxm": "H100-SXM", "h200_sxm": "H200", "b200_sxm": "B200"}
ENGINES = {"trtllm": "tensorrt-llm", "sglang": "sglang", "vllm": "vllm"}
MODELS = {"deepseek-ai/DeepSeek-R1": "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-235B-A22B-FP8": "Qwen/Qwen3-235B-A22B"}


def concurrency(row) -> int:
    found = re.search(r"silicon_concurrency=(\d+)", str(row.silicon_data_source)) or re.search(r"_c(\d+)", row.id)
    if found:
        return int(found.group(1))
    return int(row.decode_batch_size * row.decode_attention_dp_size * row.decode_num_workers)  # aiconfigurator's C


def given_workers(row) -> bool:
    """The run lists its worker counts (X, Y) and decode batch; the dated benchmark files leave them blank."""
    return row.prefill_num_workers == row.prefill_num_workers  # not NaN


def pool(row, role: str) -> PoolLayout:
    g = lambda name: int(getattr(row, f"{role}_{name}"))  # noqa: E731
    workers = g("num_workers") if given_workers(row) else 1  # blank: assumed 1P1D
    return PoolLayout(workers, g("tp_size"), g("attention_dp_size"), g("moe_ep_size"))


ROLE_COLUMNS = ("tp_size", "attention_dp_size", "moe_ep_size")
LAYOUT = [f"{role}_{c}" for role in ("prefill", "decode") for c in ROLE_COLUMNS]


def skip_reason(row) -> str:
    if any(getattr(row, c) != getattr(row, c) for c in LAYOUT):  # NaN: the role's layout is blank
        return "layout blank"
    if row.system not in GPUS:
        return f"no {row.system} entry"
    if row.precision != "fp8":
        return f"{row.precision} weights"
    if row.prefill_pp_size > 1 or row.decode_pp_size > 1:
        return "PP > 1"
    return ""


def decode_batch(row) -> int:
    """The decode rank's batch limit; where blank, the concurrency spread over the decode ranks."""
    if row.decode_batch_size == row.decode_batch_size:  # not NaN
        return int(row.decode_batch_size)
    workers = int(row.decode_num_workers) if given_workers(row) else 1
    return -(-concurrency(row) // int(row.decode_attention_dp_size * workers))


def predict(row) -> tuple[float, float]:
    isl, osl = int(row.isl), int(row.osl)
    dep = Deployment(weights="fp8", max_model_len=isl + osl, max_num_seqs=decode_batch(row))
    s = Scenario(model=MODELS.get(row.model_path, row.model_path), gpu=GPUS[row.system], deployment=dep)
    s = s.model_copy(update={"engine": ENGINES[row.backend]})
    loop = closed_loop(s, concurrency(row), pool(row, "prefill"), pool(row, "decode"), isl, osl, decode_batch(row))
    return loop.ttft_s * 1e3, loop.tpot_s * 1e3


def main() -> None:
    rows = pd.read_csv(CSV)
    rows = rows[rows["mode"] == "disagg"]
    skipped: Counter = Counter()
    out = []
    for row in rows.itertuples(index=False):
        why = skip_reason(row)
        if why:
            skipped[why] += 1
            continue
        try:
            ttft, tpot = predict(row)
        except InputError as err:
            skipped[f"{err.field}: {err.message[:60]}"] += 1
            continue
        out.append(
            dict(
                backend=row.backend,
                system=row.system,
                isl=row.isl,
                osl=row.osl,
                counts="given" if given_workers(row) else "blank (1P1D assumed)",
                ttft_err=ttft / row.silicon_ttft_ms - 1,
                tpot_err=tpot / row.silicon_tpot_ms - 1,
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
    abs_err = df.assign(ttft=df.ttft_err.abs(), tpot=df.tpot_err.abs())
    by_counts = abs_err.groupby("counts")
    print(by_counts[["ttft", "tpot"]].median().map(lambda v: f"{v:.1%}").assign(rows=by_counts.size()).to_string())
    by = abs_err.groupby(["backend", "system"])
    print(by[["ttft", "tpot"]].median().map(lambda v: f"{v:.1%}").assign(rows=by.size()).to_string())


if __name__ == "__main__":
    main()
