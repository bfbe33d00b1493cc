"""The xPyD layouts of aiconfigurator's disaggregated rows are candidates of the disaggregated search."""

from planner.capacity.instance_shapes import instance_shapes
from planner.capacity.published_layouts import Shape, model_key, published_layouts, published_shapes
from planner.core.scenario import Scenario
from planner.core.specs import Deployment


def test_names_match_presets():
    assert model_key("deepseek-ai/DeepSeek-R1") == model_key("deepseek-ai/DeepSeek-V3") == "deepseek-v3"
    assert model_key("nvidia/Qwen3-32B-NVFP4") == model_key("Qwen/Qwen3-32B") == "qwen3-32b"


def test_published_layouts_of_deepseek_on_h200():
    # the rows give, e.g., 1 prefill instance of DP 8 + EP 8 and 9 decode instances of TP 8 + EP 8
    layouts = published_layouts("deepseek-ai/DeepSeek-V3", "H200")
    labels = {lay.label for lay in layouts}
    assert "1P (TP1 DP8 EP8) + 9D (TP8 EP8)" in labels
    assert published_shapes("deepseek-ai/DeepSeek-V3", "H200") == [Shape(1, 8, 8), Shape(8, 1, 1), Shape(8, 1, 8)]
    assert published_layouts("meta-llama/Llama-3.1-8B", "H100-SXM") == []


def test_the_search_weighs_the_published_shapes():
    s = Scenario(model="deepseek-ai/DeepSeek-V3", gpu="H200", deployment=Deployment(weights="fp8", max_model_len=8192))
    shapes = {(r.deployment.tensor_parallel_size, r.deployment.data_parallel_size, r.deployment.expert_parallel_size)
              for r in instance_shapes(s)}  # fmt: skip
    # TP 8 alone is vLLM's own candidate; DP 8 + EP 8 and TP 8 + EP 8 come from the published layouts
    assert {(8, 1, 1), (1, 8, 8), (8, 1, 8)} <= shapes
