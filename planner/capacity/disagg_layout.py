"""A given xPyD layout evaluated as deployed: X prefill instances of one shape, Y decode instances of another, the KV
moved by a named transfer engine, and the per-request hand-off between them.

    TTFT = prefill queueing + prefill + KV transfer + hand-off
    hand-off = HANDOFF_FIXED_S (router/proxy second hop, KV-ready notification, step boundary on the decode side)
               + the decode instance's first step (it emits the first token: DECODE_STEPS_TO_FIRST_TOKEN steps,
               one step plus on average half a step waiting for the running batch's boundary)
               + the decode engine's output-stream lag (EfficiencyProfile.first_token_lag_steps steps of its TPOT)
The prefill part is simulated per instance at target / X (planner.capacity.disagg_pools.prefill_probe: queueing,
prefill and the visible transfer); the decode pool's TPOT is analytic at target / Y (decode_tpot_at). The floor is
the same sum for one request on idle instances.

Transfer engines move the KV over the prefill GPUs' NICs (or NVLink) at a measured share of the line rate:
  mooncake  87 GB/s of 4 × 200 Gb/s RoCE = 0.87 (kvcache-ai/Mooncake README "Performance", 40 GB of KV)
  nixl      NIXL over UCX/RDMA on the same NICs: no published share found, Mooncake's RDMA 0.87 assumed (estimated)
  tcp       2.4× slower than Mooncake's RDMA on the same 4 × 200 Gb/s network: 0.87 / 2.4 = 0.36 (same README)
Hand-off sources: vLLM PR #51919 (3P1D, NixlConnector) measured the stock hand-over at ~197 ms p50 with the KV
transfer itself ~29 ms and the decode side's recompute of the first token ~58 ms (step alignment included), and
~36 ms with every orchestration cut; SGLang issue #22853 measured PD TTFT ~200 ms above non-PD at 2 req/s with a
6 ms RDMA transfer and a 10 ms first decode forward (the router waited for the prefill's HTTP response). Under load
the orchestration is 7-180 ms; HANDOFF_FIXED_S = 20 ms is an estimated idle floor (status "estimated"; --handoff-ms
sets a measured one).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from pydantic import ValidationError

from planner.capacity.cost import price_of
from planner.capacity.disagg_pools import (
    DEFAULT_LINK_LATENCY_S,
    decode_capacity,
    decode_step_s,
    decode_tpot_at,
    kv_link,
    kv_transfer_s,
    pool_replica,
    prefill_capacity,
    prefill_probe,
    visible_transfer_s,
)
from planner.capacity.probe_workload import mean_tokens
from planner.capacity.replicas import DEFAULT_REL_TOL
from planner.core.errors import InputError, from_validation_error
from planner.core.scenario import Resolved, Scenario, resolve
from planner.core.specs import Deployment
from planner.core.workload import SLO, TrafficSpec
from planner.latency.perf_model import PerfModel

HANDOFF_FIXED_S = 0.020  # estimated idle floor of the orchestration (module note)
DECODE_STEPS_TO_FIRST_TOKEN = 1.5  # one decode step + half a step waiting for the batch boundary


def first_token_steps(pm_decode: PerfModel) -> float:
    """Decode steps from a request's arrival on the decode side to its first token at the client: the first step
    and the wait for the batch boundary, then the decode engine's output-stream lag (EfficiencyProfile)."""
    return DECODE_STEPS_TO_FIRST_TOKEN + pm_decode.eff.first_token_lag_steps


@dataclass(frozen=True)
class TransferEngine:
    id: str
    label: str
    efficiency: float  # share of the link's line rate the engine moves
    source: str


TRANSFER_ENGINES = {
    "nixl": TransferEngine(
        "nixl", "NIXL (UCX over RDMA)", 0.87, "estimated: Mooncake's measured RDMA share (kvcache-ai/Mooncake README)"
    ),
    "mooncake": TransferEngine(
        "mooncake", "Mooncake transfer engine (RDMA)", 0.87, "kvcache-ai/Mooncake README: 87 GB/s on 4 × 200 Gb/s"
    ),
    "tcp": TransferEngine("tcp", "TCP", 0.87 / 2.4, "kvcache-ai/Mooncake README: RDMA 2.4× faster than TCP"),
}


@dataclass(frozen=True)
class PoolLayout:
    """One pool as given: instances of TP × DP GPUs, EP over the MoE layers (1 = TP-sliced experts)."""

    instances: int
    tp: int
    dp: int = 1
    ep: int = 1


@dataclass(frozen=True)
class GivenPool:
    role: str
    instances: int
    tp: int
    dp: int
    ep: int
    gpus_per_instance: int
    gpus: int
    max_rate_per_instance: float  # at the SLO (0: cannot meet it)
    latency_p95_s: float | None  # prefill: TTFT without the hand-off; decode: TPOT, both at target / instances


@dataclass(frozen=True)
class GivenLayoutPlan:
    target_rate: float
    slo: SLO
    transfer_engine: str
    transfer_source: str
    kv_link: str
    kv_link_gb_s: float  # effective bandwidth the engine moves
    kv_transfer_s: float  # the mean prompt's KV
    handoff_s: float  # fixed + first decode step at the target
    handoff_status: str
    prefill: GivenPool
    decode: GivenPool
    ttft_p95_s: float  # prefill queueing + prefill + transfer (p95) + hand-off
    tpot_p95_s: float
    ttft_floor_s: float  # one request on idle instances
    max_rate: float  # min(X × prefill rate, Y × decode rate) at the SLO
    num_gpus: int
    usd_per_hour: float

    @property
    def meets_slo(self) -> bool:
        return self.ttft_p95_s <= self.slo.ttft_p95_s and self.tpot_p95_s <= self.slo.tpot_p95_s

    def to_dict(self) -> dict:
        out = asdict(self)
        out["slo"] = self.slo.model_dump()
        out["meets_slo"] = self.meets_slo
        return out


def instance(s: Scenario, pool: PoolLayout, field: str) -> Resolved:
    """The scenario as one instance of `pool` (validated like the CLI's own layout)."""
    dep = s.deployment.model_dump() | {
        "tensor_parallel_size": pool.tp,
        "data_parallel_size": pool.dp,
        "pipeline_parallel_size": 1,
        "enable_expert_parallel": pool.ep > 1,
        "ep_size": pool.ep,
        "num_gpus": pool.tp * pool.dp,
    }
    if pool.instances < 1:
        raise InputError(f"{field}_instances", f"must be at least 1, got {pool.instances}")
    try:
        return resolve(s.model_copy(update={"deployment": Deployment(**dep)}))
    except ValidationError as err:  # the EP/TP rules of Deployment
        raise InputError(f"{field}_ep", from_validation_error(err).message) from None
    except InputError as err:  # the engine's own refusal of the role's TP (planner.core.head_split)
        if err.field != "tensor_parallel_size":
            raise
        raise InputError(f"{field}_tp", err.message) from None


def evaluate_layout(
    s: Scenario,
    target_rps: float,
    prefill: PoolLayout,
    decode: PoolLayout,
    traffic: TrafficSpec = TrafficSpec(),
    slo: SLO = SLO(),
    transfer: str = "nixl",
    link: str = "nic",
    link_latency_s: float = DEFAULT_LINK_LATENCY_S,
    handoff_fixed_s: float | None = None,
    rel_tol: float = DEFAULT_REL_TOL,
) -> GivenLayoutPlan:
    """TTFT, TPOT and capacity of the given xPyD layout at `target_rps` (module note)."""
    if transfer not in TRANSFER_ENGINES:
        raise InputError("transfer_engine", f"must be one of {', '.join(TRANSFER_ENGINES)}, got {transfer!r}")
    if not (target_rps > 0 and math.isfinite(target_rps)):
        raise InputError("target_rps", f"must be a number > 0, got {target_rps!r}")
    te = TRANSFER_ENGINES[transfer]
    rp, rd = instance(s, prefill, "prefill"), instance(s, decode, "decode")
    base = kv_link(rp, link, None, link_latency_s)
    kv = replace(base, bytes_per_s=base.bytes_per_s * te.efficiency, label=f"{te.label} over {base.label}")
    mean_in, mean_out = mean_tokens(traffic)
    fixed = HANDOFF_FIXED_S if handoff_fixed_s is None else handoff_fixed_s
    p_rep, d_rep = pool_replica(rp, traffic), pool_replica(rd, traffic)
    d_cap = decode_capacity(d_rep, mean_in, mean_out, slo)
    tpot = decode_tpot_at(d_rep, target_rps / decode.instances, mean_in, mean_out)
    pm_p, pm_d = PerfModel(rp), PerfModel(rd)
    first_steps = first_token_steps(pm_d)
    handoff = fixed + first_steps * tpot
    # a prefill instance meets the TTFT target when its own part leaves room for the hand-off
    p_slo = slo.model_copy(update={"ttft_p95_s": max(slo.ttft_p95_s - handoff, 1e-6)})
    p_cap = prefill_capacity(p_rep, traffic, p_slo, kv, rel_tol)
    p_ttft = prefill_probe(p_rep, traffic, target_rps / prefill.instances, kv)[0]
    floor = (
        pm_p.request_path_s  # as prefill_probe's TTFT includes it (the prefill replica's frontend latency)
        + float(pm_p.prefill(1, mean_in).total_s)
        + float(visible_transfer_s(rp, mean_in, kv, pm_p))
        + fixed
        + first_steps * decode_step_s(pm_d, 1, mean_in)
    )
    pools = [
        GivenPool("prefill", prefill.instances, prefill.tp, prefill.dp, prefill.ep, p_cap.gpus_per_instance,
                  prefill.instances * p_cap.gpus_per_instance, p_cap.max_rate_per_instance, p_ttft),
        GivenPool("decode", decode.instances, decode.tp, decode.dp, decode.ep, d_cap.gpus_per_instance,
                  decode.instances * d_cap.gpus_per_instance, d_cap.max_rate_per_instance, tpot),
    ]  # fmt: skip
    gpus = pools[0].gpus + pools[1].gpus
    return GivenLayoutPlan(
        target_rate=target_rps,
        slo=slo,
        transfer_engine=te.id,
        transfer_source=te.source,
        kv_link=kv.label,
        kv_link_gb_s=kv.bytes_per_s / 1e9,
        kv_transfer_s=float(kv_transfer_s(rp, mean_in, kv)),
        handoff_s=handoff,
        handoff_status="estimated" if handoff_fixed_s is None else "given",
        prefill=pools[0],
        decode=pools[1],
        ttft_p95_s=p_ttft + handoff,
        tpot_p95_s=tpot,
        ttft_floor_s=floor,
        max_rate=min(prefill.instances * p_cap.max_rate_per_instance, decode.instances * d_cap.max_rate_per_instance),
        num_gpus=gpus,
        usd_per_hour=gpus * price_of(rp),
    )
