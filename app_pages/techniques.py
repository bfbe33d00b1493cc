"""Techniques: each serving technique of the primer as a what-if on your scenario: what it saves, what it costs,
and when it stops paying."""

import streamlit as st

from ui.state import current_scenario, resolved_or_stop
from ui.techniques.data import Request, engine_of, prepare_widget_state
from ui.techniques.hw_tabs import quant_tab, tp_tab
from ui.techniques.memory_tabs import flash_tab, lora_tab, paged_tab
from ui.techniques.speed_tabs import prefix_tab, spec_decode_tab
from ui.workload_widgets import scenario_lengths

st.title("Techniques")
r = resolved_or_stop()

sj = current_scenario().model_dump_json()
dep = r.deployment
st.caption(
    f"{r.model.name} · {dep.num_gpus} × {r.gpu.name} · TP {dep.tensor_parallel_size} · weights "
    f"{r.weights.label} · KV {r.kv.label} · {engine_of(sj)} efficiency profile. Each tab changes one thing about "
    "this scenario."
)
req = scenario_lengths()
prompt, output = req.prompt_tokens, req.output_tokens
c = st.columns([1, 2])
batch = c[0].number_input("Batch (requests decoding together)", 1, 100_000, 8, key="tech_batch")
c[1].caption(
    f"Requests of **{prompt:,} prompt + {output:,} output tokens** ({req.source}): set them in the sidebar "
    "under **Workload and SLO**."
)
if prompt + output > r.max_model_len:
    st.error(
        f"Prompt + output = {prompt + output:,} tokens exceeds max_model_len {r.max_model_len:,}: raise it in the "
        "sidebar under **Engine settings (vLLM names) → max_model_len**, or shorten the requests under "
        "**Workload and SLO**."
    )
    st.stop()
q = Request(int(prompt), int(output), int(batch))
prepare_widget_state(q.prompt, q.output, q.batch, r.max_model_len)

# Only the open tab runs (on_change="rerun"), which keeps a rerun fast; the hidden tabs' widgets keep their values.
TABS = {
    "Speculative decoding": lambda: spec_decode_tab(sj, r, q),
    "Prefix caching": lambda: prefix_tab(sj, r, q),
    "PagedAttention": lambda: paged_tab(sj, r, q),
    "FlashAttention": lambda: flash_tab(r, q),
    "Quantization": lambda: quant_tab(sj, r, q),
    "Tensor parallelism": lambda: tp_tab(sj, r, q),
    "Multi-LoRA": lambda: lora_tab(sj, r, q),
}
for tab, render in zip(st.tabs(list(TABS), key="tech_tab", on_change="rerun"), TABS.values()):
    if tab.open:
        with tab:
            render()
