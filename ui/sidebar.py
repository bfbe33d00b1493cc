"""The shared sidebar: the scenario every page reads (model, GPU, precision, engine settings, workload and SLO).

Invalid input shows an error naming the field and keeps the last valid scenario, so nothing typed is lost.
A shared link (query string) or a saved scenario JSON is applied to the widgets before they are drawn.
"""

from __future__ import annotations

import json

import streamlit as st
from pydantic import ValidationError

from planner.core.catalog import (
    DEFAULT_GPU,
    DEFAULT_MODEL,
    get_model,
    gpus,
    kv_precisions,
    model_family,
    model_presets,
    presets_by_family,
    weight_precisions,
)
from planner.core.errors import InputError, from_validation_error
from planner.core.hf_config import MAX_CONFIG_BYTES, parse_config_text
from planner.core.model_spec import ModelSpec
from planner.core.precision import label_on
from planner.core.safe_text import inline_markdown
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.memory.layer_groups import architecture_summary
from ui.engine_widgets import engine_id, engine_section
from ui.labels import error_text
from ui.parallelism import parallelism_section
from ui.scenario_widgets import TP_CHOICES, apply_pending_restores, render_share_box
from ui.state import calibration_from_state, current_scenario, set_scenario
from ui.uploads import upload_limit
from ui.workload_widgets import render_workload

UPLOAD = "Upload or paste config.json"
MANUAL = "Manual fields"


def _model_source() -> tuple[str, ModelSpec | None]:
    presets = presets_by_family()
    options = presets + [UPLOAD, MANUAL]
    choice = st.selectbox(
        "Model",
        options,
        index=presets.index(DEFAULT_MODEL),
        key="sb_model",
        format_func=lambda p: f"{model_family(p)} · {p}" if p in presets else p,
        help="Presets are published Hugging Face config.json files (data/models/), grouped by family. A checkpoint "
        "published quantized (DeepSeek-V3's FP8) sets Weights to its format, as the CLI does.",
        on_change=_weights_follow_model,
    )
    if choice == UPLOAD:
        return choice, _uploaded_model()
    if choice == MANUAL:
        return choice, _manual_model()
    st.caption(architecture_summary(get_model(choice)))
    return choice, None


def _weights_follow_model() -> None:
    """A preset published quantized (config.json's quantization_config) loads in that format, as the CLI's default
    --weights does; other presets keep the user's choice."""
    choice = st.session_state.get("sb_model")
    if choice in model_presets():
        fmt = get_model(choice).quantized_weights
        if fmt and fmt in weight_precisions():
            st.session_state["sb_weights"] = fmt


class ShownError(InputError):
    """An input error already shown next to its widget (the sidebar's error slot stays empty)."""


def _uploaded_model() -> ModelSpec | None:
    gen = st.session_state.get("sb_upload_gen", 0)  # a new key empties the uploader after a rejected file
    up = st.file_uploader(
        "config.json",
        type=["json"],
        key=f"sb_config_upload_{gen}",
        help=f"At most {MAX_CONFIG_BYTES:,} bytes.",
        **upload_limit(MAX_CONFIG_BYTES),
    )
    rejected = st.session_state.get("sb_upload_rejected")
    if rejected and (up is not None or st.session_state.get("sb_config_paste", "").strip()):
        st.session_state.pop("sb_upload_rejected")  # a later file or paste replaces the rejected one's error
        rejected = None
    if rejected and up is None:
        st.error(f"{inline_markdown(rejected)} (the file was not used; the last valid model stays in use)")
    text = st.text_area("…or paste its contents", key="sb_config_paste", height=120)
    raw = up.getvalue() if up is not None else text.strip()
    if not raw:
        if not rejected:
            st.info("Upload or paste a config.json; the last valid model stays in use meanwhile.")
        return None
    source = up.name if up is not None else "pasted config.json"
    try:
        spec = parse_config_text(raw, name=upload_name(up.name if up is not None else ""), source=source)
    except InputError as err:
        if up is not None:  # drop the file, so the uploader does not show it as accepted, and say why at the uploader
            st.session_state["sb_upload_gen"] = gen + 1
            st.session_state["sb_upload_rejected"] = f"{err.field}: {err.message}"
            st.rerun()
        st.error(inline_markdown(f"{err.field}: {err.message}"))
        raise ShownError(err.field, err.message) from None
    st.session_state.pop("sb_upload_rejected", None)
    return _named(spec, raw)


def upload_name(filename: str) -> str | None:
    """A model's name from its file name, unless that is the generic config.json (then the config names it)."""
    stem = filename.rsplit("/", 1)[-1].removesuffix(".json")
    return None if stem.lower() in ("", "config") else stem


def _named(spec: ModelSpec, raw: str | bytes) -> ModelSpec:
    """A config.json without _name_or_path is named after its architecture (LlamaForCausalLM), not "config"."""
    if spec.name != spec.model_type:
        return spec
    try:
        arch = (json.loads(raw).get("architectures") or [None])[0]
    except (ValueError, AttributeError, IndexError, TypeError):
        arch = None
    return spec.model_copy(update={"name": str(arch)[:100]}) if arch else spec


def _manual_model() -> ModelSpec:
    c1, c2 = st.columns(2)
    layers = c1.number_input("Layers", 1, 512, 32, key="sb_m_layers")
    hidden = c2.number_input("Hidden size", 64, 65536, 4096, step=64, key="sb_m_hidden")
    heads = c1.number_input("Attention heads", 1, 1024, 32, key="sb_m_heads")
    kv_heads = c2.number_input("KV heads", 1, 1024, 8, key="sb_m_kv_heads")
    head_dim = c1.number_input("Head dim", 8, 1024, 128, key="sb_m_head_dim")
    inter = c2.number_input("Intermediate size", 64, 262144, 14336, step=64, key="sb_m_inter")
    vocab = c1.number_input("Vocabulary", 1, 1_000_000, 128256, key="sb_m_vocab")
    max_pos = c2.number_input("Max positions", 128, 10_000_000, 8192, key="sb_m_maxpos")
    try:
        return ModelSpec(
            name="manual model",
            hidden_size=hidden,
            num_layers=layers,
            num_attention_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            intermediate_size=inter,
            vocab_size=vocab,
            max_position_embeddings=max_pos,
        )
    except ValidationError as err:
        raise from_validation_error(err, prefix="manual model: ") from None


def _hardware() -> dict:
    catalogue = gpus()
    ids = list(catalogue)
    gpu = st.selectbox(
        "GPU",
        ids,
        index=ids.index(DEFAULT_GPU),
        key="sb_gpu",
        format_func=lambda g: f"{g} ({catalogue[g].memory_gb:g} GB)",
    )
    custom = st.checkbox("Custom memory size", key="sb_custom_mem")
    mem = st.number_input("GPU memory (decimal GB)", 1.0, 2000.0, 48.0, key="sb_gpu_mem_gb") if custom else None
    c1, c2 = st.columns(2)
    tp = c1.selectbox(
        "Tensor parallel",
        TP_CHOICES,
        key="sb_tp",
        on_change=_gpus_follow_tp,
        help="GPUs per replica; the GPUs field below follows it (a whole number of replicas).",
    )
    num_gpus = c2.number_input("GPUs", 1, 1024, 1, key="sb_num_gpus", help="All replicas: a multiple of TP.")
    weights = list(weight_precisions())
    w = st.selectbox(
        "Weights",
        weights,
        index=weights.index("bf16"),
        key="sb_weights",
        format_func=lambda p: label_on(weight_precisions()[p], bool(catalogue[gpu].tflops_fp8)),
    )
    _precision_note(gpu, w)
    kv = st.selectbox("KV cache", list(kv_precisions()), key="sb_kv", format_func=lambda p: kv_precisions()[p].label)
    return dict(gpu=gpu, gpu_memory_gb=mem, tp=tp, num_gpus=max(num_gpus, tp), weights=w, kv=kv)


def _gpus_follow_tp() -> None:
    """TP 4 with 1 GPU cannot run: raise GPUs to the next multiple of TP (at least TP)."""
    tp, n = st.session_state["sb_tp"], st.session_state.get("sb_num_gpus", 1)
    st.session_state["sb_num_gpus"] = min(1024, max(tp, -(-n // tp) * tp))


def _precision_note(gpu_id: str, weights: str) -> None:
    """Say how a precision runs on a GPU without its tensor-core dtype (FP8 on Ampere: weight-only via Marlin)."""
    g, p = gpus()[gpu_id], weight_precisions()[weights]
    if p.compute_dtype == "fp8" and not g.tflops_fp8:
        st.info(
            f"{g.id} ({g.family.title()}) has no FP8 tensor cores: vLLM runs FP8 **weight-only** through the "
            "Marlin kernel. Weights take 1 byte (half the memory of BF16) and are dequantised to 16 bits for "
            "each matmul, so compute runs at the 16-bit peak with a small dequantisation cost; FP8 activations "
            "and the FP8 speed-up need Ada, Hopper or newer.",
            icon=":material/info:",
        )


def _window(previous: Scenario, choice: str, spec: ModelSpec | None) -> int:
    """The context window of the model the sidebar will use: a new spec, a preset, else the last valid model."""
    if spec is None and choice in model_presets():
        spec = get_model(choice)
    if spec is None:
        spec = previous.model_spec or get_model(previous.model)
    return spec.max_position_embeddings


def _scenario_from_widgets() -> Scenario:
    previous = current_scenario()
    try:
        choice, spec = _model_source()
    except InputError:
        # still draw them: undrawn widgets lose their values
        engine_section(_hardware(), _window(previous, previous.model, None)), render_workload()
        parallelism_section(Deployment())
        raise
    hw = _hardware()
    eng, work = engine_section(hw, _window(previous, choice, spec)), render_workload()
    dep = Deployment(
        num_gpus=hw["num_gpus"] // hw["tp"] * hw["tp"],
        tensor_parallel_size=hw["tp"],
        weights=hw["weights"],
        kv_cache_dtype=hw["kv"],
        gpu_memory_utilization=eng["util"],
        max_model_len=eng["max_len"],
        block_size=eng["block"],
        max_num_seqs=eng["seqs"],
        max_num_batched_tokens=eng["batched"],
        enforce_eager=eng["eager"],
        enable_mixed_chunk=bool(eng["mixed"]),
        scheduler_recv_interval=int(eng["recv"]),
        mem_fraction_static=eng["mfs"],
        batch_wait_timeout_iters=int(eng["wait_iters"]),
        batch_wait_max_tokens_ratio=float(eng["wait_ratio"]),
        enable_prefix_caching=bool(st.session_state.get("sb_prefix", True)),  # the one switch (Workload and SLO)
    )
    dep = parallelism_section(dep)  # PP, DP attention, EP (ui/parallelism.py)
    model_id = choice if spec is None and choice not in (UPLOAD, MANUAL) else previous.model
    if spec is None and choice in (UPLOAD, MANUAL):
        spec = previous.model_spec  # keep the last valid upload while the user fixes theirs
    return Scenario(
        model=model_id,
        model_spec=spec,
        gpu=hw["gpu"],
        gpu_memory_gb=hw["gpu_memory_gb"],
        deployment=dep,
        engine=engine_id(),
        calibration=calibration_from_state(),
        **work,
    )


def render_sidebar() -> Scenario:
    """Draw the sidebar, validate it into a Scenario, store it; on error keep the last valid one."""
    with st.sidebar:
        st.header("Scenario")
        for message in apply_pending_restores(UPLOAD):
            st.error(message)
        done = st.session_state.pop("sb_pending_message", None)
        if done:
            st.toast(done, icon=":material/check_circle:")
        try:
            scenario = _scenario_from_widgets()
            resolve(scenario)
            set_scenario(scenario)
        except ShownError:
            pass  # already shown at its widget
        except InputError as err:
            st.error(error_text(err))
        except ValidationError as err:
            e = from_validation_error(err)
            st.error(error_text(e))
        render_share_box(current_scenario())
    return current_scenario()
