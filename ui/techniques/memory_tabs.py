"""Techniques page, the tabs about memory: PagedAttention, FlashAttention and multi-LoRA."""

from __future__ import annotations

import streamlit as st

from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.core.units import fmt_bytes
from planner.techniques import flash_attention as fa
from planner.techniques.lora import ALL_MODULES, module_dims
from planner.traffic.trace_refs import web_length_spec
from ui.charts.techniques import flash_chart, lora_chart, paged_chart
from ui.labels import error_text
from ui.techniques.data import Request, flash_sweep, lora, paged
from ui.uploads import session_upload_dir


def paged_tab(sj: str, r: Resolved, q: Request) -> None:
    c = st.columns(4)
    prompt_spec = c[0].text_input(
        "Prompt lengths",
        key="tech_paged_prompt",
        help="fixed:N | uniform:LO,HI | lognormal:mean=M,sigma=S[,max=X] | empirical:NAME",
    )
    output_spec = c[1].text_input("Output lengths", key="tech_paged_output")
    reserve = c[2].number_input(
        "Contiguous reservation (tokens)",
        1,
        r.max_model_len,
        key="tech_reserve",
        help="older engines reserved max_model_len per request",
    )
    seed = c[3].number_input("Seed", 0, 2**31 - 1, key="tech_paged_seed")
    try:  # a web input names no server file: bundled traces and this session's uploads only
        prompt_spec = web_length_spec(prompt_spec, "Prompt lengths", session_upload_dir())
        output_spec = web_length_spec(output_spec, "Output lengths", session_upload_dir())
        p = paged(sj, prompt_spec, output_spec, int(reserve), int(seed))
    except InputError as err:
        st.error(error_text(err))
        return
    m = st.columns(4)
    m[0].metric("Contiguous: max requests", f"{p.contiguous_max_requests:,}")
    m[1].metric("Paged: max requests", f"{p.paged_max_requests:,}")
    m[2].metric(
        "Contiguous: memory wasted",
        f"{p.contiguous_waste_fraction:.1%}",
        help=f"{p.contiguous_waste_bytes / 1e9:,.2f} GB per GPU at full concurrency",
    )
    m[3].metric(
        "Paged: memory wasted",
        f"{p.paged_waste_fraction:.2%}",
        help=f"{p.paged_waste_bytes / 1e9:,.2f} GB per GPU at full concurrency",
    )
    st.plotly_chart(
        paged_chart(
            p.contiguous_max_requests, p.paged_max_requests, p.contiguous_waste_fraction, p.paged_waste_fraction
        ),
        width="stretch",
        key="tech_chart_paged",
    )
    with st.expander("Formula: paged vs contiguous, with your numbers"):
        st.markdown(f"""
- {p.num_samples:,} requests drawn (seed {int(seed)}): prompt + output mean **{p.mean_tokens:,.0f}** tokens, p50
  {p.p50_tokens:,.0f}, p95 {p.p95_tokens:,.0f}, max {p.max_tokens:,} (capped at the reservation)
- KV pool per GPU = {p.pool_tokens:,} tokens = {p.pool_blocks:,} blocks of {p.block_size}
- Contiguous = floor({p.pool_tokens:,} / {p.reserve_tokens:,}) = **{p.contiguous_max_requests:,}** requests; waste
  = 1 − {p.mean_tokens:,.0f} / {p.reserve_tokens:,} = **{p.contiguous_waste_fraction:.1%}**
- Paged = floor({p.pool_blocks:,} / mean ceil(length / {p.block_size})) = **{p.paged_max_requests:,}** requests;
  only the last block of each request is partly empty: **{p.paged_waste_fraction:.2%}**
- Assumptions: each request counted at its final length (its peak); the gaps between contiguous reservations
  (external fragmentation) would make contiguous worse still
""")


def flash_tab(r: Resolved, q: Request) -> None:
    c = st.columns(3)
    tokens = c[0].number_input("Sequence length (tokens)", 1, r.max_model_len, step=256, key="tech_flash_len")
    batch = c[1].number_input("Sequences in the prefill batch", 1, 100_000, key="tech_flash_batch")
    block = c[2].selectbox("Tile size", [64, 128, 256], key="tech_flash_block")
    a = fa.scenario_attention_memory(r, int(batch), int(tokens), block)
    heads = a.heads
    m = st.columns(4)
    m[0].metric("Standard: scores per layer", fmt_bytes(a.standard_bytes), help="materialised in HBM")
    m[1].metric("FlashAttention: HBM", fmt_bytes(a.flash_hbm_bytes), help="one fp32 log-sum-exp per query row")
    m[2].metric("FlashAttention: tile on-chip", fmt_bytes(a.flash_tile_bytes), help="per thread block, SRAM/registers")
    m[3].metric("Less HBM for scores", f"{a.ratio:,.0f}×")
    st.plotly_chart(
        flash_chart(flash_sweep(int(batch), heads, int(tokens), r.kv_bytes, r.max_model_len), int(tokens)),
        width="stretch",
        key="tech_chart_flash",
    )
    with st.expander("Formula: attention scores, with your numbers"):
        st.markdown(f"""
- Standard = batch × heads × L² × bytes = {int(batch)} × {heads} × {int(tokens):,}² × {r.kv_bytes:g}
  = **{fmt_bytes(a.standard_bytes)}** per layer, written and read ~4 times (S, softmax, P, P·V):
  ~{fmt_bytes(a.standard_traffic_bytes)} of HBM traffic; {a.standard_bytes / r.gpu.usable_memory_bytes:.1%} of the GPU
- FlashAttention = a {block} × {block} tile of fp32 scores on-chip ({fmt_bytes(a.flash_tile_bytes)}), an online
  softmax across tiles, and batch × heads × L × 4 B = **{fmt_bytes(a.flash_hbm_bytes)}** of statistics in HBM
- Same result (exact attention); faster because the L² matrix never travels through HBM
- Assumptions: heads per GPU = {r.model.num_attention_heads} / TP {r.deployment.tensor_parallel_size}; one layer at a
  time (inference frees each layer's scores); scores in the activation dtype ({r.kv_bytes:g} B)
""")


def lora_tab(sj: str, r: Resolved, q: Request) -> None:
    c = st.columns(4)
    rank = c[0].selectbox("LoRA rank", [4, 8, 16, 32, 64, 128], key="tech_lora_rank")
    modules = c[1].multiselect("Target modules", list(ALL_MODULES), key="tech_lora_modules")
    max_loras = c[2].number_input("Adapter slots on GPU (--max-loras)", 0, 4096, key="tech_max_loras")
    keep = c[3].number_input("Requests to keep room for", 1, 100_000, key="tech_lora_keep")
    if not modules:
        st.info("Pick at least one target module.")
        return
    plan, df = lora(sj, int(rank), tuple(modules), int(max_loras), q.tokens, int(keep))
    m = st.columns(4)
    m[0].metric("One adapter", fmt_bytes(plan.adapter_bytes), help=f"{plan.adapter_bytes:,.0f} bytes")
    m[1].metric(f"{plan.max_loras} slots per GPU", fmt_bytes(plan.slots_bytes_per_gpu))
    m[2].metric(
        "Max requests",
        f"{plan.max_requests_without:,} → {plan.max_requests_with:,}",
        help=f"requests of {q.tokens:,} tokens, without and with the slots",
    )
    m[3].metric(
        "Adapters that fit",
        f"{plan.adapters_fit_keeping:,}",
        help=f"in the KV pool while keeping room for {plan.keep_requests} requests",
    )
    st.plotly_chart(lora_chart(df, int(max_loras)), width="stretch", key="tech_chart_lora")
    dims = module_dims(r.model)
    terms = " + ".join(f"({dims[mod][0]:,} + {dims[mod][1]:,})" for mod in modules)
    with st.expander("Formula: adapter bytes, with your numbers"):
        st.markdown(f"""
- Adapter = rank × Σ(d_in + d_out) over target modules × layers × bytes = {rank} × [{terms}] × {r.model.num_layers}
  × 2 = **{plan.adapter_bytes:,.0f} B** (A is d_in × r, B is r × d_out, 16-bit)
- vLLM keeps --max-loras = {plan.max_loras} slots in GPU memory: {fmt_bytes(plan.slots_bytes_per_gpu)} per GPU out of
  the KV pool ({plan.kv_pool_bytes_without / 1e9:,.2f} → {plan.kv_pool_bytes_with / 1e9:,.2f} GB); more adapters wait in
  CPU memory (--max-cpu-loras) and swap in per request
- Adapters are small next to one request's KV cache:
  the slots cost {plan.max_requests_without - plan.max_requests_with:,} request(s) of concurrency here
- Assumptions: dense MLP dimensions (MoE experts and MLA projections not modelled); adapters shard with TP
""")
