"""Glue between a scenario and the serving simulator: its scheduler knobs, its step cost, one run, one summary.

The scenario's Deployment already carries vLLM's engine arguments (block_size, max_num_seqs,
max_num_batched_tokens); the KV pool size comes from the memory model (plan_memory -> num_gpu_blocks) and the
step time from the latency model (PerfModel). One run simulates ONE replica: divide fleet traffic by the number
of replicas before calling. The summary keeps the CLI contract keys (`python -m planner simulate --json`).
"""

from __future__ import annotations

import math

import numpy as np

from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.latency.efficiency import DEFAULT_ENGINE
from planner.latency.perf_model import PerfModel
from planner.memory.plan import plan_memory
from planner.memory.sliding_window import sliding_window_blocks
from planner.sim.config import SchedulerConfig, scheduler_config
from planner.sim.records import LatencyStats, ServingSummary, SimResult, latencies, stats, summary
from planner.sim.simulator import simulate
from planner.traffic.workload import Workload

LATENCY_KEYS = {"ttft_s": "ttft_s", "tpot_s": "tpot_s", "e2e_s": "e2e_s", "queue_s": "queue_wait_s"}
STAT_KEYS = ("mean", "p50", "p95", "p99")


def max_blocks_per_request(r: Resolved) -> int | None:
    """vLLM V1's sliding-window block cap per request when EVERY layer is windowed (planner.memory.
    sliding_window); None when some layers attend to the whole context (they hold every block)."""
    m = r.model
    if not m.sliding_window or m.num_sliding_layers < m.num_layers:
        return None
    dep = r.deployment
    return sliding_window_blocks(m.sliding_window, dep.max_num_batched_tokens, r.max_model_len, dep.block_size)


def scheduler_config_for(r: Resolved, **overrides) -> SchedulerConfig:
    """vLLM scheduler knobs of one replica: the KV pool from the memory model, the rest from the Deployment."""
    dep = r.deployment
    num_blocks = plan_memory(r).num_gpu_blocks
    if num_blocks <= 0 and "num_gpu_blocks" not in overrides:
        raise InputError(  # the GPU is what to change, not --gpu-memory-utilization (it cannot make room)
            "gpu",
            f"{r.model.name} does not fit {dep.tensor_parallel_size} × {r.gpu.name} per replica (no KV pool left): "
            "use more GPUs per replica, a smaller weight precision or a larger GPU (`servingplan memory`, or the "
            "app's Does it fit? page, shows the budget and the nearest fixes)",
        )
    values = dict(
        num_gpu_blocks=num_blocks,
        block_size=dep.block_size,
        max_num_seqs=dep.max_num_seqs,
        max_num_batched_tokens=dep.max_num_batched_tokens,
        max_model_len=r.max_model_len,
        enable_prefix_caching=getattr(dep, "enable_prefix_caching", True),
        long_prefill_token_threshold=getattr(dep, "long_prefill_token_threshold", None) or 0,
        max_blocks_per_request=max_blocks_per_request(r),
    )
    values.update({k: v for k, v in overrides.items() if v is not None or k in ("max_queue",)})
    return scheduler_config(values)


class DecodeRunCost:
    """A PerfModel as the simulator's StepCost, plus a vectorised `step_times_s` for runs of pure decode steps.

    For a fixed decode batch n, PerfModel's memory side and compute side are each affine in the context read
    (KV bytes and attention FLOPs grow linearly with it), so a run of steps costs
    max(mem0 + mem1 × ctx, cmp0 + cmp1 × ctx) + fixed. The four coefficients are taken from PerfModel.step once
    per batch size. Models with sliding-window layers (min() in the KV read) use PerfModel.step directly.
    """

    def __init__(self, pm: PerfModel):
        self.pm = pm
        self.step_time_s = pm.step_time_s  # the scalar path stays PerfModel's own
        self._affine = not pm.window_layers
        self._coef: dict[int, tuple[float, float, float, float, float]] = {}

    def _coefficients(self, n: int) -> tuple[float, float, float, float, float]:
        if n not in self._coef:
            b = self.pm.step(np.array([n, n]), np.array([n, n]), np.array([0.0, 1.0]), np.array([0.0, 1.0]))
            mem0, mem1 = float(b.memory_s[0]), float(b.memory_s[1] - b.memory_s[0])
            cmp0, cmp1 = float(b.compute_s[0]), float(b.compute_s[1] - b.compute_s[0])
            fixed = float(b.total_s[0]) - max(mem0, cmp0)  # communication + per-step overhead
            self._coef[n] = (mem0, mem1, cmp0, cmp1, fixed)
        return self._coef[n]

    def step_times_s(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs) -> np.ndarray:
        n = int(new_tokens)
        if not self._affine or n != int(num_seqs) or kv_read_tokens is not attn_pairs:
            return np.asarray(self.pm.step(new_tokens, num_seqs, kv_read_tokens, attn_pairs).total_s, dtype=float)
        mem0, mem1, cmp0, cmp1, fixed = self._coefficients(n)
        ctx = np.asarray(kv_read_tokens, dtype=float)
        return np.maximum(mem0 + mem1 * ctx, cmp0 + cmp1 * ctx) + fixed


class DraftStepCost:
    """One pass of a speculative-decoding draft model: its own roofline step (max(memory, compute) +
    communication, PerfModel) WITHOUT the engine's per-step overhead, which the target's step already pays (the
    k draft passes run inside one engine step)."""

    def __init__(self, pm: PerfModel):
        self.pm = pm

    def step_time_s(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs) -> float:
        return self.pm.step_time_s(new_tokens, num_seqs, kv_read_tokens, attn_pairs) - self.pm.overhead_s


def draft_cost_for(r: Resolved, draft_model: str, engine: str = DEFAULT_ENGINE) -> DraftStepCost:
    """The draft model (a preset id or config.json path) on the target's GPUs, TP and precision."""
    from planner.core.catalog import get_model
    from planner.core.scenario import resolve_draft

    try:
        draft = get_model(draft_model)
    except InputError as err:
        raise InputError("spec_model", err.message) from None
    return DraftStepCost(PerfModel(resolve_draft(r, draft), engine))


def step_cost_for(r: Resolved, engine: str = DEFAULT_ENGINE) -> DecodeRunCost:
    """The latency model (PerfModel) of one replica under `engine`'s efficiency profile, as a StepCost."""
    return DecodeRunCost(PerfModel(r, engine))


def run_serving(
    r: Resolved,
    workload: Workload,
    engine: str = DEFAULT_ENGINE,
    prefix_caching: bool | None = None,
    max_queue: int | None = None,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    seed: int = 0,
    cost=None,
    draft_cost=None,
    **overrides,
) -> SimResult:
    """Simulate `workload` on one replica of the scenario (a pure function of its arguments).
    prefix_caching None = the deployment's enable_prefix_caching (vLLM V1 default: on)."""
    cfg = scheduler_config_for(
        r,
        enable_prefix_caching=prefix_caching,
        max_queue=max_queue,
        slo_ttft_s=slo_ttft_s,
        slo_tpot_s=slo_tpot_s,
        **overrides,
    )
    return simulate(workload, cfg, cost or step_cost_for(r, engine), seed=seed, draft_cost=draft_cost)


def _clean(value):
    """NaN/inf -> None so the summary is valid JSON; numpy scalars -> Python numbers."""
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def steady_rates(res: SimResult, lo_q: float = 0.1, hi_q: float = 0.9) -> tuple[float | None, float | None]:
    """(arrivals/s, completions/s) over the window between the 10th and 90th percentile arrival times.

    In steady state both equal the offered rate; an overloaded server completes fewer than arrive. Counting inside
    the window avoids the edge effect of a finite run (the last replies land after the last arrival)."""
    arr = res.requests.arrival_s
    arr = arr[~np.isnan(arr)]
    if len(arr) < 10:
        return None, None
    t0, t1 = np.quantile(arr, [lo_q, hi_q])
    if t1 <= t0:
        return None, None
    fin = res.requests.finish_s
    arrived = np.count_nonzero((arr >= t0) & (arr < t1))
    completed = np.count_nonzero((fin >= t0) & (fin < t1))
    return arrived / float(t1 - t0), completed / float(t1 - t0)


def result_summary(res: SimResult, slo_ttft_s: float | None = None, slo_tpot_s: float | None = None) -> ServingSummary:
    """Headline figures of one run: the CLI contract (latencies as mean, p50, p95, p99 in seconds) + more."""
    flat = summary(res, slo_ttft_s, slo_tpot_s)
    lat = latencies(res)
    cfg = res.config
    offered, served = steady_rates(res)
    out = dict(
        **{
            key: LatencyStats(**{k: _clean(v) for k, v in stats(lat[src]).items()}) for key, src in LATENCY_KEYS.items()
        },
        throughput_tokens_per_s=flat["throughput_tokens_per_s"],
        throughput_requests_per_s=flat["throughput_requests_per_s"],
        offered_requests_per_s=offered,
        served_requests_per_s=served,
        goodput_requests_per_s=flat["goodput_requests_per_s"],
        goodput_tokens_per_s=flat["goodput_tokens_per_s"],
        slo_attainment=flat["slo_attainment"],
        slo_ttft_s=cfg.slo_ttft_s if slo_ttft_s is None else slo_ttft_s,
        slo_tpot_s=cfg.slo_tpot_s if slo_tpot_s is None else slo_tpot_s,
        num_requests=flat["num_requests"],
        completed=flat["num_finished"],
        rejected=flat["num_rejected"],
        rejected_queue_full=flat["num_rejected_queue_full"],
        rejected_too_long=flat["num_rejected_too_long"],
        preemptions=flat["num_preemptions"],
        prefix_hit_rate=flat["prefix_hit_rate"],
        simulated_s=res.end_s,
        makespan_s=flat["makespan_s"],
        num_steps=flat["num_steps"],
        kv_pool_blocks=flat["kv_pool_blocks"],
        kv_pool_tokens=cfg.kv_pool_tokens,
        peak_kv_use=res.peak_kv_blocks / cfg.num_gpu_blocks,
        mean_kv_use=flat["mean_kv_use"],
        mean_running=flat["mean_running"],
        mean_waiting=flat["mean_waiting"],
        max_waiting=flat["max_waiting"],
        max_running=int(res.steps.num_running.max()) if len(res.steps) else 0,
        max_num_seqs=cfg.max_num_seqs,
        max_num_batched_tokens=cfg.max_num_batched_tokens,
        seed=res.seed,
        workload_seed=res.workload.seed,
        source=res.workload.source,
        wall_s=res.wall_s,
    )
    return ServingSummary(**{k: _clean(v) for k, v in out.items()})


def flat_row(s: ServingSummary) -> dict:
    """A summary as one flat row (ttft_p95_s, ...), for sweep tables and charts."""
    row = {}
    for key, value in s.to_dict().items():
        if isinstance(value, dict):
            base = key.removesuffix("_s")
            row.update({f"{base}_{stat}_s": value[stat] for stat in STAT_KEYS})
        else:
            row[key] = value
    return row
