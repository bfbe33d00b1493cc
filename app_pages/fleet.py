"""Fleet & routing: N replicas of the sidebar's deployment behind a router, on traffic that comes back (sessions
behind a shared system prompt): what each routing policy saves against round robin, and where it piles load."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from planner.capacity.cost import price_of, replica_scenario
from planner.capacity.fleet_capacity import MAX_FLEET_PROBES, routing_plan
from planner.capacity.offload_compare import compare_fleet_offload
from planner.capacity.routing import compare_routers, replica_frame
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.workload import TrafficSpec
from planner.sim.offload_plan import GIB, OFFLOAD_TIERS, KVOffload
from planner.sim.router import ROUTERS, PrefixAwareWeights
from planner.sim.serving import Replica
from planner.sim.settings import ServerSettings
from planner.traffic.sessions import sessions
from ui.charts import fleet as charts
from ui.labels import error_text
from ui.long_run import progress_with_stop
from ui.state import current_scenario, resolved_or_stop

GUARD = PrefixAwareWeights()  # the prefix-aware router's defaults, for the captions


STOP = "fleet_stop"  # the Stop button's key (ui/long_run.py)


@st.cache_resource(show_spinner=False)
def _finished() -> dict:
    """Finished comparisons shared by every session, newest last (at most 8): (scenario, replicas, traffic, seed) ->
    RouterComparison. Not st.cache_data: a cached function cannot draw the progress bar and its Stop button."""
    return {}


def _workload(traffic: tuple, seed: int):
    num, turns, system, first, later, answer, think, rate = traffic
    return sessions(
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


def _simulate(key: tuple):
    """Every router on the same traffic, with a progress bar and a Stop button (a run can take a minute: 20,000
    requests on 64 replicas under four routers); a finished run is kept for every session."""
    scenario_json, replicas, traffic, seed = key
    r = resolve(Scenario.model_validate_json(scenario_json))
    box, bar = progress_with_stop("Simulating the fleet under each router…", key=STOP)
    try:
        cmp = compare_routers(
            Replica(r, ServerSettings.of(r, seed=seed)),
            _workload(traffic, seed),
            replicas,
            progress=lambda done, total: bar.progress(
                done / total, text=f"Simulating the fleet under each router: {done:,} of {total:,} requests routed"
            ),
        )
    finally:
        box.empty()
    finished = _finished()
    finished[key] = cmp
    while len(finished) > 8:
        finished.pop(next(iter(finished)), None)  # another session may have dropped it first
    return cmp


@st.cache_data(show_spinner="Sizing the fleet with and without KV offload…", max_entries=8)
def _offload(scenario_json: str, traffic: tuple, seed: int, router: str, kv: KVOffload, slo_ttft_s: float):
    r = resolve(Scenario.model_validate_json(scenario_json))
    replica = Replica(r, ServerSettings.of(r, seed=seed))
    return compare_fleet_offload(replica, _workload(traffic, seed), router, kv, slo_ttft_s, price_of(r))


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
key = (sj, int(replicas), traffic, int(seed))
if st.session_state.pop(f"{STOP}_stopped", False):  # Stop clicked: do not start the same run again by itself
    st.session_state["fleet_stopped_key"] = key
cmp = _finished().get(key)
if cmp is None:
    if st.session_state.get("fleet_stopped_key") == key and not st.button(
        "Simulate the fleet", type="primary", key="fleet_run"
    ):
        st.info("The fleet simulation stopped before it finished; press the button to run it, or change an input.")
        st.stop()
    st.session_state.pop("fleet_stopped_key", None)
    try:
        cmp = _simulate(key)
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

st.subheader("KV offload on against off")
st.caption(
    "Prefix blocks the GPU lets go kept in CPU memory (and on NVMe): vLLM's OffloadingConnector or SGLang's HiCache "
    "on the sidebar's engine. A later turn that finds its history there reloads it over the host link (PCIe or "
    "NVLink-C2C, at the measured rate of data/kv_tiers.yaml) instead of recomputing it. Each side is sized: the "
    "fewest replicas behind the router above within the p95 TTFT target."
)
c = st.columns(4)
tiers = c[0].selectbox("Tiers", OFFLOAD_TIERS, key="fleet_offload_tiers")
cpu_gib = c[1].number_input(
    "CPU tier per replica (GiB, 0 = 2 × the GPU pool)", 0.0, 100_000.0, 0.0, key="fleet_cpu_gib"
)
slo_ttft = c[2].number_input("p95 TTFT target (s)", 0.01, 600.0, 2.0, key="fleet_offload_slo")
go = c[3].checkbox("Compare", value=False, key="fleet_offload_go", help="sizes the fleet twice: a few seconds")
if go:
    try:
        kv = KVOffload(tiers, cpu_gib * GIB if cpu_gib > 0 else None)
        oc = _offload(sj, traffic, int(seed), router, kv, float(slo_ttft))
    except InputError as err:
        st.error(error_text(err))
        st.stop()
    rows = [
        {"": label, "replicas": x.replicas, "usd_per_hour": x.usd_per_hour, "ttft_p95_s": x.ttft_p95_s}
        | {"prefix_hit_rate": x.prefix_hit_rate, "offload_hit_rate": x.offload_hit_rate}
        for label, x in (("off", oc.off), ("on", oc.on))
    ]
    st.dataframe(
        rows,
        hide_index=True,
        column_config={
            "replicas": st.column_config.NumberColumn("Replicas"),
            "usd_per_hour": st.column_config.NumberColumn("$ / hour", format="%.2f"),
            "ttft_p95_s": st.column_config.NumberColumn("p95 TTFT (s)", format="%.3f"),
            "prefix_hit_rate": st.column_config.NumberColumn("Prefix hit rate (all tiers)", format="percent"),
            "offload_hit_rate": st.column_config.NumberColumn("Hits from CPU/SSD", format="percent"),
        },
    )
    (st.success if oc.pays else st.info)(oc.verdict[:1].upper() + oc.verdict[1:] + ".")
    st.caption(
        "Offload pays on traffic that comes back to a prefix after the GPU has let it go (a reuse distance longer "
        "than the GPU prefix cache, shorter than the CPU tier), when a reload (latency + bytes / link rate) is "
        "shorter than the prefill it replaces. Short think times or a GPU pool that already holds the histories "
        "leave nothing for the tier to serve."
    )
