"""The plan part of the sizing report: the deployment, its capacity, replicas and cost at the target rate, the SLO
and whether it holds, the latency at the operating point, the runner-up, and the assumptions behind it all.

Every figure comes from planner.capacity.capacity_plan.capacity_plan (a simulated search of the capacity per replica
under the scenario's traffic and SLO; cost = GPUs × $ per GPU-hour) and, for the choice, from the rows of
planner.capacity.recommend. The latency at the operating point is the simulation at target / replicas requests/s
per replica: continuous batching as vLLM's scheduler runs it, not a static batch of the whole pool. Its
concurrency is Little's law: requests in flight = rate × mean end-to-end.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.accuracy.bands import Band, bands_json, scenario_band, typically
from planner.capacity.capacity_plan import CapacityPlan
from planner.capacity.cost import replicas_for
from planner.capacity.steady_state import within_scaled_slo
from planner.core.errors import InputError
from planner.core.scenario import Resolved, Scenario
from planner.core.workload import PROFILES
from planner.latency.perf_model import PerfModel

PLAN, OPERATING, CHOICE, ASSUME = "plan", "latency at the operating point", "deployment choice", "assumptions"


@dataclass(frozen=True)
class ReportRow:
    section: str
    name: str
    value: float | int | str | bool
    unit: str = ""
    note: str = ""


def deployment_id(gpu: str, weights: str, tp: int) -> str:
    """The id planner.capacity.recommend gives a deployment."""
    return f"{gpu} · {weights} · TP{tp}"


def _workload_rows(s: Scenario, cap: CapacityPlan | InputError) -> list[ReportRow]:
    t, slo = s.traffic, s.slo
    rows = [
        ReportRow(PLAN, "target_rate", s.target_rate, "req/s", "fleet traffic to serve"),
        ReportRow(PLAN, "headroom", s.headroom, "×", "provision target × headroom (bursts, a replica down)"),
        ReportRow(
            PLAN,
            "traffic_profile",
            t.profile,
            "",
            PROFILES[t.profile].label + (f"; prompt {t.prompt}, output {t.output}" if t.profile == "custom" else ""),
        ),
        ReportRow(PLAN, "arrivals", t.arrival, "", f"CV {t.cv:g}" if t.arrival == "gamma" else ""),
        ReportRow(PLAN, "slo_ttft_p95_s", slo.ttft_p95_s, "s", "p95 time to first token, at most"),
        ReportRow(PLAN, "slo_tpot_p95_s", slo.tpot_p95_s, "s", "p95 time per output token, at most"),
    ]
    if slo.e2e_p99_s is not None:
        rows.append(ReportRow(PLAN, "slo_e2e_p99_s", slo.e2e_p99_s, "s", "p99 end-to-end, at most"))
    if isinstance(cap, CapacityPlan):
        rows += [
            ReportRow(
                PLAN,
                "mean_prompt_tokens",
                cap.mean_prompt_tokens,
                "tokens",
                f"mean of the {cap.num_requests:,} simulated requests",
            ),
            ReportRow(
                PLAN,
                "mean_output_tokens",
                cap.mean_output_tokens,
                "tokens",
                f"mean of the {cap.num_requests:,} simulated requests",
            ),
        ]
    return rows


def _verdict(cap: CapacityPlan, slo) -> tuple[bool, str]:
    op = cap.operating_point
    if not op:
        return False, "no operating point: " + (cap.probes[-1].reason if cap.probes else "the SLO is out of reach")
    parts = [
        f"p95 TTFT {op.ttft_p95_s * 1e3:,.0f} ms vs {slo.ttft_p95_s * 1e3:,.0f} ms",
        f"p95 TPOT {op.tpot_p95_s * 1e3:,.1f} ms vs {slo.tpot_p95_s * 1e3:,.1f} ms",
    ]
    if slo.e2e_p99_s is not None and op.e2e_p99_s is not None:
        parts.append(f"p99 end-to-end {op.e2e_p99_s:,.2f} s vs {slo.e2e_p99_s:,.2f} s")
    return bool(op.sustains), ("holds: " if op.sustains else "misses: ") + "; ".join(parts) + (
        f" ({op.reason})" if op.reason else ""
    )


def plan_rows(s: Scenario, r: Resolved, cap: CapacityPlan | InputError) -> list[ReportRow]:
    """Deployment, target, SLO, capacity per replica, replicas, $ and whether the SLO holds; the operating point."""
    d = r.deployment
    rows = [
        ReportRow(
            PLAN,
            "deployment",
            deployment_id(r.gpu.id, r.weights.id, d.tensor_parallel_size),
            "",
            f"{r.model.name} on {d.tensor_parallel_size} × {r.gpu.name} per replica, engine {s.engine}",
        )
    ]
    rows += _workload_rows(s, cap)
    if isinstance(cap, InputError):
        return rows + [ReportRow(PLAN, "capacity", "", "", f"not searched: {cap.field}: {cap.message}")]
    search = (
        f"highest rate whose simulation meets the SLO; search ±{cap.rel_tol:.0%}, {len(cap.probes)} "
        f"simulations of {cap.num_requests:,} requests, seed {cap.seed}"
    )
    rows.append(ReportRow(PLAN, "max_rate_per_replica", cap.max_rate_per_replica, "req/s", search))
    if not cap.feasible:
        return rows + [
            ReportRow(
                PLAN,
                "slo_holds",
                False,
                "",
                "one replica cannot meet the SLO at any load: " + cap.probes[-1].reason,
            )
        ]
    price = f"price {cap.price_date}" + (f", {cap.price_source}" if cap.price_source else "")
    cost = cap.cost
    rows += [
        ReportRow(
            PLAN,
            "replicas",
            cost.replicas,
            "replicas",
            f"ceil({s.target_rate:g} × {s.headroom:g} / {cap.max_rate_per_replica:.4g})",
        ),
        *_pessimistic_rows(cap, r, s),
        ReportRow(PLAN, "num_gpus", cost.num_gpus, "GPUs", f"replicas × {cap.gpus_per_replica} GPUs per replica"),
        ReportRow(PLAN, "usd_per_gpu_hour", cap.usd_per_gpu_hour, "USD/GPU-h", price),
        ReportRow(PLAN, "usd_per_hour", cost.usd_per_hour, "USD/h", "GPUs × $ per GPU-hour"),
        ReportRow(PLAN, "usd_per_day", cost.usd_per_day, "USD/day", "× 24 h"),
        ReportRow(
            PLAN,
            "usd_per_million_output_tokens",
            cost.usd_per_million_output_tokens,
            "USD/M tokens",
            "$/hour / (target × mean output tokens × 3600) × 1e6, headroom included",
        ),
        ReportRow(
            PLAN,
            "usd_per_million_tokens",
            cost.usd_per_million_tokens,
            "USD/M tokens",
            "prompt + output tokens, at the target rate",
        ),
        ReportRow(
            PLAN,
            "usd_per_million_output_tokens_at_capacity",
            cap.usd_per_million_output_tokens_at_capacity,
            "USD/M tokens",
            "every replica at its capacity (no headroom)",
        ),
    ]
    holds, why = _verdict(cap, s.slo)
    rows.append(ReportRow(PLAN, "slo_holds", holds, "", why))
    return rows + _operating_rows(cap, r)


def _band_note(b: Band | None, key: str) -> str:
    return f"; {typically(b.low, b.high, key, b.family, b.rows)}" if b else ""


def _pessimistic_rows(cap: CapacityPlan, r: Resolved, s: Scenario) -> list[ReportRow]:
    """Replicas if each one sustains only the low end of its throughput band, or only the rate whose latencies at
    their bands' high ends meet the SLO (none without a throughput band)."""
    cb = capacity_band(cap, r)
    if cb.rate is None:
        return []
    note = (
        f"the larger of ceil({s.target_rate:g} × {s.headroom:g} / {cb.rate.low:.4g}): capacity per replica at the "
        f"low end of its band{_band_note(cb.rate, 'max_rate_per_replica')} (measured / predicted out of sample), "
        f"and ceil({s.target_rate:g} × {s.headroom:g} / {cb.latency_rate or 0:.4g}): the highest probed rate whose "
        "p95 TTFT and TPOT at the high ends of their bands still meet the SLO"
    )
    return [ReportRow(PLAN, "replicas_pessimistic", cb.replicas_pessimistic, "replicas", note)]


def _operating_rows(cap: CapacityPlan, r: Resolved) -> list[ReportRow]:
    op = cap.operating_point
    if not op:
        return []
    rate, e2e = op.rate_per_s, op.e2e_mean_s
    sim = f"simulated: {cap.num_requests:,} requests at {rate:.4g} req/s, continuous batching (vLLM v1 scheduler)"
    rows = [
        ReportRow(OPERATING, "rate_per_replica", rate, "req/s", "target / replicas"),
        ReportRow(
            OPERATING,
            "concurrency",
            rate * e2e if e2e else "",
            "requests",
            "requests in flight per replica = rate × mean end-to-end (Little's law)",
        ),
    ]
    for key, note in (
        ("ttft_mean_s", sim),
        ("ttft_p95_s", "95th percentile of the same run"),
        ("tpot_p95_s", "(e2e − TTFT) / (N − 1), per request; 95th percentile"),
        ("e2e_mean_s", "arrival to last token"),
        ("e2e_p95_s", "95th percentile"),
        ("e2e_p99_s", "99th percentile"),
    ):
        value = getattr(op, key)
        if value is not None:
            metric = key.split("_")[0]  # ttft, tpot, e2e
            rows.append(ReportRow(OPERATING, key, value, "s", note + _band_note(scenario_band(r, metric, value), key)))
    rows.append(ReportRow(OPERATING, "served_ratio", op.served_ratio or 0.0, "", "served / offered requests/s"))
    return rows


def _option_rows(label: str, row: dict, note: str) -> list[ReportRow]:
    return [
        ReportRow(CHOICE, f"{label}", row["id"], "", note),
        ReportRow(CHOICE, f"{label}_replicas", row.get("replicas") or "", "replicas", ""),
        ReportRow(CHOICE, f"{label}_usd_per_hour", row.get("usd_per_hour") or "", "USD/h", ""),
        ReportRow(
            CHOICE,
            f"{label}_usd_per_million_output_tokens",
            row.get("usd_per_million_output_tokens") or "",
            "USD/M tokens",
            "",
        ),
        ReportRow(CHOICE, f"{label}_ttft_p95_s", row.get("ttft_p95_s") or "", "s", "at its operating point"),
    ]


def choice_rows(
    s: Scenario, r: Resolved, cap: CapacityPlan | InputError, ranking: list[dict] | None
) -> list[ReportRow]:
    """The chosen deployment (the scenario's) and the runner-up: the cheapest other deployment meeting the SLO."""
    chosen = deployment_id(r.gpu.id, r.weights.id, r.deployment.tensor_parallel_size)
    if not ranking:
        return [
            ReportRow(
                CHOICE,
                "chosen",
                chosen,
                "",
                "the scenario's deployment; not ranked against others "
                "(Capacity & cost → Rank all deployments, or `report --rank`)",
            )
        ]
    feasible = [row for row in ranking if row.get("feasible")]
    mine = next((row for row in ranking if row["id"] == chosen), None)
    note = (
        f"rank {mine['rank']} of {len(ranking)} ({len(feasible)} meet the SLO)"
        if mine
        else "not among the ranked deployments"
    )
    rows = [ReportRow(CHOICE, "chosen", chosen, "", f"the scenario's deployment; {note}")]
    other = next((row for row in feasible if row["id"] != chosen), None)
    if other:
        rows += _option_rows("runner_up", other, f"rank {other['rank']}: the cheapest other deployment at this SLO")
    return rows


def assumption_rows(s: Scenario, r: Resolved, cap: CapacityPlan | InputError) -> list[ReportRow]:
    """Where the step times, prices and traffic come from, and how well the constants are calibrated."""
    pm = PerfModel(r)
    c = pm.choice
    status = {
        "calibrated": "fitted on published measurements for this engine and GPU family",
        "partial": "fitted on few points; some constants from the default profile",
        "estimated": "no measurements for this GPU family: the engine's default constants",
    }
    rows = [
        ReportRow(
            ASSUME,
            "efficiency_profile",
            c.source_key,
            "",
            "data/efficiency.yaml (validation/fit_efficiency.py)"
            if s.calibration is None or "your calibration" not in c.source_key
            else "your fitted constants",
        ),
        ReportRow(ASSUME, "calibration_status", c.profile.status, "", c.profile.note or status[c.profile.status]),
        ReportRow(
            ASSUME,
            "user_calibration",
            "applied"
            if "your calibration" in c.source_key
            else ("not for this engine/GPU family" if s.calibration else "none"),
            "",
            s.calibration.source if s.calibration else "Validation page → Calibrate",
        ),
    ]
    rows += [
        ReportRow(ASSUME, f"eff_{k}", getattr(c.profile, k), "s" if k.endswith("_s") else "", "")
        for k in ("matmul_efficiency", "memory_efficiency", "step_overhead_s")
    ]
    rows += [
        ReportRow(
            ASSUME,
            "simulator",
            "vLLM v1 scheduler model",
            "",
            "chunked prefill under "
            "max_num_batched_tokens, paged KV blocks, preemption by recompute; no network, "
            "detokenisation or CPU swap",
        ),
        ReportRow(ASSUME, "traffic", PROFILES[s.traffic.profile].label, "", PROFILES[s.traffic.profile].note),
        ReportRow(
            ASSUME,
            "prices",
            "on-demand list prices",
            "",
            f"data/gpus.yaml, {r.gpu.price_date}; edit them on Capacity & cost",
        ),
    ]
    return rows


@dataclass(frozen=True)
class CapacityBand:
    """The capacity per replica at the pessimistic end of its bands, and the replicas that end needs: the low end
    of the throughput band, and the highest probed rate whose latencies, at the high end of their bands, still
    meet the SLO (a latency-bound plan)."""

    rate: Band | None  # max_rate_per_replica with its band (metric "throughput")
    replicas_pessimistic: int | None  # the larger of the two counts below (None: the SLO is lost at either end)
    replicas_pessimistic_throughput: int | None = None  # ceil(target × headroom / (capacity × the band's low ratio))
    replicas_pessimistic_latency: int | None = None  # ceil(target × headroom / latency_rate)
    latency_rate: float | None = None  # req/s per replica: highest probe within the SLO at the latency bands' highs

    def to_dict(self) -> dict:
        return {
            "replicas_pessimistic": self.replicas_pessimistic,
            "replicas_pessimistic_throughput": self.replicas_pessimistic_throughput,
            "replicas_pessimistic_latency": self.replicas_pessimistic_latency,
            "latency_rate_pessimistic": self.latency_rate,
        }


def latency_ratios(r: Resolved) -> tuple[float, float, float]:
    """The high ends of the TTFT, TPOT and end-to-end bands as ratios measured / predicted (1 without a band)."""
    out = []
    for metric in ("ttft", "tpot", "e2e"):
        b = scenario_band(r, metric, 1.0)
        out.append(max(1.0, b.ratio_high) if b else 1.0)
    return tuple(out)


def latency_bound_rate(cap: CapacityPlan, r: Resolved) -> float:
    """Capacity per replica with the latencies at their bands' high ends: the plan's own search when it ran one
    (capacity_plan's latency_ratios), else the highest of its probes whose scaled latencies meet the SLO (a lower
    bound; 0 when none does)."""
    if cap.latency_bound_rps is not None:
        return cap.latency_bound_rps
    ttft, tpot, e2e = latency_ratios(r)
    ok = [p.rate_per_s for p in cap.probes if within_scaled_slo(p, cap.slo, ttft, tpot, e2e)]
    return max(ok, default=0.0) * cap.data_parallel_size


def capacity_band(cap: CapacityPlan, r: Resolved) -> CapacityBand:
    """If served throughput lands at the band's low end, each replica sustains that fraction of its simulated
    capacity: ceil(target × headroom / (capacity × ratio_low)) ≥ the nominal count (ratio_low ≤ 1); if the
    latencies land at their bands' high ends, each replica sustains only the highest probed rate that still meets
    the SLO so: ceil(target × headroom / that rate). replicas_pessimistic is the larger."""
    if not cap.feasible:
        return CapacityBand(None, None)
    rate = scenario_band(r, "throughput", cap.max_rate_per_replica)
    nominal = cap.cost.replicas if cap.cost else None
    by_rate = nominal if rate is None else replicas_for(cap.target_rate, rate.low, cap.headroom)
    lat_rate = latency_bound_rate(cap, r)
    by_latency = replicas_for(cap.target_rate, lat_rate, cap.headroom)
    both = None if by_rate is None or by_latency is None else max(by_rate, by_latency)
    return CapacityBand(rate, both, by_rate, by_latency, lat_rate)


def capacity_bands_json(cap: CapacityPlan, r: Resolved) -> dict:
    """`capacity --json`'s added keys: replicas_pessimistic, a band per predicted figure, then the two counts
    replicas_pessimistic is the larger of (throughput band, latency bands) and the latency-bound rate."""
    cb = capacity_band(cap, r)
    predicted: dict[str, tuple[str, object]] = {"max_rate_per_replica": ("throughput", cap.max_rate_per_replica)}
    for name, probe in (("at_capacity", cap.at_capacity), ("operating_point", cap.operating_point)):
        if probe is not None:
            for key, metric in (("ttft_p95_s", "ttft"), ("tpot_p95_s", "tpot"), ("e2e_p95_s", "e2e")):
                predicted[f"{name}.{key}"] = (metric, getattr(probe, key))
    added = cb.to_dict()
    first = {"replicas_pessimistic": added.pop("replicas_pessimistic"), "bands": bands_json(r, predicted)}
    return {**first, **added}  # the keys after "bands" came later: the JSON contract appends keys
