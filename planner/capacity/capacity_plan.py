"""Capacity, replicas and cost of one deployment at a target rate (`capacity_plan` → `CapacityPlan`, the CLI's
`capacity --json` contract): the capacity search (planner.capacity.replicas), replicas and cost
(planner.capacity.cost), and the latency at the operating point."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from planner.capacity.cost import (
    DEFAULT_HEADROOM,
    Cost,
    cost_for,
    price_of,
    replica_scenario,
    replicas_for,
    usd_per_million_output_at_capacity,
)
from planner.capacity.replicas import DEFAULT_REL_TOL, Probe, find_capacity, latency_bound_rate, probe, traffic_replica
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.workload import SLO, TrafficSpec
from planner.memory.plan import MemoryPlan
from planner.sim.offload_plan import KVOffload
from planner.sim.settings import SpecDecoding


@dataclass(frozen=True)
class CapacityPlan:
    """Capacity, replicas and cost of one deployment at a target rate (capacity_plan); to_dict is the CLI's
    `capacity --json` contract."""

    model: str
    gpu: str
    tp: int
    weights: str
    engine: str
    target_rate: float
    headroom: float
    max_rate_per_replica: float
    estimate_rps: float
    rel_tol: float
    slo: SLO
    mean_prompt_tokens: float
    mean_output_tokens: float
    num_requests: int
    seed: int
    usd_per_gpu_hour: float
    price_date: str
    price_source: str
    usd_per_million_output_tokens_at_capacity: float | None
    at_capacity: Probe | None
    probes: tuple[Probe, ...]
    search_wall_s: float
    saturated_rps: float | None
    cost: Cost | None  # None when no number of replicas meets the SLO
    operating_point: Probe | None  # one replica at target / replicas (None: infeasible or not asked)

    @property
    def feasible(self) -> bool:
        return self.max_rate_per_replica > 0

    gpus_per_replica: int = 1  # one engine instance: TP × PP × DP GPUs
    data_parallel_size: int = 1  # DP ranks per instance; the search runs one rank at rate / DP
    # capacity per replica with the latencies at their bands' high ends (latency_bound_rate; None: not asked)
    latency_bound_rps: float | None = None
    probe_sizing: str = ""  # why each probe simulated num_requests (probe_workload.probe_size)

    def to_dict(self) -> dict:
        out = {
            "model": self.model,
            "gpu": self.gpu,
            "tp": self.tp,
            "weights": self.weights,
            "engine": self.engine,
            "target_rate": self.target_rate,
            "headroom": self.headroom,
            "feasible": self.feasible,
            "max_rate_per_replica": self.max_rate_per_replica,
            "estimate_rps": self.estimate_rps,
            "rel_tol": self.rel_tol,
            "slo": self.slo.model_dump(),
            "mean_prompt_tokens": self.mean_prompt_tokens,
            "mean_output_tokens": self.mean_output_tokens,
            "num_requests": self.num_requests,
            "seed": self.seed,
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "price_date": self.price_date,
            "price_source": self.price_source,
            "usd_per_million_output_tokens_at_capacity": self.usd_per_million_output_tokens_at_capacity,
            "at_capacity": asdict(self.at_capacity) if self.at_capacity else None,
            "probes": [asdict(p) for p in self.probes],
            "search_wall_s": self.search_wall_s,
            "saturated_rps": self.saturated_rps,
        }
        out.update(asdict(self.cost) if self.cost else dict.fromkeys(Cost.__dataclass_fields__, None))
        out.update(gpus_per_replica=self.gpus_per_replica, usd_per_gpu_hour=self.usd_per_gpu_hour)  # also w/o a cost
        out["operating_point"] = asdict(self.operating_point) if self.operating_point else None
        out["data_parallel_size"] = self.data_parallel_size
        out["probe_sizing"] = self.probe_sizing
        return out


UNFIT_FIELD = {"pool_below_one_request": "max_model_len", "context_exceeds_memory": "max_model_len"}


def refuse_unfit(plan: MemoryPlan) -> None:
    """A deployment the memory plan says does not fit (the engine would not start) has no capacity and no price:
    the same verdict as `memory` and the Does it fit? page, raised before any simulation (issue 56 #2)."""
    if plan.blockers:
        b = plan.blockers[0]
        raise InputError(
            UNFIT_FIELD.get(b.kind, "gpu"),
            f"{b.message}. No capacity or cost for a deployment that does not fit (`servingplan memory --suggest`, "
            "or the app's Does it fit? page, lists the nearest fixes)",
        )


def capacity_plan(
    s: Scenario,
    target_rps: float,
    traffic: TrafficSpec = TrafficSpec(),
    slo: SLO = SLO(),
    headroom: float = DEFAULT_HEADROOM,
    prices: dict[str, float] | None = None,
    rel_tol: float = DEFAULT_REL_TOL,
    operating_point: bool = True,
    saturated: float | None | tuple = (),
    offload: KVOffload | None = None,
    spec: SpecDecoding | None = None,
    latency_ratios: tuple[float, float, float] | None = None,
) -> CapacityPlan:
    """Capacity, replicas and cost of one deployment for `target_rps`, plus the latency at the operating point
    (target / replicas per replica) when `operating_point`; `saturated` as in find_capacity; `spec`: speculative
    decoding on the replica; `latency_ratios`: the high ends of the TTFT, TPOT and e2e bands (measured /
    predicted), for the capacity if the latencies land there (latency_bound_rate)."""
    s = replica_scenario(s)
    r = resolve(s)
    replicas_for(target_rps, 1.0, headroom)  # validates the target and headroom before simulating
    replica = traffic_replica(r, traffic, spec, offload)
    refuse_unfit(replica.memory_plan)
    cap = find_capacity(replica, traffic, slo, rel_tol, saturated)  # one DP rank: each runs its own requests
    bound = None if latency_ratios is None else latency_bound_rate(replica, traffic, slo, latency_ratios, cap, rel_tol)
    tp, dp, gpus = r.deployment.tensor_parallel_size, r.deployment.data_parallel_size, r.deployment.gpus_per_replica
    rank_saturated = cap.saturated_rps
    if dp > 1:  # an instance of DP ranks serves DP × one rank's rate on TP × PP × DP GPUs
        cap = replace(
            cap,
            max_rate_per_replica=cap.max_rate_per_replica * dp,
            estimate_rps=cap.estimate_rps * dp,
            saturated_rps=cap.saturated_rps * dp if cap.saturated_rps else cap.saturated_rps,
        )
    usd = price_of(r, prices)
    n = replicas_for(target_rps, cap.max_rate_per_replica, headroom)
    cost = cost_for(target_rps, n, gpus, usd, cap.mean_prompt_tokens, cap.mean_output_tokens) if n else None
    rank_rate = target_rps / n / dp if n else 0.0
    op = probe(replica, traffic, slo, rank_rate, rank_saturated) if n and operating_point else None
    return CapacityPlan(
        model=r.model.name,
        gpu=r.gpu.id,
        tp=tp,
        weights=r.weights.id,
        engine=r.engine.id,
        target_rate=target_rps,
        headroom=headroom,
        max_rate_per_replica=cap.max_rate_per_replica,
        estimate_rps=cap.estimate_rps,
        rel_tol=rel_tol,
        slo=slo,
        mean_prompt_tokens=cap.mean_prompt_tokens,
        mean_output_tokens=cap.mean_output_tokens,
        num_requests=cap.num_requests,
        probe_sizing=cap.probe_sizing,
        seed=traffic.seed,
        usd_per_gpu_hour=usd,
        price_date=r.gpu.price_date,
        price_source=r.gpu.source.get("price", ""),
        usd_per_million_output_tokens_at_capacity=usd_per_million_output_at_capacity(cap, gpus, usd),
        at_capacity=cap.at_capacity,
        probes=cap.probes,
        search_wall_s=cap.wall_s,
        saturated_rps=cap.saturated_rps,
        cost=cost,
        operating_point=op,
        gpus_per_replica=gpus,
        data_parallel_size=dp,
        latency_bound_rps=None if bound is None else bound * dp,
    )
