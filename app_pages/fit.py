"""Does it fit? Where every byte goes, and how many requests fit: the textbook figure and vLLM's real pool."""

import pandas as pd
import streamlit as st

from planner.core.errors import InputError
from planner.memory.vllm_pool import vllm_constants
from ui.fit_verdict import render_verdict
from ui.fit_view import fit_view
from ui.lazy_section import folded
from ui.state import current_scenario, resolved_or_stop

st.title("Does it fit?")
r = resolved_or_stop()

view = fit_view(current_scenario().model_dump_json())
plan = view.plan
dep = r.deployment
st.caption(
    f"{r.model.name} · {dep.num_gpus} × {r.gpu.name} · TP {dep.tensor_parallel_size} · weights "
    f"{r.weights.label} · KV {r.kv.label} ({r.kv_bytes:g} bytes/value) · max_model_len {r.max_model_len:,}"
)

starts = plan.fits and plan.num_gpu_blocks > 0  # vLLM starts: its pool holds one max_model_len request
render_verdict(
    current_scenario(),
    plan.paged_max_requests if starts else 0,
    plan.context_tokens,
    plan.blockers[0].message if plan.blockers else "",
    plan.binding_limit,
    plan,
)
dp = dep.data_parallel_size
per_rank = f" per DP rank × {dp} DP ranks" if dp > 1 else ""
c = st.columns(4)
c[0].metric(
    "Parameters",
    f"{plan.params / 1e9:,.2f} B",
    help=f"{plan.params:,} total" + (f"; {plan.active_params:,} active per token" if r.model.is_moe else ""),
)
c[1].metric(
    "Weights per GPU (GB)",
    f"{plan.weight_bytes_per_gpu / 1e9:,.2f} GB",
    help=f"decimal GB (1e9 B) = {plan.weight_bytes_per_gpu / 2**30:,.2f} GiB",
)
c[2].metric("KV per token", f"{plan.kv_bytes_per_token:,.0f} B", help="all layers, K and V, whole model")
c[3].metric(
    "KV per request (GB)",
    f"{plan.kv_bytes_per_request / 1e9:,.3f} GB",
    help=f"{plan.context_tokens:,} tokens"
    + (" (sliding-window layers capped at the window)" if r.model.sliding_window else ""),
)
c = st.columns(4)
c[0].metric(
    "Textbook: requests fit",
    f"{plan.textbook_requests_per_replica:,}",
    help=f"per replica: floor((GPU memory − weights) / KV per request) = {plan.textbook_max_requests:,}{per_rank}, "
    f"requests of {plan.context_tokens:,} tokens",
)
c[1].metric(
    f"{r.engine.label}: requests fit",
    f"{plan.paged_requests_per_replica if starts else 0:,}",
    help=f"per replica: {plan.paged_max_requests:,}{per_rank}, requests of {plan.context_tokens:,} tokens in the "
    "paged pool's blocks"
    + (
        ""
        if starts
        else f"; 0 because {r.engine.label} would not start (the verdict above): the pool itself would hold "
        f"{plan.paged_requests_per_replica:,}"
    ),
)
c[2].metric(f"{r.engine.label}: max concurrency", f"{plan.max_concurrency:,.2f}x", help=plan.pool.log_lines[1])
c[3].metric(
    f"{r.engine.label} KV pool per GPU (GiB)",
    f"{plan.kv_pool_bytes_per_gpu / 2**30:,.2f} GiB",
    help=f"binary GiB (2^30 B), as vLLM logs it = {plan.kv_pool_bytes_per_gpu / 1e9:,.2f} GB",
)
for w in plan.warnings[len(plan.blockers) :]:  # the blockers are the verdict above
    st.warning(w)

st.code("\n".join(f"INFO ... {line}" for line in plan.pool.log_lines), language="text")
if plan.layer_kinds:  # hybrid models: what each layer kind holds per request on one GPU
    st.subheader("Memory by layer kind (one GPU)")
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "layers": f"{g.layers} × {g.label}",
                    "KV per token (B)": round(g.kv_bytes_per_token),
                    "state per request (MB)": round(g.state_bytes_per_request / 1e6, 2),
                    f"tokens held of {plan.context_tokens:,}": g.tokens_held,
                    "per request (MB)": round(g.bytes_per_request / 1e6, 2),
                }
                for g in plan.layer_kinds
            ]
        ),
        hide_index=True,
    )
    if plan.hybrid:
        h = plan.hybrid.pool
        st.caption(
            f"vLLM's hybrid manager: {h.num_groups} KV-cache groups of {h.group_size} layers sharing "
            f"{h.num_blocks:,} pages of {h.page_bytes / 2**20:,.2f} MiB; attention blocks of "
            f"{min(sp.block_size for sp in h.specs if sp.kind not in ('linear', 'mamba')):,} tokens; "
            f"a request of {plan.context_tokens:,} tokens takes {plan.hybrid.blocks_per_request:,} pages "
            f"({plan.hybrid.state_blocks_per_request} of them state)."
        )

# --- where the memory goes -------------------------------------------------------------------------
st.plotly_chart(view.stack_fig, width="stretch")
# formulas: their text is built and sent only while their expander is open (ui/lazy_section.py)
box = folded("Formula: the textbook fit, with your numbers", "fit_formula_textbook")
if box:
    with box:
        windowed = " (windowed layers capped)" if r.model.sliding_window else ""
        textbook_unit = (
            f" per DP rank, × {dp} DP ranks = **{plan.textbook_requests_per_replica:,}** per replica"
            if dp > 1
            else " per replica"
        )
        st.markdown(f"""
- KV bytes per token = 2 × layers × KV heads × head dim × bytes = 2 × {r.model.num_layers} × {r.model.num_kv_heads}
  × {r.model.head_dim} × {r.kv_bytes:g} = **{plan.kv_bytes_per_token:,.0f} B**
  {"(MLA: layers × (kv_lora_rank + qk_rope_head_dim) × bytes)" if r.model.is_mla else ""}
- KV per request = {plan.context_tokens:,} tokens × per-token bytes{windowed}
  = **{plan.kv_bytes_per_request / 1e9:,.3f} GB**
- Weights = {plan.params:,} parameters × {r.weights.bits_per_weight:g} bits / 8 = **{plan.weight_bytes / 1e9:,.2f} GB**
  ({plan.weight_bytes_per_gpu / 1e9:,.2f} GB per GPU at TP {plan.tensor_parallel_size})
- Fit = floor(({r.gpu.memory_gb:g} GB − {plan.weight_bytes_per_gpu / 1e9:,.2f} GB) /
  {plan.kv_bytes_per_request / plan.tensor_parallel_size / 1e9:,.3f} GB)
  = **{plan.textbook_max_requests}** requests{textbook_unit} (an upper bound: no activations or runtime memory)
""")
box = folded(
    "Formula: vLLM's KV pool, with your numbers"
    + ("" if r.engine.id == "vllm" else f" (for comparison: {r.engine.label}'s own rule gives the pool above)"),
    "fit_formula_pool",
)
if box:
    with box:
        p, k = plan.pool, vllm_constants()
        st.markdown(f"""
- Budget = gpu_memory_utilization × usable memory =
  {dep.gpu_memory_utilization} × {r.gpu.usable_memory_bytes / 2**30:,.2f} GiB
  = **{p.budget_bytes / 2**30:,.2f} GiB**
- − weights {p.weights_bytes / 2**30:,.2f} GiB − activation peak {p.activation_bytes / 2**30:,.2f} GiB
  (max_num_batched_tokens {dep.max_num_batched_tokens:,} × ({k.activation_intermediate_factor:g} × intermediate / TP
  + {k.activation_hidden_factor:g} × hidden) × 2 B + max_num_seqs × vocab × {k.sampler_logit_bytes:g} B)
  − non-torch {p.non_torch_bytes / 2**30:,.2f} GiB − CUDA graphs {p.cuda_graph_bytes / 2**30:,.2f} GiB
  = **{max(p.kv_pool_bytes, 0) / 2**30:,.2f} GiB**
- Blocks = floor(pool / (block_size {dep.block_size} × {plan.kv_bytes_per_token_per_gpu:,.0f} B))
  = **{plan.num_gpu_blocks:,}** → {plan.kv_cache_tokens:,} tokens;
  concurrency = {plan.kv_cache_tokens:,} / {r.max_model_len:,} = **{plan.max_concurrency:.2f}x**
- Assumptions (data/vllm_memory.yaml, fitted on published vLLM logs): non-torch 0.35 GiB + 0.25 GiB per extra TP GPU,
  CUDA graphs {k.cuda_graph_bytes / 2**30:.2f} GiB unless enforce_eager.
""")

# --- concurrency against context ---------------------------------------------------------------
st.subheader("How many requests fit as the context grows")
st.plotly_chart(view.concurrency_fig, width="stretch")
box = folded("Formula: paged blocks against contiguous reservation, with your numbers", "fit_formula_paged")
if box:
    with box:
        st.markdown(f"""
- Textbook: floor(({r.gpu.memory_gb:g} GB − weights per GPU) /
  (tokens × {plan.kv_bytes_per_token_per_gpu:,.0f} B per token per GPU)).
- vLLM paged: a request of T tokens holds ceil(T / {dep.block_size}) blocks;
  requests = floor({plan.num_gpu_blocks:,} blocks / blocks per request). Sliding-window layers cap T at the window.
- Contiguous reservation (engines before PagedAttention): each request reserves max_model_len = {r.max_model_len:,}
  tokens up front however short it is: floor(pool / ({r.max_model_len:,} × {plan.kv_bytes_per_token_per_gpu:,.0f} B))
  = **{plan.contiguous_max_requests}** requests at any context.
""")

# --- tensor parallel options ---------------------------------------------------------------------
st.subheader("Tensor-parallel options")
st.dataframe(view.tp_table, hide_index=True, width="stretch", column_config=view.tp_columns)
box = folded("Formula: tensor parallelism", "fit_formula_tp")
if box:
    with box:
        st.markdown(
            "Weights and KV heads are split across the TP group: weights per GPU = weights / TP; KV heads per "
            "GPU = max(1, KV heads / TP) (replicated beyond the KV-head count; MLA's latent is not split). "
            "Each extra GPU costs NCCL buffers (0.25 GiB assumed)."
        )

st.subheader("Launch it")
engine = current_scenario().engine
if isinstance(view.launch, InputError):
    st.info(f"No launch command: {view.launch.message}")
else:
    st.caption(f"{engine}: the layout, limits, KV dtype and prefix caching above under {engine}'s own flags")
    st.code(view.launch.script, language="bash", wrap_lines=True)
    st.download_button("Download the launch commands", view.launch.script, file_name="launch.sh", mime="text/x-sh")
