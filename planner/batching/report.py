"""Summaries and tables of batching runs: waits, latencies, percentiles, GPU busy, padding.

Percentile convention, used everywhere: numpy's 'linear' method (rank (n − 1) × q / 100, interpolated),
over the admitted requests only (rejected ones have no wait or latency; they are counted separately).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.batching.requests import RequestSet, with_spread
from planner.batching.step_model import BatchingRun, run_pair

PERCENTILE_METHOD = "linear"


def percentile(values, q: float) -> float:
    """The q-th percentile with the project's one convention (numpy 'linear'); 0.0 for no values."""
    values = np.asarray(values, dtype=float)
    return float(np.percentile(values, q, method=PERCENTILE_METHOD)) if values.size else 0.0


CLI_KEYS = (  # Summary.to_dict: the `batching --json` keys of each policy, in order
    "avg_wait",
    "avg_latency",
    "p50_latency",
    "p95_latency",
    "p99_latency",
    "end_step",
    "gpu_busy",
    "p50_wait",
    "p95_wait",
    "p99_wait",
    "num_requests",
    "rejected",
    "useful_slot_steps",
)


@dataclass(frozen=True)
class Summary:
    """One run in numbers (steps unless named otherwise)."""

    policy: str
    num_requests: int
    num_served: int
    rejected: int
    avg_wait: float
    p50_wait: float
    p95_wait: float
    p99_wait: float
    avg_latency: float
    p50_latency: float
    p95_latency: float
    p99_latency: float
    avg_first_token: float  # steps from arrival to the first token (queue wait + one step)
    end_step: int
    useful_slot_steps: int
    gpu_busy: float  # fraction 0..1: useful slot-steps / (slots × end_step)
    num_batches: int
    padding_tokens: int
    padding_share: float  # fraction 0..1 of padded prompt tokens that are filler

    def to_dict(self) -> dict:
        """The CLI's JSON contract for one policy (all in steps; gpu_busy a fraction 0..1)."""
        return {k: getattr(self, k) for k in CLI_KEYS}


def waits(result: BatchingRun) -> np.ndarray:
    """Wait = step admitted − arrival, for served requests."""
    served = ~result.rejected
    return result.admitted[served] - np.asarray(result.requests.arrival)[served]


def latencies(result: BatchingRun) -> np.ndarray:
    """Latency = step finished − arrival, for served requests (static: when the batch's longest finishes)."""
    served = ~result.rejected
    return result.finish[served] - np.asarray(result.requests.arrival)[served]


def useful_slot_steps(result: BatchingRun) -> int:
    """Slot-steps that produced a token: the output tokens of every served request."""
    return int(np.asarray(result.requests.output_tokens)[~result.rejected].sum())


def gpu_busy(result: BatchingRun) -> float:
    """GPU busy = useful slot-steps / (slots × last step), primer §6."""
    capacity = result.slots * result.end_step
    return useful_slot_steps(result) / capacity if capacity else 0.0


def summarize(result: BatchingRun) -> Summary:
    w, lat = waits(result), latencies(result)
    served = int((~result.rejected).sum())
    return Summary(
        policy=result.policy.name,
        num_requests=len(result.requests),
        num_served=served,
        rejected=int(result.rejected.sum()),
        avg_wait=float(w.mean()) if served else 0.0,
        p50_wait=percentile(w, 50),
        p95_wait=percentile(w, 95),
        p99_wait=percentile(w, 99),
        avg_latency=float(lat.mean()) if served else 0.0,
        p50_latency=percentile(lat, 50),
        p95_latency=percentile(lat, 95),
        p99_latency=percentile(lat, 99),
        avg_first_token=float(w.mean()) + 1 if served else 0.0,
        end_step=result.end_step,
        useful_slot_steps=useful_slot_steps(result),
        gpu_busy=gpu_busy(result),
        num_batches=result.num_batches,
        padding_tokens=result.padding_tokens,
        padding_share=result.padding_tokens / result.padded_prompt_tokens if result.padded_prompt_tokens else 0.0,
    )


def requests_frame(result: BatchingRun) -> pd.DataFrame:
    """Per-request records: arrival, admitted, first token, token end, finish, wait, latency, slot."""
    req = result.requests
    served = ~result.rejected
    df = pd.DataFrame(
        {
            "name": req.names,
            "arrival": req.arrival,
            "output_tokens": req.output_tokens,
            "prompt_tokens": req.prompt_tokens,
            "slot": result.slot,
            "admitted": result.admitted,
            "first_token": np.where(served, result.admitted + 1, -1),
            "tokens_done": np.where(served, result.admitted + np.asarray(req.output_tokens), -1),
            "finish": result.finish,
            "rejected": result.rejected,
        }
    )
    df["wait"] = np.where(served, df["admitted"] - df["arrival"], -1)
    df["latency"] = np.where(served, df["finish"] - df["arrival"], -1)
    df.insert(0, "policy", result.policy.name)
    return df


def steps_frame(result: BatchingRun) -> pd.DataFrame:
    """Per-step records as run-length segments: steps [start, end) each with `running` requests, `idle` slots."""
    starts = result.seg_start
    ends = np.append(starts[1:], max(result.end_step, int(starts[-1]) if starts.size else 0))
    df = pd.DataFrame({"start": starts, "end": ends, "running": result.seg_running})
    df = df[df["end"] > df["start"]].reset_index(drop=True)
    df["idle"] = result.slots - df["running"]
    df.insert(0, "policy", result.policy.name)
    return df


def comparison_frame(results: dict[str, BatchingRun]) -> pd.DataFrame:
    """One row per policy with the headline numbers."""
    return pd.DataFrame([summarize(r) for r in results.values()])


def spread_sweep(
    requests: RequestSet, slots: int, max_wait: int, spreads=(0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
) -> pd.DataFrame:
    """Static vs continuous as output lengths spread out (spread 0 = all equal): one row per (spread, policy)."""
    rows = []
    for spread in spreads:
        for name, result in run_pair(with_spread(requests, spread), slots, max_wait).items():
            s = summarize(result)
            rows.append(
                {
                    "spread": spread,
                    "policy": name,
                    "end_step": s.end_step,
                    "gpu_busy": s.gpu_busy,
                    "avg_latency": s.avg_latency,
                    "p95_latency": s.p95_latency,
                }
            )
    return pd.DataFrame(rows)
