"""The sidebar's "Engine settings" section: the engine's limits under vLLM's names, and the options of one engine
only under that engine (SGLang's mixed chunks, memory fraction and receive interval; TensorRT-LLM's batch waiting).
Moved from ui/sidebar.py (move only)."""

from __future__ import annotations

import streamlit as st

from planner.core.catalog import DEFAULT_GPU, DEFAULT_MODEL, get_model, gpus
from planner.core.engine import engine_for
from planner.core.engine_defaults import DEFAULT_ENGINE
from planner.core.gpu_spec import custom_gpu
from ui.lazy_section import lazy_section


def engine_section(hw: dict | None = None, window: int | None = None) -> dict:
    """The engine settings; max_model_len defaults to the model's context window `window`, as `vllm serve` and the
    CLI's --max-model-len do (one default: planner.core.scenario.resolve)."""
    window = window or get_model(DEFAULT_MODEL).max_position_embeddings
    box = lazy_section("Engine settings (vLLM names)", "sb_open_engine")  # drawn only while open (ui/lazy_section.py)
    util = box.slider("gpu_memory_utilization", 0.5, 0.99, 0.9, 0.01, key="sb_util")
    limit = box.checkbox(
        "Set max_model_len",
        value=False,
        key="sb_set_maxlen",
        help=f"Off (the default): the model's context window, {window:,} tokens, derived from config.json as "
        "`vllm serve` derives it, the CLI's --max-model-len default too. vLLM refuses to start "
        "when one request of that length does not fit the KV pool; a shorter limit starts with less memory.",
    )
    if limit:
        max_len = box.number_input(
            "max_model_len", 128, 10_000_000, min(window, 10_000_000), step=1024, key="sb_max_len"
        )
    else:
        max_len = None
        box.caption(f"max_model_len: {window:,} tokens, the model's context window (vLLM's default).")
    block = box.selectbox("block_size", [8, 16, 32], index=1, key="sb_block")
    default = _batch_default(hw)
    own = box.checkbox(
        "Set max_num_seqs and max_num_batched_tokens",
        value=False,
        key="sb_set_batch",
        help="Off: the engine's defaults for this GPU (vLLM's `vllm serve` get_batch_defaults: 8,192 tokens "
        "and 1,024 sequences on 70 GiB+ GPUs other than A100, else 2,048 and 256).",
    )
    if own:
        seqs = box.number_input("max_num_seqs", 1, 4096, default.max_num_seqs, key="sb_max_seqs")
        batched = box.number_input(
            "max_num_batched_tokens", 16, 1_000_000, default.max_num_batched_tokens, step=512, key="sb_batched"
        )
    else:
        seqs = batched = None
        box.caption(
            f"{engine_for(engine_id()).label} default for this GPU: max_num_seqs {default.max_num_seqs:,}, "
            f"max_num_batched_tokens {default.max_num_batched_tokens:,}"
        )
    eager = box.checkbox("enforce_eager (no CUDA graphs)", key="sb_eager")
    mixed = False
    if engine_id() == "sglang":  # SGLang's own switch; the other engines always (or never) mix
        mixed = box.checkbox(
            "enable_mixed_chunk (SGLang)",
            key="sb_mixed_chunk",
            help="Off, SGLang's default: a prefill batch runs first and alone, pausing the decodes (each TPOT is "
            "a pure decode step; under load the prompts wait for each other). On: prompt chunks share each step "
            "with the decodes, as vLLM's scheduler does.",
        )
    return dict(
        util=util,
        max_len=max_len,
        block=block,
        seqs=seqs,
        batched=batched,
        eager=eager,
        mixed=mixed,
        mfs=_mem_fraction(box),
        **_holds(box),
    )


def _mem_fraction(box) -> float | None:
    """SGLang's --mem-fraction-static, under SGLang only (None: SGLang's own default, as the CLI's)."""
    if engine_id() != "sglang" or not box.checkbox(
        "Set mem_fraction_static (SGLang)",
        value=False,
        key="sb_set_mfs",
        help="Off: SGLang's own default for this GPU, TP and chunk size (server_args.py: the GPU less a reserve of "
        "1.5 × the chunk, the CUDA graphs and 0.5 GiB), which the KV pool and the launch line use. SGLang's pool "
        "is this share of GPU memory less the weights; gpu_memory_utilization above is vLLM's.",
    ):
        return None
    return box.number_input("mem_fraction_static", 0.05, 1.0, 0.85, step=0.01, key="sb_mfs")


# each engine's scheduler holds (planner.core.specs.Deployment): (engine, result key, label, min, max, default, step,
# widget key, help)
_HOLD_WIDGETS = (
    (
        "sglang",
        "recv",
        "scheduler_recv_interval (SGLang)",
        1,
        1000,
        1,
        1,
        "sb_recv_interval",
        "--scheduler-recv-interval: the scheduler reads new requests every N decode steps (1, the default: every "
        "step). Benchmark launches set 10-30 to save CPU; each arrival then waits about N / 2 decode steps more for "
        "its first token.",
    ),
    (
        "tensorrt-llm",
        "wait_iters",
        "batch_wait_timeout_iters (TensorRT-LLM)",
        0,
        1000,
        0,
        1,
        "sb_batch_wait_iters",
        "Extra-options YAML: prompts wait up to this many iterations to be batched together (0, the default: off). "
        "The wait ends early once the waiting prompts and the decodes hold batch_wait_max_tokens_ratio of "
        "max_num_tokens.",
    ),
    (
        "tensorrt-llm",
        "wait_ratio",
        "batch_wait_max_tokens_ratio (TensorRT-LLM)",
        0.0,
        1.0,
        0.0,
        0.05,
        "sb_batch_wait_ratio",
        "The share of max_num_tokens that ends the batch wait (0, the default: off).",
    ),
)


def _holds(box) -> dict:
    """The scheduler holds of the scenario's engine, under its own names (other engines have none: defaults)."""
    holds = {name: default for _, name, _, _, _, default, _, _, _ in _HOLD_WIDGETS}
    for engine, name, label, lo, hi, default, step, key, text in _HOLD_WIDGETS:
        if engine_id() == engine:
            holds[name] = box.number_input(label, lo, hi, default, step=step, key=key, help=text)
    return holds


def engine_id() -> str:
    """The scenario's engine: from a link or saved JSON (no sidebar widget), else the default of a new Scenario."""
    return st.session_state.get("sb_engine", DEFAULT_ENGINE)


def _batch_default(hw: dict | None):
    """The scenario engine's batch defaults for the sidebar's GPU (planner.core.engine_defaults)."""
    ids = gpus()
    gpu = ids[hw["gpu"]] if hw and hw["gpu"] in ids else ids[DEFAULT_GPU]
    if hw and hw["gpu_memory_gb"] is not None:
        gpu = custom_gpu(hw["gpu_memory_gb"], like=gpu)
    return engine_for(engine_id()).batch_defaults(gpu)
