"""Every page renders for each family of today's open models: hybrid sliding-window, linear-attention and
Mamba layers, MLA with a sparse indexer, chunked attention, MXFP4 / FP8 checkpoints.

About a minute per family, so the test command renders two of them (hybrid Mamba layers, MLA with a sparse indexer:
SUBSET); every family: `SERVINGPLAN_ALL_FAMILIES=1 python -m pytest tests/test_page_families.py` (~11 min)."""

from __future__ import annotations

import os

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.core.catalog import get_model
from planner.core.scenario import Scenario
from planner.core.specs import Deployment
from planner.core.workload import TrafficSpec

PAGES = ("fit", "latency", "traffic", "capacity", "disagg", "techniques")
# one preset per family, on 8 × H200 at TP 8 (weights in the checkpoint's own format), 32k context
FAMILIES = {
    "gpt-oss": "openai/gpt-oss-120b",
    "DeepSeek": "deepseek-ai/DeepSeek-V3.2",
    "Qwen3.5": "Qwen/Qwen3.5-35B-A3B",
    "Qwen3": "Qwen/Qwen3-30B-A3B",
    "Llama 4": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "Gemma 4": "google/gemma-4-26B-A4B",
    "Mixtral": "mistralai/Mixtral-8x22B-v0.1",
    "Nemotron-H": "nvidia/Nemotron-H-56B-Base-8K",
    "Nemotron-3": "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
    "Step": "stepfun-ai/Step-3.7-Flash",
    "MiMo": "XiaomiMiMo/MiMo-V2-Flash",
}


def scenario(preset: str) -> Scenario:
    model = get_model(preset)
    tp = 8 if model.num_attention_heads % 8 == 0 else 4
    dep = Deployment(
        num_gpus=tp, tensor_parallel_size=tp, weights=model.quantized_weights or "bf16", max_model_len=8192
    )
    traffic = TrafficSpec(profile="custom", prompt="fixed:2000", output="fixed:200", num_requests=60)
    return Scenario(model=preset, gpu="H200", deployment=dep, traffic=traffic, target_rate=2.0)


SUBSET = ("DeepSeek", "Nemotron-H")
RENDERED = sorted(FAMILIES) if os.environ.get("SERVINGPLAN_ALL_FAMILIES") == "1" else SUBSET


@pytest.mark.slow  # about a minute per family (six pages, two of them search capacity)
@pytest.mark.parametrize("family", RENDERED)
def test_every_page_renders(family):
    s = scenario(FAMILIES[family])
    for page in PAGES:
        at = AppTest.from_file(str(ROOT / "app_pages" / f"{page}.py"), default_timeout=120)
        at.session_state["scenario"] = s
        at.run()
        assert not at.exception, (page, at.exception)
        assert not at.error or page == "fit", (page, [e.value for e in at.error])
    fit = AppTest.from_file(str(ROOT / "app_pages" / "fit.py"), default_timeout=120)
    fit.session_state["scenario"] = s
    fit.run()
    verdict = [e.value for e in fit.success] + [e.value for e in fit.error]
    assert verdict and ("bind" in verdict[0] or "Does not fit" in verdict[0])
    if get_model(FAMILIES[family]).layer_groups:
        assert any("layer kind" in h.value for h in fit.subheader)
