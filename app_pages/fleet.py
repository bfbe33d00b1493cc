"""Fleet & routing: N replicas of the sidebar's deployment behind a router, on traffic that comes back (sessions
behind a shared system prompt): what each routing policy saves against round robin, and where it piles load."""

from __future__ import annotations

import streamlit as st

from planner.capacity.routing import compare_routers, replica_frame
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
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
