"""The UI's edge for errors: the widget label behind each engine field, so a message names what the user sees.

The engine raises `InputError(field, message)` with the field name (`tensor_parallel_size`, `batch`); the CLI maps
the same names to flags (planner/cli/flags.py). A field with no widget here is shown as it is.
"""

from __future__ import annotations

from planner.core.errors import InputError
from planner.core.safe_text import inline_markdown

WIDGET_LABELS = {
    # the sidebar scenario (ui/sidebar.py)
    "model": "Model",
    "gpu": "GPU",
    "gpu_memory_gb": "GPU memory (decimal GB)",
    "num_gpus": "GPUs",
    "tensor_parallel_size": "Tensor parallel",
    "weights": "Weights",
    "kv_cache_dtype": "KV cache",
    "context_tokens": "Tokens per request",
    # a static batch (app_pages/latency.py)
    "batch": "Batch size",
    "input_tokens": "Prompt tokens",
    "output_tokens": "Output tokens",
    # capacity (app_pages/capacity.py)
    "target_rps": "Target traffic (requests/s)",
    "headroom": "Headroom ×",
    "gpus": "GPUs to rank",
    # a given xPyD layout (app_pages/disagg.py, "Your own xPyD layout")
    "prefill_instances": "Prefill instances (X)",
    "prefill_tp": "Prefill TP",
    "prefill_ep": "Prefill EP",
    "decode_instances": "Decode instances (Y)",
    "decode_tp": "Decode TP",
    "decode_ep": "Decode EP",
    # validation (app_pages/validation.py)
    "points": "Measurements CSV",
}


def label_for(field: str) -> str:
    """The widget label behind an engine field; a compound field ("model num_layers") labels its first word."""
    head, sep, rest = field.partition(" ")
    return WIDGET_LABELS.get(head, head) + sep + rest


def error_text(err: InputError) -> str:
    """An InputError as the UI shows it: "Tensor parallel: Total number of attention heads (32) must be ..."."""
    return inline_markdown(f"{label_for(err.field)}: {err.message}")  # a file or model name cannot form a link
