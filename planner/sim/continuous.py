"""Continuous batching at a fixed concurrency B: what `vllm bench serve --max-concurrency B` measures.

B clients each keep exactly one request in flight: when a reply ends, that client sends its next request at once
(a closed loop with no think time; the benchmark's semaphore). The engine is vLLM v1's scheduler as the simulator
models it (planner/sim/simulator.py): every step runs one decode token for each running request first, then fills
the rest of the `max_num_batched_tokens` budget with prompt chunks (chunked prefill), within `max_num_seqs` and the
KV pool. So a new prompt is prefilled alongside the B − 1 running decodes (its TTFT is the mixed steps it takes),
and every decode step that carries a prompt chunk is slower (TPOT includes the prefill chunks it shares steps
with). Other engines run their own scheduler in the same simulator (planner/sim/policies.py): SGLang prefills apart
from decode, prompts first, so its TPOT is the pure decode step and its prompts wait for each other (waves under
load). Step times come from the roofline model (planner.latency.perf_model.PerfModel) under the engine's
efficiency profile: the same one the static-batch estimate and the capacity search use.

The B clients are a benchmark client's streams (planner.sim.serving.benchmark_clients, `vllm bench serve` unless
another is named: planner.traffic.clients): all B start together on an idle server and each next request reaches
the engine a client turnaround after the reply, during the following step; requests started together that finish
together come back together, so the waves under load are the simulation's, not an assumption.
Reported as the benchmark does (mean and p95 of per-request TTFT, TPOT = (e2e − TTFT) / (N − 1), end-to-end), over
the steady part of the run: the first B requests (the clients ramping up) and the last B (the concurrency
draining) are left out, and the batch's mean size is taken over the same part. Requests/s per replica = B / mean
end-to-end (Little's law: the closed loop keeps exactly B requests in the system); throughput = that × output tokens
× replicas.

Left out: network and detokenisation time beyond the client turnaround, and B above max_num_seqs queueing in the server
(the simulator queues them: TTFT then includes that wait, as vLLM's does).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.latency.metrics import memory_limit, validate_request
from planner.sim.records import latencies
from planner.sim.serving import Replica, benchmark_clients, run_serving
from planner.traffic.clients import DEFAULT_CLIENT

WAVES = 4  # requests per client: one warm-up, two steady, one draining
MIN_STEADY_REQUESTS = 32  # at small B, more requests per client so the percentiles have samples


@dataclass(frozen=True)
class ContinuousEstimate:
    """Steady-state latency and throughput of B concurrent equal requests under continuous batching."""

    concurrency: int
    input_tokens: int
    output_tokens: int
    engine: str
    ttft_s: float  # mean
    ttft_p95_s: float
    tpot_s: float  # mean of per-request (e2e − TTFT) / (N − 1)
    tpot_p95_s: float
    e2e_s: float  # mean
    tokens_per_s_per_user: float  # 1 / TPOT
    throughput_tokens_per_s: float  # output tokens/s, all replicas
    requests_per_s: float  # all replicas
    mean_running: float  # requests in the batch, time-weighted (≤ max_num_seqs)
    preemptions: int
    capped_by_max_num_seqs: bool  # B > max_num_seqs: the rest wait in the server's queue
    num_requests: int  # simulated per replica
    efficiency_status: str
    efficiency_source: str

    def to_dict(self) -> dict:
        return asdict(self)


def _steady(values: np.ndarray, b: int) -> np.ndarray:
    """Drop the first and last B requests (warm-up wave and draining tail) when enough remain."""
    return values[b:-b] if len(values) > 3 * b else values


def _steady_running(steps, arrivals: np.ndarray, b: int) -> float:
    """Requests in the batch, time-weighted over the steps from the first steady request's arrival to the first
    draining one's (`arrivals` sorted; all steps when too few requests remain, as `_steady`)."""
    weights = np.asarray(steps.duration_s, dtype=float)
    if len(arrivals) > 3 * b:
        t = np.asarray(steps.time_s, dtype=float)
        weights = weights * ((t >= arrivals[b]) & (t < arrivals[-b]))
    return float(np.average(steps.num_running, weights=weights)) if weights.sum() else 0.0


def continuous(
    r: Resolved, concurrency: int, input_tokens: int, output_tokens: int, client: str = DEFAULT_CLIENT
) -> ContinuousEstimate:
    """Simulate B streams of `client` with one request each in flight (module note) and report the steady state."""
    if concurrency < 1:
        raise InputError("concurrency", "must be at least 1")
    validate_request(r, concurrency, input_tokens, output_tokens)
    if memory_limit(r, input_tokens, output_tokens) < 1:
        raise InputError("input_tokens", f"not one request of {input_tokens + output_tokens:,} tokens fits the KV pool")
    b = concurrency
    n = max(WAVES * b, 2 * b + MIN_STEADY_REQUESTS)
    wl = benchmark_clients(r, b, n, f"fixed:{input_tokens}", f"fixed:{output_tokens}", client=client, warmup_requests=0)
    replica = Replica(r)
    res = run_serving(replica, wl)
    order = np.argsort(res.requests.arrival_s[res.requests.finished], kind="stable")
    lat = {k: _steady(v[order], b) for k, v in latencies(res).items()}
    rps = b / float(lat["e2e_s"].mean())  # Little's law: B requests always in the system (closed loop, no think)
    tpot = float(np.nanmean(lat["tpot_s"])) if output_tokens > 1 else 0.0
    pm, reps = replica.step_cost.pm, r.deployment.num_replicas
    steps = res.steps
    return ContinuousEstimate(
        concurrency=b,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        engine=pm.choice.engine,
        ttft_s=float(lat["ttft_s"].mean()),
        ttft_p95_s=float(np.percentile(lat["ttft_s"], 95)),
        tpot_s=tpot,
        tpot_p95_s=float(np.nanpercentile(lat["tpot_s"], 95)) if output_tokens > 1 else 0.0,
        e2e_s=float(lat["e2e_s"].mean()),
        tokens_per_s_per_user=1.0 / tpot if tpot > 0 else 0.0,
        throughput_tokens_per_s=reps * rps * output_tokens,
        requests_per_s=reps * rps,
        mean_running=_steady_running(steps, np.sort(res.requests.arrival_s[res.requests.finished]), b),
        preemptions=int(res.requests.num_preemptions.sum()),
        capped_by_max_num_seqs=b > r.deployment.max_num_seqs,
        num_requests=n,
        efficiency_status=pm.choice.status,
        efficiency_source=pm.choice.source_key,
    )


def continuous_sweep(r: Resolved, concurrencies, input_tokens: int, output_tokens: int) -> list[ContinuousEstimate]:
    """`continuous` at each concurrency (for the latency/throughput trade-off curve)."""
    return [continuous(r, int(b), input_tokens, output_tokens) for b in concurrencies]
