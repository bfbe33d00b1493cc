"""Capacity & cost: replicas and $ for a target rate at a p95 SLO, a ranking of deployments, and a day of
autoscaling (primer §9)."""

from __future__ import annotations

from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace

import pandas as pd
import streamlit as st

from planner.capacity.autoscale import METRICS, Policy, diurnal_rates, measure_replica, simulate_day, trace_rates
from planner.capacity.probe_workload import base_workload
from planner.capacity.ranking import mark_pareto
from planner.capacity.recommend import recommend, tasks_for
from planner.capacity.steady_state import MAX_QUEUE_GROWTH, STABILITY_MARGIN
from planner.core.catalog import gpus
from planner.core.engine import get_engine, scheduler_policy
from planner.core.errors import InputError
from planner.core.scenario import Scenario, with_deployment
from planner.core.workload import PROFILES, SLO, TrafficSpec
from planner.report_plan import capacity_band
from planner.sim.policies import describe
from ui.bands import band_of, bands_caption, metric_band
from ui.cached import capacity_cached
from ui.charts import capacity as charts
from ui.labels import error_text
from ui.long_run import progress_with_stop, show_if_stopped
from ui.ranking import (
    column_config,
    progress_text,
    ranking_key,
    ranking_table,
    scroll_back_to,
    use_scenario,
)
from ui.state import current_scenario, resolved_or_stop
from ui.tables import empty_cells


def _price_table() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "GPU": g.id,
                "$ per GPU-hour": g.usd_per_hour,
                "price date": g.price_date,
                "source": g.source.get("price", ""),
            }
            for g in gpus().values()
        ]
    )


@st.cache_data(show_spinner="Measuring one replica at light load…", max_entries=16)
def _replica(scenario_json: str, traffic: TrafficSpec, slo: SLO, plan: dict):
    return measure_replica(Scenario.model_validate_json(scenario_json), traffic, slo, plan)


def _usd(v) -> str:
    return "–" if v is None else f"${v:,.2f}" if v >= 1 else f"${v:,.3f}"


def _ms(v) -> str:
    return "–" if v is None else f"{v * 1e3:,.0f}" if v >= 0.1 else f"{v * 1e3:,.1f}"


PLAN_ANCHOR = "the-plan"  # the sidebar deployment's plan heading


def _layout(dep) -> str:
    """TP 8, or TP 1 × DP 8 + EP 8: what one replica (one engine instance) runs (issue 27 #2: the header said
    "1 × H200" for DP 8 + EP 8, an instance of 8 GPUs)."""
    parts = [f"TP {dep.tensor_parallel_size}"]
    if dep.pipeline_parallel_size > 1:
        parts.append(f"PP {dep.pipeline_parallel_size}")
    if dep.data_parallel_size > 1:
        parts.append(f"DP {dep.data_parallel_size}")
    return " × ".join(parts) + (f" + EP {dep.expert_parallel_size}" if dep.expert_parallel_size > 1 else "")


st.title("Capacity & cost")
st.caption(
    "How many replicas of which GPU, at which precision and tensor-parallel size, serve this traffic at "
    "this p95 target, for how many dollars (primer §9: plan with measured numbers; cost per token = GPU "
    "cost per hour / tokens served per hour)."
)
scenario = current_scenario()
r = resolved_or_stop()

# --- inputs: the scenario's workload and SLO (sidebar), plus prices --------------------------------------------
traffic, slo, target, headroom = scenario.traffic, scenario.slo, scenario.target_rate, scenario.headroom
slo_ttft_ms = round(slo.ttft_p95_s * 1e3)
st.caption(
    f"Traffic **{PROFILES[traffic.profile].label}**"
    + (f" (prompts drawn from **{traffic.prompt_pool:,}** distinct ones)" if traffic.prompt_pool else "")
    + f", target **{target:g} req/s** × headroom {headroom:g}; SLO "
    f"p95 TTFT ≤ **{slo.ttft_p95_s * 1e3:,.0f} ms**, p95 TPOT ≤ **{slo.tpot_p95_s * 1e3:,.0f} ms**"
    + (f", p99 end-to-end ≤ {slo.e2e_p99_s:g} s" if slo.e2e_p99_s else "")
    + f"; {traffic.num_requests:,} requests per simulation, seed {traffic.seed}. Change them in the sidebar "
    "under **Workload and SLO**."
)
with st.expander("GPU prices ($ per GPU-hour): edit to use your own", expanded=False):
    edited = st.data_editor(
        _price_table(),
        key="cap_prices",
        hide_index=True,
        disabled=["GPU", "price date", "source"],
        column_config={"$ per GPU-hour": st.column_config.NumberColumn(min_value=0.0, format="%.3f")},
    )
    st.caption(
        "Defaults: on-demand prices from data/gpus.yaml at the date shown, with their source. Prices move "
        "fast: treat them as a starting point."
    )
prices = tuple(
    sorted(
        (row["GPU"], float(row["$ per GPU-hour"])) for _, row in edited.iterrows() if pd.notna(row["$ per GPU-hour"])
    )
)

# --- one deployment: the sidebar scenario -----------------------------------------------------------------
dep = r.deployment
st.header(
    f"{r.model.name} on {dep.gpus_per_replica} × {r.gpu.id} per replica ({_layout(dep)}), {r.weights.label} weights",
    anchor=PLAN_ANCHOR,
)
scroll_back_to(PLAN_ANCHOR)  # after "Use this deployment" (below, under the ranking): back to the plan it changed
try:
    plan = capacity_cached(scenario.model_dump_json(), prices)  # shared with the report, across sessions
except InputError as err:
    st.error(error_text(err))
    st.stop()
band = capacity_band(plan, r)
c = st.columns(4)
c[0].metric(
    "Capacity per replica (req/s)",
    f"{plan.max_rate_per_replica:,.3g}",
    **metric_band(band.rate, "max_rate_per_replica"),
    help="Highest rate whose steady state (warm-up and drain discarded) meets every SLO with a waiting "
    f"queue growing by ≤ {MAX_QUEUE_GROWTH:.0%} of the rate per second and the rate ≤ "
    f"{1 - STABILITY_MARGIN:.0%} of the saturated throughput; bisection to ±{plan.rel_tol:.0%}, "
    f"{len(plan.probes)} simulations of "
    f"{plan.num_requests:,} requests (seed {plan.seed}).",
)
if not plan.feasible:
    st.warning(
        "One replica cannot meet this SLO at any load: "
        + plan.probes[-1].reason
        + ". Relax the targets, or try another GPU, precision or TP."
    )
    st.stop()
cost = plan.cost  # feasible: a number of replicas meets the SLO
c[1].metric(
    "Replicas",
    f"{cost.replicas}",
    help=f"ceil({target:g} × {headroom:g} / capacity per replica); {cost.num_gpus} GPUs in all. At the "
    "throughput band's low end each replica sustains its capacity × the band's low ratio: "
    f"{band.replicas_pessimistic_throughput} replicas; with the p95 TTFT and TPOT at their bands' high ends it "
    f"sustains {band.latency_rate or 0:,.3g} req/s (the same search at the SLO / the bands' high ratios): "
    f"{band.replicas_pessimistic_latency} replicas. The larger is the pessimistic count.",
    delta=f"{band.replicas_pessimistic} at the bands' pessimistic ends",
    delta_color="off",
    delta_arrow="off",
)
c[2].metric(
    "$ per hour",
    _usd(cost.usd_per_hour),
    help=f"{cost.num_gpus} GPUs × {_usd(plan.usd_per_gpu_hour)} per GPU-hour; {_usd(cost.usd_per_day)} per day",
)
c[3].metric(
    "$ per million output tokens",
    _usd(cost.usd_per_million_output_tokens),
    help="$/hour / (target rate × mean output tokens × 3600) × 1e6: at the target rate, headroom included. "
    f"At full utilisation: {_usd(plan.usd_per_million_output_tokens_at_capacity)}.",
)
op = plan.operating_point
c = st.columns(4)
c[0].metric("$ per million tokens (in + out)", _usd(cost.usd_per_million_tokens))
c[1].metric("GPU-hours per day", f"{cost.gpu_hours_per_day:,.0f}")
op_ttft, op_tpot = band_of(r, "ttft", op and op.ttft_p95_s), band_of(r, "tpot", op and op.tpot_p95_s)
c[2].metric(
    "p95 TTFT at the operating point (ms)",
    _ms(op.ttft_p95_s if op else None),
    help=f"Simulated at {op.rate_per_s if op else 0:,.3g} req/s per replica (target / replicas).",
    **metric_band(op_ttft, "ttft_p95_s"),
)
c[3].metric(
    "p95 TPOT at the operating point (ms)", _ms(op.tpot_p95_s if op else None), **metric_band(op_tpot, "tpot_s")
)
st.caption(bands_caption([band.rate, op_ttft, op_tpot]))
# the search simulates one DP rank at rate / DP: its probes drawn at the instance's rate, as the capacity line is
probes = [replace(p, rate_per_s=p.rate_per_s * plan.data_parallel_size) for p in plan.probes]
st.plotly_chart(
    charts.search_probes(probes, plan.max_rate_per_replica, slo.ttft_p95_s, plan.saturated_rps, slo.tpot_p95_s),
    key="cap_probes_chart",
)
engine_default = r.engine.batch_defaults(r.gpu)
st.caption(
    f"Analytic starting point {plan.estimate_rps:,.3g} req/s; mean prompt {plan.mean_prompt_tokens:,.0f} "
    f"tokens, mean output {plan.mean_output_tokens:,.0f}; search took {plan.search_wall_s:.2f} s. "
    f"Engine limits: max_num_seqs {dep.max_num_seqs}, max_num_batched_tokens {dep.max_num_batched_tokens:,} "
    f"({r.engine.label} default for this GPU: {engine_default.max_num_seqs} / "
    f"{engine_default.max_num_batched_tokens:,})."
)
st.caption(f"Scheduler of {get_engine(scenario.engine).label}: {describe(scheduler_policy(scenario.engine))}.")
st.caption(f"Engine: {r.engine.summary}.")

# --- ranking ---------------------------------------------------------------------------------------------
st.header("Which deployment is cheapest at this SLO?")
num_tasks = len(tasks_for(scenario, float(target), traffic, slo, float(headroom), dict(prices)))
st.caption(
    f"Every catalogue GPU × weight precision (BF16/FP16, FP8 where supported, AWQ-INT4) × TP 1/2/4/8 that "
    f"fits {r.model.name}: {num_tasks} deployments. Each costs at least one replica's price, and after one "
    "saturated run at least the replicas that 95% of its saturated throughput needs: cheapest first, a "
    "deployment whose lowest $/hour can still be among the two cheapest is bounded by that run, then searched "
    "exactly as the plan above is (same "
    f"{traffic.num_requests:,} requests per probe, same rounding), in parallel on all cores. Ranked by $/hour for "
    "the target, then $ per token at full use."
)
rank_key = (ranking_key(scenario), float(target), traffic, slo, float(headroom), prices)
show_if_stopped("cap_rank_stop", "The ranking")
if st.button("Rank all deployments", type="primary", key="cap_rank"):
    box, bar = progress_with_stop("Bounding the deployments, cheapest first…", key="cap_rank_stop")
    try:
        rows = recommend(
            scenario,
            float(target),
            traffic,  # the scenario's own requests: a ranked row is the plan of that deployment
            slo,
            headroom=float(headroom),
            prices=dict(prices),
            progress=progress_text(bar),
        )
        st.session_state["cap_ranking"] = (rank_key, rows)
    except InputError as err:  # one bad candidate (its worker's error, pickled back) stops the ranking, not the page
        st.error(f"Cannot rank: {error_text(err)}")
    except BrokenProcessPool:  # a worker killed from outside (out of memory, a signal)
        st.error("Cannot rank: a worker process stopped before the ranking finished; press the button again.")
    finally:
        box.empty()
stored = st.session_state.get("cap_ranking")
if stored and stored[0] == rank_key:
    c = st.columns(2)
    latency_key = c[0].selectbox(
        "Pareto latency", list(charts.LATENCY_LABELS), format_func=charts.LATENCY_LABELS.get, key="cap_pareto_latency"
    )
    cost_key = c[1].selectbox(
        "Pareto cost", list(charts.COST_LABELS), format_func=charts.COST_LABELS.get, key="cap_pareto_cost"
    )
    rows = mark_pareto(stored[1], cost_key, latency_key)
    best = rows[0]
    st.success(
        f"Cheapest: **{best['id']}**, {best['replicas']} replicas ({best['num_gpus']} GPUs) for "
        f"{_usd(best['usd_per_hour'])}/hour, {_usd(best['usd_per_million_output_tokens'])} per million "
        "output tokens."
        if best["feasible"]
        else "No deployment meets this SLO."
    )
    st.plotly_chart(charts.pareto(rows, cost_key, latency_key), key="cap_pareto_chart")
    st.plotly_chart(charts.ranking_bars(rows), key="cap_ranking_chart")
    table = ranking_table(rows)
    st.dataframe(table, hide_index=True, key="cap_ranking_table", column_config=column_config(), **empty_cells())
    feasible = [row for row in rows if row["feasible"]]
    c = st.columns([3, 1, 1])

    def _option(i: int) -> str:
        row = feasible[i]
        return f"#{row['rank']} {row['id']}: {row['replicas']} replicas, {_usd(row['usd_per_hour'])}/hour"

    pick = (
        c[0].selectbox(
            "Deployment", range(len(feasible)), key="cap_use_pick", label_visibility="collapsed", format_func=_option
        )
        if feasible
        else None
    )
    if pick is not None and c[1].button("Use this deployment", type="primary", key="cap_use"):
        row = feasible[pick]
        use_scenario(
            with_deployment(scenario, row["gpu"], row["weights"], int(row["tp"]), int(row["num_gpus"])),
            f"Loaded {row['id']} × {row['replicas']} replicas into the scenario",
            scroll_to=PLAN_ANCHOR,
        )
    c[2].download_button(
        "Ranking (CSV)",
        table.to_csv(index=False),
        file_name="servingplan-ranking.csv",
        mime="text/csv",
        key="cap_ranking_csv",
        on_click="ignore",
        icon=":material/download:",
    )
elif stored:
    st.info("The inputs changed since the last ranking: press Rank all deployments again.")
else:
    st.info(
        f"Press Rank all deployments to bound {num_tasks} deployments and search the few that can be the "
        "cheapest (the bar shows the time left as it goes). Using a ranked deployment keeps the ranking."
    )

# --- autoscaling ---------------------------------------------------------------------------------------------
st.header("A day under an autoscaler")
st.caption(
    "Scale on queue depth, tokens in flight or TTFT (never CPU). A new replica needs a node, the weights "
    "downloaded and loaded to the GPU: keep a warm minimum, scale up early and down slowly (primer §9). "
    "Fluid 1-minute model on this replica's measured capacity; p95 TTFT per minute ≈ the simulated p95 at "
    "that utilisation + backlog / capacity."
)
c = st.columns(4)
shape = c[0].selectbox(
    "Traffic over the day",
    ["diurnal", "trace"],
    key="cap_shape",
    format_func={"diurnal": "diurnal curve", "trace": "the profile's trace, stretched"}.get,
)
amplitude = c[1].slider(
    "Day/night swing",
    0.0,
    0.95,
    0.6,
    key="cap_amplitude",
    disabled=shape != "diurnal",
    help="λ(t) = mean × (1 + swing × cos(2π (hour − 14) / 24)); mean = the target rate.",
)
metric = c[2].selectbox("Scale on", list(METRICS), format_func=METRICS.get, key="cap_metric")
scale_target = c[3].slider("Target (× value at capacity)", 0.3, 1.0, 0.7, step=0.05, key="cap_scale_target")
c = st.columns(4)
min_replicas = int(c[0].number_input("Warm minimum", 1, 1000, 1, key="cap_min_replicas"))
node_start_s = c[1].number_input("Node start (s)", 0.0, 3600.0, 120.0, step=30.0, key="cap_node_start")
network = c[2].number_input("Download (GB/s)", 0.01, 100.0, 1.0, step=0.25, key="cap_network")
cooldown_s = c[3].number_input("Scale-down cooldown (s)", 0.0, 7200.0, 600.0, step=60.0, key="cap_cooldown")
policy = Policy(
    metric=metric,
    target=scale_target,
    min_replicas=min_replicas,
    node_start_s=node_start_s,
    network_gb_per_s=network,
    cooldown_s=cooldown_s,
)
if shape == "diurnal":
    rates = diurnal_rates(float(target), amplitude)
else:
    rates = trace_rates(base_workload(traffic.model_copy(update={"arrival": "trace"})).arrival_s, float(target))
replica = _replica(scenario.model_dump_json(), traffic, slo, plan)
day = simulate_day(rates, replica, policy, slo.ttft_p95_s, plan.usd_per_gpu_hour, headroom=float(headroom))
c = st.columns(4)
c[0].metric(
    "Requests in SLO-violating minutes",
    f"{day.violating_request_share:.1%}",
    help=f"{day.violating_ticks} minutes with estimated p95 TTFT above {slo_ttft_ms:,} ms.",
)
c[1].metric(
    "Replica-hours (autoscaled)",
    f"{day.replica_hours:,.0f}",
    help=f"Starting replicas are billed too; scale-up delay {day.scale_up_delay_s:,.0f} s = node start + "
    f"{replica.model_bytes / 1e9:,.1f} GB / download + load to GPU.",
)
c[2].metric("Cost per day (autoscaled)", _usd(day.usd), help=f"{len(day.events)} scaling events")
c[3].metric(
    "vs static peak",
    _usd(day.static_usd),
    delta=f"{day.savings:.0%} saved" if day.savings >= 0 else f"{-day.savings:.0%} more",
    help=f"{day.static_replicas} replicas all day: the larger of ceil(peak × headroom / capacity) and the "
    "autoscaler's own peak, so both fleets provision as much at the busiest minute.",
)
st.plotly_chart(charts.autoscale_day(day.series, day.static_replicas, slo.ttft_p95_s), key="cap_day_chart")
