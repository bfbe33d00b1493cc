"""The sidebar's parallelism block: pipeline stages, data-parallel attention ranks and expert
parallelism, with vLLM's names. Self-contained: the sidebar calls `parallelism_section(dep)` once."""

from __future__ import annotations

from planner.core.specs import Deployment
from ui.lazy_section import lazy_section

PP_CHOICES = [1, 2, 4, 8]
DP_CHOICES = [1, 2, 4, 8, 16]
KEYS = ("sb_pp", "sb_dp", "sb_ep")


def parallelism_section(dep: Deployment) -> Deployment:
    """Draw the PP / DP / EP widgets and return `dep` with them applied (GPUs rounded to whole instances)."""
    box = lazy_section("Parallelism: PP, DP attention, EP (vLLM names)", "sb_open_parallel")  # drawn while open
    c1, c2 = box.columns(2)
    pp = c1.selectbox(
        "Pipeline parallel",
        PP_CHOICES,
        key="sb_pp",
        help="--pipeline-parallel-size: stages of consecutive layers, one TP group each.",
    )
    dp = c2.selectbox(
        "Data parallel (attention)",
        DP_CHOICES,
        key="sb_dp",
        help="--data-parallel-size: ranks with their own requests and KV cache; MoE layers "
        "span all TP × DP GPUs (SGLang: --enable-dp-attention with --dp).",
    )
    ep = box.checkbox(
        "Expert parallel (EP = TP × DP)",
        key="sb_ep",
        help="--enable-expert-parallel: whole experts split over TP × DP GPUs, exchanged by "
        "all-to-all, instead of every expert sliced over them.",
    )
    per_instance = dep.tensor_parallel_size * pp * dp
    box.caption(
        f"One instance = TP {dep.tensor_parallel_size} × PP {pp} × DP {dp} = {per_instance} GPUs"
        + (f"; EP {dep.tensor_parallel_size * dp}" if ep else "")
    )
    num_gpus = max(dep.num_gpus, per_instance) // per_instance * per_instance
    return Deployment(
        **{
            **dep.model_dump(),
            "pipeline_parallel_size": pp,
            "data_parallel_size": dp,
            "enable_expert_parallel": ep,
            "num_gpus": num_gpus,
        }
    )


def widget_values(dep: Deployment) -> dict:
    """The widget values that restore `dep`'s parallelism (shared links, saved scenarios)."""
    return {"sb_pp": dep.pipeline_parallel_size, "sb_dp": dep.data_parallel_size, "sb_ep": dep.enable_expert_parallel}
