"""Fleet & routing: N replicas of the sidebar's deployment behind a router, on traffic that comes back (sessions
behind a shared system prompt): what each routing policy saves against round robin, and where it piles load."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from planner.capacity.fleet_capacity import MAX_FLEET_PROBES, routing_plan
from planner.capacity.replicas import replica_scenario
from planner.capacity.routing import compare_routers, replica_frame
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.workload import TrafficSpec
from planner.sim.router import ROUTERS, PrefixAwareWeights
from planner.sim.serving import Replica
from planner.sim.settings import ServerSettings
from planner.traffic.sessions import sessions
from ui.charts import fleet as charts
from ui.labels import error_text
from ui.state import current_scenario, resolved_or_stop

GUARD = PrefixAwareWeights()  # the prefix-aware router's defaults, for the captions


@st.cache_data(show_spinner="Simulating the fleet under each router…", max_entries=8)
def _compare(scenario_json: str, replicas: int, traffic: tuple, seed: int):
    num, turns, system, first, later, answer, think, rate = traffic
    wl = sessions(
        num,
        turns,
        system,
        f"fixed:{later}",
        f"fixed:{answer}",
        think,
        rate_per_s=rate,
        first_user=f"fixed:{first}",
        seed=seed,
    )
    scenario = Scenario.model_validate_json(scenario_json)
    r = resolve(scenario)
    return compare_routers(Replica(r, ServerSettings.of(r, seed=seed)), wl, replicas)


@st.cache_data(show_spinner="Sizing the fleet under each router…", max_entries=8)
def _size(scenario_json: str, start: int, traffic: tuple, seed: int):
    """routing_plan on the page's sessions: target = sessions/s × turns requests/s, the scenario's SLO and headroom."""
    num, turns, system, first, later, answer, think, rate = traffic
    spec = TrafficSpec(
        profile="custom",
        prompt=f"fixed:{later}",
        output=f"fixed:{answer}",
        num_requests=num,
        seed=seed,
        turns=turns,
        system_prompt_tokens=system,
        think_time_s=think,
        first_input=f"fixed:{first}",
    )
    scenario = Scenario.model_validate_json(scenario_json)
    r = resolve(replica_scenario(scenario))
    return routing_plan(r, rate * turns, spec, scenario.slo, scenario.headroom, "prefix-aware", start)


st.title("Fleet & routing")
r = resolved_or_stop()
sj = current_scenario().model_dump_json()
st.caption(
    f"{r.model.name} · {r.deployment.num_gpus} × {r.gpu.name} per replica. Every replica is simulated (the Traffic "
    "& load test page's simulator); the router picks a replica at each arrival from what it sees then."
)
c = st.columns(4)
replicas = c[0].number_input("Replicas", 1, 64, 4, key="fleet_replicas")
rate = c[1].number_input("Sessions started per second", 0.01, 1000.0, 2.0, key="fleet_rate")
turns = c[2].number_input("Turns per session", 1, 200, 4, key="fleet_turns")
think = c[3].number_input("Think time between turns (s)", 0.0, 3600.0, 5.0, key="fleet_think")
c = st.columns(5)
system = c[0].number_input("Shared system prompt (tokens)", 0, 200_000, 2000, key="fleet_system")
first = c[1].number_input("First message (tokens)", 1, 200_000, 500, key="fleet_first")
later = c[2].number_input("Later messages (tokens)", 1, 200_000, 200, key="fleet_later")
answer = c[3].number_input("Answers (tokens)", 1, 100_000, 200, key="fleet_answer")
num = c[4].number_input("Requests (turns) to simulate", 100, 20_000, 600, step=100, key="fleet_num")
seed = st.number_input("Seed", 0, 2**31 - 1, 0, key="fleet_seed")
st.caption(
    "Each turn re-sends the history (system prompt, every earlier message and answer): an agent loop is a long "
    "first message, short later ones and short think times."
)
traffic = (int(num), int(turns), int(system), int(first), int(later), int(answer), float(think), float(rate))
try:
    cmp = _compare(sj, int(replicas), traffic, int(seed))
except InputError as err:
    st.error(error_text(err))
    st.stop()

table = cmp.table()
st.subheader("Each router on the same traffic")
st.plotly_chart(charts.router_bars(table), width="stretch")
shown = table.assign(
    ttft_p95_ms=table["ttft_p95_s"] * 1e3, e2e_p95_ms=table["e2e_p95_s"] * 1e3, tpot_p95_ms=table["tpot_p95_s"] * 1e3
)[
    [
        "router",
        "prefix_hit_rate",
        "prefill_tokens",
        "prefill_saved_vs_round_robin",
        "ttft_p95_ms",
        "tpot_p95_ms",
        "e2e_p95_ms",
        "request_imbalance",
        "completed",
    ]
]
st.dataframe(
    shown,
    hide_index=True,
    column_config={
        "prefix_hit_rate": st.column_config.NumberColumn("Prefix hit rate", format="percent"),
        "prefill_tokens": st.column_config.NumberColumn("Prompt tokens computed", format="localized"),
        "prefill_saved_vs_round_robin": st.column_config.NumberColumn("Prefill saved vs round robin", format="percent"),
        "ttft_p95_ms": st.column_config.NumberColumn("p95 TTFT (ms)", format="%.1f"),
        "tpot_p95_ms": st.column_config.NumberColumn("p95 TPOT (ms)", format="%.1f"),
        "e2e_p95_ms": st.column_config.NumberColumn("p95 end-to-end (ms)", format="%.0f"),
        "request_imbalance": st.column_config.NumberColumn("Imbalance (max / mean requests)", format="%.2f"),
    },
)
st.caption(
    f"Prefix-aware: sgl-router's balance guard (least outstanding when max − min > {GUARD.balance_abs_threshold} "
    f"and max > {GUARD.balance_rel_threshold:g} × min), else llm-d's endpoint-picker scores "
    f"{GUARD.prefix:g} × cached prefix + {GUARD.queue:g} × queue + {GUARD.kv:g} × free KV + {GUARD.active:g} × "
    "fewer requests in flight (llm-d's active-request scorer). Imbalance above 1 is load "
    "piled on one replica: a shared system prompt draws requests to whichever replica holds it."
)

st.subheader("One router, replica by replica")
router = st.selectbox("Router", ROUTERS, index=ROUTERS.index("prefix-aware"), key="fleet_router")
s = cmp.summaries[router]
m = st.columns(5)
for col, (label, stat) in zip(m, (("TTFT", s.ttft_s), ("TPOT", s.tpot_s), ("End-to-end", s.e2e_s))):
    col.metric(f"p95 {label} (ms)", "–" if stat.p95 is None else f"{stat.p95 * 1e3:,.1f}")
m[3].metric("Prefix hit rate", f"{s.prefix_hit_rate:.1%}")
m[4].metric("Completed", f"{s.completed:,}")
frame = replica_frame(s)
if s.request_imbalance is not None and s.request_imbalance > 1.5:
    hot = frame.loc[frame["requests"].idxmax()]
    st.warning(
        f"Hot spot: replica {int(hot['replica'])} took {hot['requests'] / frame['requests'].sum():.0%} of the "
        f"requests ({s.request_imbalance:.2f} × the mean). The prefix score outweighs load until the balance guard "
        f"trips ({GUARD.balance_abs_threshold} more outstanding requests than the least loaded replica)."
    )
st.plotly_chart(charts.replica_bars(frame, router), width="stretch")
st.dataframe(
    frame.assign(ttft_p95_ms=frame["ttft_p95_s"] * 1e3, e2e_p95_ms=frame["e2e_p95_s"] * 1e3).drop(
        columns=["ttft_p95_s", "e2e_p95_s"]
    ),
    hide_index=True,
    column_config={
        "prefix_hit_rate": st.column_config.NumberColumn("Prefix hit rate", format="percent"),
        "mean_kv_use": st.column_config.NumberColumn("Mean KV use", format="percent"),
        "mean_running": st.column_config.NumberColumn("Mean batch", format="%.1f"),
        "ttft_p95_ms": st.column_config.NumberColumn("p95 TTFT (ms)", format="%.1f"),
        "e2e_p95_ms": st.column_config.NumberColumn("p95 end-to-end (ms)", format="%.0f"),
    },
)

st.subheader("Replicas each router needs, and what it costs")
scenario = current_scenario()
slo = scenario.slo
st.caption(
    f"The fewest replicas whose fleet simulation meets the sidebar's SLO (p95 TTFT ≤ {slo.ttft_p95_s * 1e3:,.0f} ms, "
    f"p95 TPOT ≤ {slo.tpot_p95_s * 1e3:,.0f} ms, steady state as on Capacity & cost) on these sessions at "
    f"{rate:g} × {turns} = {rate * turns:g} requests/s × headroom {scenario.headroom:g}, searched from {replicas} "
    f"replicas (at most {MAX_FLEET_PROBES} fleet runs per router). `servingplan capacity --router` gives the same "
    "table from one-replica sizing."
)
if st.button("Size the fleet under each router", key="fleet_size"):
    try:
        plan = _size(sj, int(replicas), traffic, int(seed))
    except InputError as err:
        st.error(error_text(err))
        st.stop()
    sized = pd.DataFrame(plan.rows())
    sized = sized.assign(ttft_p95_ms=sized["ttft_p95_s"] * 1e3, tpot_p95_ms=sized["tpot_p95_s"] * 1e3)
    cols = ["router", "replicas", "ttft_p95_ms", "tpot_p95_ms", "prefix_hit_rate", "usd_per_hour"]
    st.dataframe(
        sized[[*cols, "replicas_saved_vs_round_robin", "usd_per_hour_saved_vs_round_robin"]],
        hide_index=True,
        key="fleet_sized",
        column_config={
            "replicas": st.column_config.NumberColumn("Replicas", help="empty: not found within the search"),
            "ttft_p95_ms": st.column_config.NumberColumn("p95 TTFT (ms)", format="%.1f"),
            "tpot_p95_ms": st.column_config.NumberColumn("p95 TPOT (ms)", format="%.1f"),
            "prefix_hit_rate": st.column_config.NumberColumn("Prefix hit rate", format="percent"),
            "usd_per_hour": st.column_config.NumberColumn("$ per hour", format="$%.2f"),
            "replicas_saved_vs_round_robin": st.column_config.NumberColumn("Replicas saved vs round robin"),
            "usd_per_hour_saved_vs_round_robin": st.column_config.NumberColumn("$/hour saved", format="$%.2f"),
        },
    )
    if sized["replicas"].isna().any():
        st.caption(
            "An empty count: not found within the search's fleet runs, either because the SLO was missed up to the "
            "largest fleet tried or because the sessions could not offer the rate in the steady window (few sessions "
            "with long think times: raise the requests to simulate)."
        )
