"""Inputs of the primer's worked examples: one frozen model per walkthrough, defaults = the primer's numbers.

Each field carries a label (`title`), a unit and a lower bound, so a page can draw one widget per field and the CLI
can accept `--set field=value`; a bad value is reported with the field named (planner.core.errors.InputError).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from planner.core.errors import InputError, from_validation_error

_FROZEN = ConfigDict(frozen=True, extra="forbid")
MAX_REQUESTS = 26  # six-requests walkthrough: requests are named A, B, C, …


MAX_INPUT = 10**9  # any walkthrough input (the primer's are at most 4,000): bigger ones only overflow the arithmetic
MAX_REQUEST_TOKENS = 100_000  # six-requests: tokens one request needs (the steps are drawn one by one)


def _f(default, title: str, unit: str = "", gt: float | None = 0, **kw):
    """A field with a label, a unit the page shows next to the widget, and bounds."""
    kw.setdefault("le", MAX_INPUT)
    return Field(default, title=title, gt=gt, json_schema_extra={"unit": unit}, **kw)


class KVCacheInputs(BaseModel):
    """Primer §3: a 7B model (32 layers, 32 heads of dim 128, FP16) serving 4,000-token requests."""

    model_config = _FROZEN

    num_layers: int = _f(32, "Layers")
    num_attention_heads: int = _f(32, "Attention heads")
    num_kv_heads: int = _f(32, "KV heads")
    head_dim: int = _f(128, "Head dim")
    bytes_per_value: float = _f(2.0, "Bytes per cached value", "B")
    tokens_per_request: int = _f(4000, "Tokens per request, prompt + output", "tokens")
    batch: int = _f(16, "Requests in the batch", "requests")
    gpu_gb: float = _f(48.0, "GPU memory, step 4a", "GB")
    weights_gb: float = _f(14.0, "Weights at FP16", "GB", gt=None, ge=0)
    big_gpu_gb: float = _f(80.0, "Bigger GPU, step 4b", "GB")
    small_gpu_gb: float = _f(24.0, "Smaller GPU, step 5", "GB")
    quantized_weights_gb: float = _f(3.5, "4-bit weights, step 5", "GB", gt=None, ge=0)
    gqa_kv_heads: int = _f(8, "GQA KV heads, step 6")

    @model_validator(mode="after")
    def kv_heads_divide_attention_heads(self) -> KVCacheInputs:
        for name in ("num_kv_heads", "gqa_kv_heads"):
            kv = getattr(self, name)
            if kv > self.num_attention_heads or self.num_attention_heads % kv:
                raise ValueError(f"{name} must divide the {self.num_attention_heads} attention heads")
        return self


class WeightsInputs(BaseModel):
    """Primer §4: weights = parameters × bytes per parameter, for a 7B model at 16, 8 and 4 bits and a 70B."""

    model_config = _FROZEN

    params_billion: float = _f(7.0, "Parameters", "billion")
    high_bits: float = _f(16.0, "High precision", "bits")
    mid_bits: float = _f(8.0, "INT8", "bits")
    low_bits: float = _f(4.0, "4-bit", "bits")
    large_params_billion: float = _f(70.0, "Large model parameters", "billion")
    gpu_gb: float = _f(80.0, "GPU memory", "GB")


class TokenPositionsInputs(BaseModel):
    """Primer §3: a 2,000-token prompt and a 300-token answer, with and without the KV cache."""

    model_config = _FROZEN

    prompt_tokens: int = _f(2000, "Prompt tokens", "tokens")
    output_tokens: int = _f(300, "Output tokens", "tokens")


class LatencyInputs(BaseModel):
    """Primer §5 steps 1-5: one request with given prefill rate and TPOT."""

    model_config = _FROZEN

    prompt_tokens: int = _f(2000, "Prompt tokens", "tokens")
    output_tokens: int = _f(300, "Output tokens", "tokens")
    queue_wait_ms: float = _f(40.0, "Queue wait", "ms", gt=None, ge=0)
    prefill_tokens_per_s: float = _f(10_000.0, "Prefill rate", "tokens/s")
    tpot_ms: float = _f(25.0, "TPOT", "ms")
    shorter_prompt_tokens: int = _f(1000, "Shorter prompt, step 4a", "tokens")
    capped_output_tokens: int = _f(150, "Output cap, step 4b", "tokens")
    cached_prefix_tokens: int = _f(1500, "Cached prefix, step 5", "tokens", gt=None, ge=0)

    @model_validator(mode="after")
    def prefix_within_prompt(self) -> LatencyInputs:
        if self.cached_prefix_tokens > self.prompt_tokens:
            raise ValueError("cached_prefix_tokens must not exceed prompt_tokens")
        return self


class ThroughputInputs(BaseModel):
    """Primer §5, latency against throughput: 32 requests share the batch and TPOT rises from 25 to 40 ms."""

    model_config = _FROZEN

    prompt_tokens: int = _f(2000, "Prompt tokens", "tokens")
    output_tokens: int = _f(300, "Output tokens", "tokens")
    queue_wait_ms: float = _f(40.0, "Queue wait", "ms", gt=None, ge=0)
    prefill_tokens_per_s: float = _f(10_000.0, "Prefill rate", "tokens/s")
    single_tpot_ms: float = _f(25.0, "TPOT alone", "ms")
    batch: int = _f(32, "Requests sharing the batch", "requests")
    batch_tpot_ms: float = _f(40.0, "TPOT in the batch", "ms")


class SixRequestsInputs(BaseModel):
    """Primer §6: six requests at step 0 needing 2, 8, 4, 3, 5 and 2 tokens, on 3 slots (static with max_wait 0)."""

    model_config = _FROZEN

    output_tokens: tuple[int, ...] = Field(
        (2, 8, 4, 3, 5, 2), title="Tokens each request needs, comma-separated", json_schema_extra={"unit": "tokens"}
    )
    slots: int = _f(3, "Slots", "slots")
    max_wait: int = _f(0, "Static: max wait", "steps", gt=None, ge=0)

    @field_validator("output_tokens", mode="before")
    @classmethod
    def comma_separated_text(cls, value):
        if isinstance(value, str):
            try:
                return tuple(int(v) for v in value.replace(";", ",").split(",") if v.strip())
            except ValueError:
                raise ValueError("must be whole numbers separated by commas") from None
        return value

    @field_validator("output_tokens")
    @classmethod
    def one_to_26_positive_lengths(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not 1 <= len(value) <= MAX_REQUESTS:
            raise ValueError(f"give between 1 and {MAX_REQUESTS} requests")
        if any(v < 1 for v in value):
            raise ValueError("every request needs at least 1 token")
        if any(v > MAX_REQUEST_TOKENS for v in value):
            raise ValueError(f"every request needs at most {MAX_REQUEST_TOKENS:,} tokens")
        return value


def build_inputs(cls: type[BaseModel], values: dict) -> BaseModel:
    """Validate inputs into `cls`, raising InputError that names the field."""
    try:
        return cls(**values)
    except ValidationError as err:
        e = from_validation_error(err)  # cross-field checks have no field: name the inputs as a whole
        raise InputError("inputs" if e.field == "input" else e.field, e.message.removeprefix("Value error, ")) from None
    except (TypeError, ValueError) as err:
        raise InputError("inputs", str(err)) from None


def field_unit(cls: type[BaseModel], name: str) -> str:
    extra = cls.model_fields[name].json_schema_extra or {}
    return extra.get("unit", "")


def split_context(context_tokens: int, output_tokens: int) -> tuple[int, int]:
    """(prompt, output) of a request of `context_tokens`: keep the output length, at most half the context."""
    output = max(1, min(output_tokens, context_tokens // 2))
    return max(1, context_tokens - output), output
