"""Techniques page, the tabs about speed: speculative decoding and prefix caching."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from planner.core.scenario import Resolved
from planner.techniques import prefix_cache as pc
from planner.techniques import spec_decode as sd
from ui.charts.techniques import best_k_chart, speedup_chart, ttft_chart
from ui.techniques.data import Request, draft_options, engine_of, mooncake_hit_rate, prefix, spec_decode
from ui.techniques.spec_heads_tab import spec_head_section


def spec_decode_tab(sj: str, r: Resolved, q: Request) -> None:
    spec_head_section(r, q)
    st.subheader("A separate draft model")
    options = draft_options(sj)
    if not options:
        st.info(f"No preset is smaller than {r.model.name}: speculative decoding needs a smaller draft model.")
        return
    if st.session_state.get("tech_draft") not in options:  # the scenario's model changed
        st.session_state["tech_draft"] = options[0]
    c = st.columns(3)
    alpha = c[0].slider(
        "Acceptance rate α",
        0.0,
        0.99,
        step=0.01,
        key="tech_alpha",
        help="probability that the target agrees with each drafted token",
    )
    k = c[1].slider("Draft tokens k", 1, 10, key="tech_k")
    draft = c[2].selectbox(
        "Draft model", options, key="tech_draft", help="presets smaller than the target; the same vocabulary first"
    )
    o, sweep, monte_carlo = spec_decode(sj, draft, alpha, k, q.batch, q.context, q.tokens)
    m, mem = st.columns(4), o.memory
    m[0].metric("Expected tokens per pass", f"{o.expected_tokens_per_pass:.2f}", help="(1 − α^(k+1)) / (1 − α)")
    m[1].metric(
        f"Speed-up at batch {q.batch}",
        f"{o.speedup:.2f}×",
        help=f"{o.tokens_per_s_per_user_without:.1f} → {o.tokens_per_s_per_user_with:.1f} tokens/s per user",
    )
    m[2].metric("Best k", f"{o.best_k}", help="highest speed-up at this batch among k = 1 … 10")
    m[3].metric(
        "Draft weights per GPU",
        f"{mem.draft_weight_bytes_per_gpu / 1e9:,.2f} GB",
        help=f"KV pool {mem.kv_pool_tokens_without:,} → {mem.kv_pool_tokens_with:,} tokens",
    )
    if not o.same_vocabulary:
        st.warning(
            f"{draft} has another vocabulary than {r.model.name}: vLLM needs a draft with the same tokenizer. "
            "The timing below still shows what a draft of that size would do."
        )
    st.caption(
        f"Requests of {q.tokens:,} tokens that fit: {mem.max_requests_without:,} without the draft, "
        f"{mem.max_requests_with:,} with it (its weights and its own KV cache share the pool)."
    )
    left, right = st.columns(2)
    left.plotly_chart(speedup_chart(sweep, q.batch), width="stretch", key="tech_chart_spec")
    right.plotly_chart(best_k_chart(pd.DataFrame(o.speedup_by_k), o.best_k), width="stretch", key="tech_chart_k")
    st.markdown("**The primer's example, step by step:** draft 4 tokens, the first 3 agree.")
    st.table(pd.DataFrame(sd.walkthrough(4, 3)))
    with st.expander("Formula: speculative decoding, with your numbers"):
        st.markdown(f"""
- Expected tokens per target pass = (1 − α^(k+1)) / (1 − α) = (1 − {alpha:g}^{k + 1}) / (1 − {alpha:g})
  = **{o.expected_tokens_per_pass:.3f}** (seeded Monte Carlo, {100_000:,} passes, seed 0: {monte_carlo:.3f})
- One pass = k × draft step + target verify step over k + 1 tokens = {k} × {o.draft_step_s * 1e3:.2f} ms +
  {o.verify_step_s * 1e3:.2f} ms = **{o.pass_s * 1e3:.2f} ms** (batch {q.batch}, context {q.context:,} tokens)
- Without: one target decode step = **{o.target_step_s * 1e3:.2f} ms** per token ({o.target_bound}-bound)
- Speed-up = {o.expected_tokens_per_pass:.3f} × {o.target_step_s * 1e3:.2f} / {o.pass_s * 1e3:.2f}
  = **{o.speedup:.2f}×**
- Assumptions: each draft accepted independently with probability α; the draft runs on the same GPUs at the same TP;
  step times from the roofline ({engine_of(sj)} efficiency profile); the draft's prompt prefill, tree drafts and
  EAGLE/Medusa heads are left out. The output distribution is unchanged: a wrong first guess still yields the
  target's own token.
""")


def prefix_tab(sj: str, r: Resolved, q: Request) -> None:
    c = st.columns(5)
    prefix_tokens = c[0].number_input("Shared prefix (tokens)", 0, max(q.prompt - 1, 0), step=100, key="tech_prefix")
    hit = c[1].slider("Hit rate", 0.0, 1.0, step=0.05, key="tech_hit", help="share of requests finding it cached")
    sharing = c[2].number_input("Requests sharing it", 1, 100_000, key="tech_sharing")
    queue_ms = c[3].number_input("Queue wait (ms)", 0.0, 1e6, step=10.0, key="tech_queue_ms")
    rate = c[4].number_input("Prefill rate (tokens/s)", 1.0, 1e9, step=1000.0, key="tech_prefill_rate")
    o = prefix(sj, q.prompt, q.tokens, int(prefix_tokens), int(sharing), hit, queue_ms / 1e3, rate)
    given, model, cached = o.ttft_given, o.ttft_model, o.cached_tokens_on_hit
    expected_ms = given.expected_s(hit) * 1e3
    m = st.columns([1.2, 1.4, 1, 1])
    m[0].metric(
        "TTFT, given rates",
        f"{given.before_s * 1e3:,.0f} → {given.after_s * 1e3:,.0f} ms",
        help=f"on a hit; expected at hit rate {hit:.0%}: {expected_ms:,.0f} ms",
    )
    m[1].metric(
        "TTFT, roofline",
        f"{model.before_s * 1e3:,.1f} → {model.after_s * 1e3:,.1f} ms",
        help=f"prefill of one {q.prompt:,}-token prompt, {cached:,} tokens read from the cache",
    )
    m[2].metric(
        "Prefill FLOPs saved",
        f"{o.prefill_flops_saved_on_hit / o.prefill_flops_without:.0%}",
        help=f"{o.prefill_flops_saved_on_hit / 1e12:,.2f} of {o.prefill_flops_without / 1e12:,.2f} TFLOP per hit",
    )
    m[3].metric("KV blocks saved", f"{o.kv_blocks_saved:,}", help=f"{o.kv_bytes_saved / 1e9:,.2f} GB per GPU")
    df = pd.DataFrame(
        [
            {"mode": "given rates", "case": "no cache", "ttft_ms": given.before_s * 1e3},
            {"mode": "given rates", "case": "prefix cached", "ttft_ms": given.after_s * 1e3},
            {"mode": "roofline (queue 0)", "case": "no cache", "ttft_ms": model.before_s * 1e3},
            {"mode": "roofline (queue 0)", "case": "prefix cached", "ttft_ms": model.after_s * 1e3},
        ]
    )
    left, right = st.columns(2)
    left.plotly_chart(ttft_chart(df), width="stretch", key="tech_chart_ttft")
    with right:
        _stable_first(int(prefix_tokens), q.prompt, r.deployment.block_size)
        _mooncake(o.pool_tokens)
    with st.expander("Formula: prefix caching, with your numbers"):
        st.markdown(f"""
- Given rates (primer §5): TTFT = wait + (prompt − cached) / rate
  = {queue_ms:g} ms + ({q.prompt:,} − {int(prefix_tokens):,}) / {rate:,.0f} = **{given.after_s * 1e3:,.1f} ms**
  (was {given.before_s * 1e3:,.1f} ms); expected at hit rate {hit:.0%}: **{expected_ms:,.1f} ms**
- Roofline: vLLM caches whole blocks, so {cached:,} = floor({int(prefix_tokens):,} / {r.deployment.block_size})
  × {r.deployment.block_size} tokens are skipped; the remaining {q.prompt - cached:,} still attend to them
- FLOPs saved = 2 × matmul params × cached + attention per pair × cached × (cached + 1) / 2 =
  {o.matmul_flops_per_token:,.3g} × {cached:,} +
  {o.attn_flops_per_pair:,.3g} × {cached * (cached + 1) // 2:,}
  = **{o.prefill_flops_saved_on_hit / 1e12:,.2f} TFLOP**
- KV blocks saved = (requests sharing − 1) × prefix blocks
  = ({int(sharing)} − 1) × {int(prefix_tokens) // r.deployment.block_size}
  = **{o.kv_blocks_saved:,}** ({o.kv_bytes_per_token_per_gpu:,.0f} B per token per GPU); requests of {q.tokens:,}
  tokens that fit: {o.max_requests_without_sharing:,} → **{o.max_requests_with_sharing:,}** with one shared copy
- Assumptions: the match must be exact from the first token; cached blocks stay until evicted (LRU)
""")


def _stable_first(prefix_tokens: int, prompt: int, block_size: int) -> None:
    ex = pc.stable_first_example(prefix_tokens, prompt - prefix_tokens, block_size)
    st.markdown(f"""**Why stable text goes first.** The cache matches from the first token, block by block.
With the {prefix_tokens:,} stable tokens (system prompt, few-shot examples) first and the changing part (user
message, date) last, each request reuses **{ex.stable_first:,}** tokens; put the date first and it reuses
**{ex.changing_first}**.""")


def _mooncake(pool_tokens: int) -> None:
    if st.button("Measure the hit rate on the Mooncake trace", key="tech_mooncake"):
        st.session_state["tech_mooncake_on"] = True
    if not st.session_state.get("tech_mooncake_on", False):
        st.caption(
            "Mooncake's conversation trace carries one prefix hash id per 512-token block (about 0.5 s to read)."
        )
        return
    t = mooncake_hit_rate(pool_tokens)
    h = t.hits
    c = st.columns(2)
    c[0].metric(
        "Mooncake hit rate (infinite cache)",
        f"{h.hit_rate_infinite:.1%}",
        help=f"{h.token_hit_rate_infinite:.1%} of prompt tokens",
    )
    c[1].metric(
        "Mooncake hit rate (LRU, your KV pool)",
        f"{h.hit_rate_lru:.1%}",
        help=f"an LRU cache of {t.lru_cache_blocks:,} blocks of {h.block_tokens} tokens = your pool",
    )
    st.caption(
        f"Share of the {h.num_blocks:,} prompt blocks of {h.num_requests:,} requests whose hash id (and every "
        f"block before it) was seen earlier. The LRU counts only prefix blocks, as if running requests took "
        f"no room: an optimistic bound for a pool of that size."
    )
