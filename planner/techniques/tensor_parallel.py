"""Tensor parallelism as a what-if: memory per GPU, TPOT and throughput at TP 1/2/4/8 (primer §8, §10).

    weights per GPU = weights / TP;  KV heads per GPU = max(1, KV heads / TP) (replicated past the KV-head count)
    TPOT(TP)        = max(memory, compute) / TP-sharded + 2 × layers all-reduces + overhead
                      (planner.latency.perf_model)
    throughput      = batch / TPOT per replica;  per GPU = throughput / TP

Each TP degree is one replica of TP GPUs (the scenario's deployment copied with tensor_parallel_size = num_gpus
= TP). The batch is the chosen one, capped by that degree's KV pool. Left out: pipeline parallelism and
the extra GPUs' cost beyond the count.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from planner.core.scenario import Resolved
from planner.latency.perf_model import PerfModel
from planner.memory.plan import TP_DEGREES, plan_memory


def at_tp(r: Resolved, tp: int) -> Resolved:
    """One replica of the scenario at TP degree `tp` on `tp` GPUs."""
    dep = r.deployment.model_copy(update={"tensor_parallel_size": tp, "num_gpus": tp})
    return dataclasses.replace(r, deployment=dep)


@dataclass(frozen=True)
class TPRow:
    """Memory, fit, TPOT and throughput at one TP degree (a row of `tp`); the speed fields are None without a fit."""

    tp: int
    gpus: int
    weights_per_gpu_bytes: float
    kv_pool_per_gpu_bytes: float
    kv_cache_tokens: int
    max_requests: int
    fits: bool
    note: str
    batch: int = 0
    tpot_batch1_s: float | None = None
    tpot_s: float | None = None
    communication_s: float | None = None
    throughput_tokens_per_s: float | None = None
    throughput_per_gpu_tokens_per_s: float | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def tp_row(r: Resolved, tp: int, batch: int, context_tokens: int, request_tokens: int | None = None) -> TPRow:
    """Memory, fit, TPOT (batch 1 and chosen batch) and throughput at one TP degree.

    Decode steps read `context_tokens` per sequence; a request holds `request_tokens` (default the same) of KV."""
    rt = dataclasses.replace(at_tp(r, tp), context_tokens=request_tokens or context_tokens)
    plan = plan_memory(rt)
    b = min(batch, plan.paged_max_requests)
    row = TPRow(
        tp=tp,
        gpus=tp,
        weights_per_gpu_bytes=plan.weight_bytes_per_gpu,
        kv_pool_per_gpu_bytes=plan.kv_pool_bytes_per_gpu,
        kv_cache_tokens=plan.kv_cache_tokens,
        max_requests=plan.paged_max_requests,
        fits=plan.fits and b >= 1,
        note="; ".join(plan.warnings),
    )
    if not row.fits:
        return row
    pm = PerfModel(rt)
    one = pm.decode(1, context_tokens)
    dec = pm.decode(b, context_tokens)
    thr = b / float(dec.total_s)
    return dataclasses.replace(
        row,
        batch=b,
        tpot_batch1_s=float(one.total_s),
        tpot_s=float(dec.total_s),
        communication_s=float(dec.parts["communication_s"]),
        throughput_tokens_per_s=thr,
        throughput_per_gpu_tokens_per_s=thr / tp,
    )


def compare_tp(
    r: Resolved,
    batch: int,
    context_tokens: int,
    degrees=TP_DEGREES,
    request_tokens: int | None = None,
) -> list[TPRow]:
    """One row per TP degree."""
    return [tp_row(r, tp, batch, context_tokens, request_tokens) for tp in degrees]


def min_fitting_tp(rows: list[TPRow]) -> int | None:
    """The smallest TP degree at which vLLM can start with at least one request."""
    return next((row.tp for row in rows if row.fits), None)
