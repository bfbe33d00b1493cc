"""Disaggregation & parallelism: what TP, DP attention, EP and PP change on the sidebar's GPU, and when separate
prefill and decode pools pay off against one aggregated (chunked-prefill) deployment at the same SLO."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from planner.capacity.disagg import DisaggPlan, disagg_plan
from planner.capacity.disagg_layout import TRANSFER_ENGINES, GivenLayoutPlan, PoolLayout, evaluate_layout
from planner.capacity.launch_disagg import disagg_launch_plan
from planner.capacity.layouts import layout_rows, ratio_rows
from planner.core.errors import InputError
from planner.core.scenario import Scenario
from planner.core.workload import SLO, TrafficSpec
from planner.memory.sizes import kv_bytes_per_token
from planner.teaching.disagg_walkthrough import DisaggInputs
from planner.teaching.walkthroughs import run_walkthrough
from ui.bands import band_of, bands_caption, metric_band, range_text
from ui.charts import disagg as charts
from ui.labels import error_text
from ui.state import current_scenario, resolved_or_stop
from ui.tables import empty_cells, text_column

NUM_REQUESTS = 300  # per simulated probe: keeps the page within a few seconds


@st.cache_data(show_spinner="Comparing parallel layouts…", max_entries=16)
def _layouts(scenario_json: str, num_gpus: int, batch: int, context: int, skew: float) -> list[dict]:
    return layout_rows(Scenario.model_validate_json(scenario_json), num_gpus, batch, context, skew)


@st.cache_data(show_spinner="Sizing the prefill and decode pools and the aggregated replicas…", max_entries=16)
def _disagg(
    scenario_json: str, target: float, traffic: TrafficSpec, slo: SLO, link: str, layerwise: bool
) -> DisaggPlan:
    s = Scenario.model_validate_json(scenario_json)
    return disagg_plan(s, target, traffic, slo, link=link, layerwise=layerwise)


@st.cache_data(show_spinner="Evaluating your xPyD layout…", max_entries=16)
def _given(
    scenario_json: str, target: float, traffic: TrafficSpec, slo: SLO, layout: tuple, transfer: str, link: str,
    handoff_ms: float,
) -> GivenLayoutPlan:  # fmt: skip
    s = Scenario.model_validate_json(scenario_json)
    p, d = PoolLayout(*layout[:4]), PoolLayout(*layout[4:])
    return evaluate_layout(
        s, target, p, d, traffic, slo, transfer=transfer, link=link, handoff_fixed_s=handoff_ms / 1e3
    )


@st.cache_data(show_spinner="Sweeping prompt and output lengths…", max_entries=8)
def _ratios(scenario_json: str, slo: SLO, link: str) -> list[dict]:
    return ratio_rows(
        Scenario.model_validate_json(scenario_json), [500, 2000, 8000, 32000], [100, 500, 2000], slo, link
    )


def _shape(pool) -> str:
    """A pool as "instances × (GPUs: TP × DP × PP, EP)": TP alone hid DP attention (1 × TP 1 for 8 GPUs of DP 8)."""
    parts = [f"TP {pool.tp}"] + [f"{k} {v}" for k, v in (("DP", pool.dp), ("PP", pool.pp)) if v > 1]
    ep = f", EP {pool.ep}" if pool.ep > 1 else ""
    return f"{pool.instances} × {pool.gpus_per_instance} GPU ({' × '.join(parts)}{ep})"


def _launch_text(scenario: Scenario, engine: str, p, d, target: str) -> tuple[str, str | None]:
    """The recommended pools' launch lines (and manifest) from the CLI's generator (capacity/launch_disagg.py)."""
    if p.pp > 1 or d.pp > 1:
        raise InputError("--engine", "the xPyD launch lines take TP × DP × EP pools; this one has pipeline stages")
    plan = disagg_launch_plan(
        scenario.model_copy(update={"engine": engine}),
        engine,
        PoolLayout(p.instances, p.tp, p.dp, p.ep),
        PoolLayout(d.instances, d.tp, d.dp, d.ep),
        "nixl",
        target,
    )
    return plan.script, plan.manifest


def _usd(v) -> str:
    return "–" if v is None else f"${v:,.2f}"


def _ms(v) -> str:
    return "–" if v is None else f"{v * 1e3:,.1f}"


for key, value in (
    ("dg_gpus", 8),
    ("dg_batch", 64),
    ("dg_context", 4000),
    ("dg_skew", 0.0),
    ("dg_target", 10.0),
    ("dg_prompt", 4000),
    ("dg_output", 300),
    ("dg_ttft_ms", 2000),
    ("dg_tpot_ms", 50),
    ("dg_link", "nic"),
    ("dg_layerwise", False),
    ("dg_given", False),
    ("dg_px", 1),
    ("dg_ptp", 8),
    ("dg_pdp", 1),
    ("dg_pep", 1),
    ("dg_dy", 1),
    ("dg_dtp", 8),
    ("dg_ddp", 1),
    ("dg_dep", 1),
    ("dg_transfer", "nixl"),
    ("dg_handoff_ms", 20.0),
    ("dg_a2a", "none"),
    ("dg_tbo", False),
    ("dg_redundant", 0),
):
    st.session_state.setdefault(key, value)

st.title("Disaggregation & parallelism")
st.caption(
    "Large MoE models run with data-parallel attention and expert parallelism; long prompts invite "
    "separate prefill and decode pools. Both change what one GPU holds and what one step costs."
)
scenario = current_scenario()
r = resolved_or_stop()
sj = scenario.model_dump_json()

# --- parallel layouts ------------------------------------------------------------------------------------
st.header(f"{r.model.name} on N × {r.gpu.id}: TP, DP attention, EP, PP")
c = st.columns(4)
n = int(c[0].selectbox("GPUs in one instance", [2, 4, 8, 16], key="dg_gpus"))
batch = int(c[1].number_input("Decode batch per DP rank", 1, 4096, key="dg_batch"))
context = int(c[2].number_input("Context per sequence (tokens)", 1, 1_000_000, step=1000, key="dg_context"))
skew = c[3].slider(
    "Expert routing skew (Zipf s)",
    0.0,
    1.5,
    step=0.1,
    key="dg_skew",
    help="0 = uniform routing. s > 0: expert i gets traffic ∝ 1/(i+1)^s and experts sit "
    "contiguously on EP ranks (no EPLB), so the first rank is the hot one.",
)
rows = _layouts(sj, n, batch, context, float(skew))
if any(row["fits"] for row in rows):
    st.plotly_chart(charts.layout_bars(rows), key="dg_layout_bars")
    st.plotly_chart(charts.step_parts(rows), key="dg_step_parts")
else:  # empty charts and speeds of layouts that cannot start would only mislead
    st.warning(
        f"No layout of {r.model.name} fits {n} × {r.gpu.id} ({r.weights.label} weights, max_model_len "
        f"{r.max_model_len:,}): raise **GPUs in one instance**, or in the sidebar pick a smaller precision, a "
        "lower max_model_len or a larger GPU (*Does it fit?* lists the nearest fixes)."
    )
SPEED_KEYS = ("step_ms", "tokens_per_s", "all_to_all_ms", "imbalance_ms", "pipeline_ms", "cross_node_tp_ms")
shown = [row if row["fits"] else {**row, **dict.fromkeys(SPEED_KEYS)} for row in rows]  # no speed if it cannot run
NUM = st.column_config.NumberColumn
st.dataframe(
    pd.DataFrame(shown).round({"tokens_per_s": 0}),  # whole tokens/s ("localized" printed 7,270.046)
    hide_index=True,
    key="dg_layout_table",
    **empty_cells(),
    column_config={
        "layout": "layout",
        "fits": st.column_config.CheckboxColumn("fits"),
        "gpus": NUM("GPUs", format="%d"),
        "weights_per_gpu_gb": NUM("weights per GPU (GB)", format="%.2f"),
        "kv_bytes_per_token_per_gpu": NUM("KV per token per GPU (B)", format="localized"),
        "max_concurrency": NUM("requests of max_model_len held", format="%d"),
        "step_ms": NUM("decode step (ms)", format="%.2f"),
        "tokens_per_s": NUM("decode tokens/s", format="localized"),
        "all_to_all_ms": NUM("all-to-all (ms)", format="%.2f"),
        "imbalance_ms": NUM("expert imbalance (ms)", format="%.2f"),
        "pipeline_ms": NUM("pipeline hand-offs (ms)", format="%.2f"),
        "cross_node_tp_ms": NUM("TP across nodes (ms)", format="%.2f"),
        "note": text_column("note", [row.get("note") for row in shown]),
    },
)
st.markdown(
    "**What each rank holds** (vLLM; SGLang's `--tp 8 --dp 8 --ep 8 --enable-dp-attention` is vLLM's "
    "`--tp 1 --dp 8 --enable-expert-parallel`): attention and dense layers are split over TP inside each DP "
    "rank; each DP rank serves its own requests with its own KV cache; the MoE layers span all TP × DP GPUs "
    "(EP = TP × DP experts groups). MLA's latent (DeepSeek) has one KV head, so TP cannot split it: at TP 8 all "
    "eight GPUs store the same latent, at DP 8 each stores different requests, which is why DP 8 + EP 8 holds "
    "several times more requests. The price is the expert all-to-all every MoE layer: per GPU "
    "`tokens/TP × top-k × (dispatch + combine bytes) × remote share / link` (NVLink in a node, the NIC across). "
    "PP stages hold a share of the layers each; a token still passes every stage, so a step takes the full pass, "
    "and the GPUs stay busy only with several batches in flight: with m micro-batches a fraction "
    "(PP − 1) / (m + PP − 1) of the time is idle (one batch on PP 2: 50%; vLLM keeps PP batches in flight, which "
    "the tokens/s above assume)."
)

# --- disaggregated prefill/decode --------------------------------------------------------------------------
st.header("When do separate prefill and decode pools pay off?")
c = st.columns(4)
target = c[0].number_input("Target traffic (requests/s)", 0.01, 100_000.0, step=1.0, key="dg_target")
prompt = int(c[1].number_input("Mean prompt (tokens)", 16, 1_000_000, step=500, key="dg_prompt"))
output = int(c[2].number_input("Mean output (tokens)", 2, 100_000, step=50, key="dg_output"))
link = c[3].selectbox(
    "KV link",
    ["nic", "nvlink"],
    key="dg_link",
    format_func=lambda x: {"nic": "NIC (pools on separate nodes)", "nvlink": "NVLink (same node)"}[x],
)
c = st.columns(4)
ttft_ms = c[0].number_input("SLO: p95 TTFT (ms)", 10, 600_000, step=100, key="dg_ttft_ms")
tpot_ms = c[1].number_input("SLO: p95 TPOT (ms)", 1, 10_000, step=5, key="dg_tpot_ms")
layerwise = c[2].toggle(
    "Send KV layer by layer",
    key="dg_layerwise",
    help="Splitwise: each layer's KV leaves while the next computes; only what outlasts the "
    "prefill (at least one layer's share) adds to TTFT.",
)
slo = SLO(ttft_p95_s=ttft_ms / 1e3, tpot_p95_s=tpot_ms / 1e3)
# lognormal lengths (sigma 0.5) with their tails cut so that prompt + output fits max_model_len: a deployment's
# clients send what its max_model_len admits (vLLM rejects longer requests)
out_cap = max(1, r.max_model_len // 4)
prompt_cap = max(1, r.max_model_len - min(output * 3, out_cap))
traffic = TrafficSpec(
    profile="custom",
    prompt=f"lognormal:mean={prompt},sigma=0.5,max={prompt_cap}",
    output=f"lognormal:mean={output},sigma=0.5,max={min(output * 3, out_cap)}",
    num_requests=NUM_REQUESTS,
)
if prompt + output > r.max_model_len or prompt >= prompt_cap:
    st.warning(
        f"A mean request of {prompt:,} + {output:,} tokens does not fit max_model_len {r.max_model_len:,}: vLLM "
        "rejects requests longer than that. Raise it in the sidebar under **Engine settings (vLLM names) → "
        f"max_model_len** (or untick *Set max_model_len* for the model's {r.model.max_position_embeddings:,}), or "
        "shorten the requests here."
    )
    st.stop()
try:
    o = _disagg(sj, float(target), traffic, slo, link, bool(layerwise))
except InputError as err:
    st.error(error_text(err))
    st.stop()
p, d, a = o.prefill, o.decode, o.aggregated
c = st.columns(4)
pool_bands = [
    band_of(r, "ttft", p.ttft_p95_s if p else None),
    band_of(r, "tpot", d.tpot_p95_s if d else None),
    band_of(r, "throughput", p.max_rate_per_instance if p else None),
    band_of(r, "throughput", d.max_rate_per_instance if d else None),
]
c[0].metric(
    "Prefill pool",
    _shape(p) if p else "infeasible",
    help="Instances of the shape needing the fewest GPUs; each simulated with every output cut to one "
    "token, TTFT including its KV transfer.",
)
c[1].metric(
    "Decode pool",
    _shape(d) if d else "infeasible",
    help="Analytic: Little's law on PerfModel decode steps, p95 TPOT at n + 1.645√n sequences.",
)
c[2].metric("GPUs: disaggregated / aggregated", f"{o.num_gpus or '–'} / {a.gpus if a else '–'}")
c[3].metric(
    "KV transfer share of TTFT",
    f"{o.kv_transfer_share_of_ttft:.1%}" if o.kv_transfer_share_of_ttft is not None else "–",
    help=f"{_ms(o.kv_transfer_visible_s)} ms of {_ms(o.kv_transfer_s)} ms for the mean prompt over "
    f"{o.kv_link} adds to TTFT, against the p95 TTFT at the target.",
)
c = st.columns(4)
c[0].metric("$ per hour, disaggregated", _usd(o.usd_per_hour))
c[1].metric(
    "$ per hour, aggregated",
    _usd(a.usd_per_hour) if a else "–",
    help=f"Best TP of capacity_plan (vLLM chunked prefill) at the same SLO: {a.replicas} × TP {a.tp}"
    if a
    else "No TP meets the SLO aggregated.",
)
c[2].metric(
    "$ per million output tokens",
    f"{_usd(o.usd_per_million_output_tokens)} vs {_usd(a.usd_per_million_output_tokens) if a else '–'}",
)
c[3].metric("Verdict", "disaggregate" if o.cheaper else "stay aggregated")
c = st.columns(4)
c[0].metric("Prefill pool: p95 TTFT (ms)", _ms(p.ttft_p95_s if p else None), **metric_band(pool_bands[0], "ttft_s"))
c[1].metric("Decode pool: p95 TPOT (ms)", _ms(d.tpot_p95_s if d else None), **metric_band(pool_bands[1], "tpot_s"))
if not o.feasible:
    reasons = sorted({x.reason for x in o.prefill_options + o.decode_options if x.reason})
    st.warning("Disaggregation cannot meet this SLO: " + "; ".join(reasons))
if o.usd_per_hour is not None or a is not None:
    st.plotly_chart(charts.cost_bars(o.usd_per_hour, a.usd_per_hour if a else None), key="dg_cost")
if p and d:
    st.markdown(
        f"**With your numbers.** Prefill instances = ceil({target:g} × {o.headroom:g} / "
        f"{p.max_rate_per_instance:,.3g}) = {p.instances}; decode instances = ceil({target:g} × "
        f"{o.headroom:g} / {d.max_rate_per_instance:,.3g}) = {d.instances}; GPUs = {p.instances} × "
        f"{p.gpus_per_instance} + {d.instances} × {d.gpus_per_instance} = {o.num_gpus}; "
        f"$/h = {o.num_gpus} × {_usd(o.usd_per_gpu_hour)} = {_usd(o.usd_per_hour)}. KV transfer = "
        f"{o.mean_prompt_tokens:,.0f} tokens × {kv_bytes_per_token(r.model, r.kv_bytes):,.0f} B per token / "
        f"{o.kv_link_gb_s:,.4g} GB/s ({o.kv_link}) + link latency = {_ms(o.kv_transfer_s)} ms. Capacity per "
        f"prefill instance {range_text(pool_bands[2], 'rate')}, per decode instance "
        f"{range_text(pool_bands[3], 'rate')}."
    )
st.caption(bands_caption(pool_bands))
if p and d:
    with st.expander("Launch these pools"):
        c = st.columns(2)
        launch_engine = c[0].selectbox("Engine", ("vllm", "sglang"), key="dg_launch_engine")
        launch_target = c[1].selectbox("Target", ("shell", "k8s", "lws"), key="dg_launch_target")
        try:
            script, manifest = _launch_text(scenario, launch_engine, p, d, launch_target)
        except InputError as err:
            st.info(error_text(err))
        else:
            st.caption("The same lines as `servingplan launch --prefill-instances … --decode-instances …`.")
            st.code(script, language="bash")
            if manifest:
                st.code(manifest, language="yaml")

st.subheader("Your own xPyD layout, evaluated as deployed")
st.caption(
    "X prefill instances and Y decode instances of the shapes you run (attention TP × DP, EP over the MoE layers). "
    "TTFT = prefill queueing + prefill + KV transfer + hand-off (proxy, second hop, first decode step)."
)
if st.toggle("Evaluate my layout", key="dg_given"):
    c = st.columns(4)
    px = int(c[0].number_input("Prefill instances (X)", 1, 1000, key="dg_px"))
    ptp = int(c[1].number_input("Prefill TP", 1, 512, key="dg_ptp"))
    pdp = int(c[2].number_input("Prefill DP (attention)", 1, 512, key="dg_pdp"))
    pep = int(c[3].number_input("Prefill EP", 1, 512, key="dg_pep"))
    c = st.columns(4)
    dy = int(c[0].number_input("Decode instances (Y)", 1, 1000, key="dg_dy"))
    dtp = int(c[1].number_input("Decode TP", 1, 512, key="dg_dtp"))
    ddp = int(c[2].number_input("Decode DP (attention)", 1, 512, key="dg_ddp"))
    dep_ = int(c[3].number_input("Decode EP", 1, 512, key="dg_dep"))
    c = st.columns(2)
    transfer = c[0].selectbox(
        "KV transfer engine",
        list(TRANSFER_ENGINES),
        key="dg_transfer",
        format_func=lambda x: TRANSFER_ENGINES[x].label,
        help="Its share of the link's line rate and the source of that figure are listed below.",
    )
    handoff_ms = c[1].number_input(
        "Hand-off: proxy and second hop (ms)",
        0.0,
        10_000.0,
        step=5.0,
        key="dg_handoff_ms",
        help="Fixed per request; 20 ms is an estimated idle floor (measured 7-180 ms under load).",
    )
    c = st.columns(3)
    a2a = c[0].selectbox(
        "Expert all-to-all (EP)",
        ["none", "deepep"],
        key="dg_a2a",
        help="SGLang --moe-a2a-backend: deepep runs DeepEP's normal kernels for prefill and its low-latency "
        "kernels for decode (--deepep-mode auto).",
    )
    tbo = c[1].checkbox(
        "Two-batch overlap",
        key="dg_tbo",
        help="SGLang --enable-two-batch-overlap: one micro-batch's dispatch/combine hides behind the other's compute.",
    )
    redundant = int(
        c[2].number_input(
            "Redundant experts (EPLB)",
            0,
            1024,
            key="dg_redundant",
            help="SGLang --ep-num-redundant-experts (EPLB on): replicas of hot experts balance the EP ranks.",
        )
    )
    wide = {"moe_a2a_backend": a2a, "enable_two_batch_overlap": tbo, "ep_num_redundant_experts": redundant}
    s_given = scenario.model_copy(update={"deployment": scenario.deployment.model_copy(update=wide)})
    try:
        g = _given(
            s_given.model_dump_json(), float(target), traffic, slo, (px, ptp, pdp, pep, dy, dtp, ddp, dep_),
            transfer, link, handoff_ms,
        )  # fmt: skip
    except InputError as err:
        st.error(error_text(err))
    else:
        c = st.columns(4)
        g_bands = [band_of(r, "ttft", g.ttft_p95_s), band_of(r, "tpot", g.tpot_p95_s)]
        c[0].metric(
            "p95 TTFT (ms)",
            _ms(g.ttft_p95_s),
            help=f"floor for one request: {_ms(g.ttft_floor_s)} ms",
            **metric_band(g_bands[0], "ttft_s"),
        )
        c[1].metric("p95 TPOT (ms)", _ms(g.tpot_p95_s), **metric_band(g_bands[1], "tpot_s"))
        st.caption(bands_caption(g_bands))
        c[2].metric("Hand-off (ms)", _ms(g.handoff_s), help="fixed part + 1.5 decode steps")
        c[3].metric("SLO", "met" if g.meets_slo else "missed")
        st.caption(
            f"{g.num_gpus} GPUs, {_usd(g.usd_per_hour)}/hour; capacity {g.max_rate:,.3g} req/s at the SLO. KV "
            f"transfer {_ms(g.kv_transfer_s)} ms over {g.kv_link} ({g.kv_link_gb_s:,.0f} GB/s; {g.transfer_source})."
        )

st.subheader("Prefill : decode instances as prompts and outputs change")
st.plotly_chart(charts.ratio_lines(_ratios(sj, slo, link)), key="dg_ratio")
st.caption(
    "Decode rate per instance / prefill rate per instance, both at the SLO on the sidebar's TP: long "
    "prompts with short answers need many prefill instances per decode instance (llm-d recommends "
    "disaggregation around 10:1 input:output); long answers need the reverse."
)

with st.expander("Walkthrough: when would you disaggregate prefill and decode?", expanded=False):
    inputs = DisaggInputs()  # DistServe's Figure 1 until both pools and the aggregated replica are sized
    if p and d and a and a.max_rate_per_replica:
        inputs = DisaggInputs(
            prompt_tokens=max(1, round(o.mean_prompt_tokens)),
            output_tokens=max(1, round(o.mean_output_tokens)),
            kv_bytes_per_token=kv_bytes_per_token(r.model, r.kv_bytes),
            link_gb_s=o.kv_link_gb_s,
            ttft_target_s=slo.ttft_p95_s,
            target_rps=float(target),
            prefill_rps_per_gpu=p.max_rate_per_instance / p.gpus_per_instance,
            decode_rps_per_gpu=d.max_rate_per_instance / d.gpus_per_instance,
            colocated_rps_per_gpu=a.max_rate_per_replica / a.gpus_per_replica,
        )
        st.caption("With this page's numbers: per-GPU rates of the sized pools and of the best aggregated replica.")
    else:
        st.caption("DistServe's Figure 1 numbers (this page's pools are not both feasible).")
    for s in run_walkthrough("disaggregation", inputs):
        st.markdown(
            f"**{s.number}. {s.title}**: `{s.formula}` = {s.substituted} = **{s.result}**"
            + (f"  \n_{s.note}_" if s.note else "")
        )
