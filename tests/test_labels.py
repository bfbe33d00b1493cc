"""Errors name fields at the edges: the engine raises field names, the CLI prints the flag, the UI the widget label."""

from __future__ import annotations

import pytest
from apptest_helpers import app

from planner.cli.flags import FIELD_FLAGS, flag_for
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from ui.labels import WIDGET_LABELS, error_text, label_for


def test_engine_names_the_field_not_the_flag():
    s = Scenario(model="Qwen/Qwen2.5-7B", gpu="H100-SXM", deployment=Deployment(num_gpus=8, tensor_parallel_size=8))
    with pytest.raises(InputError) as err:
        resolve(s)  # Qwen2.5-7B: 28 attention heads, not divisible by 8
    assert err.value.field == "tensor_parallel_size"
    assert flag_for(err.value.field) == "--tp"
    assert error_text(err.value) == (
        "Tensor parallel: Total number of attention heads (28) must be divisible by tensor parallel size (8) "
        "(vLLM's check; attention DP (--dp) splits requests, not heads)"
    )


def test_compound_fields_map_their_first_word():
    assert flag_for("model num_attention_heads") == "--model num_attention_heads"
    assert label_for("model num_attention_heads") == "Model num_attention_heads"
    assert flag_for("gpus.yaml: H100-SXM: hbm_bytes_per_s") == "gpus.yaml: H100-SXM: hbm_bytes_per_s"  # as it is


def test_every_labelled_field_has_a_flag():
    assert set(WIDGET_LABELS) <= set(FIELD_FLAGS)
    assert all(flag.startswith("--") for flag in FIELD_FLAGS.values())


def test_sidebar_shows_the_widget_label():
    at = app(sb_model="Qwen/Qwen2.5-7B", sb_tp=8, sb_num_gpus=8)
    errors = [e.value for e in at.error]
    assert any(e.startswith("Tensor parallel: Total number of attention heads (28)") for e in errors), errors
    assert not any("--tp" in e or "tensor_parallel_size:" in e for e in errors), errors
