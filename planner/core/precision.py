"""Weight and KV-cache precisions (data/precisions.yaml): effective bits per weight and who loads each format."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class WeightPrecision(BaseModel):
    """A weight format; bits_per_weight already includes per-group scales and zeros."""

    model_config = _FROZEN

    id: str
    label: str
    bits_per_weight: PositiveFloat
    group_size: PositiveInt | None = None
    keeps_embeddings_16bit: bool = False  # GPTQ/AWQ/NF4 leave embeddings and lm_head at 16 bits
    compute_dtype: Literal["fp32", "fp16", "bf16", "fp8", "int8", "fp4"]
    dequant_overhead: float = Field(default=0.0, ge=0, le=2)  # extra decode time fraction for dequant kernels
    # GPU families (data/gpus.yaml `family`) whose tensor cores multiply the format natively, and those where the
    # engines run it as weight-only kernels (dequantised to 16 bits: Marlin on Hopper/Ampere, Triton on MI300X)
    native_families: list[str] = Field(default_factory=list)
    weight_only_families: list[str] = Field(default_factory=list)
    engines: list[str]
    source: str

    def support_on(self, family: str) -> str:
        """ "native", "weight-only" or "unsupported" on a GPU family; formats without lists run everywhere listed."""
        if not self.native_families and not self.weight_only_families:
            return "native"
        if family in self.native_families:
            return "native"
        return "weight-only" if family in self.weight_only_families else "unsupported"

    @property
    def bytes_per_weight(self) -> float:
        return self.bits_per_weight / 8


FP8_WEIGHT_ONLY_LABEL = "FP8 (weight-only, Marlin)"


def label_on(p: WeightPrecision, has_fp8_tensor_cores: bool) -> str:
    """The precision's label on a GPU: FP8 W8A8 needs FP8 tensor cores (Ada, Hopper or newer); without them vLLM
    runs FP8 checkpoints weight-only through Marlin (vLLM docs, quantization/fp8), so "W8A8, E4M3" would be wrong."""
    return FP8_WEIGHT_ONLY_LABEL if p.compute_dtype == "fp8" and not has_fp8_tensor_cores else p.label


class KVPrecision(BaseModel):
    """A KV-cache dtype; `auto` (bytes_per_value None) follows the model's activation dtype."""

    model_config = _FROZEN

    id: str
    label: str
    bytes_per_value: PositiveFloat | None
    engines: list[str]
    source: str


def checkpoint_kv_dtype(requested: str, checkpoint_kv: str | None) -> str:
    """The KV dtype to run: an explicit one as given; `auto` becomes the KV dtype a ModelOpt checkpoint ships scales
    for (hf_quant_config.json kv_cache_quant_algo FP8), as vLLM resolves it (vllm/utils/torch_utils.py
    resolve_kv_cache_dtype_string @959009b4: 'auto' -> the quantization_config's kv_cache_quant_algo)."""
    return checkpoint_kv if requested == "auto" and checkpoint_kv else requested


def resolve_kv_bytes(kv: KVPrecision, weights: WeightPrecision) -> float:
    """Bytes per cached value: the KV dtype, or for `auto` the activation dtype (16-bit unless weights are FP32).

    vLLM's `auto` uses the model dtype; quantized weights (GPTQ, AWQ, GGUF, FP8 weights) still run 16-bit
    activations, so their KV cache stays 2 bytes per value: quantizing the weights does not shrink the cache.
    """
    if kv.bytes_per_value is not None:
        return kv.bytes_per_value
    return 4.0 if weights.id == "fp32" else 2.0
