"""Disaggregated prefill/decode against the best aggregated deployment at the same SLO.

For each pool, every instance shape that vLLM can start on the scenario's GPU and weights (TP ∈ {1, 2, 4, 8},
plus the scenario's own TP × DP × PP layout, e.g. DP 8 + EP 8 for DeepSeek-V3, plus the prefill and decode shapes
of the xPyD layouts published for this model on this GPU, planner.capacity.published_layouts) is sized by
planner.capacity.disagg_pools; the pool takes the shape needing the fewest GPUs for the target:
    prefill instances x = ceil(target × headroom / prefill rate per instance)
    decode instances  y = ceil(target × headroom / decode rate per instance)
    GPUs = x × GPUs per prefill instance + y × GPUs per decode instance;  $/h = GPUs × $/GPU-hour
    $ per million output tokens = $/h / (target × mean output tokens × 3600) × 1e6
(aiconfigurator's rate matching, ai-dynamo/aiconfigurator@095f58a5 inference_session.py `_match_workers`, also
balances x·P against y·D; it derates them by 0.9 / 0.92 where we provision the same headroom as aggregated.)

Aggregated: capacity_plan (planner.capacity.replicas: the simulator with vLLM's chunked prefill) at each shape
that fits (TP-only, and the scenario's DP layout counted in whole instances); the cheapest feasible one is the
comparison. Disaggregation is reported `cheaper` only
when both pools are feasible and its $/h is strictly lower; a pool is infeasible when the p95 KV transfer alone
reaches the TTFT target, so a slow link can never make disaggregation look cheap.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from planner.capacity.aggregated_options import AggregatedOption, aggregated_best
from planner.capacity.cost import DEFAULT_HEADROOM, SECONDS_PER_HOUR, price_of, replicas_for
from planner.capacity.disagg_pools import (
    DEFAULT_LINK_LATENCY_S,
    PoolCapacity,
    decode_capacity,
    decode_tpot_at,
    kv_link,
    kv_transfer_s,
    pool_replica,
    prefill_capacity,
    prefill_probe,
    visible_transfer_s,
)
from planner.capacity.instance_shapes import NO_SHAPE, instance_shapes
from planner.capacity.probe_workload import mean_tokens
from planner.capacity.replicas import DEFAULT_REL_TOL
from planner.core.errors import InputError
from planner.core.scenario import Resolved, Scenario, resolve
from planner.core.workload import SLO, TrafficSpec
from planner.memory.plan import TP_DEGREES


def _gpus_for(cap: PoolCapacity, target: float, headroom: float) -> tuple[int | None, int | None]:
    n = replicas_for(target, cap.max_rate_per_instance, headroom)
    return (n, n * cap.gpus_per_instance) if n else (None, None)


def _best(caps: list[tuple[Resolved, PoolCapacity]], target: float, headroom: float):
    """The shape needing the fewest GPUs for the target (ties: the most capacity in those GPUs)."""
    feasible = [(r, c) + _gpus_for(c, target, headroom) for r, c in caps if c.max_rate_per_instance > 0]
    if not feasible:
        return None
    return min(feasible, key=lambda t: (t[3], -t[2] * t[1].max_rate_per_instance))


@dataclass(frozen=True)
class PoolRow:
    """The chosen shape of one pool: instances of it for the target, and what one instance sustains."""

    gpus_per_instance: int
    tp: int
    dp: int
    pp: int
    ep: int
    instances: int
    gpus: int
    max_rate_per_instance: float
    p95_at_capacity_s: float | None


@dataclass(frozen=True)
class PrefillPool(PoolRow):
    ttft_p95_s: float | None = None  # at target / instances, KV transfer included


@dataclass(frozen=True)
class DecodePool(PoolRow):
    tpot_p95_s: float | None = None  # at target / instances


@dataclass(frozen=True)
class DisaggPlan:
    target_rate: float
    slo: SLO
    headroom: float
    mean_prompt_tokens: float
    mean_output_tokens: float
    usd_per_gpu_hour: float
    kv_link: str
    kv_link_gb_s: float  # total bandwidth of the prefill instance's link
    kv_transfer_s: float | None  # the mean prompt's transfer
    kv_transfer_visible_s: float | None  # what of it the user waits for (all of it unless layer-wise)
    prefill: PrefillPool | None
    decode: DecodePool | None
    prefill_options: tuple[PoolCapacity, ...]
    decode_options: tuple[PoolCapacity, ...]
    aggregated: AggregatedOption | None  # the cheapest feasible aggregated layout
    aggregated_options: tuple[AggregatedOption, ...]

    @property
    def feasible(self) -> bool:
        return self.prefill is not None and self.decode is not None

    @property
    def num_gpus(self) -> int | None:
        return self.prefill.gpus + self.decode.gpus if self.feasible else None

    @property
    def usd_per_hour(self) -> float | None:
        return self.num_gpus * self.usd_per_gpu_hour if self.feasible else None

    @property
    def usd_per_million_output_tokens(self) -> float | None:
        if not self.feasible:
            return None
        return self.usd_per_hour / (self.target_rate * self.mean_output_tokens * SECONDS_PER_HOUR) * 1e6

    @property
    def cheaper(self) -> bool:
        """Strictly cheaper than the best feasible aggregated deployment (or aggregated cannot meet the SLO)."""
        if not self.feasible:
            return False
        return self.aggregated is None or self.usd_per_hour < self.aggregated.usd_per_hour

    @property
    def prefill_to_decode_instances(self) -> float | None:
        return self.prefill.instances / self.decode.instances if self.feasible else None

    @property
    def kv_transfer_share_of_ttft(self) -> float | None:
        """The visible KV transfer as a share of the prefill pool's p95 TTFT at the target."""
        if not self.feasible or not self.prefill.ttft_p95_s:
            return None
        return self.kv_transfer_visible_s / self.prefill.ttft_p95_s

    def to_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("prefill_options", "decode_options")}
        out["slo"] = self.slo.model_dump()
        out.update(
            feasible=self.feasible,
            num_gpus=self.num_gpus,
            usd_per_hour=self.usd_per_hour,
            usd_per_million_output_tokens=self.usd_per_million_output_tokens,
            cheaper=self.cheaper,
            prefill_options=[asdict(c) for c in self.prefill_options],
            decode_options=[asdict(c) for c in self.decode_options],
            aggregated_options=[asdict(a) for a in self.aggregated_options],
        )
        if self.feasible:
            out["prefill_to_decode_instances"] = self.prefill_to_decode_instances
            out["kv_transfer_share_of_ttft"] = self.kv_transfer_share_of_ttft
        return out


def _pool_row(kind: type[PoolRow], r: Resolved, cap: PoolCapacity, instances: int, gpus: int, **latency) -> PoolRow:
    d = r.deployment
    return kind(
        gpus_per_instance=cap.gpus_per_instance,
        tp=cap.tp,
        dp=cap.dp,
        pp=d.pipeline_parallel_size,
        ep=d.expert_parallel_size,
        instances=instances,
        gpus=gpus,
        max_rate_per_instance=cap.max_rate_per_instance,
        p95_at_capacity_s=cap.latency_p95_s,
        **latency,
    )


def disagg_plan(
    s: Scenario,
    target_rps: float,
    traffic: TrafficSpec = TrafficSpec(),
    slo: SLO = SLO(),
    headroom: float = DEFAULT_HEADROOM,
    prices: dict | None = None,
    link: str = "nic",
    link_gb_s: float | None = None,
    link_latency_s: float = DEFAULT_LINK_LATENCY_S,
    rel_tol: float = DEFAULT_REL_TOL,
    tps: tuple[int, ...] = TP_DEGREES,
    compare: bool = True,
    layerwise: bool = False,
) -> DisaggPlan:
    """Size both pools for `target_rps` under `slo`, and the best aggregated deployment to compare (module note)."""
    replicas_for(target_rps, 1.0, headroom)  # validates the target and headroom before simulating
    shapes = instance_shapes(s, tps)
    if not shapes:
        m = resolve(s).model
        hint = (
            f"; its checkpoint ships {m.quantized_weights} weights (--weights {m.quantized_weights})"
            if m.quantized_weights and m.quantized_weights != s.deployment.weights
            else ""
        )
        raise InputError("model", NO_SHAPE + hint)
    mean_in, mean_out = mean_tokens(traffic)
    links = {id(r): kv_link(r, link, link_gb_s, link_latency_s, layerwise) for r in shapes}
    replicas = {id(r): pool_replica(r, traffic) for r in shapes}  # each shape's derived values, once
    prefill = [(r, prefill_capacity(replicas[id(r)], traffic, slo, links[id(r)], rel_tol)) for r in shapes]
    decode = [(r, decode_capacity(replicas[id(r)], mean_in, mean_out, slo)) for r in shapes]
    best_p, best_d = _best(prefill, target_rps, headroom), _best(decode, target_rps, headroom)
    usd = price_of(shapes[0], prices)
    p_row = d_row = None
    transfer = visible = None
    if best_p:
        r, cap, n, gpus = best_p
        ttft = prefill_probe(replicas[id(r)], traffic, target_rps / n, links[id(r)])[0]
        p_row = _pool_row(PrefillPool, r, cap, n, gpus, ttft_p95_s=ttft)
        transfer = float(kv_transfer_s(r, mean_in, links[id(r)]))
        visible = float(visible_transfer_s(r, mean_in, links[id(r)], replicas[id(r)].step_cost.pm))
    if best_d:
        r, cap, n, gpus = best_d
        tpot = decode_tpot_at(replicas[id(r)], target_rps / n, mean_in, mean_out)
        d_row = _pool_row(DecodePool, r, cap, n, gpus, tpot_p95_s=tpot)
    chosen = links[id(best_p[0])] if best_p else links[id(shapes[0])]
    agg, agg_rows = (
        aggregated_best(s, target_rps, traffic, slo, headroom, prices, rel_tol, shapes) if compare else (None, [])
    )
    return DisaggPlan(
        target_rps,
        slo,
        headroom,
        mean_in,
        mean_out,
        usd,
        chosen.label,
        chosen.bytes_per_s / 1e9,
        transfer,
        visible,
        p_row,
        d_row,
        tuple(c for _, c in prefill),
        tuple(c for _, c in decode),
        agg,
        tuple(agg_rows),
    )
