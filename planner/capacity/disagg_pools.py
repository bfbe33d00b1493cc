"""The two pools of a disaggregated deployment, each sized on its own: prefill instances under the TTFT target,
decode instances under the TPOT target, and the KV cache moved between them.

KV transfer (DistServe §3.3, Splitwise §IV-C): the prompt's cache leaves the prefill instance once per request,
    transfer = prompt KV bytes / link bytes/s + link latency,
    link bytes/s = per-GPU link × sending GPUs: each TP rank sends its own KV heads' shard over its own NIC (GQA:
    min(TP, KV heads) distinct shards; MLA: the latent is whole on every rank, so ranks stripe it by layer: TP).
    Link "nic" = the GPU's scale-out NIC (data/gpus.yaml, separate nodes); "nvlink" = both pools in one node.
    By default sent after the prefill: an upper bound on what the user waits. Layer-wise (Splitwise §IV-C: each
    layer's KV leaves while the next layer computes) leaves visible = max(transfer / L, transfer − prefill ×
    (L − 1) / L), prefill = PerfModel's time for the prompt alone. Either way the first decoded token cannot come
    before the whole transfer, so a transfer longer than the TTFT target rules the pool out.

Prefill pool: simulated (planner.sim) on the scenario's engine with every request's output cut to 1 token, so an
    instance only prefills; a request's TTFT = its simulated time to first token + its own KV transfer. An
    instance sustains a rate when p95 of that TTFT ≤ the target and it serves ≥ 95% of what is offered (the
    capacity search of planner.capacity.replicas: bracket_and_bisect on the same requests at each rate).
Decode pool: analytic, on PerfModel step times (prompts arrive already prefilled, so no prefill interferes):
    n requests decoding → one step of n sequences at mean context P + O/2 takes t(n); by Little's law an
    instance at rate λ holds n = λ × (O − 1) × t(n). Poisson arrivals make n fluctuate by about sqrt(n), so
    p95 TPOT ≈ t(n + 1.645 sqrt(n)). Capacity: the largest n with that ≤ the TPOT target, n ≤ max_num_seqs and n
    requests of P + O tokens within the KV pool, giving λ = n / ((O − 1) × t(n)).
Data-parallel instances (DP > 1) run DP ranks with their own requests: one rank is simulated at λ / DP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.capacity.probe_workload import base_workload
from planner.capacity.replicas import DEFAULT_REL_TOL, bracket_and_bisect
from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.core.workload import SLO, TrafficSpec
from planner.latency.perf_model import PerfModel
from planner.memory import sizes as memory
from planner.memory.plan import plan_memory
from planner.memory.vllm_pool import blocks_per_request
from planner.sim.records import latencies
from planner.sim.run_summary import steady_rates
from planner.sim.serving import Replica, run_serving
from planner.sim.settings import ServerSettings
from planner.traffic.workload import Workload

MIN_SERVED = 0.95
Z95 = 1.645  # one-sided 95% normal quantile
DEFAULT_LINK_LATENCY_S = 10e-6  # ai-dynamo/aiconfigurator systems/h200_sxm.yaml p2p_latency (10 us)
LINKS = ("nic", "nvlink")


@dataclass(frozen=True)
class KVLink:
    bytes_per_s: float
    latency_s: float
    label: str
    layerwise: bool = False  # overlap the transfer with the prefill, layer by layer


def kv_link(
    r: Resolved,
    link: str = "nic",
    gb_s: float | None = None,
    latency_s: float = DEFAULT_LINK_LATENCY_S,
    layerwise: bool = False,
) -> KVLink:
    """The path the prefill instance's KV takes (module note); `gb_s` overrides the total bandwidth."""
    if link not in LINKS:
        raise InputError("kv_link", f"must be one of {', '.join(LINKS)}, got {link!r}")
    if not (latency_s >= 0 and math.isfinite(latency_s)):
        raise InputError("kv_link_latency_ms", "must be a number >= 0")
    if gb_s is not None:
        if not (gb_s > 0 and math.isfinite(gb_s)):
            raise InputError("kv_link_gb_s", f"must be a number > 0, got {gb_s!r}")
        return KVLink(gb_s * 1e9, latency_s, f"{gb_s:g} GB/s (given)", layerwise)
    m, tp = r.model, r.deployment.tensor_parallel_size
    senders = tp if m.is_mla else min(tp, m.num_kv_heads)
    if link == "nvlink":
        per_gpu, name = r.gpu.interconnect_bytes_per_s, r.gpu.interconnect
    else:
        per_gpu = (r.gpu.scale_out_bandwidth_gb_s or 12.5) * 1e9
        name = "NIC" if r.gpu.scale_out_bandwidth_gb_s else "assumed 100 Gb/s Ethernet"
    return KVLink(per_gpu * senders, latency_s, f"{senders} × {per_gpu / 1e9:g} GB/s ({name})", layerwise)


def kv_transfer_s(r: Resolved, prompt_tokens, link: KVLink):
    """transfer = prompt KV bytes (whole model, one copy) / link bytes/s + latency; arrays welcome."""
    per_token = memory.kv_bytes_per_token(r.model, r.kv_bytes)
    return np.asarray(prompt_tokens, dtype=float) * per_token / link.bytes_per_s + link.latency_s


def visible_transfer_s(r: Resolved, prompt_tokens, link: KVLink, pm: PerfModel):
    """What the user waits for after the prefill: the whole transfer, or with layer-wise sending
    max(transfer / L, transfer − prefill × (L − 1) / L) (module note)."""
    transfer = kv_transfer_s(r, prompt_tokens, link)
    if not link.layerwise:
        return transfer
    layers = r.model.num_layers
    prefill = np.asarray(pm.prefill(1, np.asarray(prompt_tokens, dtype=float)).total_s, dtype=float)
    return np.maximum(transfer / layers, transfer - prefill * (layers - 1) / layers)


@dataclass(frozen=True)
class PoolCapacity:
    """One instance of a pool: how much traffic it takes at the SLO, and its latency there."""

    role: str  # prefill | decode
    tp: int
    dp: int
    gpus_per_instance: int
    max_rate_per_instance: float  # requests/s; 0 = cannot meet the target
    latency_p95_s: float | None  # TTFT incl. transfer (prefill) or TPOT (decode) at capacity
    reason: str = ""
    batch: int = 0  # decode: requests decoding per DP rank at capacity


def _prefill_workload(traffic: TrafficSpec, rate: float) -> Workload:
    base = base_workload(traffic)
    return Workload(
        base.arrival_s / rate,
        base.prompt_tokens,
        np.ones_like(base.output_tokens),
        base.prefix_ids,
        base.prefix_block_tokens,
        seed=base.seed,
        source=f"prefill only at {rate:.4g} req/s",
    )


def pool_replica(r: Resolved, traffic: TrafficSpec) -> Replica:
    """One instance of a pool: the scenario's settings with the traffic's prefix caching taken as given (off unless
    the profile shares prefixes) and the traffic's seed."""
    return Replica(r, ServerSettings.of(r, prefix_caching=traffic.prefix_caching, seed=traffic.seed))


def prefill_probe(replica: Replica, traffic: TrafficSpec, rate: float, link: KVLink):
    """(p95 TTFT incl. KV transfer, served / offered) of one instance at `rate` requests/s."""
    r = replica.resolved
    wl = _prefill_workload(traffic, rate / r.deployment.data_parallel_size)
    res = run_serving(replica, wl)
    done = res.requests.finished
    ttft = latencies(res)["ttft_s"] + visible_transfer_s(r, wl.prompt_tokens[done], link, replica.step_cost.pm)
    offered, served = steady_rates(res)
    ratio = served / offered if offered else 0.0
    return (float(np.percentile(ttft, 95)) if len(ttft) else math.inf), ratio


def prefill_capacity(
    replica: Replica, traffic: TrafficSpec, slo: SLO, link: KVLink, rel_tol: float = DEFAULT_REL_TOL
) -> PoolCapacity:
    """Highest rate one prefill instance sustains with p95 (TTFT + transfer) ≤ the TTFT target (module note)."""
    r = replica.resolved
    d = r.deployment
    gpus = d.gpus_per_replica
    prompts = base_workload(traffic).prompt_tokens
    transfer95 = float(np.percentile(kv_transfer_s(r, prompts, link), 95))
    if transfer95 >= slo.ttft_p95_s:  # the transfer alone uses up the target: no rate is low enough
        return PoolCapacity(
            "prefill",
            d.tensor_parallel_size,
            d.data_parallel_size,
            gpus,
            0.0,
            None,
            f"p95 KV transfer {transfer95 * 1e3:,.0f} ms ≥ TTFT target {slo.ttft_p95_s * 1e3:,.0f} ms",
        )
    pm = replica.step_cost.pm
    start = d.data_parallel_size / float(pm.prefill(1, float(prompts.mean())).total_s)
    seen: dict[float, tuple[float, float]] = {}

    def sustains(rate: float) -> bool:
        seen[rate] = prefill_probe(replica, traffic, rate, link)
        return seen[rate][0] <= slo.ttft_p95_s and seen[rate][1] >= MIN_SERVED

    best = bracket_and_bisect(sustains, start, rel_tol)
    reason = "" if best > 0 else "TTFT target not met even at light load"
    return PoolCapacity(
        "prefill",
        d.tensor_parallel_size,
        d.data_parallel_size,
        gpus,
        best,
        seen[best][0] if best in seen else None,
        reason,
    )


def decode_kv_limit(r: Resolved, prompt_tokens: int, output_tokens: int) -> int:
    """Sequences of prompt + output tokens one decode rank's KV pool holds: GPU blocks // blocks per request."""
    per_request = blocks_per_request(max(1, prompt_tokens + output_tokens), r.deployment.block_size)
    return plan_memory(r).num_gpu_blocks // per_request


def decode_step_s(pm: PerfModel, batch: float, context: float) -> float:
    return float(pm.decode(max(batch, 1.0), context).total_s)


def decode_capacity(replica: Replica, mean_prompt: float, mean_output: float, slo: SLO) -> PoolCapacity:
    """Highest rate one decode instance sustains with p95 TPOT ≤ the target (analytic, module note)."""
    d = replica.resolved.deployment
    pm, plan = replica.step_cost.pm, replica.memory_plan
    context = mean_prompt + mean_output / 2
    per_request_blocks = blocks_per_request(max(1, math.ceil(mean_prompt + mean_output)), d.block_size)
    n_max = min(d.max_num_seqs, plan.num_gpu_blocks // per_request_blocks)
    steps = max(mean_output - 1.0, 1.0)  # the prefill instance made the first token
    p95 = lambda n: decode_step_s(pm, n + Z95 * math.sqrt(n), context)  # noqa: E731
    if n_max < 1 or p95(1) > slo.tpot_p95_s:
        why = (
            "no request fits in the KV pool"
            if n_max < 1
            else f"one sequence's step {p95(1) * 1e3:,.1f} ms > TPOT target {slo.tpot_p95_s * 1e3:,.1f} ms"
        )
        return PoolCapacity("decode", d.tensor_parallel_size, d.data_parallel_size, d.gpus_per_replica, 0.0, None, why)
    lo, hi = 1, n_max  # p95(n) grows with n: the largest n with p95(n) ≤ target
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if p95(mid) <= slo.tpot_p95_s else (lo, mid - 1)
    rate = d.data_parallel_size * lo / (steps * decode_step_s(pm, lo, context))
    return PoolCapacity(
        "decode", d.tensor_parallel_size, d.data_parallel_size, d.gpus_per_replica, rate, p95(lo), batch=lo
    )


def decode_tpot_at(replica: Replica, rate: float, mean_prompt: float, mean_output: float) -> float:
    """p95 TPOT of one decode instance at `rate`: the fixed point n = λ/DP × (O − 1) × t(n), then t(n + 1.645√n)."""
    pm = replica.step_cost.pm
    context, steps = mean_prompt + mean_output / 2, max(mean_output - 1.0, 1.0)
    lam = rate / replica.resolved.deployment.data_parallel_size
    n = lam * steps * decode_step_s(pm, 1, context)
    for _ in range(50):
        n = lam * steps * decode_step_s(pm, n, context)
    return decode_step_s(pm, n + Z95 * math.sqrt(n), context)
