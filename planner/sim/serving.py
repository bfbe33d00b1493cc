"""Glue between a scenario and the serving simulator: one replica, its scheduler knobs, its step cost, one run (its
summary: planner.sim.run_summary).

A `Replica` is a resolved scenario run under `ServerSettings` (planner.sim.settings: engine, limits, prefix
caching, max queue, speculative decoding, seed). It derives, once and on first use, what every run of it shares:
the memory plan (plan_memory -> num_gpu_blocks), the step-cost model (PerfModel) and the scheduler configuration;
a capacity search runs it ten times and derives each once. One run simulates ONE replica: divide fleet traffic by
the number of replicas before calling.
"""

from __future__ import annotations

import dataclasses
from functools import cached_property

import numpy as np

from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.latency.parallel import batches_in_flight, stage_factor
from planner.latency.perf_model import PerfModel
from planner.memory.plan import MemoryPlan, plan_memory
from planner.memory.sliding_window import sliding_window_blocks
from planner.sim.config import SchedulerConfig, scheduler_config
from planner.sim.offload_plan import offload_config
from planner.sim.records import SimResult
from planner.sim.settings import ServerSettings
from planner.sim.simulator import simulate
from planner.sim.spec_heads import DraftHeadCost, head_fraction
from planner.traffic.clients import DEFAULT_CLIENT, client_loop, get_client
from planner.traffic.workload import Workload


def max_blocks_per_request(r: Resolved) -> int | None:
    """vLLM V1's sliding-window block cap per request when EVERY layer is windowed (planner.memory.
    sliding_window); None when some layers attend to the whole context (they hold every block)."""
    m = r.model
    if not m.sliding_window or m.num_sliding_layers < m.num_layers:
        return None
    dep = r.deployment
    return sliding_window_blocks(m.sliding_window, dep.max_num_batched_tokens, r.max_model_len, dep.block_size)


def scheduler_config_for(r: Resolved, memory: MemoryPlan | None = None, **overrides) -> SchedulerConfig:
    """Scheduler knobs of one replica: the KV pool from the memory model (`memory`, else planned here), the engine's
    scheduling policy (data/engines.yaml `policy`, planner/sim/policies.py), the rest from the Deployment."""
    dep = r.deployment
    num_blocks = (memory or plan_memory(r)).num_gpu_blocks
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
        # a simulated step is a round of the PP iterations in flight, each with its own budget (DecodeRunCost)
        iterations_per_step=dep.pipeline_parallel_size,
        max_model_len=r.max_model_len,
        enable_prefix_caching=getattr(dep, "enable_prefix_caching", True),
        long_prefill_token_threshold=getattr(dep, "long_prefill_token_threshold", None) or 0,
        enable_mixed_chunk=getattr(dep, "enable_mixed_chunk", False),  # SGLang's; the other policies never read it
        **launch_holds(r),
        max_blocks_per_request=max_blocks_per_request(r),
        admission_policy=r.engine.policy,  # the engine's scheduler (data/engines.yaml, planner/sim/policies.py)
    )
    values.update({k: v for k, v in overrides.items() if v is not None or k in ("max_queue",)})
    return scheduler_config(values)


def launch_holds(r: Resolved) -> dict:
    """The scheduler holds the scenario's engine takes from its launch (Deployment): SGLang's
    --scheduler-recv-interval, TensorRT-LLM's batch_wait_timeout_iters / batch_wait_max_tokens_ratio. Each is its
    engine's own setting, so another engine runs without it, as it would ignore (or refuse) the option."""
    dep, engine = r.deployment, r.engine.id
    out: dict = {}
    if engine == "sglang":
        out["scheduler_recv_interval"] = getattr(dep, "scheduler_recv_interval", 1)
    if engine == "sglang" and getattr(dep, "max_prefill_tokens", None):
        out["max_prefill_tokens"] = dep.max_prefill_tokens
    if engine == "tensorrt-llm":
        out["batch_wait_timeout_iters"] = getattr(dep, "batch_wait_timeout_iters", 0)
        out["batch_wait_max_tokens_ratio"] = getattr(dep, "batch_wait_max_tokens_ratio", 0.0)
        out["adp_balance_timeout_iters"] = getattr(dep, "attention_dp_timeout_iters", 0)
    if getattr(dep, "enable_chunked_prefill", None) is not None:
        out["enable_chunked_prefill"] = dep.enable_chunked_prefill
    return out


class DecodeRunCost:
    """A PerfModel as the simulator's StepCost, plus a vectorised `step_times_s` for runs of pure decode steps.

    For a fixed decode batch n, PerfModel's memory side and compute side are each affine in the context read
    (KV bytes and attention FLOPs grow linearly with it), so a run of steps costs
    max(mem0 + mem1 × ctx, cmp0 + cmp1 × ctx) + fixed. The four coefficients are taken from PerfModel.step once
    per batch size. Models with sliding-window layers (min() in the KV read) use PerfModel.step directly.

    Pipeline parallelism: a step of the running batch under PP lasts one round of the PP engine iterations in
    flight (planner.latency.parallel module note: batches_in_flight, stage_factor): PerfModel's pass over 1/m of
    the batch × the stage factor, m = min(PP, sequences); every running request advances one token per round.
    Each iteration has its own token budget, so a round schedules up to PP × max_num_batched_tokens
    (scheduler_config_for).
    """

    def __init__(self, pm: PerfModel):
        self.pm = pm
        self.pp = pm.parallel.pp
        self.stage_factor = stage_factor(self.pp, pm.num_layers)
        # the scalar path stays PerfModel's own (under PP: a round of the batches in flight)
        self.step_time_s = pm.step_time_s if self.pp <= 1 else self._round_time_s
        # paid once per request with its first chunk (the simulator reads it from the cost; without this attribute
        # it read 0 and the fitted per-request cost never reached a simulated step)
        self.request_overhead_s = pm.request_overhead_s
        # max(mem, cmp) + fixed is affine in the context; sliding windows and two-batch overlap are not
        self._affine = not pm.window_layers and not pm.parallel.two_batch_overlap
        self._coef: dict[int, tuple[float, float, float, float, float]] = {}

    def _round_time_s(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs) -> float:
        """One round of the PP batches in flight (class note)."""
        m = batches_in_flight(self.pp, num_seqs)
        return self.stage_factor * self.pm.step_time_s(new_tokens / m, num_seqs / m, kv_read_tokens / m, attn_pairs / m)

    def _step(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs):
        """PerfModel.step of a round (class note): the pass over 1/m of the batch; `factor` the stage factor."""
        if self.pp <= 1:
            return self.pm.step(new_tokens, num_seqs, kv_read_tokens, attn_pairs), 1.0
        m = batches_in_flight(self.pp, np.asarray(num_seqs, dtype=float))
        n, s, kv, pairs = (np.asarray(x, dtype=float) / m for x in (new_tokens, num_seqs, kv_read_tokens, attn_pairs))
        return self.pm.step(n, s, kv, pairs), self.stage_factor

    def _coefficients(self, n: int) -> tuple[float, float, float, float, float]:
        if n not in self._coef:
            b, f = self._step(np.array([n, n]), np.array([n, n]), np.array([0.0, 1.0]), np.array([0.0, 1.0]))
            mem0, mem1 = f * float(b.memory_s[0]), f * float(b.memory_s[1] - b.memory_s[0])
            cmp0, cmp1 = f * float(b.compute_s[0]), f * float(b.compute_s[1] - b.compute_s[0])
            fixed = f * float(b.total_s[0]) - max(mem0, cmp0)  # communication + per-step overhead
            self._coef[n] = (mem0, mem1, cmp0, cmp1, fixed)
        return self._coef[n]

    def decode_affine(self, n: int) -> tuple[float, float, float, float, float] | None:
        """(mem0, mem1, cmp0, cmp1, fixed) of a batch of n decoding sequences: a step reading ctx context tokens
        takes max(mem0 + mem1 × ctx, cmp0 + cmp1 × ctx) + fixed, as step_times_s computes it (the simulator's
        short runs, planner/sim/lockstep.py); None for a model with sliding-window layers."""
        return self._coefficients(n) if self._affine else None

    def step_times_s(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs) -> np.ndarray:
        n = int(new_tokens)
        if not self._affine or n != int(num_seqs) or kv_read_tokens is not attn_pairs:
            b, f = self._step(new_tokens, num_seqs, kv_read_tokens, attn_pairs)
            return f * np.asarray(b.total_s, dtype=float)
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


def draft_cost_for(r: Resolved, draft_model: str) -> DraftStepCost:
    """The draft model (a preset id or config.json path) on the target's GPUs, TP and precision."""
    from planner.core.catalog import get_model
    from planner.core.scenario import resolve_draft

    try:
        draft = get_model(draft_model)
    except InputError as err:
        raise InputError("spec_model", err.message) from None
    return DraftStepCost(PerfModel(resolve_draft(r, draft)))


def step_cost_for(r: Resolved) -> DecodeRunCost:
    """The latency model (PerfModel) of one replica under the scenario engine's efficiency profile, as a StepCost."""
    return DecodeRunCost(PerfModel(r))


# A benchmark client's turnaround: the last token of one reply is detokenised and streamed, the client sends the next
# request and the API server tokenises it before the engine sees it (a few ms on one host). Any positive value
# shorter than a step has the same effect: the next request reaches the engine DURING the step that follows the
# reply's last token, so it waits for that step to end before its prefill is scheduled (the engine admits new
# requests only between steps: vLLM v1 EngineCore's busy loop polls its input queue once per step).
CLIENT_TURNAROUND_S = 0.002


# rounds of N requests a benchmark's simulation runs after the ones it measures, unmeasured: a closed loop's last round
# drains (nobody replaces a client that finishes, so its requests decode beside ever fewer others), while a benchmark
# measures 10-20 rounds and only its last drains (planner.accuracy.serving_points, planner.capacity.disagg_benchmark)
TRAILING_ROUNDS = 1


def benchmark_clients(
    r: Resolved,
    users: int,
    num_requests: int,
    prompt,
    output,
    seed: int = 0,
    client: str = DEFAULT_CLIENT,
    warmup_requests: int | None = None,
    pm: PerfModel | None = None,
) -> Workload:
    """N streams of a benchmark client (`vllm bench serve --max-concurrency N`, aiperf `--concurrency N`, ...:
    planner.traffic.clients): all started together on an idle server, each next request sent the moment a reply
    ends, reaching the engine CLIENT_TURNAROUND_S plus the request's path outside the steps later (PerfModel.
    request_path_s: the frontend's hop and its prompt pass's host dispatch, which the summary adds back to TTFT and
    end-to-end as the client measures them). The client's warm-up requests come first and are left out of the
    summary. `pm`: the step-time model the timing follows (None: the scenario's, under data/efficiency.yaml)."""
    pm = pm or PerfModel(r)
    turnaround = CLIENT_TURNAROUND_S + pm.request_path_s
    return client_loop(get_client(client), users, num_requests, turnaround, prompt, output, seed, warmup_requests)


def run_by(r: Resolved, settings: ServerSettings) -> Resolved:
    """The scenario with the settings' engine and limits, so that memory plan, step cost and scheduler agree."""
    dep = r.deployment
    limits = {
        "max_num_seqs": settings.max_num_seqs,
        "max_num_batched_tokens": settings.max_num_batched_tokens,
        "enable_prefix_caching": settings.prefix_caching,
    }
    if all(getattr(dep, k) == v for k, v in limits.items()) and (r.engine, r.max_model_len) == (
        settings.engine,
        settings.max_model_len,
    ):
        return r
    if settings.max_model_len != r.max_model_len:
        limits["max_model_len"] = settings.max_model_len
    return dataclasses.replace(
        r, engine=settings.engine, deployment=dep.model_copy(update=limits), max_model_len=settings.max_model_len
    )


class Replica:
    """One replica of a resolved scenario under ServerSettings (module note): derived values computed once."""

    def __init__(self, r: Resolved, settings: ServerSettings | None = None):
        self.settings = settings or ServerSettings.of(r)
        self.resolved = run_by(r, self.settings)

    @cached_property
    def memory_plan(self) -> MemoryPlan:
        return plan_memory(self.resolved)

    @cached_property
    def step_cost(self) -> DecodeRunCost:
        return step_cost_for(self.resolved)

    @cached_property
    def draft_cost(self) -> DraftStepCost | DraftHeadCost | None:
        spec = self.settings.spec
        if spec is None:
            return None
        if spec.method is not None:  # a head inside the target: a share of its step (planner/sim/spec_heads.py)
            return DraftHeadCost(self.step_cost.pm, head_fraction(spec.method, self.resolved.model.num_layers))
        return draft_cost_for(self.resolved, spec.draft_model)

    @cached_property
    def scheduler_config(self) -> SchedulerConfig:
        front = self.step_cost.pm.request_path_s  # the request's path outside the steps (PerfModel.request_path_s)
        cfg = scheduler_config_for(
            self.resolved,
            self.memory_plan,
            frontend_latency_s=front,
            first_token_lag_steps=self.step_cost.pm.eff.first_token_lag_steps,
            **self.settings.scheduler_fields(),
        )
        if self.settings.offload is None:
            return cfg
        return cfg.model_copy(
            update={"offload": offload_config(self.resolved, self.settings.offload, cfg.num_gpu_blocks)}
        )

    def with_settings(self, **changes) -> Replica:
        """The same scenario under changed settings; derived values the change leaves valid are shared."""
        other = Replica(self.resolved, self.settings.with_(**changes))
        if other.resolved == self.resolved:  # same engine and limits: same memory plan and step cost
            for name in ("memory_plan", "step_cost"):
                if name in self.__dict__:
                    other.__dict__[name] = self.__dict__[name]
        return other


def run_serving(replica: Replica, workload: Workload) -> SimResult:
    """Simulate `workload` on one replica (a pure function of the replica's scenario and settings and the workload)."""
    return simulate(
        workload,
        replica.scheduler_config,
        replica.step_cost,
        seed=replica.settings.seed,
        draft_cost=replica.draft_cost,
    )
