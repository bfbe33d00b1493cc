"""planner.core.hf_config.context_window: the model's window as vLLM derives its default max_model_len (the one
default of the app and the CLI, issue 27 #19)."""

from __future__ import annotations

import pytest

from planner.core.catalog import get_model
from planner.core.errors import InputError
from planner.core.hf_config import context_window


def test_presets_give_their_published_window():
    # DeepSeek-V3 config.json: yarn, original 4,096 × factor 40 = 163,840 = its max_position_embeddings;
    # gpt-oss-120b: yarn 4,096 × 32 = 131,072; Llama-3.1: llama3 rope keeps 131,072
    assert get_model("deepseek-ai/DeepSeek-V3").max_position_embeddings == 163_840
    assert get_model("openai/gpt-oss-120b").max_position_embeddings == 131_072
    assert get_model("meta-llama/Llama-3.1-8B").max_position_embeddings == 131_072


def test_yarn_added_to_a_config_extends_the_window_as_vllm_does():
    # Qwen2.5-7B-Instruct's model card: add rope_scaling {"factor": 4.0, "original_max_position_embeddings": 32768,
    # "type": "yarn"} to config.json to serve 131,072 tokens (vLLM multiplies the original length by the factor)
    qwen = {"max_position_embeddings": 32768, "rope_scaling": None}
    assert context_window(qwen) == 32_768
    yarn = {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}
    assert context_window({**qwen, "rope_scaling": yarn}) == 131_072
    llama3 = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}
    assert context_window({"max_position_embeddings": 131072, "rope_scaling": llama3}) == 131_072
    assert context_window({"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2}}) == 8192


def test_the_smallest_length_key_wins_and_none_means_2048():
    # GPT-2's config.json: n_positions 1024 (n_ctx 1024 is not a length key for vLLM)
    assert context_window({"n_positions": 1024, "n_ctx": 1024}) == 1024
    assert context_window({"max_position_embeddings": 8192, "seq_length": 4096}) == 4096  # ChatGLM-style
    assert context_window({}) == 2048  # vLLM assumes 2,048 and warns


@pytest.mark.parametrize("factor", [float("nan"), float("inf"), -2, 0, "4", True, 1e12])
def test_a_hostile_rope_factor_is_named(factor):
    with pytest.raises(InputError) as err:
        context_window({"max_position_embeddings": 4096, "rope_scaling": {"type": "dynamic", "factor": factor}})
    assert "rope_scaling" in err.value.field or "max_position_embeddings" in err.value.field
